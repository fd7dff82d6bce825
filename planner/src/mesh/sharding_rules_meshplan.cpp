// Factor rules for `meshplan.*` custom calls, from the graph op's semantics (device/
// op_semantics): elementwise ops pass every dim through (numpy broadcasting: a size-1 operand
// dim is its own, replicated factor); softmax / layer_norm / rms_norm need the normalised dim
// whole; matmul and linear are dot_general-like; conv2d and pools pass batch (and channels where
// no window mixes them) through and keep the spatial dims whole (no halo exchange); embedding
// keeps the vocabulary whole; reduce_mean keeps its reduced dims whole (a mean of partial means
// is not a mean). A contracting factor is a reduction (partial sums + all_reduce) only when
// nothing non-linear follows inside the op: linear adds a bias, conv2d a bias and an
// activation, matmul may fuse an activation; those contracting factors need replication.
#include <algorithm>

#include "import/meshplan_custom_call.hpp"

namespace meshplan::planner::shlo {

namespace {

using device::OpFamily;
using Dims = std::vector<std::vector<int>>;

struct Rule {
  FactorRule r;
  int factor(int64_t size, bool need_replication = false) {
    r.factor_sizes.push_back(size);
    r.reduction.push_back(false);
    r.need_replication.push_back(need_replication);
    return static_cast<int>(r.factor_sizes.size() - 1);
  }
  /// Dims of `shape` trailing-aligned to `out` (numpy): equal sizes share out's factor.
  Dims aligned(const std::vector<int64_t>& shape, const std::vector<int64_t>& out_shape,
               const Dims& out) {
    Dims d(shape.size());
    for (size_t i = 0; i < shape.size(); ++i) {
      size_t od = out_shape.size() - shape.size() + i;
      if (out_shape.size() >= shape.size() && shape[i] == out_shape[od])
        d[i] = out[od];
      else
        d[i] = {factor(shape[i], true)};
    }
    return d;
  }
  Dims fresh(const std::vector<int64_t>& shape, bool need_replication) {
    Dims d;
    for (int64_t s : shape) d.push_back({factor(s, need_replication)});
    return d;
  }
};

int64_t resolve(int64_t d, size_t rank) {
  return d < 0 ? d + static_cast<int64_t>(rank) : d;
}

}  // namespace

Result<FactorRule> meshplan_call_rule(const Module& m, const Op& op) {
  planner::Op g = MESHPLAN_TRY(meshplan_call_op(op));
  auto cfg = op_config(g);
  if (!cfg) return fail(cfg.error().code, op.loc.str(), ": ", cfg.error().message);
  const device::OpConfig& c = *cfg;
  std::vector<std::vector<int64_t>> in;
  for (ValueId v : op.operands) in.push_back(m.values[v].type.shape);
  const std::vector<int64_t>& out_shape = m.values[op.results[0]].type.shape;
  auto need = [&](size_t n) -> Status {
    if (in.size() < n)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", g.name, " has ", in.size(),
                  " operands, expected at least ", n);
    return {};
  };
  Rule b;
  auto elementwise = [&]() {
    Dims out = b.fresh(out_shape, false);
    for (const auto& s : in) b.r.operands.push_back(b.aligned(s, out_shape, out));
    b.r.results = {out};
    b.r.pass_through = true;
    return out;
  };
  switch (device::op_family(g.kind)) {
    case OpFamily::eltwise_unary:
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
    case OpFamily::select:
    case OpFamily::convert:
    case OpFamily::memory:
      elementwise();
      return b.r;
    case OpFamily::softmax:
    case OpFamily::norm: {
      MESHPLAN_TRY(need(1));
      Dims out = elementwise();
      if (out.empty()) return b.r;
      int64_t d = g.kind == OpKind::softmax && c.num_dims == 1
                      ? resolve(c.dims[0], out.size())
                      : static_cast<int64_t>(out.size()) - 1;
      if (d < 0 || d >= static_cast<int64_t>(out.size()))
        return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", g.name, ": dim ", d,
                    " out of range");
      b.r.need_replication[static_cast<size_t>(out[static_cast<size_t>(d)][0])] = true;
      return b.r;
    }
    case OpFamily::matmul: {
      MESHPLAN_TRY(need(2));
      const auto& a = in[0];
      const auto& w = in[1];
      if (a.size() < 2 || w.size() < 2 || out_shape.size() != a.size())
        return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", g.name,
                    " needs operands of rank >= 2");
      const bool linear_k = g.kind == OpKind::linear || c.activation != device::Activation::none;
      Dims da(a.size()), dw(w.size()), out(out_shape.size());
      for (size_t d = 0; d + 2 < a.size(); ++d) {
        out[d] = da[d] = {b.factor(a[d])};
        if (w.size() > 2) dw[d] = da[d];
      }
      const size_t ra = a.size(), rw = w.size();
      size_t am = c.transpose_a ? ra - 1 : ra - 2, ak = c.transpose_a ? ra - 2 : ra - 1;
      size_t wk = c.transpose_b ? rw - 1 : rw - 2, wn = c.transpose_b ? rw - 2 : rw - 1;
      out[ra - 2] = da[am] = {b.factor(a[am])};
      out[ra - 1] = dw[wn] = {b.factor(w[wn])};
      int k = b.factor(a[ak], linear_k);
      b.r.reduction[static_cast<size_t>(k)] = !linear_k;
      da[ak] = dw[wk] = {k};
      b.r.operands = {da, dw};
      for (size_t i = 2; i < in.size(); ++i)
        b.r.operands.push_back(b.aligned(in[i], out_shape, out));
      b.r.results = {out};
      return b.r;
    }
    case OpFamily::reduction: {
      MESHPLAN_TRY(need(1));
      const auto& s = in[0];
      Dims din(s.size()), out;
      for (size_t d = 0; d < s.size(); ++d) {
        bool reduced = c.num_dims == 0;
        for (int i = 0; i < c.num_dims; ++i)
          reduced |= resolve(c.dims[i], s.size()) == static_cast<int64_t>(d);
        // Partial means and products have no combining collective: those dims stay replicated.
        const bool mean = g.kind == OpKind::reduce_mean || g.kind == OpKind::reduce_prod;
        int f = b.factor(s[d], reduced && mean);
        din[d] = {f};
        if (reduced) {
          b.r.reduction[static_cast<size_t>(f)] = !mean;
          if (c.keepdim) out.push_back({b.factor(1)});
        } else {
          out.push_back({f});
        }
      }
      b.r.reduction_kind = g.kind == OpKind::reduce_max   ? "max"
                           : g.kind == OpKind::reduce_min ? "min"
                                                          : "sum";
      b.r.operands = {din};
      b.r.results = {out};
      return b.r;
    }
    case OpFamily::gather: {
      MESHPLAN_TRY(need(2));
      if (in[1].size() != 2 || out_shape.size() != in[0].size() + 1)
        return fail(ErrorCode::invalid_argument, op.loc.str(),
                    ": embedding needs a [V, D] table and a result of the indices' rank + 1");
      Dims out = b.fresh(out_shape, false);
      Dims idx(in[0].size());
      for (size_t d = 0; d < idx.size() && d < out.size(); ++d) idx[d] = out[d];
      Dims table = {{b.factor(in[1][0], true)}, out.back()};
      b.r.operands = {idx, table};
      b.r.results = {out};
      return b.r;
    }
    case OpFamily::conv: {
      MESHPLAN_TRY(need(2));
      if (in[0].size() != 4 || in[1].size() != 4 || out_shape.size() != 4)
        return fail(ErrorCode::invalid_argument, op.loc.str(), ": conv2d needs NHWC operands");
      const bool grouped = c.groups != 1;
      int n = b.factor(in[0][0]);
      int ci = b.factor(in[0][3], true);  // bias and activation follow the sum: no partials
      int co = b.factor(out_shape[3], grouped);
      Dims x = {{n}, {b.factor(in[0][1], true)}, {b.factor(in[0][2], true)}, {ci}};
      Dims w = {{co},
                {b.factor(in[1][1], true)},
                {b.factor(in[1][2], true)},
                {grouped ? b.factor(in[1][3], true) : ci}};
      Dims out = {{n}, {b.factor(out_shape[1], true)}, {b.factor(out_shape[2], true)}, {co}};
      b.r.operands = {x, w};
      for (size_t i = 2; i < in.size(); ++i)
        b.r.operands.push_back(b.aligned(in[i], out_shape, out));
      b.r.results = {out};
      return b.r;
    }
    case OpFamily::pool: {
      MESHPLAN_TRY(need(1));
      if (in[0].size() != 4 || out_shape.size() != 4)
        return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", g.name,
                    " needs NHWC operands");
      int n = b.factor(in[0][0]), ch = b.factor(in[0][3]);
      b.r.operands = {{{n}, {b.factor(in[0][1], true)}, {b.factor(in[0][2], true)}, {ch}}};
      b.r.results = {{{n}, {b.factor(out_shape[1], true)}, {b.factor(out_shape[2], true)}, {ch}}};
      return b.r;
    }
    case OpFamily::shape:
    case OpFamily::collective: {
      // Shape-changing ops written as custom calls (reshape, permute, concat, slice): every
      // dim its own factor, kept whole. Correct, if not parallel.
      for (const auto& s : in) b.r.operands.push_back(b.fresh(s, true));
      b.r.results = {b.fresh(out_shape, true)};
      return b.r;
    }
  }
  return b.r;
}

}  // namespace meshplan::planner::shlo
