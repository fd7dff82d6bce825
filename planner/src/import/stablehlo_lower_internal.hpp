// Shared state of the StableHLO -> graph IR lowering (stablehlo_lower*.cpp): the value map,
// values folded at lowering time (constants, iota) and broadcasts waiting for a consumer that
// broadcasts implicitly (numpy rules), plus the helpers every op lowering uses.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo::lowering {

using GValue = planner::ValueId;

/// A value known at lowering time, row-major (integers and booleans as floats).
struct Folded {
  std::vector<int64_t> shape;
  std::vector<float> data;
  bool splat() const;
};

/// One lowering run. Not thread-safe; lives for one lower_to_graph call.
class Lowering {
 public:
  explicit Lowering(const Module& m) : m_(m) {}

  const Module& module() const { return m_; }
  Graph& graph() { return g_; }
  const TensorType& type(ValueId v) const { return m_.values[v].type; }
  const Op* def(ValueId v) const;

  /// `file:line:col: unimplemented: <what>` at `op`.
  std::unexpected<Error> unimplemented(const Op& op, std::string_view what) const;

  /// Adds a graph value with this shape and the dtype of `element`.
  Result<GValue> new_value(std::vector<int64_t> shape, DType dtype, std::string prefix = "v");
  /// Appends a graph op; its one result gets the declared shape and dtype (validate() checks
  /// the declared shape against the op's shape rule).
  Result<GValue> emit(OpKind kind, std::vector<GValue> operands, std::vector<Attribute> attrs,
                      std::vector<int64_t> shape, DType dtype);
  /// A graph constant argument holding `f` (dtype of `element`).
  Result<GValue> constant(const Folded& f, DType dtype);

  /// The graph value of module value `v` as used by `user`: lowered values as they are,
  /// folded values become graph constants, pending broadcasts are materialised
  /// (multiply by ones, exact). Errors name the producing op when it has no lowering.
  Result<GValue> use(ValueId v, const Op& user);
  /// Like use(), for an operand of an op that broadcasts numpy-style: pending broadcasts stay
  /// unbroadcast and splat constants become one-element constants.
  Result<GValue> use_broadcasting(ValueId v, const Op& user);

  void bind(ValueId v, GValue g) { map_[v] = g; }
  /// The graph value `v` is bound to, if any (not folded, not a pending broadcast).
  std::optional<GValue> bound(ValueId v) const {
    auto it = map_.find(v);
    return it == map_.end() ? std::nullopt : std::optional<GValue>(it->second);
  }
  void fold(ValueId v, Folded f) { folded_[v] = std::move(f); }
  const Folded* folded(ValueId v) const;
  /// `v` is `source` (rank-aligned, numpy-broadcastable to v's shape) broadcast.
  void defer_broadcast(ValueId v, GValue source) { pending_[v] = source; }
  /// Result value of `op` (one result), with the module's declared (local) shape and dtype.
  Result<GValue> emit_for(const Op& op, OpKind kind, std::vector<GValue> operands,
                          std::vector<Attribute> attrs = {});
  /// Graph value reshaped to `shape` (no op when equal).
  Result<GValue> reshape(GValue v, const std::vector<int64_t>& shape);
  /// Graph value permuted by `perm` (no op when the identity).
  Result<GValue> permute(GValue v, const std::vector<int64_t>& perm);

 private:
  const Module& m_;
  Graph g_;
  std::map<ValueId, GValue> map_;
  std::map<ValueId, Folded> folded_;
  std::map<ValueId, GValue> pending_;
};

/// True when every entry of `dims` is a dim of a rank-`rank` tensor, each at most once.
bool dims_ok(const std::vector<int64_t>& dims, size_t rank);

/// Module element type -> meshplan dtype, or an unimplemented error at `loc`.
Result<DType> dtype_of(const TensorType& t, const Location& loc);

/// A 2-D stablehlo.convolution read into meshplan's conv2d terms: permutations taking the
/// operands to NHWC / OHWI and conv2d's NHWC result to the written output layout.
struct ConvSpec {
  std::vector<int64_t> in_perm, w_perm, out_perm;
  std::vector<int64_t> stride = {1, 1}, pad = {0, 0, 0, 0}, dilation = {1, 1};
  int64_t groups = 1;
  std::vector<int64_t> lhs_dilation = {1, 1};  ///< Only with allow_lhs_dilation.
  int64_t batch_groups = 1;                    ///< Only with allow_batch_groups.
};
/// Errors (unimplemented, at op's location) for forms conv2d cannot express; lhs dilation
/// (transposed convolution) and batch_group_count > 1 only when the caller handles them.
Result<ConvSpec> conv_spec(const Op& op, bool allow_lhs_dilation = false,
                           bool allow_batch_groups = false);
/// Interior padding of dim `d` of `x` (shape `shape`, updated): f - 1 copies of `fill`
/// between neighbours, n -> (n - 1) f + 1 (stablehlo_lower_window.cpp).
Result<GValue> interior_pad(Lowering& l, GValue x, std::vector<int64_t>& shape, size_t d, int64_t f,
                            float fill);

/// Zero-size tensors (stablehlo_lower_empty.cpp): folds an op whose results are all empty and
/// replaces the ops that make a non-empty result from an empty operand (concatenate, reduce,
/// pad, dot_general, dynamic_update_slice, scatter) by what they compute without it; any other
/// op with an empty operand and a non-empty result is a located error. false when `op` has no
/// empty operand or result (lower it as usual).
Result<bool> lower_empty(Lowering& l, const Op& op);

/// i8, i16, ui8 and ui16 are computed in 32-bit words (i32, u32). After an op that can leave
/// the type's range (add, subtract, multiply, negate, abs, divide, power, convert, iota, reduce,
/// reduce_window, dot_general, convolution, scatter, select_and_scatter), its narrow results are
/// wrapped modulo 2^8 / 2^16 as the spec says (stablehlo_lower_narrow.cpp): ui8/ui16 keep the
/// low bits (x & 0xff), i8/i16 sign-extend them ((x << 24) >> 24, arithmetic). Folded values
/// wrap on the host.
Status wrap_narrow(Lowering& l, const Op& op);
/// i64 and ui64 are computed in 32-bit words (stablehlo_lower_wide.cpp). A folded i64/ui64
/// result of add, subtract, multiply, negate, abs or convert outside the word's range is a
/// located error; a computed one gets an overflow check: a one-element 0/1 value, 1 when an
/// element's exact value leaves the word, appended by add_overflow_outputs as a plan output
/// named `overflow:<op>@<file:line:col>` that the runtime requires to be 0.
struct PendingOverflow {
  GValue flag = 0;
  std::string op;   ///< The module op's name (stablehlo.add ...).
  std::string loc;  ///< Its file:line:col.
};
/// `first` is the index of the first graph op lowered for `op`. A computed i64/ui64 result of
/// reduce, reduce_window, dot_general, convolution, scatter, select_and_scatter or power is
/// checked against an f32 bound of its exact value (stablehlo_lower_wide.cpp), or refused when
/// its lowering goes through ops that bound cannot follow.
Status check_wide(Lowering& l, const Op& op, size_t first, std::vector<PendingOverflow>& pending);
Status add_overflow_outputs(Lowering& l, const std::vector<PendingOverflow>& pending);
/// The range of a narrow integer type `e` (i8, i16, ui8, ui16); nullopt for other types.
std::optional<std::pair<double, double>> narrow_range(std::string_view e);

// Op lowerings (stablehlo_lower_ops.cpp). Each lowers one module op, binding its results.
Status lower_dot_general(Lowering& l, const Op& op);
Status lower_reduce(Lowering& l, const Op& op);
/// jnp.argmax / argmin's variadic reduce (stablehlo_lower_argreduce.cpp).
Status lower_arg_reduce(Lowering& l, const Op& op);
Status lower_convolution(Lowering& l, const Op& op);
/// reduce_window and select_and_scatter (stablehlo_lower_window.cpp).
Status lower_reduce_window(Lowering& l, const Op& op);
Status lower_select_and_scatter(Lowering& l, const Op& op);
Status lower_custom_call(Lowering& l, const Op& op);
/// StableHLO interpreter checks (stablehlo_lower_check.cpp): `custom_call @check.expect_close`,
/// `@check.expect_eq`, `@check.expect_almost_eq` (actual, expected; no result).
struct PendingCheck {
  GValue actual = 0, expected = 0;
  std::string kind;     ///< expect_close, expect_eq, expect_almost_eq
  std::string element;  ///< The module's element type of both operands ("bf16", "f64", "i1"...).
  std::string loc;      ///< file:line:col of the check.
};
bool is_check_call(const Op& op);
/// The check's two graph values, or nullopt for a check of zero-size tensors (vacuously true).
/// Errors (located): another check.* target, operands other than two tensors of one type.
Result<std::optional<PendingCheck>> lower_check(Lowering& l, const Op& op);
/// Appends each check's actual and expected as plan outputs (after the program's results),
/// named `check:<i>:<kind>:<element>:<actual|expected>@<file:line:col>`; a value that is a
/// program result or input, or already another check's output, is copied first.
Status add_check_outputs(Lowering& l, const std::vector<PendingCheck>& checks);
/// Integer bit ops on i32/ui32 tensors (and, or, xor, not, the shifts, popcnt,
/// count_leading_zeros, bitcast_convert): the first six to their device ops, popcnt and
/// count_leading_zeros onto shifts, ands and adds, bitcast_convert between f32/i32/ui32 to bitcast.
/// Other element types are a located error (and/or/not of i1 lower elsewhere).
bool is_integer_bit_op(std::string_view name);
/// Whether integer constant `op` (range-checked) has a value f32 does not hold exactly, other
/// than its dtype's largest value; lower_word_constant then builds it on the device, exactly,
/// as (w >> 16) << 16 | (w & 0xffff) of two f32-exact constants.
bool needs_word_constant(const Lowering& l, const Op& op);
Status lower_word_constant(Lowering& l, const Op& op);
Status lower_integer_bit_op(Lowering& l, const Op& op);
/// The bit ops on i64/ui64 (32-bit words): folded exactly when every operand is folded,
/// otherwise those whose word result is exact; others are located errors.
Status lower_wide_bit_op(Lowering& l, const Op& op);
// Masks and bounds (stablehlo_lower_select.cpp).
/// Folds a compare of two folded values; otherwise does nothing: use() lowers the compare
/// (lower_compare) when a user needs its value, so that select(compare(a, b), a, b) can become
/// maximum / minimum without a mask.
Status fold_compare(Lowering& l, const Op& op);
/// compare -> eq .. ge (FLOAT, SIGNED, UNSIGNED), 0/1 in the operands' dtype.
Status lower_compare(Lowering& l, const Op& op);
/// select -> where, or maximum / minimum for select(compare(a, b), a|b, b|a); folded when its
/// operands are.
Status lower_select(Lowering& l, const Op& op);
/// clamp -> clamp (splat constant bounds) or maximum then minimum (tensor bounds).
Status lower_clamp(Lowering& l, const Op& op);
/// and / or / not of i1 values: multiply / maximum of 0/1 values, eq(x, 0).
Status lower_logical(Lowering& l, const Op& op);
/// convert to or from i1: `x != 0`, or a typecast of a 0/1 value.
Status lower_convert_bool(Lowering& l, const Op& op);
/// Whether `op` is a reduce of i1 whose region computes and (true) or or (false) of its
/// arguments (jnp.all, jnp.any, jnp.take's fill mask, select/or forms; region_reduction);
/// nullopt for any other reduce.
std::optional<bool> logical_reduce_kind(const Lowering& l, const Op& op);
/// That reduce: min (and) or max (or) of the 0/1 mask; a non-identity init folds to it, a
/// computed init joins by min (and) or max (or).
Status lower_reduce_logical(Lowering& l, const Op& op);
/// Rank-0 module value `v` as the graph operand of an elementwise op whose result has rank
/// `rank` (reshaped to all ones, numpy-broadcasting): a reduce's computed init.
Result<GValue> join_operand(Lowering& l, ValueId v, const Op& user, size_t rank);
// Indexing (stablehlo_lower_indexing.cpp): onto embedding with index arithmetic.
/// gather in its general form (offset, collapsed and batching dims, clamped start indices).
Status lower_gather(Lowering& l, const Op& op);
/// dynamic_slice: a gather of one slice whose start indices are rank-0 operands.
Status lower_dynamic_slice(Lowering& l, const Op& op);
/// dynamic_update_slice: the update gathered onto the operand's grid, selected by a mask.
Status lower_dynamic_update_slice(Lowering& l, const Op& op);
/// reverse: rows of the operand read in reversed order (constant indices).
Status lower_reverse(Lowering& l, const Op& op);
/// pad with interior or negative padding: operand rows placed on the padded grid (constant
/// indices), the padding value elsewhere.
Status lower_pad_general(Lowering& l, const Op& op);
/// scatter (variadic: each result's region combines only its own input and update) with an
/// add / maximum / minimum / replace region: every update row compared with
/// every operand row (bounded), combined by reductions and selected by where.
Status lower_scatter(Lowering& l, const Op& op);
/// a < b in the IEEE total order (-NaN below -inf, +NaN above +inf, -0 below +0).
bool total_lt(double a, double b);
/// Evaluates region `b` on scalar `args` (stablehlo_lower_region.cpp): the values its return
/// yields, or nullopt when it uses an op the evaluator does not know (constant, compare,
/// select, and/or/not, maximum/minimum are known; compares with TOTALORDER only when
/// `total_order`). For recognising comparators and reducers by probing them.
std::optional<std::vector<double>> eval_scalar_region(const Module& m, const Block& b,
                                                      std::span<const double> args,
                                                      bool total_order);
/// The binary op a reduce region of two rank-0 arguments computes, judged by what it computes
/// rather than how it is written: on i1 its truth table ("stablehlo.and" or "stablehlo.or",
/// e.g. `select(or(a, b), true, false)`); on other types agreement with maximum or minimum on
/// every pair of probe values, NaN included (e.g. `select(a > b or a != a, a, b)`). nullopt
/// for any other region, or one the evaluator cannot run.
std::optional<std::string> region_reduction(const Module& m, const Block& b);
/// sort by a lexicographic comparator (stablehlo_lower_sort.cpp): pairwise ranks, then
/// embedding reads.
Status lower_sort(Lowering& l, const Op& op);
/// chlo's hyperbolic and inverse trigonometric ops (is_chlo_decomposed), written with device
/// ops (stablehlo_lower_chlo.cpp).
Status lower_chlo(Lowering& l, const Op& op);
/// chlo.top_k: a stable descending sort of (x, iota) along the last dim, sliced to k.
Status lower_top_k(Lowering& l, const Op& op);
/// custom_call @mhlo.topk (XLA's TopK, mhlo.attributes = {k, largest}): the k largest (largest =
/// true, the default) or smallest along the last dim, sorted, equal values by lower index.
Status lower_mhlo_topk(Lowering& l, const Op& op);
/// reduce_precision to a format the operand's values already fit, or f32 to bf16's (8, 7): a
/// round trip through bf16 (round to nearest even) (stablehlo_lower_precision.cpp).
Status lower_reduce_precision(Lowering& l, const Op& op);
/// StableHLO collectives and sdy.all_slice (stablehlo_lower_mesh.cpp).
Status lower_collective(Lowering& l, const Op& op);
/// Graph::mesh and the boundary shard specs from the manual computation `manual` (null: a
/// single-chip program). `program_args`: graph arguments that are program inputs (the rest are
/// constants the lowering added, replicated).
Status lower_boundary(Graph& g, const Module& m, const Op* manual, size_t program_args);

}  // namespace meshplan::planner::shlo::lowering
