// Sharding rules the `sdy-propagation` stage uses where Shardy's differ from the mesh
// pipeline's (which must lower what it propagates): dynamic slices keep the dims they do not
// slice, and the host-offload custom calls pass their operand through.
#include "mesh/sharding_rules_shardy.hpp"

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "import/meshplan_custom_call.hpp"
#include "import/stablehlo_gather.hpp"

namespace meshplan::planner::shlo {

namespace {

struct Builder {
  int factor(int64_t size, bool need_replication) {
    r.factor_sizes.push_back(size);
    r.reduction.push_back(false);
    r.need_replication.push_back(need_replication);
    return static_cast<int>(r.factor_sizes.size() - 1);
  }
  FactorRule r;
};

const std::vector<int64_t>& shape_of(const Module& m, ValueId v) {
  return m.values[v].type.shape;
}

/// Scalar operands (slice indices) take no factor; any other operand is a malformed op.
bool scalars(const Module& m, const Op& op, size_t from) {
  for (size_t k = from; k < op.operands.size(); ++k)
    if (!shape_of(m, op.operands[k]).empty()) return false;
  return true;
}

/// dynamic_slice: a dim the slice keeps whole is one factor of operand and result; a sliced
/// dim needs replication: for propagation a factor of its own in each (nothing propagates
/// through it), for explicit reshards (`shared`) one factor of both, as Shardy's rule states
/// it, so that its axes can move to the dims kept whole.
std::optional<FactorRule> dynamic_slice(const Module& m, const Op& op, bool shared) {
  if (op.operands.empty() || op.results.size() != 1 || !scalars(m, op, 1)) return std::nullopt;
  const auto& in = shape_of(m, op.operands[0]);
  const auto& out = shape_of(m, op.results[0]);
  if (in.size() != out.size()) return std::nullopt;
  Builder b;
  std::vector<std::vector<int>> in_d(in.size()), out_d(out.size());
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] == out[d]) {
      in_d[d] = out_d[d] = {b.factor(in[d], false)};
    } else {
      in_d[d] = {b.factor(in[d], true)};
      out_d[d] = shared ? in_d[d] : std::vector<int>{b.factor(out[d], true)};
    }
  }
  b.r.operands.push_back(std::move(in_d));
  for (size_t k = 1; k < op.operands.size(); ++k) b.r.operands.push_back({});
  b.r.results.push_back(std::move(out_d));
  return b.r;
}

/// dynamic_update_slice: operand and result share every dim (each device updates its own
/// piece); the update shares the dims it covers whole and needs replication along the others.
std::optional<FactorRule> dynamic_update_slice(const Module& m, const Op& op) {
  if (op.operands.size() < 2 || op.results.size() != 1 || !scalars(m, op, 2)) return std::nullopt;
  const auto& in = shape_of(m, op.operands[0]);
  const auto& upd = shape_of(m, op.operands[1]);
  if (in.size() != upd.size() || shape_of(m, op.results[0]) != in) return std::nullopt;
  Builder b;
  std::vector<std::vector<int>> in_d(in.size()), upd_d(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    in_d[d] = {b.factor(in[d], false)};
    upd_d[d] = in[d] == upd[d] ? in_d[d] : std::vector<int>{b.factor(upd[d], true)};
  }
  b.r.operands.push_back(in_d);
  b.r.operands.push_back(std::move(upd_d));
  for (size_t k = 2; k < op.operands.size(); ++k) b.r.operands.push_back({});
  b.r.results.push_back(std::move(in_d));
  return b.r;
}

/// Custom calls Shardy treats as pointwise (host offload, placement annotations): every
/// operand and result of the result's shape shares one factor per dim.
std::optional<FactorRule> pointwise_call(const Module& m, const Op& op) {
  const std::string target = custom_call_target(op);
  bool known = false;
  for (std::string_view t :
       {"MoveToHost", "MoveToDevice", "annotate_device_placement", "LayoutConstraint"})
    known |= target == t;
  if (!known || op.results.size() != 1) return std::nullopt;
  const auto& shape = shape_of(m, op.results[0]);
  Builder b;
  std::vector<std::vector<int>> dims;
  for (int64_t d : shape) dims.push_back({b.factor(d, false)});
  for (ValueId v : op.operands)
    b.r.operands.push_back(
        shape_of(m, v) == shape ? dims : std::vector<std::vector<int>>(shape_of(m, v).size()));
  b.r.results.push_back(dims);
  b.r.pass_through = true;
  return b.r;
}

}  // namespace

std::optional<FactorRule> shardy_stage_rule(const Module& m, const Op& op) {
  if (op.attr("sdy.sharding_rule")) return std::nullopt;  // a stated rule wins
  if (op.name == "stablehlo.dynamic_slice") return dynamic_slice(m, op, false);
  if (op.name == "stablehlo.dynamic_update_slice") return dynamic_update_slice(m, op);
  if (op.name == "stablehlo.custom_call") return pointwise_call(m, op);
  return std::nullopt;
}

namespace {

/// pad and slice: one factor per dim of operand and result, sized as the operand's dim; a dim
/// whose size changes is a permutation factor. The padding value is a scalar.
std::optional<ReshardRule> pad_or_slice(const Module& m, const Op& op) {
  const size_t scalar_from = op.name == "stablehlo.pad" ? 1 : op.operands.size();
  if (op.operands.empty() || op.results.size() != 1 || !scalars(m, op, scalar_from))
    return std::nullopt;
  const auto& in = shape_of(m, op.operands[0]);
  const auto& out = shape_of(m, op.results[0]);
  if (in.size() != out.size()) return std::nullopt;
  Builder b;
  std::vector<bool> permutation;
  std::vector<std::vector<int>> dims(in.size());
  for (size_t d = 0; d < in.size(); ++d) {
    dims[d] = {b.factor(in[d], false)};
    permutation.push_back(in[d] != out[d]);
  }
  b.r.operands.push_back(dims);
  for (size_t k = 1; k < op.operands.size(); ++k) b.r.operands.push_back({});
  b.r.results.push_back(std::move(dims));
  return ReshardRule{std::move(b.r), std::move(permutation)};
}

/// The operand a slice was taken from, else the value itself.
ValueId before_slice(const Module& m, ValueId v) {
  const OpId d = m.values[v].def;
  if (d == kNone || m.ops[d].name != "stablehlo.slice" || m.ops[d].operands.empty()) return v;
  return m.ops[d].operands[0];
}

/// concatenate: one factor per dim shared by every operand and the result, sized as the
/// result's dim. The concatenated dim needs replication, unless the operands are all slices, or
/// pieces of one tensor (some sliced): then it is a permutation factor.
std::optional<ReshardRule> concatenate(const Module& m, const Op& op) {
  const Attr* dim = op.prop("dimension");
  if (op.operands.empty() || op.results.size() != 1 || !dim) return std::nullopt;
  const auto& out = shape_of(m, op.results[0]);
  const size_t cd = static_cast<size_t>(dim->i);
  if (cd >= out.size()) return std::nullopt;
  for (ValueId v : op.operands)
    if (shape_of(m, v).size() != out.size()) return std::nullopt;
  bool all_slices = true, one_source = true, some_slice = false;
  const ValueId source = before_slice(m, op.operands[0]);
  for (ValueId v : op.operands) {
    const bool sliced = before_slice(m, v) != v;
    all_slices &= sliced;
    some_slice |= sliced;
    one_source &= before_slice(m, v) == source;
  }
  const bool permutes = all_slices || (one_source && some_slice);
  Builder b;
  std::vector<bool> permutation;
  std::vector<std::vector<int>> dims(out.size());
  for (size_t d = 0; d < out.size(); ++d) {
    dims[d] = {b.factor(out[d], d == cd && !permutes)};
    permutation.push_back(d == cd && permutes);
  }
  for (size_t k = 0; k < op.operands.size(); ++k) b.r.operands.push_back(dims);
  b.r.results.push_back(std::move(dims));
  return ReshardRule{std::move(b.r), std::move(permutation)};
}

/// A reduce of several inputs (argmax's value and index, ...): as for one input, every input
/// shares a factor per dim, the reduced dims are reduction factors and the others reach every
/// result; the init values are scalars. The partial results combine as the body's first op.
std::optional<ReshardRule> variadic_reduce(const Module& m, const Op& op) {
  const Attr* dims_attr = op.prop("dimensions");
  const size_t n = op.results.size();
  if (!dims_attr || dims_attr->kind != Attr::Kind::dense_array || n < 2 ||
      op.operands.size() != 2 * n || !scalars(m, op, n))
    return std::nullopt;
  const auto& in = shape_of(m, op.operands[0]);
  for (size_t k = 1; k < n; ++k)
    if (shape_of(m, op.operands[k]) != in) return std::nullopt;
  Builder b;
  std::vector<std::vector<int>> in_d(in.size()), out;
  for (size_t d = 0; d < in.size(); ++d) {
    const int f = b.factor(in[d], false);
    in_d[d] = {f};
    bool reduced = false;
    for (int64_t r : dims_attr->ints) reduced |= r == static_cast<int64_t>(d);
    if (reduced)
      b.r.reduction[static_cast<size_t>(f)] = true;
    else
      out.push_back({f});
  }
  for (size_t k = 0; k < n; ++k) b.r.operands.push_back(in_d);
  for (size_t k = 0; k < n; ++k) b.r.operands.push_back({});
  for (size_t k = 0; k < n; ++k) {
    if (shape_of(m, op.results[k]).size() != out.size()) return std::nullopt;
    b.r.results.push_back(out);
  }
  std::string body;
  if (op.regions.size() == 1 && !op.regions[0].ops.empty())
    body = m.ops[op.regions[0].ops[0]].name;
  b.r.reduction_kind = body == "stablehlo.maximum" ? "max"
                       : body == "stablehlo.minimum" ? "min"
                                                     : "sum";
  return ReshardRule{std::move(b.r), {}};
}

bool contains(const std::vector<int64_t>& v, size_t d) {
  return std::find(v.begin(), v.end(), static_cast<int64_t>(d)) != v.end();
}

/// gather, as Shardy states it: an offset dim the slice takes whole passes through operand and
/// result; one sliced to size 1 is a reduction factor of the operand (each device gathers from
/// its piece, the pieces are summed) and a replicated size-1 factor of the result; one sliced
/// otherwise needs replication. A batch dim of the result is one factor with the indices' dim
/// (and the operand's batching dim). Collapsed dims are reduction factors (needing replication
/// when of size 1); the index vector dim needs replication.
std::optional<ReshardRule> gather(const Module& m, const Op& op) {
  if (op.operands.size() != 2 || op.results.size() != 1) return std::nullopt;
  Result<GatherDims> read = read_gather_dims(op);
  if (!read) return std::nullopt;
  const GatherDims& g = *read;
  const auto& os = shape_of(m, op.operands[0]);
  const auto& is = shape_of(m, op.operands[1]);
  const auto& out = shape_of(m, op.results[0]);
  Builder b;
  std::vector<std::vector<int>> o(os.size()), i(is.size()), r(out.size());
  size_t in_dim = 0, batch_pos = 0;
  const size_t ivd = static_cast<size_t>(g.index_vector_dim);
  for (size_t sd = 0; sd < out.size(); ++sd) {
    if (contains(g.offset_dims, sd)) {
      while (in_dim < os.size() && (contains(g.collapsed_slice_dims, in_dim) ||
                                    contains(g.operand_batching_dims, in_dim)))
        ++in_dim;
      if (in_dim >= os.size()) return std::nullopt;
      if (os[in_dim] == out[sd]) {
        o[in_dim] = r[sd] = {b.factor(os[in_dim], false)};
      } else if (out[sd] == 1) {
        const int f = b.factor(os[in_dim], false);
        b.r.reduction[static_cast<size_t>(f)] = true;
        o[in_dim] = {f};
        r[sd] = {b.factor(1, true)};
      } else {
        o[in_dim] = r[sd] = {b.factor(os[in_dim], true)};
      }
      ++in_dim;
      continue;
    }
    const size_t idim = batch_pos < ivd ? batch_pos : batch_pos + 1;
    ++batch_pos;
    if (idim >= is.size()) return std::nullopt;
    const int f = b.factor(out[sd], false);
    i[idim] = r[sd] = {f};
    for (size_t k = 0; k < g.start_indices_batching_dims.size(); ++k)
      if (g.start_indices_batching_dims[k] == static_cast<int64_t>(idim) &&
          k < g.operand_batching_dims.size() &&
          static_cast<size_t>(g.operand_batching_dims[k]) < os.size())
        o[static_cast<size_t>(g.operand_batching_dims[k])] = {f};
  }
  for (int64_t c : g.collapsed_slice_dims) {
    if (c < 0 || static_cast<size_t>(c) >= os.size()) return std::nullopt;
    const size_t cd = static_cast<size_t>(c);
    const int f = b.factor(os[cd], os[cd] == 1);
    b.r.reduction[static_cast<size_t>(f)] = os[cd] != 1;
    o[cd] = {f};
  }
  if (ivd < is.size()) i[ivd] = {b.factor(is[ivd], true)};
  for (const auto* dims : {&o, &i, &r})
    for (const auto& d : *dims)
      if (d.empty()) return std::nullopt;  // dimension numbers Shardy's rule does not cover
  b.r.operands = {std::move(o), std::move(i)};
  b.r.results = {std::move(r)};
  return ReshardRule{std::move(b.r), {}};
}

}  // namespace

std::optional<ReshardRule> shardy_reshard_rule(const Module& m, const Op& op) {
  if (op.attr("sdy.sharding_rule")) return std::nullopt;
  if (op.name == "stablehlo.pad" || op.name == "stablehlo.slice") return pad_or_slice(m, op);
  if (op.name == "stablehlo.concatenate") return concatenate(m, op);
  if (op.name == "stablehlo.gather") return gather(m, op);
  if (op.name == "stablehlo.reduce" && op.results.size() > 1) return variadic_reduce(m, op);
  if (op.name == "stablehlo.reverse") {
    // Shardy: the reversed dims are permutation factors (the mesh pipeline's rule has them
    // need replication), the others pass through.
    auto r = sharding_rule(m, op);
    if (!r) return std::nullopt;
    ReshardRule out{std::move(*r), {}};
    out.permutation = out.rule.need_replication;
    out.rule.need_replication.assign(out.permutation.size(), false);
    return out;
  }
  std::optional<FactorRule> r =
      op.name == "stablehlo.dynamic_slice" ? dynamic_slice(m, op, true) : shardy_stage_rule(m, op);
  if (!r) return std::nullopt;
  return ReshardRule{std::move(*r), {}};
}

}  // namespace meshplan::planner::shlo
