// Variadic stablehlo.reduce as JAX emits jnp.argmax / jnp.argmin: (values, iota) reduced
// together by a region that compares the values and breaks ties by the smaller index. The
// region is recognised by what it computes on probe inputs (any spelling of the same rule
// lowers), then lowered with reduce_max/reduce_min, eq/ne, where and reduce_min over indices.
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "import/stablehlo_lower_internal.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// Whether the reducer is jnp.argmax's (`max` true) or jnp.argmin's rule: the larger (smaller)
/// value wins, NaN wins, equal values keep the smaller index.
bool is_arg_reducer(const Module& m, const Block& b, bool max) {
  if (b.args.size() != 4) return false;
  double hi = max ? 2 : 1, lo = max ? 1 : 2;
  struct Probe {
    std::array<double, 4> in;
    std::pair<double, double> want;
  };
  const Probe probes[] = {
      {{1, 0, 2, 1}, {hi == 2 ? 2 : 1, hi == 2 ? 1 : 0}},
      {{2, 0, 1, 1}, {hi == 2 ? 2 : 1, hi == 2 ? 0 : 1}},
      {{lo, 5, hi, 3}, {hi, 3}},
      {{hi, 3, lo, 5}, {hi, 3}},
      {{3, 1, 3, 0}, {3, 0}},
      {{3, 0, 3, 1}, {3, 0}},
      {{kNaN, 0, 1, 1}, {kNaN, 0}},
      {{1, 0, kNaN, 1}, {kNaN, 1}},
      {{kNaN, 0, kNaN, 1}, {kNaN, 0}},
      {{max ? -kInf : kInf, 0, max ? -kInf : kInf, 2}, {max ? -kInf : kInf, 0}},
  };
  for (const Probe& p : probes) {
    // TOTALORDER compares are not this rule (they order -0 below +0, -NaN below numbers).
    auto got = eval_scalar_region(m, b, p.in, false);
    if (!got || got->size() != 2) return false;
    bool value_ok = std::isnan(p.want.first) ? std::isnan((*got)[0]) : (*got)[0] == p.want.first;
    if (!value_ok || (*got)[1] != p.want.second) return false;
  }
  return true;
}

/// Whether `init` is the rule's identity for the value input's element type `e`: -inf (+inf)
/// for floats, or the lowest (greatest) finite float, which XLA also writes; for integers a
/// constant at or below (above) every value the type holds here, its least (greatest) value:
/// i64 and ui64 hold only 32-bit word values (larger ones are refused), so any constant beyond
/// the word is one as well. Only such an init never beats an element, so the index init 0 never
/// shows through (when every element equals it, the first index is 0 too).
bool is_arg_identity(const Lowering& l, ValueId init, std::string_view e, bool max) {
  if (e == "f32" || e == "f64" || e == "f16" || e == "bf16") {
    const Folded* f = l.folded(init);
    constexpr float kFInf = std::numeric_limits<float>::infinity();
    return f && f->data.size() == 1 &&
           (f->data[0] == (max ? -kFInf : kFInf) ||
            f->data[0] ==
                (max ? std::numeric_limits<float>::lowest() : std::numeric_limits<float>::max()));
  }
  std::optional<std::pair<double, double>> held;
  if (e == "i8") held = {-128, 127};
  if (e == "i16") held = {-32768, 32767};
  if (e == "i32" || e == "i64") held = {-2147483648.0, 2147483647.0};
  if (e == "ui8") held = {0, 255};
  if (e == "ui16") held = {0, 65535};
  if (e == "ui32" || e == "ui64") held = {0, 4294967295.0};
  const Op* def = l.def(init);
  if (!held || !def || def->name != "stablehlo.constant") return false;
  const Attr* a = def->prop("value");
  if (!a || a->values.size() != 1) return false;
  return max ? a->values[0] <= held->first : a->values[0] >= held->second;
}

}  // namespace

Status lower_arg_reduce(Lowering& l, const Op& op) {
  const Module& m = l.module();
  auto refuse = [&](std::string_view why) {
    return l.unimplemented(op, str("variadic stablehlo.reduce ", why,
                                   " (supported: jnp.argmax/argmin's two-input reduce of values "
                                   "and an iota over one dimension)"));
  };
  if (op.operands.size() != 4 || op.results.size() != 2 || op.regions.size() != 1)
    return refuse(str("with ", op.operands.size() / 2, " inputs"));
  const Block& region = op.regions[0];
  bool max = is_arg_reducer(m, region, true);
  if (!max && !is_arg_reducer(m, region, false))
    return refuse("whose region is not an argmax/argmin rule");
  const std::vector<int64_t> dims =
      op.prop("dimensions") ? op.prop("dimensions")->ints : std::vector<int64_t>{};
  const auto& in_shape = l.type(op.operands[0]).shape;
  if (dims.size() != 1 || !dims_ok(dims, in_shape.size())) return refuse("over several dims");
  const size_t d = static_cast<size_t>(dims[0]);
  const int64_t n = in_shape[d];
  // The index input must be an iota along the reduced dim, the inits the rule's identity and 0.
  const Folded* idx = l.folded(op.operands[1]);
  const Folded* init_i = l.folded(op.operands[3]);
  if (!idx) return refuse("whose index input is not a constant");
  int64_t inner = 1;
  for (size_t k = d + 1; k < in_shape.size(); ++k) inner *= in_shape[k];
  for (size_t i = 0; i < idx->data.size(); ++i)
    if (idx->data[i] != static_cast<float>((static_cast<int64_t>(i) / inner) % n))
      return refuse("whose index input is not an iota along the reduced dimension");
  const std::string& element = l.type(op.operands[0]).element;
  if (!is_arg_identity(l, op.operands[2], element, max))
    return refuse(str("whose value init is not the ", max ? "least" : "greatest", " ", element,
                      " value"));
  if (!init_i || init_i->data.size() != 1 || init_i->data[0] != 0)
    return refuse("whose index init is not 0");

  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  const DType xd = l.graph().values[x].dtype;
  if (xd == DType::bf16 && n > 256) return refuse("of more than 256 bf16 values");
  const std::vector<int64_t>& out = l.type(op.results[0]).shape;
  std::vector<int64_t> keep = in_shape;
  keep[d] = 1;
  std::vector<int64_t> along(in_shape.size(), 1);
  along[d] = n;
  // best = reduce_max(x); first index where x == best, or of the first NaN if there is one.
  GValue best = MESHPLAN_TRY(
      l.emit(max ? OpKind::reduce_max : OpKind::reduce_min, {x}, {{"dims", dims}}, out, xd));
  GValue best_k = MESHPLAN_TRY(l.reshape(best, keep));
  Folded iota{along, {}};
  for (int64_t i = 0; i < n; ++i) iota.data.push_back(static_cast<float>(i));
  GValue positions = MESHPLAN_TRY(l.constant(iota, xd));
  GValue none = MESHPLAN_TRY(l.constant(Folded{{1}, {static_cast<float>(n)}}, xd));
  auto first_where = [&](GValue mask) -> Result<GValue> {
    GValue cand = MESHPLAN_TRY(l.emit(OpKind::where, {mask, positions, none}, {}, in_shape, xd));
    return l.emit(OpKind::reduce_min, {cand}, {{"dims", dims}}, out, xd);
  };
  GValue at_best = MESHPLAN_TRY(l.emit(OpKind::eq, {x, best_k}, {}, in_shape, xd));
  GValue first_best = MESHPLAN_TRY(first_where(at_best));
  GValue nan = MESHPLAN_TRY(l.emit(OpKind::ne, {x, x}, {}, in_shape, xd));
  GValue first_nan = MESHPLAN_TRY(first_where(nan));
  GValue has_nan = MESHPLAN_TRY(l.emit(OpKind::lt, {first_nan, none}, {}, out, xd));
  GValue index = MESHPLAN_TRY(l.emit(OpKind::where, {has_nan, first_nan, first_best}, {}, out, xd));
  DType id = MESHPLAN_TRY(dtype_of(l.type(op.results[1]), op.loc));
  if (id != xd)
    index = MESHPLAN_TRY(l.emit(OpKind::typecast, {index},
                                {{"dtype", std::string(device::dtype_name(id))}}, out, id));
  l.bind(op.results[0], best);
  l.bind(op.results[1], index);
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
