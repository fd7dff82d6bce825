// Shared by the op kernel tests: run one op on an EmulatedDevice from host data and compare it
// with device::reference on the same (bf16-exact) inputs.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/device/placement.hpp"

namespace meshplan::test {

using device::DType;
using device::OpConfig;
using device::OpKind;

struct OpInput {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> data;
  DType dtype = DType::bf16;
};

/// Values uniform in [lo, hi), rounded to bf16 so storage adds no error of its own.
inline OpInput rand_input(std::string name, std::vector<int64_t> shape, uint32_t seed,
                          float lo = -1.0f, float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  OpInput t{std::move(name), std::move(shape), {}, DType::bf16};
  t.data.resize(static_cast<size_t>(device::volume(t.shape)));
  for (float& v : t.data) v = device::round_bf16(d(rng));
  return t;
}

inline OpInput with_dtype(OpInput t, DType dtype) {
  t.dtype = dtype;
  return t;
}

struct OpRun {
  std::vector<int64_t> shape;
  std::vector<float> got, want;
  /// max |got - want| / max(max |want|, 1e-6).
  double rel_err() const {
    double err = 0, scale = 1e-6;
    for (size_t i = 0; i < got.size(); ++i) {
      err = std::max(err, static_cast<double>(std::fabs(got[i] - want[i])));
      scale = std::max(scale, static_cast<double>(std::fabs(want[i])));
    }
    return err / scale;
  }
};

inline OpConfig grid_config(uint16_t gx = 8, uint16_t gy = 8) {
  OpConfig c;
  c.grid_x = gx;
  c.grid_y = gy;
  return c;
}

/// Runs `kind` on the emulator (operands in DRAM, 64 MiB apart) and on the reference. The result
/// dtype is the one infer_dtype gives unless `result_dtype` says otherwise.
inline OpRun run_op(OpKind kind, const std::vector<OpInput>& ins, const OpConfig& config,
                    std::optional<DType> result_dtype = std::nullopt) {
  auto dev_or = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev_or);
  auto& dev = *dev_or;
  std::vector<std::span<const int64_t>> shapes;
  std::vector<DType> dtypes;
  for (const OpInput& t : ins) {
    shapes.emplace_back(t.shape);
    dtypes.push_back(t.dtype);
  }
  auto out_shape = device::infer_shape(kind, shapes, config);
  REQUIRE_MESSAGE(out_shape, out_shape.error().message);
  auto dtype = device::infer_dtype(kind, dtypes, config);
  REQUIRE_MESSAGE(dtype, dtype.error().message);
  OpRun run;
  run.shape = *out_shape;
  std::vector<device::TensorPlacement> ps;
  uint64_t addr = 0;
  for (const OpInput& t : ins) {
    ps.push_back(
        device::make_interleaved(t.name, t.shape, t.dtype, device::BufferType::dram, addr));
    addr += 64ull << 20;
  }
  device::TensorPlacement out = device::make_interleaved(
      "out", run.shape, result_dtype.value_or(*dtype), device::BufferType::dram, addr);
  for (size_t i = 0; i < ins.size(); ++i) {
    REQUIRE(dev->allocate(ps[i]));
    REQUIRE(dev->write(ps[i], ins[i].data));
  }
  REQUIRE(dev->allocate(out));
  std::vector<const device::TensorPlacement*> inp, outp{&out};
  for (auto& p : ps) inp.push_back(&p);
  auto timing = dev->launch(device::OpLaunch{kind, "op", inp, outp, config});
  REQUIRE_MESSAGE(timing, timing.error().message);
  CHECK(timing->duration_ns > 0);
  run.got.resize(static_cast<size_t>(device::volume(run.shape)));
  REQUIRE(dev->read(out, run.got));
  std::vector<device::HostView> views;
  for (const OpInput& t : ins) views.push_back(device::HostView{t.shape, t.data});
  run.want.resize(run.got.size());
  auto ref = device::reference(kind, views, config, run.shape, run.want);
  REQUIRE_MESSAGE(ref, ref.error().message);
  return run;
}

/// The error infer_shape gives (empty if it succeeds).
inline std::string shape_error(OpKind kind, const std::vector<std::vector<int64_t>>& shapes,
                               const OpConfig& config) {
  std::vector<std::span<const int64_t>> spans(shapes.begin(), shapes.end());
  auto r = device::infer_shape(kind, spans, config);
  return r ? std::string() : r.error().message;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace meshplan::test
