// Factor rules of the ops Shardy's op sharding rule registry covers that the general rules
// do not: linear algebra (cholesky, triangular_solve, the linalg custom calls JAX emits),
// bitcast_convert across bit widths, fft, rng_bit_generator, collective_broadcast, and the
// custom call targets Shardy knows. A factor is written as the dim it occupies in each
// operand and result (-1: none).
#include "mesh/sharding_rules_shardy.hpp"

#include <algorithm>
#include <initializer_list>
#include <string_view>

#include "import/meshplan_custom_call.hpp"

namespace meshplan::planner::shlo {

namespace {

constexpr int64_t kNone = -1;

const std::vector<int64_t>& shape_of(const Module& m, ValueId v) {
  return m.values[v].type.shape;
}

class Rule {
 public:
  Rule(const Module& m, const Op& op) {
    for (ValueId v : op.operands) r_.operands.emplace_back(shape_of(m, v).size());
    for (ValueId v : op.results) r_.results.emplace_back(shape_of(m, v).size());
  }
  /// One factor of `size` at dim ins[k] of operand k and outs[k] of result k (kNone: absent).
  void factor(const std::vector<int64_t>& ins, const std::vector<int64_t>& outs, int64_t size,
              bool need_replication = false) {
    const int f = static_cast<int>(r_.factor_sizes.size());
    r_.factor_sizes.push_back(size);
    r_.reduction.push_back(false);
    r_.need_replication.push_back(need_replication);
    auto put = [&](std::vector<std::vector<std::vector<int>>>& tensors,
                   const std::vector<int64_t>& dims) {
      for (size_t k = 0; k < dims.size() && k < tensors.size(); ++k)
        if (dims[k] != kNone && static_cast<size_t>(dims[k]) < tensors[k].size())
          tensors[k][static_cast<size_t>(dims[k])].push_back(f);
    };
    put(r_.operands, ins);
    put(r_.results, outs);
  }
  /// A factor at dim `d` of every operand and result.
  void same(int64_t d, int64_t size, bool need_replication = false) {
    factor(std::vector<int64_t>(r_.operands.size(), d), std::vector<int64_t>(r_.results.size(), d),
           size, need_replication);
  }
  /// The dims of `shape` as one factor each, shared by every tensor of that rank or more.
  void pointwise(const std::vector<int64_t>& shape, size_t count, bool need_replication = false) {
    for (size_t d = 0; d < count && d < shape.size(); ++d) {
      std::vector<int64_t> ins, outs;
      for (const auto& t : r_.operands) ins.push_back(d < t.size() ? int64_t(d) : kNone);
      for (const auto& t : r_.results) outs.push_back(d < t.size() ? int64_t(d) : kNone);
      factor(ins, outs, shape[d], need_replication);
    }
  }
  FactorRule take(bool pass_through = false) {
    r_.pass_through = pass_through;
    return std::move(r_);
  }

 private:
  FactorRule r_;
};

/// Shardy's pointwise rule: one factor per dim of the first result (or operand), shared by
/// every tensor of that shape; other tensors (scalar bounds) take none.
FactorRule pointwise(const Module& m, const Op& op) {
  const auto& shape = shape_of(m, op.results.empty() ? op.operands[0] : op.results[0]);
  Rule b(m, op);
  for (size_t d = 0; d < shape.size(); ++d) {
    std::vector<int64_t> ins, outs;
    for (ValueId v : op.operands) ins.push_back(shape_of(m, v) == shape ? int64_t(d) : kNone);
    for (ValueId v : op.results) outs.push_back(shape_of(m, v) == shape ? int64_t(d) : kNone);
    b.factor(ins, outs, shape[d]);
  }
  return b.take(true);
}

bool is_one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

/// Batch dims (all but the last two) of operand 0 pass through to every tensor that has them.
void batch(Rule& b, const std::vector<int64_t>& shape) {
  b.pointwise(shape, shape.size() >= 2 ? shape.size() - 2 : 0);
}

std::optional<FactorRule> custom_call(const Module& m, const Op& op) {
  const std::string t = custom_call_target(op);
  const size_t ni = op.operands.size(), no = op.results.size();
  if (is_one_of(t, {"annotate_device_placement", "Cholesky", "CompactWyHelper", "InspectSharding",
                    "InvertDiagBlocksLowerTriangular", "InvertDiagBlocksUpperTriangular",
                    "LayoutConstraint", "mhlo.erf", "MoveToDevice", "MoveToHost", "X64SplitHigh",
                    "X64SplitLow", "xla.megascale.provide_metadata", "_SPMDInternalOp_MultiPad",
                    "_SPMDInternalOp_RotateRight", "_SPMDInternalOp_MultiRotate",
                    "_SPMDInternalOp_MultiSlice", "_SPMDInternalOp_Wrap"}) &&
      (ni > 0 || no > 0))
    return pointwise(m, op);
  if (t == "X64Combine" && no == 1) {
    // Feeding rng_bit_generator's state, the combined value stays replicated.
    for (const Op& user : m.ops)
      if (user.name == "stablehlo.rng_bit_generator" &&
          std::find(user.operands.begin(), user.operands.end(), op.results[0]) !=
              user.operands.end()) {
        Rule b(m, op);
        const auto& s = shape_of(m, op.results[0]);
        if (s.size() == 1) b.same(0, s[0], true);
        return b.take();
      }
    return pointwise(m, op);
  }
  if (ni == 1 && no == 2 && shape_of(m, op.operands[0]).size() >= 2) {
    const auto& in = shape_of(m, op.operands[0]);
    const int64_t d1 = static_cast<int64_t>(in.size()) - 2, d2 = d1 + 1;
    if (t == "Eigh") {
      // Eigenvectors share both matrix dims with the input; eigenvalues the last one.
      Rule b(m, op);
      batch(b, in);
      b.factor({d1}, {d1, kNone}, in[static_cast<size_t>(d1)]);
      b.factor({d2}, {d2, d1}, in[static_cast<size_t>(d2)]);
      return b.take();
    }
    if (t == "Qr" || t == "QrDecompositionBlock") {
      const auto& taus = shape_of(m, op.results[1]);
      if (taus.size() != static_cast<size_t>(d2)) return std::nullopt;
      Rule b(m, op);
      batch(b, in);
      b.factor({d1}, {d1, kNone}, in[static_cast<size_t>(d1)], true);
      b.factor({d2}, {d2, kNone}, in[static_cast<size_t>(d2)], true);
      b.factor({kNone}, {kNone, d1}, taus[static_cast<size_t>(d1)], true);
      return b.take();
    }
  }
  if (t == "ProductOfElementaryHouseholderReflectors" && ni == 2 && no == 1) {
    const auto& a = shape_of(m, op.operands[0]);
    const auto& taus = shape_of(m, op.operands[1]);
    if (a.size() < 2 || taus.size() != a.size() - 1) return std::nullopt;
    const int64_t d1 = static_cast<int64_t>(a.size()) - 2, d2 = d1 + 1;
    Rule b(m, op);
    batch(b, a);
    b.factor({d1, kNone}, {d1}, a[static_cast<size_t>(d1)], true);
    b.factor({d2, kNone}, {d2}, a[static_cast<size_t>(d2)], true);
    b.factor({kNone, d1}, {kNone}, taus[static_cast<size_t>(d1)], true);
    return b.take();
  }
  if (t == "mhlo.topk" && ni == 1 && no == 2) {
    // Dims of equal size pass through; the top-k dim is a factor needing replication.
    const auto& in = shape_of(m, op.operands[0]);
    const auto& out = shape_of(m, op.results[0]);
    if (in.size() != out.size()) return std::nullopt;
    Rule b(m, op);
    for (size_t d = 0; d < in.size(); ++d) b.same(int64_t(d), in[d], in[d] != out[d]);
    return b.take();
  }
  if ((t == "ApproxTopK" || t == "PartialReduce") && ni == 4 && no == 2) {
    // Operands: operand, iota, two scalar inits; results: values, indices. The reduced dim of
    // the inputs and the k-sized dim of the results are factors of their own.
    const auto& in = shape_of(m, op.operands[0]);
    const auto& out = shape_of(m, op.results[0]);
    if (in.size() != out.size()) return std::nullopt;
    Rule b(m, op);
    for (size_t d = 0; d < in.size(); ++d) {
      const int64_t dd = static_cast<int64_t>(d);
      if (in[d] == out[d]) {
        b.factor({dd, dd, kNone, kNone}, {dd, dd}, in[d]);
      } else {
        b.factor({dd, dd, kNone, kNone}, {kNone, kNone}, in[d]);
        b.factor({kNone, kNone, kNone, kNone}, {dd, dd}, out[d], true);
      }
    }
    return b.take();
  }
  return std::nullopt;
}

std::optional<FactorRule> bitcast_convert(const Module& m, const Op& op) {
  if (op.operands.size() != 1 || op.results.size() != 1) return std::nullopt;
  const auto& in = shape_of(m, op.operands[0]);
  const auto& out = shape_of(m, op.results[0]);
  // Shared dims pass through; the extra minor dim of the narrower type needs replication.
  const auto& shorter = in.size() < out.size() ? in : out;
  Rule b(m, op);
  for (size_t d = 0; d < shorter.size(); ++d) b.same(int64_t(d), shorter[d]);
  if (in.size() < out.size())
    b.factor({kNone}, {int64_t(out.size()) - 1}, out.back(), true);
  else if (in.size() > out.size())
    b.factor({int64_t(in.size()) - 1}, {kNone}, in.back(), true);
  return b.take(in.size() == out.size());
}

bool flag(const Op& op, std::string_view name) {
  const Attr* a = op.prop(name);
  if (!a) a = op.attr(name);
  if (!a) return false;
  return a->kind == Attr::Kind::keyword || a->kind == Attr::Kind::opaque ? a->text == "true"
                                                                         : a->i != 0;
}

std::optional<FactorRule> triangular_solve(const Module& m, const Op& op) {
  if (op.operands.size() != 2 || op.results.size() != 1) return std::nullopt;
  const auto& a = shape_of(m, op.operands[0]);
  const auto& bs = shape_of(m, op.operands[1]);
  if (a.size() < 2 || bs.size() != a.size()) return std::nullopt;
  const Attr* ta = op.prop("transpose_a") ? op.prop("transpose_a") : op.attr("transpose_a");
  const bool transposed = ta && (ta->text.find("NO_TRANSPOSE") == std::string::npos);
  const int64_t d1 = static_cast<int64_t>(a.size()) - 2, d2 = d1 + 1;
  auto at = [](const std::vector<int64_t>& s, int64_t d) { return s[static_cast<size_t>(d)]; };
  Rule b(m, op);
  batch(b, a);
  if (flag(op, "left_side")) {
    // op(a) @ x = b.
    const int64_t a_free = transposed ? d2 : d1, a_contract = transposed ? d1 : d2;
    b.factor({a_free, d1}, {kNone}, at(a, a_free), true);
    b.factor({kNone, d2}, {d2}, at(bs, d2), true);
    b.factor({a_contract, kNone}, {d1}, at(a, a_contract), true);
  } else {
    // x @ op(a) = b.
    const int64_t a_free = transposed ? d1 : d2, a_contract = transposed ? d2 : d1;
    b.factor({kNone, d1}, {d1}, at(bs, d1), true);
    b.factor({a_free, d2}, {kNone}, at(a, a_free), true);
    b.factor({a_contract, kNone}, {d2}, at(a, a_contract), true);
  }
  return b.take();
}

std::optional<FactorRule> rng_bit_generator(const Module& m, const Op& op) {
  if (op.operands.size() != 1 || op.results.size() != 2) return std::nullopt;
  // The state is replicated and unrelated to the output, whose dims are free.
  const auto& state = shape_of(m, op.operands[0]);
  const auto& out = shape_of(m, op.results[1]);
  Rule b(m, op);
  for (size_t d = 0; d < state.size(); ++d)
    b.factor({int64_t(d)}, {int64_t(d), kNone}, state[d], true);
  for (size_t d = 0; d < out.size(); ++d) b.factor({kNone}, {kNone, int64_t(d)}, out[d]);
  return b.take();
}

}  // namespace

std::optional<FactorRule> registry_rule(const Module& m, const Op& op) {
  const std::string_view n = op.name;
  if (n == "stablehlo.custom_call") return custom_call(m, op);
  if (n == "stablehlo.bitcast_convert") return bitcast_convert(m, op);
  if (n == "stablehlo.cholesky" && op.operands.size() == 1 && op.results.size() == 1) {
    // Batch dims pass through; the two matrix dims need replication.
    const auto& s = shape_of(m, op.operands[0]);
    Rule b(m, op);
    for (size_t d = 0; d < s.size(); ++d) b.same(int64_t(d), s[d], d + 2 >= s.size());
    return b.take();
  }
  if (n == "stablehlo.fft" && op.operands.size() == 1 && op.results.size() == 1) {
    // The leading dims are batch dims and pass through; each of the last len(fft_length) dims
    // is transformed whole: one factor of operand and result that needs replication (the last
    // one too where RFFT/IRFFT change its size; it then never propagates either).
    const Attr* length = op.prop("fft_length") ? op.prop("fft_length") : op.attr("fft_length");
    const auto& in = shape_of(m, op.operands[0]);
    const size_t fft_dims = length && length->kind == Attr::Kind::dense_array ? length->ints.size()
                                                                               : in.size() + 1;
    if (fft_dims > in.size() || in.size() != shape_of(m, op.results[0]).size()) return std::nullopt;
    Rule b(m, op);
    for (size_t d = 0; d < in.size(); ++d) b.same(int64_t(d), in[d], d + fft_dims >= in.size());
    return b.take();
  }
  if (n == "stablehlo.triangular_solve") return triangular_solve(m, op);
  if (n == "stablehlo.rng_bit_generator") return rng_bit_generator(m, op);
  if (n == "stablehlo.collective_broadcast" && op.operands.size() == op.results.size() &&
      !op.operands.empty())
    return pointwise(m, op);
  return std::nullopt;
}

bool shardy_skips_op(const Module& m, const Op& op) {
  // A call's operands are resharded to the callee's argument shardings before it (the export
  // pass does that); its results keep the shardings the call states.
  if (op.name == "func.call") return true;
  // A stated rule marked `custom` (`#sdy.op_sharding_rule<(...)->(...) {...}, custom>`) is
  // for propagation only: the op itself handles its operands' shardings.
  if (const Attr* r = op.attr("sdy.sharding_rule")) {
    const std::string t =
        r->kind == Attr::Kind::opaque || r->kind == Attr::Kind::string ? r->text : attr_string(*r);
    const size_t sizes_end = t.rfind('}');
    return sizes_end != std::string::npos && t.find("custom", sizes_end) != std::string::npos;
  }
  return op.name == "stablehlo.custom_call" && !meshplan_call_kind(op) &&
         !custom_call_target(op).starts_with("check.") && !custom_call(m, op);
}

}  // namespace meshplan::planner::shlo
