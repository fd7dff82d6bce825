// The OpModel/emulator contract checker shared by the layout property tests: placements of a
// shape in each sweep layout, and Sweep::check, which launches what validate() accepts (and
// compares it with the f32 reference) and expects launch() to refuse what it rejects with the
// same reason.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/device/placement.hpp"

namespace meshplan::device::sweep {

enum class Kind {
  dram,
  l1,
  height,
  width,
  block_row,
  block_col,
  height_col,
  block_bad_grid,
  height_set,
  width_set
};
constexpr Kind kKinds[] = {
    Kind::dram,      Kind::l1,         Kind::height,         Kind::width,      Kind::block_row,
    Kind::block_col, Kind::height_col, Kind::block_bad_grid, Kind::height_set, Kind::width_set};

inline std::string kind_name(Kind k) {
  switch (k) {
    case Kind::dram:
      return "dram";
    case Kind::l1:
      return "l1";
    case Kind::height:
      return "height";
    case Kind::width:
      return "width";
    case Kind::block_row:
      return "block_row";
    case Kind::block_col:
      return "block_col";
    case Kind::height_col:
      return "height_col";
    case Kind::block_bad_grid:
      return "block_1x1";
    case Kind::height_set:
      return "height_set";
    case Kind::width_set:
      return "width_set";
  }
  return "?";
}

/// A placement of `shape` in layout `k` (address filled in later). Sharded layouts use the
/// 4x2 grid at the origin, the op's grid in this sweep.
inline TensorPlacement place(std::string_view name, const std::vector<int64_t>& shape, DType dtype,
                             Kind k, TileLayout layout = TileLayout::tile) {
  const CoreRange grid{0, 0, 3, 1};
  auto sharded = [&](MemLayout m, ShardOrientation o, CoreRange g) {
    auto s = even_shard_spec(shape, m, g, o, layout);
    REQUIRE(s);
    return make_sharded(name, shape, dtype, m, *s, 0, layout);
  };
  switch (k) {
    case Kind::dram:
      return make_interleaved(name, shape, dtype, BufferType::dram, 0, layout);
    case Kind::l1:
      return make_interleaved(name, shape, dtype, BufferType::l1, 0, layout);
    case Kind::height:
      return sharded(MemLayout::height_sharded, ShardOrientation::row_major, grid);
    case Kind::width:
      return sharded(MemLayout::width_sharded, ShardOrientation::row_major, grid);
    case Kind::block_row:
      return sharded(MemLayout::block_sharded, ShardOrientation::row_major, grid);
    case Kind::block_col:
      return sharded(MemLayout::block_sharded, ShardOrientation::col_major, grid);
    case Kind::height_col:
      return sharded(MemLayout::height_sharded, ShardOrientation::col_major, grid);
    case Kind::height_set:
    case Kind::width_set: {
      // A core range set: (0,0)-(1,0) then (5,6)-(5,7), four cores, shards split evenly.
      bool height = k == Kind::height_set;
      View2D v = view_2d(shape, layout);
      int64_t unit = layout == TileLayout::tile ? 32 : 1;
      int64_t extent = height ? v.rows : v.cols;
      ShardSpec s;
      s.grid = CoreRange{0, 0, 1, 0};
      s.extra_ranges = 1;
      s.extra[0] = CoreRange{5, 6, 5, 7};
      int64_t side = (extent / unit + 3) / 4 * unit;
      s.shape[0] = height ? side : v.rows;
      s.shape[1] = height ? v.cols : side;
      return make_sharded(name, shape, dtype,
                          height ? MemLayout::height_sharded : MemLayout::width_sharded, s, 0,
                          layout);
    }
    case Kind::block_bad_grid: {
      // Shards sized for a 4x2 grid declared on one core: check_placement must refuse it.
      TensorPlacement t = sharded(MemLayout::block_sharded, ShardOrientation::row_major, grid);
      t.shard.grid = CoreRange{0, 0, 0, 0};
      return t;
    }
  }
  return {};
}

inline std::vector<float> random_values(const std::vector<int64_t>& shape, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  std::vector<float> v(static_cast<size_t>(volume(shape)));
  for (float& x : v) x = round_bf16(d(rng));
  return v;
}

struct Sweep {
  std::unique_ptr<EmulatedDevice> dev;
  OpModel model{wormhole_b0()};
  int accepted = 0, rejected = 0;
  int accepted_sharded = 0;  ///< Accepted launches with a sharded operand or result.

  Sweep() {
    auto d = EmulatedDevice::create(wormhole_b0());
    REQUIRE(d);
    dev = std::move(*d);
  }

  /// validate() accepts (`why` empty) or refuses with a reason containing `why`; then check()
  /// with a tolerance of 0.02 (accepted: runs and matches the reference; refused: launch() says
  /// the same).
  void expect(OpKind kind, std::vector<TensorPlacement> ins, const TensorPlacement& out,
              const OpConfig& config, const std::vector<std::vector<float>>& host,
              const std::string& why) {
    std::vector<const TensorPlacement*> in;
    for (auto& t : ins) in.push_back(&t);
    const TensorPlacement* outs[1] = {&out};
    OpValidation v = model.validate(OpLaunch{kind, "op", in, outs, config});
    if (why.empty())
      CHECK_MESSAGE(v.ok, v.reason);
    else
      CHECK_MESSAGE(v.reason.find(why) != std::string::npos, v.reason);
    check(kind, std::move(ins), out, config, host, 0.02);
  }

  /// Checks the contract for one launch; `host` holds the operands' values.
  void check(OpKind kind, std::vector<TensorPlacement> ins, TensorPlacement out,
             const OpConfig& config, const std::vector<std::vector<float>>& host,
             double tolerance) {
    dev->reset();
    std::vector<const TensorPlacement*> inp, outp{&out};
    for (auto& t : ins) inp.push_back(&t);
    // Addresses: DRAM from 0 up, L1 from the usable top down.
    uint64_t dram = 0, l1 = model.chip().l1_usable_top();
    std::vector<TensorPlacement*> all;
    for (auto& t : ins) all.push_back(&t);
    all.push_back(&out);
    for (TensorPlacement* t : all) {
      uint64_t bytes = AddressMap(*t, model.chip()).bytes_per_bank();
      if (t->buffer == BufferType::dram) {
        t->address = dram;
        dram += (bytes + 1023) / 1024 * 1024;
      } else {
        l1 = (l1 - bytes) / 64 * 64;
        t->address = l1;
      }
    }
    OpLaunch op{kind, "op", inp, outp, config};
    OpValidation v = model.validate(op);
    if (!v.ok) {
      ++rejected;
      auto r = dev->launch(op);
      REQUIRE_FALSE(r);
      CHECK(r.error().message == v.reason);
      return;
    }
    ++accepted;
    for (TensorPlacement* t : all) {
      if (t->memory != MemLayout::interleaved) {
        ++accepted_sharded;
        break;
      }
    }
    for (size_t i = 0; i < ins.size(); ++i) {
      REQUIRE(dev->allocate(ins[i]));
      REQUIRE(dev->write(ins[i], host[i]));
    }
    REQUIRE(dev->allocate(out));
    auto r = dev->launch(op);
    if (!r) FAIL_CHECK(r.error().message);
    REQUIRE(r);
    std::vector<float> got(static_cast<size_t>(volume(out.shape))), want(got.size());
    REQUIRE(dev->read(out, got));
    std::vector<HostView> views;
    for (size_t i = 0; i < ins.size(); ++i) views.push_back(HostView{ins[i].shape, host[i]});
    REQUIRE(reference(kind, views, config, out.shape, want));
    double err = 0, scale = 1e-6;
    for (size_t i = 0; i < got.size(); ++i) {
      err = std::max(err, static_cast<double>(std::fabs(got[i] - want[i])));
      scale = std::max(scale, static_cast<double>(std::fabs(want[i])));
    }
    CHECK(err / scale < tolerance);
  }
};

inline OpConfig grid_config() {
  OpConfig c;
  c.grid_x = 4;
  c.grid_y = 2;
  return c;
}

}  // namespace meshplan::device::sweep
