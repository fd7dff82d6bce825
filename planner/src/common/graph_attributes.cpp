// graph.json op attributes read into device::OpConfig: one table row per attribute (its JSON name,
// the ops that take it, and a reader built from the OpConfig field it fills and its bounds).
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/op_cases.hpp"
#include "meshplan/planner/graph.hpp"

namespace meshplan::planner {

namespace {

using device::OpConfig;

constexpr int64_t kRank = device::kMaxRank;
constexpr int64_t kBig = int64_t{1} << 40;

std::string op_label(const Op& op) {
  return str("op '", op.name, "' (", device::op_name(op.kind), ")");
}

/// One attribute's value, read in the forms graph.json spells; every failure names the op and
/// the attribute.
class AttrReader {
 public:
  AttrReader(const Op& op, const Attribute& a) : op_(op), a_(a) {}

  template <class... Why>
  std::unexpected<Error> bad(Why&&... why) const {
    return fail(ErrorCode::invalid_argument, op_label(op_), ": attribute '", a_.name, "' ",
                std::forward<Why>(why)...);
  }
  Result<bool> boolean() const {
    if (auto* b = std::get_if<bool>(&a_.value)) return *b;
    return bad("must be a bool (\"b\")");
  }
  Result<int64_t> integer(int64_t lo, int64_t hi) const {
    auto* i = std::get_if<int64_t>(&a_.value);
    if (!i) return bad("must be an integer (\"i\")");
    if (*i < lo || *i > hi) return bad("is ", *i, ", outside [", lo, ", ", hi, "]");
    return *i;
  }
  Result<std::vector<int64_t>> integers(size_t min_len, size_t max_len, int64_t lo,
                                        int64_t hi) const {
    auto* v = std::get_if<std::vector<int64_t>>(&a_.value);
    if (!v) return bad("must be a list of integers (\"ints\")");
    if (v->size() < min_len || v->size() > max_len)
      return bad("has ", v->size(), " entries, expected ",
                 min_len == max_len ? str(min_len) : str(min_len, " to ", max_len));
    for (int64_t x : *v)
      if (x < lo || x > hi) return bad("entry ", x, " is outside [", lo, ", ", hi, "]");
    return *v;
  }
  /// A float ("f"), or an integer ("i") taken as one.
  Result<double> number() const {
    if (auto* f = std::get_if<double>(&a_.value)) return *f;
    if (auto* i = std::get_if<int64_t>(&a_.value)) return static_cast<double>(*i);
    return bad("must be a number (\"f\")");
  }
  const std::string* text() const { return std::get_if<std::string>(&a_.value); }

 private:
  const Op& op_;
  const Attribute& a_;
};

/// Reads one attribute's value into the config (the row's field or fields).
using AttrRead = Status (*)(const AttrReader&, OpConfig&);

/// The type of the OpConfig member `Field` points at.
template <auto Field>
using FieldType = std::remove_cvref_t<decltype(std::declval<OpConfig&>().*Field)>;
/// The element type of the OpConfig array member `Field` points at.
template <auto Field>
using ElementType = std::remove_extent_t<FieldType<Field>>;

template <auto Field>
Status read_bool(const AttrReader& r, OpConfig& c) {
  c.*Field = MESHPLAN_TRY(r.boolean());
  return {};
}

template <auto Field, int64_t Lo, int64_t Hi>
Status read_int(const AttrReader& r, OpConfig& c) {
  c.*Field = static_cast<FieldType<Field>>(MESHPLAN_TRY(r.integer(Lo, Hi)));
  return {};
}

/// `v` into the array `Field`, its length into `Count`.
template <auto Field, auto Count>
void store_list(const std::vector<int64_t>& v, OpConfig& c) {
  c.*Count = static_cast<uint8_t>(v.size());
  for (size_t i = 0; i < v.size(); ++i) (c.*Field)[i] = static_cast<ElementType<Field>>(v[i]);
}

/// A list of MinLen to kMaxRank integers in [Lo, Hi] into the array `Field`, its length into
/// `Count`.
template <auto Field, auto Count, size_t MinLen, int64_t Lo, int64_t Hi>
Status read_list(const AttrReader& r, OpConfig& c) {
  store_list<Field, Count>(MESHPLAN_TRY(r.integers(MinLen, kRank, Lo, Hi)), c);
  return {};
}

/// One of slice's begins / ends / steps: all three have one entry per dim.
template <auto Field, int64_t Lo>
Status read_slice_list(const AttrReader& r, OpConfig& c) {
  auto v = MESHPLAN_TRY(r.integers(1, kRank, Lo, kBig));
  if (c.num_slice != 0 && c.num_slice != v.size())
    return r.bad("has ", v.size(), " entries but another of begins/ends/steps has ",
                 int(c.num_slice));
  store_list<Field, &OpConfig::num_slice>(v, c);
  return {};
}

/// Two positive integers (a window's height and width) into the array `Field`.
template <auto Field>
Status read_pair(const AttrReader& r, OpConfig& c) {
  auto v = MESHPLAN_TRY(r.integers(2, 2, 1, 1 << 16));
  (c.*Field)[0] = static_cast<int32_t>(v[0]);
  (c.*Field)[1] = static_cast<int32_t>(v[1]);
  return {};
}

/// One integer in [Lo, Hi] per field, in order.
template <int64_t Lo, int64_t Hi, auto... Fields>
Status read_spread(const AttrReader& r, OpConfig& c) {
  auto v = MESHPLAN_TRY(r.integers(sizeof...(Fields), sizeof...(Fields), Lo, Hi));
  size_t i = 0;
  ((c.*Fields = static_cast<FieldType<Fields>>(v[i++])), ...);
  return {};
}

/// A name `Parse` knows (else the error lists `Names`).
template <auto Field, auto Parse, const char* Names>
Status read_name(const AttrReader& r, OpConfig& c) {
  const std::string* s = r.text();
  auto value = s ? Parse(*s) : std::nullopt;
  if (!value) return r.bad("must be one of ", Names);
  c.*Field = *value;
  return {};
}

/// A clamp bound: any number but NaN.
template <auto Field>
Status read_bound(const AttrReader& r, OpConfig& c) {
  double v = MESHPLAN_TRY(r.number());
  if (std::isnan(v)) return r.bad("is NaN");
  c.*Field = static_cast<float>(v);
  return {};
}

Status read_epsilon(const AttrReader& r, OpConfig& c) {
  double e = MESHPLAN_TRY(r.number());
  if (!(e >= 0.0 && e < 1.0)) return r.bad("is ", e, ", expected a value in [0, 1)");
  c.epsilon = static_cast<float>(e);
  return {};
}

/// softmax's one dim, stored as a one-entry dims list.
Status read_softmax_dim(const AttrReader& r, OpConfig& c) {
  c.num_dims = 1;
  c.dims[0] = static_cast<int8_t>(MESHPLAN_TRY(r.integer(-kRank, kRank - 1)));
  return {};
}

/// [pad_h, pad_w] (each on both sides) or [top, bottom, left, right].
Status read_padding(const AttrReader& r, OpConfig& c) {
  auto v = MESHPLAN_TRY(r.integers(2, 4, 0, 1 << 16));
  if (v.size() == 3) return r.bad("must be [pad_h, pad_w] or [top, bottom, left, right]");
  if (v.size() == 2) v = {v[0], v[0], v[1], v[1]};
  for (int i = 0; i < 4; ++i) c.padding[i] = static_cast<int32_t>(v[i]);
  return {};
}

/// collective_permute's (source, target) chip-index pairs, flattened.
Status read_pairs(const AttrReader& r, OpConfig& c) {
  auto v = MESHPLAN_TRY(r.integers(0, 2 * device::kMaxMeshChips, 0, device::kMaxMeshChips - 1));
  if (v.size() % 2 != 0)
    return r.bad("has ", v.size(), " entries, expected (source, target) pairs");
  c.pairs.assign(v.begin(), v.end());
  return {};
}

/// typecast / bitcast targets: the dtypes a value can hold element by element.
std::optional<DType> cast_dtype_from_name(std::string_view name) {
  auto dt = device::dtype_from_name(name);
  if (!dt || *dt == DType::bf8b || *dt == DType::bf4b) return std::nullopt;
  return dt;
}

constexpr char kActivationNames[] = "\"none\", \"relu\", \"gelu\", \"silu\", \"sigmoid\", \"tanh\"";
constexpr char kCastNames[] = "\"f32\", \"bf16\", \"i32\", \"u32\"";
constexpr char kReduceNames[] = "\"sum\", \"max\", \"min\"";

template <OpKind K>
bool is(OpKind k) {
  return k == K;
}
template <OpKind K1, OpKind K2>
bool is_either(OpKind k) {
  return k == K1 || k == K2;
}
bool takes_activation(OpKind k) {
  return device::has_flag(k, device::kActivation);
}
bool is_reduce(OpKind k) {
  return device::op_family(k) == device::OpFamily::reduction;
}
/// Windowed ops: conv2d and the pools with a window (global_avg_pool2d has none).
bool is_windowed(OpKind k) {
  return k == OpKind::conv2d || k == OpKind::max_pool2d || k == OpKind::avg_pool2d;
}
bool takes_input_nhw(OpKind k) {
  return is_windowed(k) || k == OpKind::global_avg_pool2d;
}
bool takes_collective_dim(OpKind k) {
  return k == OpKind::all_gather || k == OpKind::reduce_scatter || k == OpKind::all_slice;
}

/// One graph.json attribute: its name, the ops that take it, and how its value is read. A name
/// may have several rows for disjoint sets of ops (softmax's `dim` is not a collective's).
struct AttrRule {
  std::string_view name;
  bool (*takes)(OpKind);
  AttrRead read;
};

// clang-format off
constexpr AttrRule kAttrRules[] = {
    {"transpose_a", device::is_matmul_family, read_bool<&OpConfig::transpose_a>},
    {"transpose_b", device::is_matmul_family, read_bool<&OpConfig::transpose_b>},
    {"activation", takes_activation,
     read_name<&OpConfig::activation, device::activation_from_name, kActivationNames>},
    {"dims", is_reduce, read_list<&OpConfig::dims, &OpConfig::num_dims, 0, -kRank, kRank - 1>},
    {"perm", is<OpKind::permute>,
     read_list<&OpConfig::dims, &OpConfig::num_dims, 1, -kRank, kRank - 1>},
    {"keepdim", is_reduce, read_bool<&OpConfig::keepdim>},
    {"dim", is<OpKind::softmax>, read_softmax_dim},
    {"axis", is<OpKind::concat>, read_int<&OpConfig::axis, -kRank, kRank - 1>},
    {"epsilon", is_either<OpKind::layer_norm, OpKind::rms_norm>, read_epsilon},
    {"min", is<OpKind::clamp>, read_bound<&OpConfig::clamp_min>},
    {"max", is<OpKind::clamp>, read_bound<&OpConfig::clamp_max>},
    {"shape", is<OpKind::reshape>, read_list<&OpConfig::shape, &OpConfig::num_shape, 1, -1, kBig>},
    {"begins", is<OpKind::slice>, read_slice_list<&OpConfig::begins, -kBig>},
    {"ends", is<OpKind::slice>, read_slice_list<&OpConfig::ends, -kBig>},
    {"steps", is<OpKind::slice>, read_slice_list<&OpConfig::steps, 1>},
    {"dtype", is_either<OpKind::typecast, OpKind::bitcast>,
     read_name<&OpConfig::dtype, cast_dtype_from_name, kCastNames>},
    // conv2d: the window of a prepared 2-D weight (a 4-D weight gives its own; see
    // device::conv_weight_dims).
    {"kernel", is_windowed, read_pair<&OpConfig::kernel>},
    {"stride", is_windowed, read_pair<&OpConfig::stride>},
    {"dilation", is_windowed, read_pair<&OpConfig::dilation>},
    {"padding", is_windowed, read_padding},
    {"groups", is<OpKind::conv2d>, read_int<&OpConfig::groups, 1, 1 << 16>},
    {"act_block_h", is<OpKind::conv2d>, read_int<&OpConfig::act_block_h, 1, 1 << 16>},
    {"act_block_w_div", is<OpKind::conv2d>, read_int<&OpConfig::act_block_w_div, 1, 1 << 16>},
    // conv2d: free the input after the halo step (TTNN's Conv2dConfig::deallocate_activation).
    {"deallocate_activation", is<OpKind::conv2d>, read_bool<&OpConfig::deallocate_activation>},
    // The flattened form [1, 1, N*H*W, C] of the input (planner flatten_spatial, TTNN's
    // batch_size / input_height / input_width).
    {"input_nhw", takes_input_nhw,
     read_spread<1, int64_t{1} << 30, &OpConfig::input_n, &OpConfig::input_h,
                 &OpConfig::input_w>},
    {"cluster_axis", device::has_cluster_axis, read_int<&OpConfig::cluster_axis, -1, 1>},
    {"dim", takes_collective_dim, read_int<&OpConfig::collective_dim, -kRank, kRank - 1>},
    {"split_dim", is<OpKind::all_to_all>, read_int<&OpConfig::split_dim, -kRank, kRank - 1>},
    {"concat_dim", is<OpKind::all_to_all>, read_int<&OpConfig::concat_dim, -kRank, kRank - 1>},
    {"reduce", is_either<OpKind::reduce_scatter, OpKind::all_reduce>,
     read_name<&OpConfig::reduce, device::reduce_from_name, kReduceNames>},
    {"pairs", is<OpKind::collective_permute>, read_pairs},
};
// clang-format on

/// The attribute an op cannot do without, if any.
std::string_view required_attribute(OpKind k) {
  switch (k) {
    case OpKind::permute:
      return "perm";
    case OpKind::reshape:
      return "shape";
    case OpKind::typecast:
    case OpKind::bitcast:
      return "dtype";
    case OpKind::max_pool2d:
    case OpKind::avg_pool2d:
      return "kernel";
    case OpKind::concat:
    case OpKind::slice:
    case OpKind::global_avg_pool2d:
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE3_(family, shape, convert, pool, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      return {};
  }
  return {};
}

/// Attributes a collective cannot do without (MESH-SPEC §1: only reduce has a default).
std::vector<std::string_view> required_collective_attributes(OpKind k) {
  switch (k) {
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_slice:
      return {"cluster_axis", "dim"};
    case OpKind::all_reduce:
      return {"cluster_axis"};
    case OpKind::all_to_all:
      return {"cluster_axis", "concat_dim", "split_dim"};
    case OpKind::collective_permute:
      return {"pairs"};
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE_(family, collective, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      return {};
  }
  return {};
}

}  // namespace

Result<device::OpConfig> op_config(const Op& op, const GraphMesh& mesh) {
  device::OpConfig config;
  if (mesh.rows > 0 && mesh.cols > 0 && mesh.rows <= 0xFFFF && mesh.cols <= 0xFFFF) {
    config.mesh_rows = static_cast<uint16_t>(mesh.rows);
    config.mesh_cols = static_cast<uint16_t>(mesh.cols);
  }
  for (std::string_view r : required_collective_attributes(op.kind))
    if (!op.attribute(r))
      return fail(ErrorCode::invalid_argument, op_label(op), ": missing attribute '", r, "'");
  for (const Attribute& a : op.attributes) {
    auto rule = std::ranges::find_if(
        kAttrRules, [&](const AttrRule& r) { return r.name == a.name && r.takes(op.kind); });
    if (rule == std::end(kAttrRules))
      return fail(ErrorCode::invalid_argument, op_label(op), ": unknown attribute '", a.name, "'");
    MESHPLAN_TRY(rule->read(AttrReader(op, a), config));
  }
  // An attribute the op takes was read above, so being present is being seen.
  std::string_view required = required_attribute(op.kind);
  if (!required.empty() && !op.attribute(required))
    return fail(ErrorCode::invalid_argument, op_label(op), ": missing attribute '", required, "'");
  if (op.kind == OpKind::slice) {
    bool has_begins = op.attribute("begins"), has_ends = op.attribute("ends");
    if (!has_begins || !has_ends)
      return fail(ErrorCode::invalid_argument, op_label(op), ": missing attribute '",
                  has_begins ? "ends" : "begins", "'");
    if (!op.attribute("steps"))
      for (int i = 0; i < config.num_slice; ++i) config.steps[i] = 1;
  }
  return config;
}

}  // namespace meshplan::planner
