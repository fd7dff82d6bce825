// Randomised shapes and attributes for the op set: whatever infer_shape accepts, the kernel runs
// and matches the reference; whatever it rejects is an error value (never a crash).
#include <doctest/doctest.h>

#include <algorithm>

#include "device/op_test_util.hpp"

using namespace meshplan;
using namespace meshplan::test;

namespace {

struct Rng {
  std::mt19937 g;
  int64_t in(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(g); }
  bool coin() { return in(0, 1) == 1; }
};

std::vector<int64_t> random_shape(Rng& r, int min_rank = 1, int max_rank = 4) {
  std::vector<int64_t> s(static_cast<size_t>(r.in(min_rank, max_rank)));
  for (auto& d : s) d = r.coin() ? r.in(1, 5) : r.in(1, 70);
  return s;
}

}  // namespace

TEST_CASE(
    "random shapes and attributes: accepted ops match the reference, rejected ones fail cleanly") {
  Rng r{std::mt19937(12345)};
  const OpKind kinds[] = {OpKind::subtract,   OpKind::maximum, OpKind::reduce_sum,
                          OpKind::reduce_max, OpKind::softmax, OpKind::layer_norm,
                          OpKind::reshape,    OpKind::permute, OpKind::concat,
                          OpKind::slice,      OpKind::conv2d,  OpKind::avg_pool2d,
                          OpKind::max_pool2d, OpKind::linear};
  int ran = 0, rejected = 0;
  for (int iter = 0; iter < 160; ++iter) {
    OpKind k = kinds[r.in(0, std::size(kinds) - 1)];
    CAPTURE(device::op_name(k));
    CAPTURE(iter);
    OpConfig c = grid_config(static_cast<uint16_t>(r.in(1, 8)), static_cast<uint16_t>(r.in(1, 8)));
    std::vector<std::vector<int64_t>> shapes;
    auto x = random_shape(r);
    switch (k) {
      case OpKind::subtract:
      case OpKind::maximum: {
        auto y = x;
        for (auto& d : y)
          if (r.coin()) d = r.coin() ? 1 : r.in(1, 4);  // sometimes broadcastable, sometimes not
        if (r.coin()) y.erase(y.begin());
        if (y.empty()) y.push_back(1);
        shapes = {x, y};
        break;
      }
      case OpKind::reduce_sum:
      case OpKind::reduce_max:
        c.num_dims = static_cast<uint8_t>(r.in(0, 2));
        for (int i = 0; i < c.num_dims; ++i) c.dims[i] = static_cast<int8_t>(r.in(-4, 4));
        c.keepdim = r.coin();
        shapes = {x};
        break;
      case OpKind::reshape: {
        int64_t v = device::volume(x);
        int64_t a = r.in(1, 6);
        c.num_shape = 2;
        c.shape[0] = r.coin() ? a : -1;
        c.shape[1] = v % a == 0 && r.coin() ? v / a : -1;
        shapes = {x};
        break;
      }
      case OpKind::permute:
        c.num_dims = static_cast<uint8_t>(x.size());
        for (size_t i = 0; i < x.size(); ++i) c.dims[i] = static_cast<int8_t>(i);
        std::shuffle(c.dims, c.dims + x.size(), r.g);
        if (r.in(0, 5) == 0) c.dims[0] = c.dims[x.size() - 1];  // sometimes not a permutation
        shapes = {x};
        break;
      case OpKind::concat: {
        c.axis = static_cast<int32_t>(
            r.in(-static_cast<int64_t>(x.size()), static_cast<int64_t>(x.size())));
        int n = static_cast<int>(r.in(1, 4));
        for (int i = 0; i < n; ++i) {
          auto y = x;
          int ax = c.axis < 0 ? c.axis + static_cast<int>(x.size()) : c.axis;
          if (ax < static_cast<int>(x.size())) y[ax] = r.in(1, 40);
          shapes.push_back(y);
        }
        break;
      }
      case OpKind::slice:
        c.num_slice = static_cast<uint8_t>(r.in(1, static_cast<int64_t>(x.size())));
        for (int i = 0; i < c.num_slice; ++i) {
          c.begins[i] = r.in(-x[i], x[i]);
          c.ends[i] = r.in(-x[i], x[i] + 3);
          c.steps[i] = r.in(1, 3);
        }
        shapes = {x};
        break;
      case OpKind::conv2d:
      case OpKind::avg_pool2d:
      case OpKind::max_pool2d: {
        x = {r.in(1, 2), r.in(1, 12), r.in(1, 12), r.in(1, 8)};
        int kh = static_cast<int>(r.in(1, 3)), kw = static_cast<int>(r.in(1, 3));
        c.kernel[0] = kh, c.kernel[1] = kw;
        c.stride[0] = static_cast<int32_t>(r.in(1, 2)),
        c.stride[1] = static_cast<int32_t>(r.in(1, 2));
        for (int& p : c.padding) p = static_cast<int>(r.in(0, 1));
        c.dilation[0] = static_cast<int32_t>(r.in(1, 2)),
        c.dilation[1] = static_cast<int32_t>(r.in(1, 2));
        shapes = {x};
        if (k == OpKind::conv2d) {
          c.groups = r.coin() ? 1 : static_cast<int32_t>(x[3]);
          shapes.push_back({r.in(1, 3) * c.groups, kh, kw, x[3] / c.groups});
          if (r.coin()) shapes.push_back({shapes[1][0]});
        }
        break;
      }
      case OpKind::linear: {
        int64_t n = r.in(1, 40);
        shapes = {x.size() < 2 ? std::vector<int64_t>{3, x[0]} : x,
                  {x.back(), n},
                  {r.coin() ? n : r.in(1, 3)}};
        break;
      }
      default:
        shapes = {x};
    }
    std::vector<std::span<const int64_t>> spans(shapes.begin(), shapes.end());
    auto out = device::infer_shape(k, spans, c);
    if (!out) {
      ++rejected;
      CHECK_FALSE(out.error().message.empty());
      continue;
    }
    std::vector<OpInput> ins;
    for (size_t i = 0; i < shapes.size(); ++i)
      ins.push_back(rand_input("in" + std::to_string(i), shapes[i], 1000 + iter * 7 + i));
    OpRun run = run_op(k, ins, c);
    CHECK(run.rel_err() < 0.02);
    ++ran;
  }
  // Both paths were exercised.
  CHECK(ran > 60);
  CHECK(rejected > 10);
}
