// Indexing ops lowered onto the device's embedding gather: stablehlo.gather (general form),
// dynamic_slice and dynamic_update_slice. No new device op is needed: the start indices are
// clamped (maximum / minimum), scaled by the operand's row strides and summed into one row
// index per gathered element; embedding then reads rows of the operand seen as a
// [rows, C] table, where C spans the trailing dims that every slice takes whole. Index
// arithmetic runs in the indices' integer dtype, which the device computes exactly below 2^24:
// larger row spaces are refused.
#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <numeric>
#include <span>
#include <string_view>

#include "import/stablehlo_gather.hpp"
#include "import/stablehlo_lower_internal.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::planner::shlo::lowering {

namespace {

constexpr int64_t kExactRows = int64_t{1} << 24;

/// An inherent attribute, in the properties (`<{...}>`) or the trailing dict of older exporters.
const Attr* inherent(const Op& op, std::string_view name) {
  if (const Attr* a = op.prop(name)) return a;
  return op.attr(name);
}

/// Integers of array<i64: ...>, [..] or dense<[..]>; nullopt when `a` is none of them.
std::optional<std::vector<int64_t>> int_list(const Attr& a) {
  if (a.kind == Attr::Kind::dense_array) return a.ints;
  if (a.kind == Attr::Kind::dense) {
    std::vector<int64_t> v;
    for (double x : a.values) v.push_back(static_cast<int64_t>(x));
    if (a.values.size() == 1 && !a.type.shape.empty())
      v.assign(static_cast<size_t>(device::volume(a.type.shape)), v[0]);
    return v;
  }
  if (a.kind == Attr::Kind::array) {
    std::vector<int64_t> v;
    for (const Attr& e : a.list) {
      if (e.kind != Attr::Kind::integer) return std::nullopt;
      v.push_back(e.i);
    }
    return v;
  }
  return std::nullopt;
}

}  // namespace
}  // namespace meshplan::planner::shlo::lowering

namespace meshplan::planner::shlo {

/// The fields of `NAME = #stablehlo.KIND<field = [1, 2], ..., index_vector_dim = 1>` (gather's
/// and scatter's dimension numbers), each known field read as a list of integers
/// (index_vector_dim as one). Errors name the op's location, the field and the attribute.
using DimFields = std::map<std::string, std::vector<int64_t>, std::less<>>;
Result<DimFields> read_dim_fields(const Op& op, std::string_view op_name,
                                  std::string_view attr_name, std::string_view kind,
                                  std::span<const std::string_view> keys) {
  const Attr* dn = lowering::inherent(op, attr_name);
  std::string prefix = str("#stablehlo.", kind, "<");
  if (!dn || dn->kind != Attr::Kind::opaque || !dn->text.starts_with(prefix))
    return fail(ErrorCode::unimplemented, op.loc.str(), ": unimplemented: ", op_name, " without ",
                attr_name, " = ", prefix, "...>");
  DimFields out;
  std::string_view t = dn->text;
  t.remove_prefix(prefix.size());
  if (t.ends_with('>')) t.remove_suffix(1);
  auto bad = [&](std::string_view what) {
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op_name, ": ", what, " in ",
                attr_name, " ", dn->text);
  };
  auto skip = [&] {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\n' || t.front() == ','))
      t.remove_prefix(1);
  };
  auto number = [&]() -> std::optional<int64_t> {
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    int64_t x = 0;
    auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), x);
    if (ec != std::errc()) return std::nullopt;
    t.remove_prefix(static_cast<size_t>(end - t.data()));
    return x;
  };
  for (skip(); !t.empty(); skip()) {
    size_t eq = t.find('=');
    if (eq == std::string_view::npos) return bad("expected 'name = value'");
    std::string_view key = t.substr(0, eq);
    while (key.ends_with(' ')) key.remove_suffix(1);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string known;
      for (std::string_view k : keys) known += str(known.empty() ? "" : ", ", k);
      return bad(str("unknown field '", key, "' (known: ", known, ")"));
    }
    t.remove_prefix(eq + 1);
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    std::vector<int64_t>& dst = out[std::string(key)];
    if (key == "index_vector_dim") {
      auto x = number();
      if (!x) return bad("index_vector_dim is not an integer");
      dst = {*x};
      continue;
    }
    if (t.empty() || t.front() != '[') return bad(str(key, " is not a list [...]"));
    t.remove_prefix(1);
    while (true) {
      while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
      if (t.empty()) return bad(str(key, " is not closed"));
      if (t.front() == ']') break;
      auto x = number();
      if (!x) return bad(str(key, " has an entry that is not an integer"));
      dst.push_back(*x);
      while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
      if (!t.empty() && t.front() == ',') t.remove_prefix(1);
    }
    t.remove_prefix(1);
  }
  // StableHLO prints index_vector_dim only when it is not 0, its default.
  if (!out.contains("index_vector_dim")) out["index_vector_dim"] = {0};
  return out;
}

/// `#stablehlo.gather<offset_dims = [1], ..., index_vector_dim = 1>` read field by field.
Result<GatherDims> read_gather_dims(const Op& op) {
  static constexpr std::string_view kKeys[] = {
      "offset_dims",           "collapsed_slice_dims",
      "operand_batching_dims", "start_indices_batching_dims",
      "start_index_map",       "index_vector_dim"};
  DimFields f =
      MESHPLAN_TRY(read_dim_fields(op, "stablehlo.gather", "dimension_numbers", "gather", kKeys));
  GatherDims g;
  g.offset_dims = f["offset_dims"];
  g.collapsed_slice_dims = f["collapsed_slice_dims"];
  g.operand_batching_dims = f["operand_batching_dims"];
  g.start_indices_batching_dims = f["start_indices_batching_dims"];
  g.start_index_map = f["start_index_map"];
  g.index_vector_dim = f["index_vector_dim"][0];
  if (g.index_vector_dim < 0)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.gather: index_vector_dim is missing in dimension_numbers ",
                lowering::inherent(op, "dimension_numbers")->text);
  const Attr* ss = lowering::inherent(op, "slice_sizes");
  auto sizes = ss ? lowering::int_list(*ss) : std::nullopt;
  if (!sizes)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.gather: slice_sizes = array<i64: ...> is missing");
  g.slice_sizes = *sizes;
  return g;
}

Result<ScatterDims> read_scatter_dims(const Op& op) {
  static constexpr std::string_view kKeys[] = {
      "update_window_dims",           "inserted_window_dims",
      "input_batching_dims",          "scatter_indices_batching_dims",
      "scatter_dims_to_operand_dims", "index_vector_dim"};
  DimFields f = MESHPLAN_TRY(
      read_dim_fields(op, "stablehlo.scatter", "scatter_dimension_numbers", "scatter", kKeys));
  ScatterDims d;
  d.update_window_dims = f["update_window_dims"];
  d.inserted_window_dims = f["inserted_window_dims"];
  d.input_batching_dims = f["input_batching_dims"];
  d.scatter_indices_batching_dims = f["scatter_indices_batching_dims"];
  d.scatter_dims_to_operand_dims = f["scatter_dims_to_operand_dims"];
  d.index_vector_dim = f["index_vector_dim"].empty() ? -1 : f["index_vector_dim"][0];
  return d;
}

}  // namespace meshplan::planner::shlo

namespace meshplan::planner::shlo::lowering {

namespace {

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

bool sorted_unique(const std::vector<int64_t>& v) {
  return std::adjacent_find(v.begin(), v.end(), std::greater_equal<int64_t>()) == v.end();
}

/// A graph value or a value known at lowering time.
struct Val {
  std::optional<GValue> g;
  Folded f;
};

/// The index dtype: the start indices' (u32 for unsigned types, i32 otherwise).
DType index_dtype(const TensorType& t) {
  return t.element.starts_with("ui") ? DType::u32 : DType::i32;
}

/// What the gather core needs: rows of start indices and how they address the operand.
struct GatherPlan {
  std::vector<int64_t> operand_shape, slice_sizes;
  std::vector<int64_t> start_index_map;               ///< Column k of `starts` -> operand dim.
  std::vector<std::pair<int64_t, int64_t>> batching;  ///< (operand dim, batch dim position).
  std::vector<int64_t> batch_shape;                   ///< Row r of `starts` = this multi-index.
  std::vector<int64_t> kept_dims;                     ///< Operand dims that stay in the result.
};

/// Gathers rows of `operand` (graph value): result [batch..., kept slice dims...]. `starts` is
/// [N, K] (N = volume(batch_shape)).
Result<GValue> gather_core(Lowering& l, const Op& op, GValue operand, const Val& starts,
                           DType idx_dt, const GatherPlan& p) {
  const auto& os = p.operand_shape;
  const auto& ss = p.slice_sizes;
  const size_t rank = os.size();
  // Trailing dims that every slice takes whole form the table's rows' width C.
  size_t lead = rank;
  while (lead > 0 && ss[lead - 1] == os[lead - 1]) --lead;
  int64_t width = 1, rows = 1;
  for (size_t d = lead; d < rank; ++d) width *= os[d];
  std::vector<int64_t> stride(rank, 0);
  for (size_t d = lead; d-- > 0;) {
    stride[d] = rows;
    rows *= os[d];
  }
  if (rows >= kExactRows)
    return l.unimplemented(op, str(op.name, " over ", rows,
                                   " rows of its operand (index arithmetic is exact on the device "
                                   "below 2^24 rows)"));
  const int64_t n = std::max<int64_t>(1, device::volume(p.batch_shape));
  const int64_t k = static_cast<int64_t>(p.start_index_map.size());
  // Window offsets, row-major over the leading slice dims.
  std::vector<int64_t> wshape(ss.begin(), ss.begin() + static_cast<std::ptrdiff_t>(lead));
  const int64_t wn = device::volume(wshape);
  if (n >= kExactRows || wn >= kExactRows || n * wn >= kExactRows)
    return l.unimplemented(op, str(op.name, " reading ", n, " x ", wn,
                                   " rows (row indices are exact on the device below 2^24)"));
  Folded woff{{1, wn}, {}};
  for (int64_t w = 0; w < wn; ++w) {
    int64_t rem = w, off = 0;
    for (size_t d = lead; d-- > 0;) {
      off += (rem % ss[d]) * stride[d];
      rem /= ss[d];
    }
    woff.data.push_back(static_cast<float>(off));
  }
  // Row start per batch row from the batching dims (known at lowering time).
  Folded base{{n, 1}, std::vector<float>(static_cast<size_t>(n), 0.0f)};
  for (int64_t r = 0; r < n; ++r) {
    std::vector<int64_t> bi(p.batch_shape.size());
    int64_t rem = r;
    for (size_t d = bi.size(); d-- > 0;) {
      bi[d] = rem % p.batch_shape[d];
      rem /= p.batch_shape[d];
    }
    for (auto [od, bd] : p.batching)
      base.data[static_cast<size_t>(r)] +=
          static_cast<float>(bi[static_cast<size_t>(bd)] * stride[static_cast<size_t>(od)]);
  }
  // Clamp bounds and strides per column of the start indices.
  Folded hi{{1, k}, {}}, mul{{1, k}, {}};
  bool any = false;
  for (int64_t m : p.start_index_map) {
    size_t d = static_cast<size_t>(m);
    hi.data.push_back(static_cast<float>(os[d] - ss[d]));
    mul.data.push_back(static_cast<float>(stride[d]));
    any |= stride[d] != 0 && os[d] != ss[d];
  }
  GValue fl;
  if (!starts.g) {
    Folded flat{{n, wn}, {}};
    for (int64_t r = 0; r < n; ++r) {
      float start = base.data[static_cast<size_t>(r)];
      for (int64_t c = 0; c < k; ++c) {
        float x = starts.f.data[static_cast<size_t>(r * k + c)];
        x = std::min(std::max(x, 0.0f), hi.data[static_cast<size_t>(c)]);
        start += x * mul.data[static_cast<size_t>(c)];
      }
      for (float w : woff.data) flat.data.push_back(start + w);
    }
    fl = MESHPLAN_TRY(l.constant(flat, idx_dt));
  } else if (!any) {
    Folded flat{{n, wn}, {}};
    for (int64_t r = 0; r < n; ++r)
      for (float w : woff.data) flat.data.push_back(base.data[static_cast<size_t>(r)] + w);
    fl = MESHPLAN_TRY(l.constant(flat, idx_dt));
  } else {
    GValue x = *starts.g;
    GValue zero = MESHPLAN_TRY(l.constant(Folded{{1, 1}, {0.0f}}, idx_dt));
    x = MESHPLAN_TRY(l.emit(OpKind::maximum, {x, zero}, {}, {n, k}, idx_dt));
    x = MESHPLAN_TRY(
        l.emit(OpKind::minimum, {x, MESHPLAN_TRY(l.constant(hi, idx_dt))}, {}, {n, k}, idx_dt));
    x = MESHPLAN_TRY(
        l.emit(OpKind::multiply, {x, MESHPLAN_TRY(l.constant(mul, idx_dt))}, {}, {n, k}, idx_dt));
    if (k > 1)
      x = MESHPLAN_TRY(l.emit(OpKind::reduce_sum, {x},
                              {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}}, {n, 1},
                              idx_dt));
    if (!p.batching.empty())
      x = MESHPLAN_TRY(
          l.emit(OpKind::add, {x, MESHPLAN_TRY(l.constant(base, idx_dt))}, {}, {n, 1}, idx_dt));
    fl = MESHPLAN_TRY(
        l.emit(OpKind::add, {x, MESHPLAN_TRY(l.constant(woff, idx_dt))}, {}, {n, wn}, idx_dt));
  }
  DType dt = l.graph().values[operand].dtype;
  GValue table = MESHPLAN_TRY(l.reshape(operand, {rows, width}));
  GValue e = MESHPLAN_TRY(l.emit(OpKind::embedding, {fl, table}, {}, {n, wn, width}, dt));
  std::vector<int64_t> shape = p.batch_shape;
  for (int64_t d : p.kept_dims) shape.push_back(ss[static_cast<size_t>(d)]);
  return l.reshape(e, shape);
}

/// The start indices as a [N, K] value: index_vector_dim moved last.
Result<Val> start_rows(Lowering& l, const Op& op, ValueId indices, int64_t ivd, int64_t n,
                       int64_t k) {
  const TensorType& t = l.type(indices);
  Val v;
  std::vector<int64_t> perm(t.shape.size());
  std::iota(perm.begin(), perm.end(), 0);
  if (ivd < static_cast<int64_t>(t.shape.size())) {
    perm.erase(perm.begin() + ivd);
    perm.push_back(ivd);
  }
  if (const Folded* f = l.folded(indices)) {
    v.f.shape = {n, k};
    v.f.data.resize(f->data.size());
    std::vector<int64_t> idx(t.shape.size());
    for (size_t i = 0; i < f->data.size(); ++i) {
      int64_t rem = static_cast<int64_t>(i);
      for (size_t d = t.shape.size(); d-- > 0;) {
        idx[d] = rem % t.shape[d];
        rem /= t.shape[d];
      }
      int64_t dst = 0;
      for (int64_t d : perm)
        dst = dst * t.shape[static_cast<size_t>(d)] + idx[static_cast<size_t>(d)];
      v.f.data[static_cast<size_t>(dst)] = f->data[i];
    }
    return v;
  }
  GValue x = MESHPLAN_TRY(l.use(indices, op));
  if (!t.shape.empty()) x = MESHPLAN_TRY(l.permute(x, perm));
  v.g = MESHPLAN_TRY(l.reshape(x, {n, k}));
  return v;
}

std::string dims_text(const std::vector<int64_t>& s) {
  std::string t;
  for (size_t i = 0; i < s.size(); ++i) t += (i ? "x" : "") + std::to_string(s[i]);
  return s.empty() ? "scalar" : t;
}

Status check_result(const Lowering& l, const Op& op, const std::vector<int64_t>& want) {
  const auto& got = l.type(op.results[0]).shape;
  if (got != want)
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name, ": the result shape ",
                dims_text(got), " differs from the shape the attributes give, ", dims_text(want));
  return {};
}

Status no_empty(const Lowering& l, const Op& op) {
  auto empty = [&](ValueId v) {
    const auto& s = l.type(v).shape;
    return std::find(s.begin(), s.end(), 0) != s.end();
  };
  for (ValueId v : op.operands)
    if (empty(v)) return l.unimplemented(op, str(op.name, " of a zero-size tensor"));
  if (empty(op.results[0])) return l.unimplemented(op, str(op.name, " with a zero-size result"));
  return {};
}

}  // namespace

Status lower_gather(Lowering& l, const Op& op) {
  if (op.operands.size() != 2 || op.results.size() != 1)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.gather takes (operand, start_indices) and gives one result");
  GatherDims g = MESHPLAN_TRY(read_gather_dims(op));
  const auto& os = l.type(op.operands[0]).shape;
  const auto& is = l.type(op.operands[1]).shape;
  const int64_t rank = static_cast<int64_t>(os.size());
  const int64_t irank = static_cast<int64_t>(is.size());
  auto bad = [&](std::string_view what) {
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": stablehlo.gather: ", what);
  };
  if (g.index_vector_dim > irank)
    return bad(str("index_vector_dim ", g.index_vector_dim, " is beyond the rank ", irank,
                   " of start_indices"));
  if (static_cast<int64_t>(g.slice_sizes.size()) != rank)
    return bad(
        str("slice_sizes has ", g.slice_sizes.size(), " entries for an operand of rank ", rank));
  for (int64_t d = 0; d < rank; ++d)
    if (g.slice_sizes[static_cast<size_t>(d)] < 0 ||
        g.slice_sizes[static_cast<size_t>(d)] > os[static_cast<size_t>(d)])
      return bad(str("slice_sizes[", d, "] = ", g.slice_sizes[static_cast<size_t>(d)],
                     " is outside [0, ", os[static_cast<size_t>(d)], "]"));
  for (const auto* list : {&g.collapsed_slice_dims, &g.operand_batching_dims}) {
    if (!sorted_unique(*list) || !dims_ok(*list, os.size()))
      return bad("collapsed_slice_dims and operand_batching_dims must be sorted operand dims");
    for (int64_t d : *list)
      if (g.slice_sizes[static_cast<size_t>(d)] != 1)
        return bad(str("operand dim ", d, " is collapsed or batching but its slice size is ",
                       g.slice_sizes[static_cast<size_t>(d)], ", not 1"));
  }
  for (int64_t d : g.collapsed_slice_dims)
    if (contains(g.operand_batching_dims, d))
      return bad(str("operand dim ", d, " is both collapsed and batching"));
  if (!dims_ok(g.start_indices_batching_dims, is.size()) ||
      contains(g.start_indices_batching_dims, g.index_vector_dim) ||
      g.start_indices_batching_dims.size() != g.operand_batching_dims.size())
    return bad(
        "start_indices_batching_dims must be distinct dims of start_indices other than "
        "index_vector_dim, one per operand_batching_dims entry");
  const int64_t k = g.index_vector_dim < irank ? is[static_cast<size_t>(g.index_vector_dim)] : 1;
  if (static_cast<int64_t>(g.start_index_map.size()) != k || !dims_ok(g.start_index_map, os.size()))
    return bad(str("start_index_map must name ", k,
                   " distinct operand dims (the size of start_indices' index_vector_dim)"));
  for (int64_t d : g.start_index_map)
    if (contains(g.operand_batching_dims, d))
      return bad(str("operand dim ", d, " is in both start_index_map and operand_batching_dims"));
  GatherPlan p;
  p.operand_shape = os;
  p.slice_sizes = g.slice_sizes;
  p.start_index_map = g.start_index_map;
  std::vector<int64_t> batch_src;  // start_indices dim of each batch dim
  for (int64_t d = 0; d < irank; ++d)
    if (d != g.index_vector_dim) {
      batch_src.push_back(d);
      p.batch_shape.push_back(is[static_cast<size_t>(d)]);
    }
  for (size_t i = 0; i < g.operand_batching_dims.size(); ++i) {
    int64_t od = g.operand_batching_dims[i], sd = g.start_indices_batching_dims[i];
    if (os[static_cast<size_t>(od)] != is[static_cast<size_t>(sd)])
      return bad(str("operand batching dim ", od, " (size ", os[static_cast<size_t>(od)],
                     ") and start_indices batching dim ", sd, " (size ",
                     is[static_cast<size_t>(sd)], ") differ"));
    p.batching.emplace_back(od, sd - (sd < g.index_vector_dim ? 0 : 1));
  }
  for (int64_t d = 0; d < rank; ++d)
    if (!contains(g.collapsed_slice_dims, d) && !contains(g.operand_batching_dims, d))
      p.kept_dims.push_back(d);
  const size_t out_rank = p.batch_shape.size() + p.kept_dims.size();
  if (g.offset_dims.size() != p.kept_dims.size() || !sorted_unique(g.offset_dims) ||
      !dims_ok(g.offset_dims, out_rank))
    return bad(str("offset_dims must be ", p.kept_dims.size(),
                   " sorted result dims (one per operand dim not collapsed or batching)"));
  // Result dims: offset dims at offset_dims, batch dims in order elsewhere.
  std::vector<int64_t> perm(out_rank), want(out_rank);
  for (size_t d = 0, b = 0, o = 0; d < out_rank; ++d) {
    if (contains(g.offset_dims, static_cast<int64_t>(d))) {
      perm[d] = static_cast<int64_t>(p.batch_shape.size() + o);
      want[d] = g.slice_sizes[static_cast<size_t>(p.kept_dims[o++])];
    } else {
      perm[d] = static_cast<int64_t>(b);
      want[d] = p.batch_shape[b++];
    }
  }
  MESHPLAN_TRY(check_result(l, op, want));
  MESHPLAN_TRY(no_empty(l, op));
  DType idx_dt = index_dtype(l.type(op.operands[1]));
  const int64_t n = std::max<int64_t>(1, device::volume(p.batch_shape));
  Val starts = MESHPLAN_TRY(start_rows(l, op, op.operands[1], g.index_vector_dim, n, k));
  GValue operand = MESHPLAN_TRY(l.use(op.operands[0], op));
  GValue r = MESHPLAN_TRY(gather_core(l, op, operand, starts, idx_dt, p));
  l.bind(op.results[0], MESHPLAN_TRY(l.permute(r, perm)));
  return {};
}

namespace {

/// dynamic_slice / dynamic_update_slice: the scalar start indices as one [1, R] value.
Result<Val> scalar_starts(Lowering& l, const Op& op, size_t first, size_t rank, DType* dt) {
  Val v;
  v.f.shape = {1, static_cast<int64_t>(rank)};
  bool folded = true;
  for (size_t i = 0; i < rank; ++i) {
    ValueId s = op.operands[first + i];
    if (!l.type(s).shape.empty())
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": ", op.name, ": start index ", i,
                  " is not a rank-0 tensor");
    if (i == 0) *dt = index_dtype(l.type(s));
    if (index_dtype(l.type(s)) != *dt)
      return l.unimplemented(op, str(op.name, " with signed and unsigned start indices"));
    const Folded* f = l.folded(s);
    folded &= f != nullptr;
    if (f) v.f.data.push_back(f->data.at(0));
  }
  if (folded) return v;
  std::vector<GValue> parts;
  for (size_t i = 0; i < rank; ++i)
    parts.push_back(
        MESHPLAN_TRY(l.reshape(MESHPLAN_TRY(l.use(op.operands[first + i], op)), {1, 1})));
  v.g = parts.size() == 1 ? parts[0]
                          : MESHPLAN_TRY(l.emit(OpKind::concat, parts, {{"axis", int64_t{1}}},
                                                {1, static_cast<int64_t>(rank)}, *dt));
  return v;
}

}  // namespace

Status lower_dynamic_slice(Lowering& l, const Op& op) {
  const auto& os = l.type(op.operands[0]).shape;
  const size_t rank = os.size();
  if (op.operands.size() != rank + 1)
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": stablehlo.dynamic_slice of a rank-",
                rank, " operand takes ", rank, " start indices, got ", op.operands.size() - 1);
  const Attr* a = inherent(op, "slice_sizes");
  auto sizes = a ? int_list(*a) : std::nullopt;
  if (!sizes || sizes->size() != rank)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.dynamic_slice: slice_sizes must have one entry per operand dim");
  for (size_t d = 0; d < rank; ++d)
    if ((*sizes)[d] < 0 || (*sizes)[d] > os[d])
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": stablehlo.dynamic_slice: ", "slice_sizes[", d, "] = ", (*sizes)[d],
                  " is outside [0, ", os[d], "]");
  MESHPLAN_TRY(check_result(l, op, *sizes));
  MESHPLAN_TRY(no_empty(l, op));
  if (rank == 0) {  // Slicing a scalar: the scalar.
    l.bind(op.results[0], MESHPLAN_TRY(l.use(op.operands[0], op)));
    return {};
  }
  DType idx_dt = DType::i32;
  Val starts = MESHPLAN_TRY(scalar_starts(l, op, 1, rank, &idx_dt));
  GatherPlan p;
  p.operand_shape = os;
  p.slice_sizes = *sizes;
  p.start_index_map.resize(rank);
  std::iota(p.start_index_map.begin(), p.start_index_map.end(), 0);
  p.kept_dims = p.start_index_map;
  GValue operand = MESHPLAN_TRY(l.use(op.operands[0], op));
  l.bind(op.results[0], MESHPLAN_TRY(gather_core(l, op, operand, starts, idx_dt, p)));
  return {};
}

Status lower_dynamic_update_slice(Lowering& l, const Op& op) {
  const auto& os = l.type(op.operands[0]).shape;
  const size_t rank = os.size();
  if (op.operands.size() != rank + 2)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.dynamic_update_slice of a rank-", rank,
                " operand takes an update and ", rank, " start indices, got ", op.operands.size(),
                " operands");
  const auto& us = l.type(op.operands[1]).shape;
  if (us.size() != rank)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.dynamic_update_slice: the update's rank ", us.size(),
                " differs from the operand's ", rank);
  for (size_t d = 0; d < rank; ++d)
    if (us[d] > os[d])
      return fail(ErrorCode::invalid_argument, op.loc.str(),
                  ": stablehlo.dynamic_update_slice: update dim ", d, " (", us[d],
                  ") is larger than the operand's (", os[d], ")");
  MESHPLAN_TRY(check_result(l, op, os));
  MESHPLAN_TRY(no_empty(l, op));
  size_t lead = rank;
  while (lead > 0 && us[lead - 1] == os[lead - 1]) --lead;
  if (lead == 0) {  // The update covers the operand.
    l.bind(op.results[0], MESHPLAN_TRY(l.use(op.operands[1], op)));
    return {};
  }
  int64_t width = 1, urows = 1, prows = 1;
  for (size_t d = lead; d < rank; ++d) width *= os[d];
  std::vector<int64_t> ustride(lead);
  for (size_t d = lead; d-- > 0;) {
    ustride[d] = urows;
    urows *= us[d];
    prows *= os[d];
  }
  if (prows >= kExactRows)
    return l.unimplemented(op, str(op.name, " over ", prows,
                                   " rows of its operand (index arithmetic is exact on the device "
                                   "below 2^24 rows)"));
  DType idx_dt = DType::i32;
  Val starts = MESHPLAN_TRY(scalar_starts(l, op, 2, rank, &idx_dt));
  // Clamp the starts so that the update fits (in the index dtype: unsigned values stay unsigned
  // until they are small), then compute in i32.
  Folded hi{{1, static_cast<int64_t>(rank)}, {}};
  for (size_t d = 0; d < rank; ++d) hi.data.push_back(static_cast<float>(os[d] - us[d]));
  const int64_t r = static_cast<int64_t>(rank);
  if (starts.g) {
    GValue x = *starts.g;
    if (idx_dt == DType::i32)
      x = MESHPLAN_TRY(l.emit(OpKind::maximum,
                              {x, MESHPLAN_TRY(l.constant(Folded{{1, 1}, {0.0f}}, idx_dt))}, {},
                              {1, r}, idx_dt));
    x = MESHPLAN_TRY(
        l.emit(OpKind::minimum, {x, MESHPLAN_TRY(l.constant(hi, idx_dt))}, {}, {1, r}, idx_dt));
    if (idx_dt != DType::i32)
      x = MESHPLAN_TRY(
          l.emit(OpKind::typecast, {x}, {{"dtype", std::string("i32")}}, {1, r}, DType::i32));
    starts.g = x;
  } else {
    for (size_t d = 0; d < rank; ++d)
      starts.f.data[d] = std::min(std::max(starts.f.data[d], 0.0f), hi.data[d]);
  }
  // Per leading dim d: D = position - start, its clamp into the update, and whether it was inside.
  const int64_t lr = static_cast<int64_t>(lead);
  std::optional<GValue> index, mask;
  std::vector<int64_t> grid(os.begin(), os.begin() + lr);
  for (size_t d = 0; d < lead; ++d) {
    std::vector<int64_t> shape(lead, 1);
    shape[d] = os[d];
    Folded pos{shape, {}};
    for (int64_t i = 0; i < os[d]; ++i) pos.data.push_back(static_cast<float>(i));
    GValue diff;
    if (starts.g) {
      std::vector<int64_t> one(lead, 1);
      GValue s =
          MESHPLAN_TRY(l.emit(OpKind::slice, {*starts.g},
                              {{"begins", std::vector<int64_t>{0, static_cast<int64_t>(d)}},
                               {"ends", std::vector<int64_t>{1, static_cast<int64_t>(d) + 1}},
                               {"steps", std::vector<int64_t>{1, 1}}},
                              {1, 1}, DType::i32));
      s = MESHPLAN_TRY(l.reshape(s, one));
      diff = MESHPLAN_TRY(l.emit(OpKind::subtract, {MESHPLAN_TRY(l.constant(pos, DType::i32)), s},
                                 {}, shape, DType::i32));
    } else {
      for (float& x : pos.data) x -= starts.f.data[d];
      diff = MESHPLAN_TRY(l.constant(pos, DType::i32));
    }
    GValue inside = MESHPLAN_TRY(l.emit(OpKind::clamp, {diff},
                                        {{"min", 0.0}, {"max", static_cast<double>(us[d] - 1)}},
                                        shape, DType::i32));
    GValue valid = MESHPLAN_TRY(l.emit(OpKind::eq, {inside, diff}, {}, shape, DType::i32));
    GValue term = inside;
    if (ustride[d] != 1)
      term = MESHPLAN_TRY(l.emit(
          OpKind::multiply,
          {inside,
           MESHPLAN_TRY(l.constant(Folded{{1}, {static_cast<float>(ustride[d])}}, DType::i32))},
          {}, shape, DType::i32));
    auto grow = [&](const std::optional<GValue>& acc, GValue x, OpKind kind) -> Result<GValue> {
      if (!acc) return x;
      auto s = device::broadcast_shapes(l.graph().values[*acc].shape, l.graph().values[x].shape);
      if (!s) return fail(ErrorCode::internal, op.loc.str(), ": ", s.error().message);
      return l.emit(kind, {*acc, x}, {}, *s, DType::i32);
    };
    index = MESHPLAN_TRY(grow(index, term, OpKind::add));
    mask = MESHPLAN_TRY(grow(mask, valid, OpKind::multiply));
  }
  GValue idx = MESHPLAN_TRY(l.reshape(*index, {prows}));
  GValue m = MESHPLAN_TRY(l.reshape(*mask, {prows, 1}));
  GValue update = MESHPLAN_TRY(l.use(op.operands[1], op));
  GValue operand = MESHPLAN_TRY(l.use(op.operands[0], op));
  DType dt = l.graph().values[operand].dtype;
  if (l.graph().values[update].dtype != dt)
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.dynamic_update_slice: the update's element type differs from the "
                "operand's");
  GValue table = MESHPLAN_TRY(l.reshape(update, {urows, width}));
  GValue got = MESHPLAN_TRY(l.emit(OpKind::embedding, {idx, table}, {}, {prows, width}, dt));
  GValue flat = MESHPLAN_TRY(l.reshape(operand, {prows, width}));
  GValue out = MESHPLAN_TRY(l.emit(OpKind::where, {m, got, flat}, {}, {prows, width}, dt));
  l.bind(op.results[0], MESHPLAN_TRY(l.reshape(out, os)));
  return {};
}

}  // namespace meshplan::planner::shlo::lowering

namespace meshplan::planner::shlo::lowering {

namespace {

/// Rows of `x` (seen as [in_rows, width]) placed by a map known at lowering time: result row r
/// is row src[r] of x, or `fill` (a one-element value) where src[r] < 0; reshaped to `shape`.
Result<GValue> place_rows(Lowering& l, const Op& op, GValue x, int64_t in_rows, int64_t width,
                          const std::vector<int64_t>& src, std::optional<GValue> fill,
                          const std::vector<int64_t>& shape) {
  const int64_t out_rows = static_cast<int64_t>(src.size());
  if (std::max(in_rows, out_rows) >= kExactRows)
    return l.unimplemented(op, str(op.name, " over ", std::max(in_rows, out_rows),
                                   " rows (row indices are exact on the device below 2^24)"));
  DType dt = l.graph().values[x].dtype;
  Folded idx{{out_rows}, {}}, mask{{out_rows, 1}, {}};
  bool holes = false;
  for (int64_t s : src) {
    idx.data.push_back(static_cast<float>(std::max<int64_t>(s, 0)));
    mask.data.push_back(s >= 0 ? 1.0f : 0.0f);
    holes |= s < 0;
  }
  GValue table = MESHPLAN_TRY(l.reshape(x, {in_rows, width}));
  GValue rows =
      MESHPLAN_TRY(l.emit(OpKind::embedding, {MESHPLAN_TRY(l.constant(idx, DType::i32)), table}, {},
                          {out_rows, width}, dt));
  if (holes) {
    if (!fill) return fail(ErrorCode::internal, op.loc.str(), ": ", op.name, ": no fill value");
    rows = MESHPLAN_TRY(l.emit(OpKind::where,
                               {MESHPLAN_TRY(l.constant(mask, DType::i32)), rows, *fill}, {},
                               {out_rows, width}, dt));
  }
  return l.reshape(rows, shape);
}

/// Row-major multi-index of `r` over `shape`.
std::vector<int64_t> unflatten(int64_t r, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = r % shape[d];
    r /= shape[d];
  }
  return idx;
}

}  // namespace

Status lower_reverse(Lowering& l, const Op& op) {
  const Attr* a = inherent(op, "dimensions");
  auto dims = a ? int_list(*a) : std::nullopt;
  const auto& shape = l.type(op.operands[0]).shape;
  if (!dims || !dims_ok(*dims, shape.size()))
    return fail(ErrorCode::invalid_argument, op.loc.str(),
                ": stablehlo.reverse: dimensions must be distinct dims of the operand");
  MESHPLAN_TRY(check_result(l, op, shape));
  MESHPLAN_TRY(no_empty(l, op));
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  size_t lead = 0;
  for (int64_t d : *dims)
    if (shape[static_cast<size_t>(d)] > 1) lead = std::max(lead, static_cast<size_t>(d) + 1);
  if (lead == 0) {  // Only dims of size 1 (or none) reversed: the identity.
    l.bind(op.results[0], x);
    return {};
  }
  std::vector<int64_t> grid(shape.begin(), shape.begin() + static_cast<std::ptrdiff_t>(lead));
  int64_t rows = device::volume(grid), width = device::volume(shape) / rows;
  if (rows >= kExactRows)
    return l.unimplemented(
        op, str(op.name, " over ", rows, " rows (row indices are exact on the device below 2^24)"));
  std::vector<int64_t> src;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> idx = unflatten(r, grid);
    for (int64_t d : *dims)
      if (static_cast<size_t>(d) < lead)
        idx[static_cast<size_t>(d)] =
            grid[static_cast<size_t>(d)] - 1 - idx[static_cast<size_t>(d)];
    int64_t s = 0;
    for (size_t d = 0; d < lead; ++d) s = s * grid[d] + idx[d];
    src.push_back(s);
  }
  l.bind(op.results[0], MESHPLAN_TRY(place_rows(l, op, x, rows, width, src, std::nullopt, shape)));
  return {};
}

Status lower_pad_general(Lowering& l, const Op& op) {
  const auto& in = l.type(op.operands[0]).shape;
  const size_t rank = in.size();
  std::vector<int64_t> lo, hi, interior;
  for (auto [name, dst] : {std::pair{"edge_padding_low", &lo}, std::pair{"edge_padding_high", &hi},
                           std::pair{"interior_padding", &interior}}) {
    const Attr* a = inherent(op, name);
    auto v = a ? int_list(*a) : std::nullopt;
    if (!v && std::string_view(name) == "interior_padding") v = std::vector<int64_t>(rank, 0);
    if (!v || v->size() != rank)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": stablehlo.pad: ", name,
                  " must have one entry per operand dim");
    *dst = *v;
  }
  std::vector<int64_t> out(rank);
  for (size_t d = 0; d < rank; ++d) {
    if (interior[d] < 0)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": stablehlo.pad: interior_padding[",
                  d, "] = ", interior[d], " is negative");
    int64_t body = 0;
    bool overflow = __builtin_mul_overflow(in[d] - 1, interior[d], &body) ||
                    __builtin_add_overflow(body, in[d], &body) ||
                    __builtin_add_overflow(body, lo[d], &body) ||
                    __builtin_add_overflow(body, hi[d], &out[d]);
    if (overflow)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": stablehlo.pad: dim ", d,
                  " would overflow 64 bits");
    if (out[d] < 0)
      return fail(ErrorCode::invalid_argument, op.loc.str(), ": stablehlo.pad: dim ", d,
                  " would have size ", out[d]);
  }
  MESHPLAN_TRY(check_result(l, op, out));
  MESHPLAN_TRY(no_empty(l, op));
  GValue x = MESHPLAN_TRY(l.use(op.operands[0], op));
  DType dt = l.graph().values[x].dtype;
  size_t lead = rank;
  while (lead > 0 && lo[lead - 1] == 0 && hi[lead - 1] == 0 && interior[lead - 1] == 0) --lead;
  if (lead == 0) {
    l.bind(op.results[0], x);
    return {};
  }
  GValue fill;
  if (const Folded* f = l.folded(op.operands[1]); f && f->data.size() == 1)
    fill = MESHPLAN_TRY(l.constant(Folded{{1}, f->data}, dt));
  else
    fill = MESHPLAN_TRY(l.reshape(MESHPLAN_TRY(l.use(op.operands[1], op)), {1}));
  std::vector<int64_t> grid(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(lead));
  std::vector<int64_t> in_grid(in.begin(), in.begin() + static_cast<std::ptrdiff_t>(lead));
  int64_t rows = device::volume(grid), in_rows = device::volume(in_grid);
  int64_t width = device::volume(in) / in_rows;
  if (std::max(rows, in_rows) >= kExactRows)
    return l.unimplemented(op, str(op.name, " over ", std::max(rows, in_rows),
                                   " rows (row indices are exact on the device below 2^24)"));
  std::vector<int64_t> src;
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int64_t> p = unflatten(r, grid);
    int64_t s = 0;
    for (size_t d = 0; d < lead && s >= 0; ++d) {
      int64_t q = p[d] - lo[d], step = interior[d] + 1;
      if (q < 0 || q % step != 0 || q / step >= in[d])
        s = -1;
      else
        s = s * in[d] + q / step;
    }
    src.push_back(s);
  }
  l.bind(op.results[0], MESHPLAN_TRY(place_rows(l, op, x, in_rows, width, src, fill, out)));
  return {};
}

}  // namespace meshplan::planner::shlo::lowering

namespace meshplan::planner::shlo::lowering {

namespace {

/// `#stablehlo.scatter<update_window_dims = [..], ..., index_vector_dim = N>` read field by
/// field (the same syntax as the gather dimension numbers).
Result<DimFields> scatter_dims(const Op& op) {
  static constexpr std::string_view kKeys[] = {
      "update_window_dims",           "inserted_window_dims",
      "input_batching_dims",          "scatter_indices_batching_dims",
      "scatter_dims_to_operand_dims", "index_vector_dim"};
  return read_dim_fields(op, "stablehlo.scatter", "scatter_dimension_numbers", "scatter", kKeys);
}

enum class Combine { replace, keep, add, mul, max, min };

/// How result `i` of a scatter with `n` inputs combines: its update region returns the update
/// (replace), the input's value (keep: the scatter changes nothing) or add / multiply / maximum /
/// minimum of its own two arguments (input i and update i;
/// the region has 2n arguments and returns n values). A combiner that reads another result's
/// arguments (a variadic scatter whose results depend on each other) is refused.
Result<Combine> scatter_combine(const Lowering& l, const Op& op, size_t i, size_t n) {
  const Module& m = l.module();
  auto refuse = [&](std::string_view what) {
    return l.unimplemented(
        op, str("stablehlo.scatter whose update region ", what,
                " (supported: add, multiply, maximum, minimum of the two arguments of each result, "
                "returning the update: replace, or the operand's value: keep)"));
  };
  if (op.regions.size() != 1 || op.regions[0].args.size() != 2 * n)
    return refuse(str("is not one block of ", 2 * n, " arguments"));
  const Block& b = op.regions[0];
  if (b.ops.empty()) return refuse("is empty");
  const Op& ret = m.ops[b.ops.back()];
  if (ret.operands.size() != n) return refuse(str("returns ", ret.operands.size(), " values"));
  const ValueId a = b.args[i], u = b.args[n + i], v = ret.operands[i];
  if (v == u) return Combine::replace;
  if (v == a) return Combine::keep;
  const OpId d = m.values[v].def;
  const Op* body = d == kNone ? nullptr : &m.ops[d];
  if (!body || std::find(b.ops.begin(), b.ops.end(), d) == b.ops.end())
    return refuse(str("returns for result ", i, " something other than its update or an op"));
  bool args = body->operands.size() == 2 && body->results.size() == 1 &&
              ((body->operands[0] == a && body->operands[1] == u) ||
               (body->operands[0] == u && body->operands[1] == a));
  if (!args) return refuse(str("computes ", body->name, " of something other than its arguments"));
  if (body->name == "stablehlo.add") return Combine::add;
  if (body->name == "stablehlo.multiply") return Combine::mul;
  if (body->name == "stablehlo.maximum") return Combine::max;
  if (body->name == "stablehlo.minimum") return Combine::min;
  return refuse(str("computes ", body->name));
}

constexpr int64_t kScatterElements = int64_t{1} << 22;

/// Result `i` of scatter `op`: input `in`, `indices` and updates `updates`, combined by
/// `combine`.
Status lower_scatter_one(Lowering& l, const Op& op, ValueId in, ValueId indices, ValueId updates,
                         ValueId result, Combine combine) {
  auto dims = MESHPLAN_TRY(scatter_dims(op));
  const auto& os = l.type(in).shape;
  const auto& is = l.type(indices).shape;
  const auto& us = l.type(updates).shape;
  const int64_t rank = static_cast<int64_t>(os.size()), irank = static_cast<int64_t>(is.size());
  const auto& uwd = dims["update_window_dims"];
  const auto& iwd = dims["inserted_window_dims"];
  const auto& ibd = dims["input_batching_dims"];
  const auto& sibd = dims["scatter_indices_batching_dims"];
  const auto& sdod = dims["scatter_dims_to_operand_dims"];
  const int64_t ivd = dims["index_vector_dim"][0];
  auto bad = [&](std::string_view what) {
    return fail(ErrorCode::invalid_argument, op.loc.str(), ": stablehlo.scatter: ", what);
  };
  if (ivd < 0 || ivd > irank)
    return bad(str("index_vector_dim ", ivd, " is outside [0, ", irank, "]"));
  if (!sorted_unique(uwd) || !dims_ok(uwd, us.size()) || !sorted_unique(iwd) ||
      !dims_ok(iwd, os.size()) || !sorted_unique(ibd) || !dims_ok(ibd, os.size()) ||
      !dims_ok(sibd, is.size()) || contains(sibd, ivd) || sibd.size() != ibd.size())
    return bad(
        "update_window_dims, inserted_window_dims, input_batching_dims and "
        "scatter_indices_batching_dims must be sorted, distinct dims of their tensors");
  for (int64_t d : iwd)
    if (contains(ibd, d)) return bad(str("operand dim ", d, " is both inserted and batching"));
  if (static_cast<int64_t>(uwd.size() + iwd.size() + ibd.size()) != rank)
    return bad(
        "update_window_dims, inserted_window_dims and input_batching_dims must together "
        "have one entry per operand dim");
  const int64_t k = ivd < irank ? is[static_cast<size_t>(ivd)] : 1;
  if (static_cast<int64_t>(sdod.size()) != k || !dims_ok(sdod, os.size()))
    return bad(str("scatter_dims_to_operand_dims must name ", k, " distinct operand dims"));
  for (int64_t d : sdod)
    if (contains(ibd, d)) return bad(str("operand dim ", d, " is a scatter and a batching dim"));
  GatherPlan p;
  p.operand_shape = os;
  p.slice_sizes.assign(os.size(), 1);
  for (size_t d = 0, j = 0; d < os.size(); ++d)
    if (!contains(iwd, static_cast<int64_t>(d)) && !contains(ibd, static_cast<int64_t>(d))) {
      int64_t s = us[static_cast<size_t>(uwd[j++])];
      if (s > os[d])
        return bad(str("the update window is ", s, " wide in operand dim ", d, " of size ", os[d]));
      p.slice_sizes[d] = s;
      p.kept_dims.push_back(static_cast<int64_t>(d));
    }
  std::vector<int64_t> scatter_dims_of_update;
  for (size_t d = 0; d < us.size(); ++d)
    if (!contains(uwd, static_cast<int64_t>(d)))
      scatter_dims_of_update.push_back(static_cast<int64_t>(d));
  for (int64_t d = 0, j = 0; d < irank; ++d) {
    if (d == ivd) continue;
    if (j >= static_cast<int64_t>(scatter_dims_of_update.size()) ||
        us[static_cast<size_t>(scatter_dims_of_update[static_cast<size_t>(j)])] !=
            is[static_cast<size_t>(d)])
      return bad("the updates' scatter dims do not match the indices' batch dims");
    p.batch_shape.push_back(is[static_cast<size_t>(d)]);
    ++j;
  }
  if (p.batch_shape.size() != scatter_dims_of_update.size())
    return bad("the updates' scatter dims do not match the indices' batch dims");
  for (size_t i = 0; i < ibd.size(); ++i) {
    if (os[static_cast<size_t>(ibd[i])] != is[static_cast<size_t>(sibd[i])])
      return bad(str("operand batching dim ", ibd[i], " and indices batching dim ", sibd[i],
                     " differ in size"));
    p.batching.emplace_back(ibd[i], sibd[i] - (sibd[i] < ivd ? 0 : 1));
  }
  p.start_index_map = sdod;
  if (l.type(result).shape != os)
    return bad(str("result shape ", dims_text(l.type(result).shape), " differs from its input's, ",
                   dims_text(os)));
  if (combine == Combine::keep) {  // Every update combines to the operand's own value.
    l.bind(result, MESHPLAN_TRY(l.use(in, op)));
    return {};
  }
  for (ValueId v : {in, indices, updates, result})
    if (std::ranges::find(l.type(v).shape, 0) != l.type(v).shape.end())
      return l.unimplemented(op, "stablehlo.scatter of a zero-size tensor");
  // The operand as [rows, C] (C: trailing dims every window covers whole).
  const size_t r = os.size();
  size_t lead = r;
  while (lead > 0 && p.slice_sizes[lead - 1] == os[lead - 1]) --lead;
  int64_t width = 1, rows = 1;
  for (size_t d = lead; d < r; ++d) width *= os[d];
  std::vector<int64_t> stride(r, 0);
  for (size_t d = lead; d-- > 0;) {
    stride[d] = rows;
    rows *= os[d];
  }
  const int64_t n = std::max<int64_t>(1, device::volume(p.batch_shape));
  std::vector<int64_t> wshape(p.slice_sizes.begin(),
                              p.slice_sizes.begin() + static_cast<std::ptrdiff_t>(lead));
  const int64_t wn = device::volume(wshape);
  int64_t nu = 0;
  if (__builtin_mul_overflow(n, wn, &nu)) nu = std::numeric_limits<int64_t>::max();
  if (rows >= kExactRows || nu >= kExactRows || nu * rows > kScatterElements ||
      (combine != Combine::replace && nu * rows * width > kScatterElements))
    return l.unimplemented(
        op, str("stablehlo.scatter of ", nu, " update rows into ", rows, " rows of ", width,
                " (meshplan's scatter compares every update row with "
                "every operand row: at most ",
                kScatterElements, " pairs)"));
  const DType idx_dt = index_dtype(l.type(indices));
  Val starts = MESHPLAN_TRY(start_rows(l, op, indices, ivd, n, k));
  // Target row of each update row (n, w): start row + window offset, or -1 when the window
  // does not fit (XLA skips such updates; the spec leaves them to the implementation).
  Folded hi{{1, k}, {}}, mul{{1, k}, {}}, woff{{1, wn}, {}};
  for (int64_t m : sdod) {
    hi.data.push_back(
        static_cast<float>(os[static_cast<size_t>(m)] - p.slice_sizes[static_cast<size_t>(m)]));
    mul.data.push_back(static_cast<float>(stride[static_cast<size_t>(m)]));
  }
  for (int64_t w = 0; w < wn; ++w) {
    int64_t rem = w, off = 0;
    for (size_t d = lead; d-- > 0;) {
      off += (rem % p.slice_sizes[d]) * stride[d];
      rem /= p.slice_sizes[d];
    }
    woff.data.push_back(static_cast<float>(off));
  }
  Folded base{{n, 1}, std::vector<float>(static_cast<size_t>(n), 0.0f)};
  for (int64_t row = 0; row < n; ++row) {
    std::vector<int64_t> bi = unflatten(row, p.batch_shape);
    for (auto [od, bd] : p.batching)
      base.data[static_cast<size_t>(row)] +=
          static_cast<float>(bi[static_cast<size_t>(bd)] * stride[static_cast<size_t>(od)]);
  }
  GValue target;
  if (!starts.g) {
    Folded t{{nu, 1}, {}};
    for (int64_t row = 0; row < n; ++row) {
      float start = base.data[static_cast<size_t>(row)];
      bool fits = true;
      for (int64_t c = 0; c < k; ++c) {
        float x = starts.f.data[static_cast<size_t>(row * k + c)];
        fits &= x >= 0 && x <= hi.data[static_cast<size_t>(c)];
        start += x * mul.data[static_cast<size_t>(c)];
      }
      for (float w : woff.data) t.data.push_back(fits ? start + w : -1.0f);
    }
    target = MESHPLAN_TRY(l.constant(t, DType::i32));
  } else {
    GValue x = *starts.g;
    if (idx_dt != DType::i32) {  // Unsigned: cap first so that the i32 cast is exact.
      x = MESHPLAN_TRY(
          l.emit(OpKind::minimum,
                 {x, MESHPLAN_TRY(l.constant(Folded{{1, 1}, {float(kExactRows)}}, idx_dt))}, {},
                 {n, k}, idx_dt));
      x = MESHPLAN_TRY(
          l.emit(OpKind::typecast, {x}, {{"dtype", std::string("i32")}}, {n, k}, DType::i32));
    }
    const DType dt = DType::i32;
    GValue cx = MESHPLAN_TRY(l.emit(OpKind::maximum,
                                    {x, MESHPLAN_TRY(l.constant(Folded{{1, 1}, {0.0f}}, dt))}, {},
                                    {n, k}, dt));
    cx = MESHPLAN_TRY(
        l.emit(OpKind::minimum, {cx, MESHPLAN_TRY(l.constant(hi, dt))}, {}, {n, k}, dt));
    GValue ok = MESHPLAN_TRY(l.emit(OpKind::eq, {cx, x}, {}, {n, k}, dt));
    GValue start = MESHPLAN_TRY(
        l.emit(OpKind::multiply, {cx, MESHPLAN_TRY(l.constant(mul, dt))}, {}, {n, k}, dt));
    if (k > 1) {
      ok = MESHPLAN_TRY(l.emit(OpKind::reduce_min, {ok},
                               {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}}, {n, 1}, dt));
      start =
          MESHPLAN_TRY(l.emit(OpKind::reduce_sum, {start},
                              {{"dims", std::vector<int64_t>{1}}, {"keepdim", true}}, {n, 1}, dt));
    }
    start = MESHPLAN_TRY(
        l.emit(OpKind::add, {start, MESHPLAN_TRY(l.constant(base, dt))}, {}, {n, 1}, dt));
    GValue t = MESHPLAN_TRY(
        l.emit(OpKind::add, {start, MESHPLAN_TRY(l.constant(woff, dt))}, {}, {n, wn}, dt));
    t = MESHPLAN_TRY(l.emit(OpKind::where,
                            {ok, t, MESHPLAN_TRY(l.constant(Folded{{1}, {-1.0f}}, dt))}, {},
                            {n, wn}, dt));
    target = MESHPLAN_TRY(l.reshape(t, {nu, 1}));
  }
  // hit[u, row]: update row u lands on operand row `row`.
  Folded row_ids{{1, rows}, {}};
  for (int64_t i = 0; i < rows; ++i) row_ids.data.push_back(static_cast<float>(i));
  GValue hit =
      MESHPLAN_TRY(l.emit(OpKind::eq, {target, MESHPLAN_TRY(l.constant(row_ids, DType::i32))}, {},
                          {nu, rows}, DType::i32));
  // Updates as [nu, C] rows: scatter dims first, then the window dims.
  GValue upd = MESHPLAN_TRY(l.use(updates, op));
  std::vector<int64_t> uperm = scatter_dims_of_update;
  uperm.insert(uperm.end(), uwd.begin(), uwd.end());
  upd = MESHPLAN_TRY(l.permute(upd, uperm));
  GValue operand = MESHPLAN_TRY(l.use(in, op));
  const DType dt = l.graph().values[operand].dtype;
  if (l.graph().values[upd].dtype != dt)
    return bad("the updates' element type differs from the operand's");
  GValue table = MESHPLAN_TRY(l.reshape(operand, {rows, width}));
  GValue any = MESHPLAN_TRY(l.emit(OpKind::reduce_max, {hit},
                                   {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}}, {rows},
                                   DType::i32));
  any = MESHPLAN_TRY(l.reshape(any, {rows, 1}));
  GValue out;
  if (combine == Combine::replace) {
    // The last update row that lands on each operand row (duplicates: the last wins).
    Folded ids{{nu, 1}, {}};
    for (int64_t u = 0; u < nu; ++u) ids.data.push_back(static_cast<float>(u));
    GValue which = MESHPLAN_TRY(l.emit(OpKind::where,
                                       {hit, MESHPLAN_TRY(l.constant(ids, DType::i32)),
                                        MESHPLAN_TRY(l.constant(Folded{{1}, {0.0f}}, DType::i32))},
                                       {}, {nu, rows}, DType::i32));
    which = MESHPLAN_TRY(l.emit(OpKind::reduce_max, {which},
                                {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}}, {rows},
                                DType::i32));
    GValue urows = MESHPLAN_TRY(l.reshape(upd, {nu, width}));
    GValue got = MESHPLAN_TRY(l.emit(OpKind::embedding, {which, urows}, {}, {rows, width}, dt));
    out = MESHPLAN_TRY(l.emit(OpKind::where, {any, got, table}, {}, {rows, width}, dt));
  } else {
    const float none = combine == Combine::add   ? 0.0f
                       : combine == Combine::mul ? 1.0f
                       : dt == DType::i32
                           ? (combine == Combine::max ? -2147483648.0f : 2147483647.0f)
                       : dt == DType::u32        ? (combine == Combine::max ? 0.0f : 4294967295.0f)
                       : combine == Combine::max ? -std::numeric_limits<float>::infinity()
                                                 : std::numeric_limits<float>::infinity();
    GValue h3 = MESHPLAN_TRY(l.reshape(hit, {nu, rows, 1}));
    GValue u3 = MESHPLAN_TRY(l.reshape(upd, {nu, 1, width}));
    GValue each = MESHPLAN_TRY(l.emit(OpKind::where,
                                      {h3, u3, MESHPLAN_TRY(l.constant(Folded{{1}, {none}}, dt))},
                                      {}, {nu, rows, width}, dt));
    OpKind red = combine == Combine::add   ? OpKind::reduce_sum
                 : combine == Combine::mul ? OpKind::reduce_prod
                 : combine == Combine::max ? OpKind::reduce_max
                                           : OpKind::reduce_min;
    OpKind join = combine == Combine::add   ? OpKind::add
                  : combine == Combine::mul ? OpKind::multiply
                  : combine == Combine::max ? OpKind::maximum
                                            : OpKind::minimum;
    GValue folded = MESHPLAN_TRY(l.emit(
        red, {each}, {{"dims", std::vector<int64_t>{0}}, {"keepdim", false}}, {rows, width}, dt));
    GValue joined = MESHPLAN_TRY(l.emit(join, {table, folded}, {}, {rows, width}, dt));
    // Rows no update lands on keep their values exactly (x + 0 would turn -0.0 into +0.0).
    out = MESHPLAN_TRY(l.emit(OpKind::where, {any, joined, table}, {}, {rows, width}, dt));
  }
  l.bind(result, MESHPLAN_TRY(l.reshape(out, os)));
  return {};
}

}  // namespace

Status lower_scatter(Lowering& l, const Op& op) {
  // (inputs..., indices, updates...): results as independent scatters with the same indices
  // when each result's combiner reads only its own arguments.
  const size_t n = op.results.size();
  if (n == 0 || op.operands.size() != 2 * n + 1)
    return l.unimplemented(op, str("stablehlo.scatter of ", op.operands.size(), " operands and ", n,
                                   " results (expected n inputs, indices and n updates)"));
  std::vector<Combine> combine;
  for (size_t i = 0; i < n; ++i) combine.push_back(MESHPLAN_TRY(scatter_combine(l, op, i, n)));
  for (size_t i = 0; i < n; ++i)
    MESHPLAN_TRY(lower_scatter_one(l, op, op.operands[i], op.operands[n], op.operands[n + 1 + i],
                                   op.results[i], combine[i]));
  return {};
}

}  // namespace meshplan::planner::shlo::lowering
