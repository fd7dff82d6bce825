// Semantic checks of a parsed StableHLO/Shardy module: sizes, dimension attributes, written
// result types, meshes and shardings. The parser checks syntax; this checks meaning, so that the
// mesh pipeline and the lowering never index a shape with an attribute out of range.
#include "import/stablehlo_verify.hpp"

#include <algorithm>
#include <cctype>
#include <deque>
#include <optional>
#include <set>
#include <span>

#include "meshplan/device/size_limits.hpp"
#include "meshplan/planner/sharding.hpp"

namespace meshplan::planner::shlo {

namespace {

/// Axis sizes the planner's meshes can have (a grid of at most 65535 chips per side).
constexpr int64_t kMaxAxisSize = 0xFFFF;

std::string shape_text(std::span<const int64_t> shape) {
  return device::shape_limit_text(shape);
}

/// The element count of a shape whose dims are non-negative; nullopt when it overflows.
std::optional<int64_t> volume_of(std::span<const int64_t> shape) {
  int64_t v = 1;
  for (int64_t d : shape)
    if (d < 0 || __builtin_mul_overflow(v, d, &v)) return std::nullopt;
  return v;
}

class Verifier {
 public:
  Verifier(const Module& m, SizeLimits limits) : m_(m), limits_(limits) {}

  Status run() {
    for (const MeshDecl& mesh : m_.meshes) MESHPLAN_TRY(check_mesh(mesh));
    for (const Func& f : m_.funcs) {
      for (size_t i = 0; i < f.args.size(); ++i) {
        const Value& v = m_.values[f.args[i].value];
        MESHPLAN_TRY(check_type(v.type, f.loc, str("@", f.name, " argument ", i)));
        if (v.sharding)
          MESHPLAN_TRY(
              check_sharding(*v.sharding, v.type, f.loc, str("argument %arg", i, " of @", f.name)));
      }
      // The body before the results: an op's own location beats the signature's.
      MESHPLAN_TRY(check_block(f.body, &f));
      for (size_t i = 0; i < f.results.size(); ++i) {
        MESHPLAN_TRY(check_type(f.results[i].type, f.loc, str("@", f.name, " result ", i)));
        if (f.results[i].sharding)
          MESHPLAN_TRY(check_sharding(*f.results[i].sharding, f.results[i].type, f.loc,
                                      str("result ", i, " of @", f.name)));
      }
    }
    return {};
  }

 private:
  template <class... Args>
  std::unexpected<Error> bad(const Location& loc, Args&&... msg) const {
    return fail(ErrorCode::invalid_argument, loc.str(), ": ", std::forward<Args>(msg)...);
  }

  const TensorType& type_of(ValueId v) const { return m_.values[v].type; }

  Status check_type(const TensorType& t, const Location& loc, const std::string& what) const {
    std::vector<int64_t> shape = t.shape;
    for (int64_t& d : shape)
      if (d == 0) d = 1;  // a zero-size tensor: the other dims' limits still apply
    if (limits_ == SizeLimits::text) {
      // Rank and dims as on the device (each dim checked alone); only the element count may go
      // beyond a chip's memory.
      if (shape.size() > static_cast<size_t>(device::kMaxRank))
        return bad(loc, what, " ", type_string(t), ": rank ", shape.size(),
                   " is more than the limit of ", device::kMaxRank);
      for (int64_t d : shape)
        if (d < 1 || d > device::kMaxDimension)
          return bad(loc, what, " ", type_string(t), ": dimension ", d, " is outside [1, ",
                     device::kMaxDimension, "]");
      auto volume = volume_of(shape);
      if (volume && *volume <= kMaxTextElements) return {};
      return bad(loc, what, " ", type_string(t), ": shape ", shape_text(t.shape),
                 " holds more than ", kMaxTextElements, " elements, the limit of a module that is",
                 " only rewritten (Shardy's passes)");
    }
    auto volume = device::checked_volume(shape);
    if (!volume) return bad(loc, what, " ", type_string(t), ": ", volume.error().message);
    return {};
  }

  Status check_mesh(const MeshDecl& mesh) const {
    auto where = [&] { return str(m_.file, ": mesh @", mesh.name); };
    int64_t devices = 1;
    std::set<std::string> names;
    for (const auto& [name, size] : mesh.axes) {
      if (!names.insert(name).second)
        return fail(ErrorCode::invalid_argument, where(), ": axis '", name, "' is declared twice");
      if (size < 1 || size > kMaxAxisSize)
        return fail(ErrorCode::invalid_argument, where(), ": axis '", name, "' has size ", size,
                    "; axis sizes are 1 to ", kMaxAxisSize);
      if (__builtin_mul_overflow(devices, size, &devices) || devices > kMaxAxisSize * kMaxAxisSize)
        return fail(ErrorCode::invalid_argument, where(), " has more than ",
                    kMaxAxisSize * kMaxAxisSize, " devices");
    }
    if (mesh.device_ids.empty()) return {};
    // A maximal mesh (`<[], device_ids=[3]>`) names the one device a tensor lives on.
    if (mesh.axes.empty() && mesh.device_ids.size() == 1) {
      if (mesh.device_ids[0] < 0)
        return fail(ErrorCode::invalid_argument, where(), ": device id ", mesh.device_ids[0],
                    " is negative");
      return {};
    }
    if (static_cast<int64_t>(mesh.device_ids.size()) != devices)
      return fail(ErrorCode::invalid_argument, where(), ": device_ids lists ",
                  mesh.device_ids.size(), " devices, the axes make ", devices);
    std::vector<bool> seen(static_cast<size_t>(devices), false);
    for (int64_t id : mesh.device_ids) {
      if (id < 0 || id >= devices)
        return fail(ErrorCode::invalid_argument, where(), ": device id ", id, " is outside [0, ",
                    devices, ")");
      if (seen[static_cast<size_t>(id)])
        return fail(ErrorCode::invalid_argument, where(), ": device id ", id, " appears twice");
      seen[static_cast<size_t>(id)] = true;
    }
    return {};
  }

  /// A sharding of a tensor of type `t`: the one sharding check (sharding.hpp), without the
  /// divisibility rule, which the mesh pipeline applies.
  Status check_sharding(const TensorSharding& s, const TensorType& t, const Location& loc,
                        const std::string& what) const {
    return shlo::check_sharding(m_, s, t, what, loc, false);
  }

  Status check_block(const Block& b, const Func* f) const {
    for (OpId o : b.ops) {
      const Op& op = m_.ops[o];
      for (size_t i = 0; i < op.results.size(); ++i)
        MESHPLAN_TRY(check_type(type_of(op.results[i]), op.loc, str(op.name, " result ", i)));
      for (const auto& [name, a] : op.props)
        if (a.kind == Attr::Kind::dense)
          MESHPLAN_TRY(check_type(a.type, op.loc, str(op.name, " attribute '", name, "'")));
      for (size_t i = 0; i < op.shardings.size() && i < op.results.size(); ++i)
        MESHPLAN_TRY(check_sharding(op.shardings[i], type_of(op.results[i]), op.loc,
                                    str(op.name, " result ", i)));
      if (op.sharding && !op.operands.empty() && op.name != "sdy.manual_computation")
        MESHPLAN_TRY(check_sharding(*op.sharding, type_of(op.operands[0]), op.loc, op.name));
      if (op.name == "sdy.manual_computation") {
        for (size_t i = 0; i < op.in_shardings.size() && i < op.operands.size(); ++i)
          MESHPLAN_TRY(check_sharding(op.in_shardings[i], type_of(op.operands[i]), op.loc,
                                      str(op.name, " operand ", i)));
        for (size_t i = 0; i < op.out_shardings.size() && i < op.results.size(); ++i)
          MESHPLAN_TRY(check_sharding(op.out_shardings[i], type_of(op.results[i]), op.loc,
                                      str(op.name, " result ", i)));
      }
      MESHPLAN_TRY(check_op(op));
      if (op.name == "func.return" && f && b.ops.back() == o && &b == &f->body) {
        if (op.operands.size() != f->results.size())
          return bad(op.loc, "func.return returns ", op.operands.size(), " values; @", f->name,
                     " declares ", f->results.size(), " results");
        for (size_t i = 0; i < op.operands.size(); ++i)
          if (type_of(op.operands[i]).shape != f->results[i].type.shape)
            return bad(op.loc, "func.return value ", i, " is ",
                       type_string(type_of(op.operands[i])), "; @", f->name, " declares result ", i,
                       " as ", type_string(f->results[i].type));
      }
      for (const Block& r : op.regions) MESHPLAN_TRY(check_block(r, nullptr));
    }
    return {};
  }

  /// An ints attribute written as array<i64: ...>, [1, 2] or dense<[1, 2]> : tensor<2xi64>;
  /// null when absent or not integers. Kept in the verifier for the duration of one op.
  const std::vector<int64_t>* ints(const Op& op, std::string_view name) const {
    const Attr* a = op.prop(name);
    if (!a) return nullptr;
    if (a->kind == Attr::Kind::dense_array) return &a->ints;
    std::vector<int64_t>& out = scratch_.emplace_back();
    if (a->kind == Attr::Kind::dense) {
      for (double v : a->values) {
        if (!(v >= -9.2e18 && v <= 9.2e18)) return nullptr;
        out.push_back(static_cast<int64_t>(v));
      }
      return &out;
    }
    if (a->kind == Attr::Kind::array) {
      for (const Attr& e : a->list) {
        if (e.kind != Attr::Kind::integer) return nullptr;
        out.push_back(e.i);
      }
      return &out;
    }
    return nullptr;
  }

  /// Each of `dims` in [0, rank) and none twice.
  Status check_dims(const Op& op, std::string_view attr, std::span<const int64_t> dims,
                    int64_t rank, std::string_view of) const {
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t d : dims) {
      if (d < 0 || d >= rank)
        return bad(op.loc, op.name, ": ", attr, " names dimension ", d, ", outside [0, ", rank,
                   ") of the rank-", rank, " ", of);
      if (seen[static_cast<size_t>(d)])
        return bad(op.loc, op.name, ": ", attr, " names dimension ", d, " twice");
      seen[static_cast<size_t>(d)] = true;
    }
    return {};
  }

  Status check_result_shape(const Op& op, const std::vector<int64_t>& want) const {
    if (op.results.empty()) return {};
    const TensorType& r = type_of(op.results[0]);
    if (r.shape != want)
      return bad(op.loc, op.name, ": result type ", type_string(r),
                 " is written, the operands give ", shape_text(want));
    return {};
  }

  Status check_op(const Op& op) const {
    std::string_view n = op.name;
    if (!n.starts_with("stablehlo.")) return {};
    n.remove_prefix(10);
    auto rank_of = [&](size_t i) {
      return static_cast<int64_t>(type_of(op.operands[i]).shape.size());
    };
    auto shape_of = [&](size_t i) -> const std::vector<int64_t>& {
      return type_of(op.operands[i]).shape;
    };
    static const std::set<std::string_view> kElementwise = {
        "abs",         "add",      "and",      "divide",
        "exponential", "log",      "logistic", "maximum",
        "minimum",     "multiply", "negate",   "not",
        "or",          "rsqrt",    "sqrt",     "subtract",
        "tanh",        "convert",  "compare",  "power",
        "remainder",   "xor",      "sine",     "cosine",
        "floor",       "ceil",     "sign",     "exponential_minus_one",
        "log_plus_one"};
    if (kElementwise.contains(n)) {
      for (size_t i = 0; i < op.operands.size(); ++i)
        if (shape_of(i) != shape_of(0))
          return bad(op.loc, op.name, ": operand ", i, " is ", type_string(type_of(op.operands[i])),
                     ", operand 0 is ", type_string(type_of(op.operands[0])));
      if (!op.operands.empty()) return check_result_shape(op, shape_of(0));
      return {};
    }
    if (n == "dot_general" && op.operands.size() == 2) {
      static const std::vector<int64_t> kNone;
      const auto* lb = ints(op, "lhs_batching_dimensions");
      const auto* rb = ints(op, "rhs_batching_dimensions");
      const auto* lc = ints(op, "lhs_contracting_dimensions");
      const auto* rc = ints(op, "rhs_contracting_dimensions");
      const auto& LB = lb ? *lb : kNone;
      const auto& RB = rb ? *rb : kNone;
      const auto& LC = lc ? *lc : kNone;
      const auto& RC = rc ? *rc : kNone;
      // precision_config: one of the spec's three values per operand (an unknown word would be
      // printed back in a form no parser reads).
      if (const Attr* p = op.prop("precision_config"); p && p->kind == Attr::Kind::array) {
        if (p->list.size() > 2)
          return bad(op.loc, op.name, ": precision lists ", p->list.size(),
                     " values; at most one per operand (2)");
        for (const Attr& e : p->list)
          if (e.kind != Attr::Kind::keyword ||
              (e.text != "DEFAULT" && e.text != "HIGH" && e.text != "HIGHEST"))
            return bad(op.loc, op.name, ": precision value '", e.text,
                       "' is not DEFAULT, HIGH or HIGHEST");
      }
      if (LB.size() != RB.size())
        return bad(op.loc, op.name, ": batching_dims lists ", LB.size(), " lhs and ", RB.size(),
                   " rhs dimensions");
      if (LC.size() != RC.size())
        return bad(op.loc, op.name, ": contracting_dims lists ", LC.size(), " lhs and ", RC.size(),
                   " rhs dimensions");
      std::vector<int64_t> lhs_dims(LB), rhs_dims(RB);
      lhs_dims.insert(lhs_dims.end(), LC.begin(), LC.end());
      rhs_dims.insert(rhs_dims.end(), RC.begin(), RC.end());
      MESHPLAN_TRY(
          check_dims(op, "batching_dims and contracting_dims (lhs)", lhs_dims, rank_of(0), "lhs"));
      MESHPLAN_TRY(
          check_dims(op, "batching_dims and contracting_dims (rhs)", rhs_dims, rank_of(1), "rhs"));
      const auto& L = shape_of(0);
      const auto& R = shape_of(1);
      for (size_t i = 0; i < LB.size(); ++i)
        if (L[LB[i]] != R[RB[i]])
          return bad(op.loc, op.name, ": batching dimension ", LB[i], " of the lhs (", L[LB[i]],
                     ") differs from dimension ", RB[i], " of the rhs (", R[RB[i]], ")");
      for (size_t i = 0; i < LC.size(); ++i)
        if (L[LC[i]] != R[RC[i]])
          return bad(op.loc, op.name, ": contracting dimension ", LC[i], " of the lhs (", L[LC[i]],
                     ") differs from dimension ", RC[i], " of the rhs (", R[RC[i]], ")");
      std::vector<int64_t> want;
      for (int64_t d : LB) want.push_back(L[d]);
      for (int64_t d = 0; d < rank_of(0); ++d)
        if (std::ranges::find(lhs_dims, d) == lhs_dims.end()) want.push_back(L[d]);
      for (int64_t d = 0; d < rank_of(1); ++d)
        if (std::ranges::find(rhs_dims, d) == rhs_dims.end()) want.push_back(R[d]);
      return check_result_shape(op, want);
    }
    if (n == "reduce" && !op.operands.empty()) {
      const auto* dims = ints(op, "dimensions");
      if (!dims) return {};
      MESHPLAN_TRY(check_dims(op, "dimensions", *dims, rank_of(0), "operand"));
      std::vector<int64_t> want;
      for (int64_t d = 0; d < rank_of(0); ++d)
        if (std::ranges::find(*dims, d) == dims->end()) want.push_back(shape_of(0)[d]);
      return check_result_shape(op, want);
    }
    if (n == "iota" && !op.results.empty()) {
      const Attr* a = op.prop("iota_dimension");
      int64_t rank = static_cast<int64_t>(type_of(op.results[0]).shape.size());
      if (!a || a->kind != Attr::Kind::integer)
        return bad(op.loc, op.name, ": needs an integer iota_dimension");
      if (a->i < 0 || a->i >= rank)
        return bad(op.loc, op.name, ": iota_dimension ", a->i, " is outside [0, ", rank,
                   ") of its rank-", rank, " result");
      return {};
    }
    if (n == "slice" && !op.operands.empty()) {
      const auto* st = ints(op, "start_indices");
      const auto* li = ints(op, "limit_indices");
      const auto* sr = ints(op, "strides");
      int64_t rank = rank_of(0);
      if (!st || !li || static_cast<int64_t>(st->size()) != rank ||
          static_cast<int64_t>(li->size()) != rank ||
          (sr && static_cast<int64_t>(sr->size()) != rank))
        return bad(op.loc, op.name, ": a rank-", rank, " operand needs ", rank,
                   " start:limit[:stride] ranges, ", st ? st->size() : 0, " are written");
      std::vector<int64_t> want;
      for (int64_t d = 0; d < rank; ++d) {
        int64_t s = (*st)[d], l = (*li)[d], k = sr ? (*sr)[d] : 1, size = shape_of(0)[d];
        if (s < 0 || s > l || l > size || k < 1)
          return bad(op.loc, op.name, ": range ", s, ":", l, ":", k, " of dimension ", d,
                     " does not fit its size ", size,
                     " (0 <= start <= limit <= size, stride >= 1)");
        want.push_back((l - s + k - 1) / k);
      }
      return check_result_shape(op, want);
    }
    if (n == "transpose" && !op.operands.empty()) {
      const auto* perm = ints(op, "permutation");
      if (!perm) return {};
      int64_t rank = rank_of(0);
      if (static_cast<int64_t>(perm->size()) != rank)
        return bad(op.loc, op.name, ": permutation has ", perm->size(), " entries for a rank-",
                   rank, " operand");
      MESHPLAN_TRY(check_dims(op, "permutation", *perm, rank, "operand"));
      std::vector<int64_t> want;
      for (int64_t p : *perm) want.push_back(shape_of(0)[p]);
      return check_result_shape(op, want);
    }
    if (n == "broadcast_in_dim" && !op.operands.empty() && !op.results.empty()) {
      const auto* dims = ints(op, "broadcast_dimensions");
      if (!dims) return {};
      const auto& out = type_of(op.results[0]).shape;
      int64_t rank = static_cast<int64_t>(out.size());
      if (static_cast<int64_t>(dims->size()) != rank_of(0))
        return bad(op.loc, op.name, ": broadcast_dimensions has ", dims->size(),
                   " entries for a rank-", rank_of(0), " operand");
      MESHPLAN_TRY(check_dims(op, "broadcast_dimensions", *dims, rank, "result"));
      for (size_t i = 0; i < dims->size(); ++i)
        if (shape_of(0)[i] != 1 && shape_of(0)[i] != out[(*dims)[i]])
          return bad(op.loc, op.name, ": operand dimension ", i, " (", shape_of(0)[i],
                     ") cannot broadcast to result dimension ", (*dims)[i], " (", out[(*dims)[i]],
                     ")");
      return {};
    }
    if (n == "concatenate" && !op.operands.empty()) {
      const Attr* a = op.prop("dimension");
      if (!a || a->kind != Attr::Kind::integer) return {};
      int64_t rank = rank_of(0);
      if (a->i < 0 || a->i >= rank)
        return bad(op.loc, op.name, ": dimension ", a->i, " is outside [0, ", rank,
                   ") of its rank-", rank, " operands");
      std::vector<int64_t> want = shape_of(0);
      want[a->i] = 0;
      for (size_t i = 0; i < op.operands.size(); ++i) {
        const auto& s = shape_of(i);
        bool same = static_cast<int64_t>(s.size()) == rank;
        for (int64_t d = 0; same && d < rank; ++d) same = d == a->i || s[d] == shape_of(0)[d];
        if (!same)
          return bad(op.loc, op.name, ": operand ", i, " ", shape_text(s),
                     " differs from operand 0 ", shape_text(shape_of(0)), " outside dimension ",
                     a->i);
        want[a->i] += s[a->i];
      }
      return check_result_shape(op, want);
    }
    if (n == "convolution" && op.operands.size() >= 2 && !op.results.empty())
      return check_conv_dims(op);
    if (n == "reshape" && !op.operands.empty() && !op.results.empty()) {
      auto in = volume_of(shape_of(0));
      auto out = volume_of(type_of(op.results[0]).shape);
      if (in && out && *in != *out)
        return bad(op.loc, op.name, ": ", type_string(type_of(op.operands[0])), " and ",
                   type_string(type_of(op.results[0])), " hold different numbers of elements");
      return {};
    }
    for (const char* key :
         {"all_gather_dim", "scatter_dimension", "split_dimension", "concat_dimension"}) {
      const Attr* a = op.prop(key);
      if (!a || a->kind != Attr::Kind::integer || op.operands.empty()) continue;
      int64_t rank = rank_of(0);
      if (a->i < 0 || a->i >= rank)
        return bad(op.loc, op.name, ": ", key, " ", a->i, " is outside [0, ", rank,
                   ") of its rank-", rank, " operand");
    }
    return {};
  }

  /// convolution's dim_numbers `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]`: one list per operand
  /// and the result, each as long as its rank, naming its two feature/batch letters once and
  /// the same spatial dims 0..n-1 once each.
  Status check_conv_dims(const Op& op) const {
    const Attr* a = op.prop("dim_numbers");
    if (!a || a->kind != Attr::Kind::opaque) return {};
    std::string t;
    for (char c : a->text)
      if (!std::isspace(static_cast<unsigned char>(c))) t += c;
    size_t x = t.find("]x["), arrow = t.find("]->[");
    if (t.size() < 2 || t.front() != '[' || t.back() != ']' || x == std::string::npos ||
        arrow == std::string::npos || arrow < x)
      return bad(op.loc, op.name, ": dim_numbers '", a->text,
                 "' is not [..]x[..]->[..] (input, kernel, output)");
    std::string lists[3] = {t.substr(1, x - 1), t.substr(x + 3, arrow - x - 3),
                            t.substr(arrow + 4, t.size() - arrow - 5)};
    static const char* kLetters[3][2] = {{"b", "f"}, {"i", "o"}, {"b", "f"}};
    static const char* kWhat[3] = {"input", "kernel", "output"};
    const TensorType* types[3] = {&type_of(op.operands[0]), &type_of(op.operands[1]),
                                  &type_of(op.results[0])};
    size_t spatial = 0;
    for (int k = 0; k < 3; ++k) {
      std::vector<std::string> parts;
      for (size_t at = 0; at <= lists[k].size();) {
        size_t comma = lists[k].find(',', at);
        if (comma == std::string::npos) comma = lists[k].size();
        parts.push_back(lists[k].substr(at, comma - at));
        at = comma + 1;
      }
      size_t rank = types[k]->shape.size();
      if (parts.size() != rank)
        return bad(op.loc, op.name, ": dim_numbers lists ", parts.size(), " ", kWhat[k],
                   " dims for a rank-", rank, " ", kWhat[k]);
      if (rank < 2)
        return bad(op.loc, op.name, ": the ", kWhat[k], " has rank ", rank, ", at least 2 needed");
      if (k == 0) spatial = rank - 2;
      if (rank - 2 != spatial)
        return bad(op.loc, op.name, ": the ", kWhat[k], " has ", rank - 2,
                   " spatial dims, the input ", spatial);
      std::vector<int> seen(spatial + 2, 0);
      for (const std::string& p : parts) {
        size_t slot = spatial + 2;
        if (p == kLetters[k][0])
          slot = spatial;
        else if (p == kLetters[k][1])
          slot = spatial + 1;
        else if (p.size() == 1 && p[0] >= '0' && static_cast<size_t>(p[0] - '0') < spatial)
          slot = static_cast<size_t>(p[0] - '0');
        if (slot > spatial + 1 || seen[slot]++)
          return bad(op.loc, op.name, ": dim_numbers entry '", p, "' of the ", kWhat[k],
                     " is unknown or repeated (expected ", kLetters[k][0], ", ", kLetters[k][1],
                     " and spatial dims 0 to ", spatial - 1, " once each)");
      }
    }
    return {};
  }

  const Module& m_;
  SizeLimits limits_;
  mutable std::deque<std::vector<int64_t>> scratch_;  ///< Stable storage for ints() results.
};

}  // namespace

Status verify_module(const Module& module, SizeLimits limits) {
  return Verifier(module, limits).run();
}

}  // namespace meshplan::planner::shlo
