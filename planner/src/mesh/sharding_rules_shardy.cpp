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

/// The dims of gather's or scatter's tensors one factor covers (-1: none of that tensor).
enum class Kind { pass, reduction, replicate };
struct IndexingDims {
  std::vector<std::vector<int>> in, idx, slices;
};

/// Factors of gather (`slices`: its result) and scatter (`slices`: its updates), as Shardy
/// states them. An offset (update window) dim the slice takes whole passes through input and
/// slices. Sliced otherwise: for scatter a replicated factor in each; for gather, to size 1, a
/// reduction factor of the input (each device gathers from its piece, the pieces are summed)
/// and a replicated size-1 factor of the result, else one replicated factor of both. A batch
/// dim of the slices is one factor with the indices' dim (and the input's batching dim); for
/// scatter, without the input's dim it is a reduction factor when the update computation
/// combines (`combines`), else replicated. Collapsed (inserted) dims: scatter passes them
/// through to the result; gather reduces them (replicated when of size 1). The index vector dim
/// is replicated. nullopt: dimension numbers the rule does not cover.
std::optional<IndexingDims> indexing_factors(
    Builder& b, bool scatter, bool combines, const std::vector<int64_t>& in,
    const std::vector<int64_t>& idx, const std::vector<int64_t>& slices, int64_t index_vector_dim,
    const std::vector<int64_t>& offset, const std::vector<int64_t>& collapsed,
    const std::vector<int64_t>& in_batching, const std::vector<int64_t>& idx_batching) {
  IndexingDims d{std::vector<std::vector<int>>(in.size()),
                 std::vector<std::vector<int>>(idx.size()),
                 std::vector<std::vector<int>>(slices.size())};
  auto add = [&](int64_t size, Kind kind) {
    const int f = b.factor(size, kind == Kind::replicate);
    b.r.reduction[static_cast<size_t>(f)] = kind == Kind::reduction;
    return std::vector<int>{f};
  };
  size_t in_dim = 0, batch_pos = 0;
  const size_t ivd = static_cast<size_t>(index_vector_dim);
  for (size_t sd = 0; sd < slices.size(); ++sd) {
    if (contains(offset, sd)) {
      while (in_dim < in.size() &&
             (contains(collapsed, in_dim) || contains(in_batching, in_dim)))
        ++in_dim;
      if (in_dim >= in.size()) return std::nullopt;
      if (in[in_dim] == slices[sd]) {
        d.in[in_dim] = d.slices[sd] = add(in[in_dim], Kind::pass);
      } else if (scatter) {
        d.in[in_dim] = add(in[in_dim], Kind::replicate);
        d.slices[sd] = add(slices[sd], Kind::replicate);
      } else if (slices[sd] == 1) {
        d.in[in_dim] = add(in[in_dim], Kind::reduction);
        d.slices[sd] = add(1, Kind::replicate);
      } else {
        d.in[in_dim] = d.slices[sd] = add(in[in_dim], Kind::replicate);
      }
      ++in_dim;
      continue;
    }
    const size_t id = batch_pos < ivd ? batch_pos : batch_pos + 1;
    ++batch_pos;
    if (id >= idx.size()) return std::nullopt;
    std::optional<size_t> in_batch;
    for (size_t k = 0; k < idx_batching.size() && k < in_batching.size(); ++k)
      if (idx_batching[k] == static_cast<int64_t>(id) &&
          static_cast<size_t>(in_batching[k]) < in.size())
        in_batch = static_cast<size_t>(in_batching[k]);
    const Kind kind = !scatter || in_batch ? Kind::pass
                      : combines           ? Kind::reduction
                                           : Kind::replicate;
    d.idx[id] = d.slices[sd] = add(slices[sd], kind);
    if (in_batch) d.in[*in_batch] = d.idx[id];
  }
  for (int64_t c : collapsed) {
    if (c < 0 || static_cast<size_t>(c) >= in.size()) return std::nullopt;
    const size_t cd = static_cast<size_t>(c);
    d.in[cd] = add(in[cd], scatter ? Kind::pass : in[cd] == 1 ? Kind::replicate : Kind::reduction);
  }
  if (ivd < idx.size()) d.idx[ivd] = add(idx[ivd], Kind::replicate);
  for (const auto* dims : {&d.in, &d.idx, &d.slices})
    for (const auto& dim : *dims)
      if (dim.empty()) return std::nullopt;
  return d;
}

std::optional<ReshardRule> gather(const Module& m, const Op& op) {
  if (op.operands.size() != 2 || op.results.size() != 1) return std::nullopt;
  Result<GatherDims> g = read_gather_dims(op);
  if (!g) return std::nullopt;
  Builder b;
  auto d = indexing_factors(b, false, false, shape_of(m, op.operands[0]),
                            shape_of(m, op.operands[1]), shape_of(m, op.results[0]),
                            g->index_vector_dim, g->offset_dims, g->collapsed_slice_dims,
                            g->operand_batching_dims, g->start_indices_batching_dims);
  if (!d) return std::nullopt;
  b.r.operands = {std::move(d->in), std::move(d->idx)};
  b.r.results = {std::move(d->slices)};
  return ReshardRule{std::move(b.r), {}};
}

/// scatter of N inputs: operands are the inputs, the indices, then N updates; the results
/// share the inputs' factors. Its partial results combine when every result of the update
/// computation is an add (max, min) of two of its arguments.
std::optional<ReshardRule> scatter(const Module& m, const Op& op) {
  const size_t n = op.results.size();
  if (n == 0 || op.operands.size() != 2 * n + 1 || op.regions.size() != 1) return std::nullopt;
  Result<ScatterDims> s = read_scatter_dims(op);
  if (!s) return std::nullopt;
  for (size_t k = 1; k < n; ++k)
    if (shape_of(m, op.operands[k]) != shape_of(m, op.operands[0]) ||
        shape_of(m, op.operands[n + 1 + k]) != shape_of(m, op.operands[n + 1]))
      return std::nullopt;
  const Block& body = op.regions[0];
  std::string kind;
  bool combines = !body.ops.empty() && body.args.size() == 2 * n;
  if (combines) {
    const Op& ret = m.ops[body.ops.back()];
    combines = ret.operands.size() == n;
    for (ValueId v : ret.operands) {
      const OpId def = m.values[v].def;
      if (!combines || def == kNone || m.ops[def].operands.size() != 2) {
        combines = false;
        break;
      }
      const std::string& name = m.ops[def].name;
      const std::string k = name == "stablehlo.add"       ? "sum"
                            : name == "stablehlo.maximum" ? "max"
                            : name == "stablehlo.minimum" ? "min"
                                                          : "";
      combines = !k.empty() && (kind.empty() || kind == k);
      kind = k;
    }
  }
  Builder b;
  auto d = indexing_factors(b, true, combines, shape_of(m, op.operands[0]),
                            shape_of(m, op.operands[n]), shape_of(m, op.operands[n + 1]),
                            s->index_vector_dim, s->update_window_dims, s->inserted_window_dims,
                            s->input_batching_dims, s->scatter_indices_batching_dims);
  if (!d) return std::nullopt;
  for (size_t k = 0; k < n; ++k) b.r.operands.push_back(d->in);
  b.r.operands.push_back(d->idx);
  for (size_t k = 0; k < n; ++k) b.r.operands.push_back(d->slices);
  for (size_t k = 0; k < n; ++k) b.r.results.push_back(d->in);
  if (combines) b.r.reduction_kind = kind;
  return ReshardRule{std::move(b.r), {}};
}

}  // namespace

std::optional<ReshardRule> shardy_reshard_rule(const Module& m, const Op& op) {
  if (op.attr("sdy.sharding_rule")) return std::nullopt;
  if (op.name == "stablehlo.pad" || op.name == "stablehlo.slice") return pad_or_slice(m, op);
  if (op.name == "stablehlo.concatenate") return concatenate(m, op);
  if (op.name == "stablehlo.gather") return gather(m, op);
  if (op.name == "stablehlo.scatter") return scatter(m, op);
  if (op.name == "stablehlo.reduce" && op.results.size() > 1) return variadic_reduce(m, op);
  if (op.name == "stablehlo.broadcast_in_dim") {
    // Shardy: an operand dim of size 1 expanded in place is a factor of size 1 of its own (the
    // mesh pipeline's rule has it need replication), so a broadcast is a unary op.
    auto r = sharding_rule(m, op);
    if (!r) return std::nullopt;
    r->need_replication.assign(r->need_replication.size(), false);
    return ReshardRule{std::move(*r), {}};
  }
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
