// Host evaluation of StableHLO modules: the single-device f32 reference, and an SPMD simulation
// that runs the per-device program on every device of the mesh in lockstep with collectives
// done on host arrays. Straightforward loops: this is a checker, not a fast path.
#include "meshplan/planner/spmd_host.hpp"

#include <algorithm>
#include <cmath>
#include <random>

#include "import/meshplan_custom_call.hpp"
#include "import/stablehlo_lower_internal.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/planner/spmd.hpp"

namespace meshplan::planner::shlo {

namespace {

using Arr = HostArray;

int64_t vol(const std::vector<int64_t>& s) {
  int64_t v = 1;
  for (int64_t d : s) v *= d;
  return v;
}

std::vector<int64_t> strides(const std::vector<int64_t>& s) {
  std::vector<int64_t> st(s.size(), 1);
  for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
  return st;
}

void unravel(int64_t flat, const std::vector<int64_t>& shape, std::vector<int64_t>& idx) {
  idx.resize(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = shape[d] ? flat % shape[d] : 0;
    flat = shape[d] ? flat / shape[d] : 0;
  }
}

int64_t ravel(const std::vector<int64_t>& idx, const std::vector<int64_t>& st) {
  int64_t f = 0;
  for (size_t d = 0; d < idx.size(); ++d) f += idx[d] * st[d];
  return f;
}

/// Sub-array [start, start + size) per dim.
Arr block_of(const Arr& a, const std::vector<int64_t>& start, const std::vector<int64_t>& size) {
  Arr out{size, std::vector<float>(static_cast<size_t>(vol(size)))};
  auto st = strides(a.shape);
  std::vector<int64_t> idx;
  for (int64_t f = 0; f < vol(size); ++f) {
    unravel(f, size, idx);
    for (size_t d = 0; d < idx.size(); ++d) idx[d] += start[d];
    out.data[static_cast<size_t>(f)] = a.data[static_cast<size_t>(ravel(idx, st))];
  }
  return out;
}

Arr concat(const std::vector<const Arr*>& parts, size_t dim) {
  Arr out{parts[0]->shape, {}};
  out.shape[dim] = 0;
  for (const Arr* p : parts) out.shape[dim] += p->shape[dim];
  out.data.resize(static_cast<size_t>(vol(out.shape)));
  auto ost = strides(out.shape);
  int64_t offset = 0;
  std::vector<int64_t> idx;
  for (const Arr* p : parts) {
    for (int64_t f = 0; f < vol(p->shape); ++f) {
      unravel(f, p->shape, idx);
      idx[dim] += offset;
      out.data[static_cast<size_t>(ravel(idx, ost))] = p->data[static_cast<size_t>(f)];
    }
    offset += p->shape[dim];
  }
  return out;
}

bool is_int_type(std::string_view e) {
  return e.starts_with("i") || e.starts_with("ui") || e.starts_with("si");
}

const std::vector<int64_t>& ints(const Op& op, const char* name) {
  static const std::vector<int64_t> kEmpty;
  const Attr* a = op.prop(name);
  return a ? a->ints : kEmpty;
}

/// Position of `device` along `axes` and the group size.
std::pair<int64_t, int64_t> position(const MeshDecl& mesh, const std::vector<AxisRef>& axes,
                                     int64_t device) {
  for (const auto& g : replica_groups(mesh, axes))
    for (size_t i = 0; i < g.size(); ++i)
      if (g[i] == device) return {static_cast<int64_t>(i), static_cast<int64_t>(g.size())};
  return {0, 1};
}

class Evaluator {
 public:
  Evaluator(const Module& m, int64_t devices) : m_(m), devices_(devices), env_(m.values.size()) {}

  /// Runs a block; returns the values its terminator returns (per device).
  Result<std::vector<std::vector<Arr>>> block(const Block& b) {
    for (OpId o : b.ops) {
      const Op& op = m_.ops[o];
      if (op.name == "func.return" || op.name == "sdy.return" || op.name == "stablehlo.return") {
        std::vector<std::vector<Arr>> out;
        for (ValueId v : op.operands) out.push_back(env_[v]);
        return out;
      }
      MESHPLAN_TRY(run(op));
    }
    return fail(ErrorCode::invalid_argument, "block without a terminator");
  }

  void bind(ValueId v, std::vector<Arr> per_device) { env_[v] = std::move(per_device); }
  bool spmd_ = false;

 private:
  Status run(const Op& op) {
    std::string_view n = op.name;
    auto unsupported = [&]() {
      return fail(ErrorCode::unimplemented, op.loc.str(), ": no host evaluation for '", op.name,
                  "'");
    };
    if (n == "sdy.manual_computation") return manual(op);
    if (n == "sdy.reshard" || n == "sdy.sharding_constraint") {
      if (spmd_) return unsupported();
      env_[op.results[0]] = env_[op.operands[0]];
      return {};
    }
    if (n == "stablehlo.all_gather" || n == "stablehlo.all_reduce" ||
        n == "stablehlo.reduce_scatter" || n == "stablehlo.all_to_all" || n == "sdy.all_slice" ||
        n == "stablehlo.collective_permute")
      return collective(op);
    for (size_t r = 0; r < op.results.size(); ++r)
      env_[op.results[r]].resize(static_cast<size_t>(devices_));
    for (int64_t d = 0; d < devices_; ++d) {
      std::vector<const Arr*> in;
      for (ValueId v : op.operands) in.push_back(&env_[v][static_cast<size_t>(d)]);
      Arr out = MESHPLAN_TRY(local(op, in));
      if (static_cast<int64_t>(out.data.size()) != vol(out.shape) ||
          out.shape != m_.values[op.results[0]].type.shape)
        return fail(ErrorCode::internal, op.loc.str(), ": host evaluation of ", op.name,
                    " gave shape ", out.shape.size(), "-d of ", out.data.size(),
                    " values, expected ", type_string(m_.values[op.results[0]].type));
      env_[op.results[0]][static_cast<size_t>(d)] = std::move(out);
    }
    return {};
  }

  Result<Arr> local(const Op& op, const std::vector<const Arr*>& in);
  Status collective(const Op& op);
  Status manual(const Op& op);

  const Module& m_;
  int64_t devices_;
  std::vector<std::vector<Arr>> env_;
};

float unary(std::string_view s, float x, bool& ok) {
  ok = true;
  if (s == "abs") return std::fabs(x);
  if (s == "negate") return -x;
  if (s == "exponential") return std::exp(x);
  if (s == "log") return std::log(x);
  if (s == "sqrt") return std::sqrt(x);
  if (s == "rsqrt") return 1.0f / std::sqrt(x);
  if (s == "tanh") return std::tanh(x);
  if (s == "logistic") return 1.0f / (1.0f + std::exp(-x));
  if (s == "floor") return std::floor(x);
  if (s == "ceil") return std::ceil(x);
  if (s == "sine") return std::sin(x);
  if (s == "cosine") return std::cos(x);
  if (s == "sign") return x > 0 ? 1.0f : x < 0 ? -1.0f : x;  // keeps -0.0 and NaN
  if (s == "not") return x == 0 ? 1.0f : 0.0f;
  if (s == "tan") return std::tan(x);
  if (s == "round_nearest_even") return std::nearbyint(x);
  if (s == "round_nearest_afz") return std::round(x);
  if (s == "log_plus_one") return std::log1p(x);
  if (s == "exponential_minus_one") return std::expm1(x);
  if (s == "cbrt") return std::cbrt(x);
  if (s == "is_finite") return std::isfinite(x) ? 1.0f : 0.0f;
  ok = false;
  return 0;
}

float binary(std::string_view s, float a, float b, bool& ok) {
  ok = true;
  if (s == "add") return a + b;
  if (s == "subtract") return a - b;
  if (s == "multiply") return a * b;
  if (s == "divide") return a / b;
  // maximum/minimum propagate NaN, as the StableHLO spec says.
  if (s == "maximum") return std::isnan(a) || std::isnan(b) ? a + b : std::max(a, b);
  if (s == "minimum") return std::isnan(a) || std::isnan(b) ? a + b : std::min(a, b);
  if (s == "power") return std::pow(a, b);
  if (s == "remainder") return std::fmod(a, b);
  if (s == "atan2") return std::atan2(a, b);
  if (s == "and") return (a != 0 && b != 0) ? 1.0f : 0.0f;
  if (s == "or") return (a != 0 || b != 0) ? 1.0f : 0.0f;
  if (s == "xor")  // bitwise on the integer values (0/1 for booleans)
    return static_cast<float>(static_cast<int64_t>(a) ^ static_cast<int64_t>(b));
  ok = false;
  return 0;
}

Result<Arr> convolution(const Op& op, const Arr& x, const Arr& w, Arr out);

Result<Arr> Evaluator::local(const Op& op, const std::vector<const Arr*>& in) {
  const TensorType& rt = m_.values[op.results[0]].type;
  Arr out{rt.shape, std::vector<float>(static_cast<size_t>(vol(rt.shape)))};
  std::string_view s = op.name;
  if (s == "chlo.erf" && in.size() == 1 && in[0]->data.size() == out.data.size()) {
    for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = std::erf(in[0]->data[i]);
    return out;
  }
  if (!s.starts_with("stablehlo."))
    return fail(ErrorCode::unimplemented, op.loc.str(), ": no host evaluation for '", op.name, "'");
  s.remove_prefix(10);
  bool ok = false;
  // Elementwise ops: operands of the result's size (anything else falls through to its own case).
  auto same_size = [&](const Arr* a) { return a->data.size() == out.data.size(); };
  if (in.size() == 1 && op.props.empty() && s != "reshape" && s != "convert" && same_size(in[0])) {
    for (size_t i = 0; i < out.data.size(); ++i) out.data[i] = unary(s, in[0]->data[i], ok);
    if (ok) return out;
  }
  if (in.size() == 2 && op.props.empty() && same_size(in[0]) && same_size(in[1])) {
    for (size_t i = 0; i < out.data.size(); ++i)
      out.data[i] = binary(s, in[0]->data[i], in[1]->data[i], ok);
    if (ok) return out;
  }
  if (s == "convert") {
    for (size_t i = 0; i < out.data.size(); ++i) {
      float x = in[0]->data[i];
      out.data[i] = rt.element == "i1"        ? (x != 0 ? 1.0f : 0.0f)
                    : is_int_type(rt.element) ? std::trunc(x)
                                              : x;
    }
    return out;
  }
  if (s == "reshape") {
    out.data = in[0]->data;
    return out;
  }
  if (s == "compare") {
    const Attr* d = op.prop("comparison_direction");
    std::string dir = d ? d->text : "";
    if (auto sp = dir.rfind(' '); sp != std::string::npos) dir = dir.substr(sp + 1, 2);
    for (size_t i = 0; i < out.data.size(); ++i) {
      float a = in[0]->data[i], b = in[1]->data[i];
      bool r = dir == "EQ"   ? a == b
               : dir == "NE" ? a != b
               : dir == "LT" ? a < b
               : dir == "LE" ? a <= b
               : dir == "GT" ? a > b
                             : a >= b;
      out.data[i] = r ? 1.0f : 0.0f;
    }
    return out;
  }
  if (s == "select") {
    for (size_t i = 0; i < out.data.size(); ++i) {
      float p = in[0]->data.size() == 1 ? in[0]->data[0] : in[0]->data[i];
      out.data[i] = p != 0 ? in[1]->data[i] : in[2]->data[i];
    }
    return out;
  }
  if (s == "clamp") {  // min(max(x, lo), hi); lo and hi may be scalars
    auto at = [](const Arr* a, size_t i) { return a->data.size() == 1 ? a->data[0] : a->data[i]; };
    for (size_t i = 0; i < out.data.size(); ++i)
      out.data[i] = std::min(std::max(in[1]->data[i], at(in[0], i)), at(in[2], i));
    return out;
  }
  if (s == "constant") {
    const Attr* v = op.prop("value");
    if (!v || !v->text.empty())
      return fail(ErrorCode::unimplemented, op.loc.str(),
                  ": hex-string dense constants have no host evaluation");
    for (size_t i = 0; i < out.data.size(); ++i)
      out.data[i] = static_cast<float>(v->values.size() == 1 ? v->values[0] : v->values[i]);
    return out;
  }
  if (s == "iota") {
    size_t dim = static_cast<size_t>(op.prop("iota_dimension")->i);
    std::vector<int64_t> idx;
    for (int64_t f = 0; f < vol(out.shape); ++f) {
      unravel(f, out.shape, idx);
      out.data[static_cast<size_t>(f)] = static_cast<float>(idx[dim]);
    }
    return out;
  }
  if (s == "broadcast_in_dim") {
    const auto& dims = ints(op, "broadcast_dimensions");
    auto ist = strides(in[0]->shape);
    std::vector<int64_t> idx, iidx(in[0]->shape.size());
    for (int64_t f = 0; f < vol(out.shape); ++f) {
      unravel(f, out.shape, idx);
      for (size_t d = 0; d < iidx.size(); ++d)
        iidx[d] = in[0]->shape[d] == 1 ? 0 : idx[static_cast<size_t>(dims[d])];
      out.data[static_cast<size_t>(f)] = in[0]->data[static_cast<size_t>(ravel(iidx, ist))];
    }
    return out;
  }
  if (s == "transpose") {
    const auto& perm = ints(op, "permutation");
    auto ist = strides(in[0]->shape);
    std::vector<int64_t> idx, iidx(perm.size());
    for (int64_t f = 0; f < vol(out.shape); ++f) {
      unravel(f, out.shape, idx);
      for (size_t d = 0; d < perm.size(); ++d) iidx[static_cast<size_t>(perm[d])] = idx[d];
      out.data[static_cast<size_t>(f)] = in[0]->data[static_cast<size_t>(ravel(iidx, ist))];
    }
    return out;
  }
  if (s == "concatenate") return concat(in, static_cast<size_t>(op.prop("dimension")->i));
  if (s == "slice") {
    const auto& st = ints(op, "start_indices");
    const auto& sr = ints(op, "strides");
    auto ist = strides(in[0]->shape);
    std::vector<int64_t> idx;
    for (int64_t f = 0; f < vol(out.shape); ++f) {
      unravel(f, out.shape, idx);
      for (size_t d = 0; d < idx.size(); ++d) idx[d] = st[d] + idx[d] * sr[d];
      out.data[static_cast<size_t>(f)] = in[0]->data[static_cast<size_t>(ravel(idx, ist))];
    }
    return out;
  }
  if (s == "dot_general") {
    const auto& lb = ints(op, "lhs_batching_dimensions");
    const auto& rb = ints(op, "rhs_batching_dimensions");
    const auto& lc = ints(op, "lhs_contracting_dimensions");
    const auto& rc = ints(op, "rhs_contracting_dimensions");
    const Arr& l = *in[0];
    const Arr& r = *in[1];
    std::vector<size_t> lfree, rfree;
    for (size_t d = 0; d < l.shape.size(); ++d)
      if (std::find(lb.begin(), lb.end(), static_cast<int64_t>(d)) == lb.end() &&
          std::find(lc.begin(), lc.end(), static_cast<int64_t>(d)) == lc.end())
        lfree.push_back(d);
    for (size_t d = 0; d < r.shape.size(); ++d)
      if (std::find(rb.begin(), rb.end(), static_cast<int64_t>(d)) == rb.end() &&
          std::find(rc.begin(), rc.end(), static_cast<int64_t>(d)) == rc.end())
        rfree.push_back(d);
    std::vector<int64_t> cshape;
    for (int64_t d : lc) cshape.push_back(l.shape[static_cast<size_t>(d)]);
    auto lst = strides(l.shape), rst = strides(r.shape);
    std::vector<int64_t> idx, cidx, li(l.shape.size()), ri(r.shape.size());
    for (int64_t f = 0; f < vol(out.shape); ++f) {
      unravel(f, out.shape, idx);
      size_t k = 0;
      for (size_t i = 0; i < lb.size(); ++i, ++k) {
        li[static_cast<size_t>(lb[i])] = idx[k];
        ri[static_cast<size_t>(rb[i])] = idx[k];
      }
      for (size_t d : lfree) li[d] = idx[k++];
      for (size_t d : rfree) ri[d] = idx[k++];
      double acc = 0;
      for (int64_t c = 0; c < vol(cshape); ++c) {
        unravel(c, cshape, cidx);
        for (size_t i = 0; i < lc.size(); ++i) {
          li[static_cast<size_t>(lc[i])] = cidx[i];
          ri[static_cast<size_t>(rc[i])] = cidx[i];
        }
        acc += static_cast<double>(l.data[static_cast<size_t>(ravel(li, lst))]) *
               static_cast<double>(r.data[static_cast<size_t>(ravel(ri, rst))]);
      }
      out.data[static_cast<size_t>(f)] = static_cast<float>(acc);
    }
    return out;
  }
  if (s == "reduce") {
    const auto& dims = ints(op, "dimensions");
    std::string body =
        op.regions.empty() || op.regions[0].ops.empty() ? "" : m_.ops[op.regions[0].ops[0]].name;
    std::string_view fn = std::string_view(body).substr(body.starts_with("stablehlo.") ? 10 : 0);
    std::fill(out.data.begin(), out.data.end(), in[1]->data[0]);
    auto ost = strides(out.shape);
    std::vector<int64_t> idx, oidx;
    for (int64_t f = 0; f < vol(in[0]->shape); ++f) {
      unravel(f, in[0]->shape, idx);
      oidx.clear();
      for (size_t d = 0; d < idx.size(); ++d)
        if (std::find(dims.begin(), dims.end(), static_cast<int64_t>(d)) == dims.end())
          oidx.push_back(idx[d]);
      float& o = out.data[static_cast<size_t>(ravel(oidx, ost))];
      o = binary(fn, o, in[0]->data[static_cast<size_t>(f)], ok);
      if (!ok)
        return fail(ErrorCode::unimplemented, op.loc.str(), ": reduce body '", body,
                    "' has no host evaluation");
    }
    return out;
  }
  if (s == "convolution") return convolution(op, *in[0], *in[1], std::move(out));
  if (s == "custom_call") {
    // meshplan.* custom calls: the device's f32 reference of that op.
    planner::Op call = MESHPLAN_TRY(meshplan_call_op(op));
    device::OpConfig config = MESHPLAN_TRY(op_config(call));
    std::vector<device::HostView> views;
    for (const Arr* a : in) views.push_back({a->shape, a->data});
    MESHPLAN_TRY(device::reference(call.kind, views, config, out.shape, out.data));
    return out;
  }
  return fail(ErrorCode::unimplemented, op.loc.str(), ": no host evaluation for '", op.name, "'");
}

Result<Arr> convolution(const Op& op, const Arr& x, const Arr& w, Arr out) {
  auto c = MESHPLAN_TRY(lowering::conv_spec(op));
  // Sizes in NHWC / OHWI terms; component j of an operand lives in its dim perm[j].
  auto xst = strides(x.shape), wst = strides(w.shape), ost = strides(out.shape);
  auto size = [](const Arr& a, const std::vector<int64_t>& perm, size_t j) {
    return a.shape[static_cast<size_t>(perm[j])];
  };
  auto at = [](const std::vector<int64_t>& st, const std::vector<int64_t>& perm,
               std::initializer_list<int64_t> comp) {
    int64_t f = 0, j = 0;
    for (int64_t v : comp) f += v * st[static_cast<size_t>(perm[static_cast<size_t>(j++)])];
    return static_cast<size_t>(f);
  };
  const int64_t n = size(x, c.in_perm, 0), h = size(x, c.in_perm, 1), wd = size(x, c.in_perm, 2);
  const int64_t oc = size(w, c.w_perm, 0), kh = size(w, c.w_perm, 1), kw = size(w, c.w_perm, 2);
  const int64_t ci = size(w, c.w_perm, 3), cout_group = oc / c.groups;
  std::vector<int64_t> osz(4);
  for (size_t d = 0; d < 4; ++d) osz[static_cast<size_t>(c.out_perm[d])] = out.shape[d];
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oh = 0; oh < osz[1]; ++oh)
      for (int64_t ow = 0; ow < osz[2]; ++ow)
        for (int64_t o = 0; o < oc; ++o) {
          double acc = 0;
          int64_t g = o / cout_group;
          for (int64_t r = 0; r < kh; ++r)
            for (int64_t q = 0; q < kw; ++q) {
              int64_t ih = oh * c.stride[0] - c.pad[0] + r * c.dilation[0];
              int64_t iw = ow * c.stride[1] - c.pad[2] + q * c.dilation[1];
              if (ih < 0 || ih >= h || iw < 0 || iw >= wd) continue;
              for (int64_t i = 0; i < ci; ++i)
                acc += static_cast<double>(x.data[at(xst, c.in_perm, {b, ih, iw, g * ci + i})]) *
                       static_cast<double>(w.data[at(wst, c.w_perm, {o, r, q, i})]);
            }
          int64_t comp[4] = {b, oh, ow, o};
          int64_t f = 0;
          for (size_t d = 0; d < 4; ++d) f += comp[c.out_perm[d]] * ost[d];
          out.data[static_cast<size_t>(f)] = static_cast<float>(acc);
        }
  return out;
}

Status Evaluator::collective(const Op& op) {
  const MeshDecl* mesh = m_.main_mesh();
  if (!spmd_ || !mesh || mesh->devices() != devices_)
    return fail(ErrorCode::unimplemented, op.loc.str(), ": '", op.name,
                "' outside a per-device program");
  CollectiveInfo c = MESHPLAN_TRY(collective_info(m_, op));
  std::vector<Arr> result(static_cast<size_t>(devices_));
  const std::vector<Arr>& x = env_[op.operands[0]];
  if (c.kind == "collective_permute") {
    // Targets get their source's tensor; a device nobody targets gets zeros.
    for (int64_t dev = 0; dev < devices_; ++dev) {
      const Arr& a = x[static_cast<size_t>(dev)];
      result[static_cast<size_t>(dev)] = Arr{a.shape, std::vector<float>(a.data.size(), 0.0f)};
    }
    for (const auto& [from, to] : c.pairs) {
      if (from >= devices_ || to >= devices_)
        return fail(ErrorCode::invalid_argument, op.loc.str(), ": pair (", from, ", ", to,
                    ") names a device outside the ", devices_, "-device mesh");
      result[static_cast<size_t>(to)] = x[static_cast<size_t>(from)];
    }
  } else if (c.kind == "all_slice") {
    AxisMath math{*mesh};
    for (int64_t dev = 0; dev < devices_; ++dev) {
      const Arr& a = x[static_cast<size_t>(dev)];
      std::vector<int64_t> start(a.shape.size(), 0), size = a.shape;
      for (size_t d = 0; d < op.dim_axes.size(); ++d) {
        auto axes = math.without_trivial(op.dim_axes[d]);
        if (axes.empty()) continue;
        auto [p, n] = position(*mesh, axes, dev);
        size[d] = a.shape[d] / n;
        start[d] = p * size[d];
      }
      result[static_cast<size_t>(dev)] = block_of(a, start, size);
    }
  } else {
    for (const auto& g : c.groups) {
      const size_t n = g.size();
      std::vector<const Arr*> members;
      for (int64_t dev : g) members.push_back(&x.at(static_cast<size_t>(dev)));
      if (c.kind == "all_gather") {
        Arr all = concat(members, static_cast<size_t>(c.dim));
        for (int64_t dev : g) result[static_cast<size_t>(dev)] = all;
        continue;
      }
      if (c.kind == "all_reduce" || c.kind == "reduce_scatter") {
        Arr sum = *members[0];
        bool ok = true;
        std::string fn = c.reduction == "sum"   ? "add"
                         : c.reduction == "max" ? "maximum"
                                                : "minimum";
        for (size_t k = 1; k < n; ++k)
          for (size_t i = 0; i < sum.data.size(); ++i)
            sum.data[i] = binary(fn, sum.data[i], members[k]->data[i], ok);
        for (size_t k = 0; k < n; ++k) {
          Arr& r = result[static_cast<size_t>(g[k])];
          if (c.kind == "all_reduce") {
            r = sum;
          } else {
            std::vector<int64_t> start(sum.shape.size(), 0), size = sum.shape;
            size[static_cast<size_t>(c.dim)] /= static_cast<int64_t>(n);
            start[static_cast<size_t>(c.dim)] =
                static_cast<int64_t>(k) * size[static_cast<size_t>(c.dim)];
            r = block_of(sum, start, size);
          }
        }
        continue;
      }
      if (c.kind == "all_to_all") {
        // Member j receives piece j (along split_dimension) of every member, concatenated
        // along concat_dimension in member order.
        for (size_t j = 0; j < n; ++j) {
          std::vector<Arr> pieces;
          for (size_t i = 0; i < n; ++i) {
            const Arr& a = *members[i];
            std::vector<int64_t> start(a.shape.size(), 0), size = a.shape;
            size[static_cast<size_t>(c.dim)] /= static_cast<int64_t>(n);
            start[static_cast<size_t>(c.dim)] =
                static_cast<int64_t>(j) * size[static_cast<size_t>(c.dim)];
            pieces.push_back(block_of(a, start, size));
          }
          std::vector<const Arr*> ptrs;
          for (const Arr& p : pieces) ptrs.push_back(&p);
          result[static_cast<size_t>(g[j])] = concat(ptrs, static_cast<size_t>(c.concat_dim));
        }
        continue;
      }
      return fail(ErrorCode::unimplemented, op.loc.str(), ": ", c.kind, " has no host evaluation");
    }
  }
  for (int64_t dev = 0; dev < devices_; ++dev)
    if (result[static_cast<size_t>(dev)].shape != m_.values[op.results[0]].type.shape)
      return fail(ErrorCode::internal, op.loc.str(), ": ", op.name, " on device ", dev,
                  " does not give the declared type ", type_string(m_.values[op.results[0]].type));
  env_[op.results[0]] = std::move(result);
  return {};
}

Status Evaluator::manual(const Op& op) {
  const MeshDecl* mesh = m_.main_mesh();
  if (!spmd_ || !mesh || devices_ != 1)
    return fail(ErrorCode::unimplemented, op.loc.str(),
                ": a manual computation has no single-device reference (the program is already "
                "per-device)");
  const int64_t n = mesh->devices();
  AxisMath math{*mesh};
  auto blocks = [&](const std::vector<int64_t>& shape, const TensorSharding& s, int64_t dev) {
    std::vector<int64_t> start(shape.size(), 0), size = shape;
    for (size_t d = 0; d < s.dims.size() && d < shape.size(); ++d) {
      auto axes = math.without_trivial(s.dims[d].axes);
      if (axes.empty()) continue;
      auto [p, g] = position(*mesh, axes, dev);
      size[d] = shape[d] / g;
      start[d] = p * size[d];
    }
    return std::make_pair(start, size);
  };
  Evaluator inner(m_, n);
  inner.spmd_ = true;
  const Block& body = op.regions[0];
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const Arr& global = env_[op.operands[i]][0];
    std::vector<Arr> per(static_cast<size_t>(n));
    for (int64_t dev = 0; dev < n; ++dev) {  // mesh_shard FullToShard
      auto [start, size] = blocks(global.shape, op.in_shardings[i], dev);
      per[static_cast<size_t>(dev)] = block_of(global, start, size);
    }
    inner.bind(body.args[i], std::move(per));
  }
  auto returned = MESHPLAN_TRY(inner.block(body));
  for (size_t k = 0; k < op.results.size(); ++k) {  // mesh_shard ShardToFull
    const TensorType& t = m_.values[op.results[k]].type;
    Arr global{t.shape, std::vector<float>(static_cast<size_t>(vol(t.shape)))};
    std::vector<bool> written(global.data.size(), false);
    auto gst = strides(t.shape);
    std::vector<int64_t> idx;
    for (int64_t dev = 0; dev < n; ++dev) {
      const Arr& local = returned[k][static_cast<size_t>(dev)];
      auto [start, size] = blocks(t.shape, op.out_shardings[k], dev);
      if (local.shape != size)
        return fail(ErrorCode::internal, op.loc.str(), ": result ", k, " on device ", dev,
                    " has the wrong local shape");
      for (int64_t f = 0; f < vol(size); ++f) {
        unravel(f, size, idx);
        for (size_t d = 0; d < idx.size(); ++d) idx[d] += start[d];
        size_t g = static_cast<size_t>(ravel(idx, gst));
        float v = local.data[static_cast<size_t>(f)];
        if (written[g] && std::fabs(global.data[g] - v) > 1e-4f * (1 + std::fabs(v)))
          return fail(ErrorCode::internal, op.loc.str(), ": replicated copies of result ", k,
                      " disagree (device ", dev, ": ", v, " vs ", global.data[g], ")");
        global.data[g] = v;
        written[g] = true;
      }
    }
    env_[op.results[k]] = {std::move(global)};
  }
  return {};
}

Result<std::vector<Arr>> run_entry(const Module& m, const std::vector<Arr>& inputs, bool spmd) {
  const Func* f = m.entry();
  if (!f) return fail(ErrorCode::invalid_argument, m.file, ": no function to evaluate");
  if (inputs.size() != f->args.size())
    return fail(ErrorCode::invalid_argument, "@", f->name, " takes ", f->args.size(), " inputs, ",
                inputs.size(), " given");
  Evaluator e(m, 1);
  e.spmd_ = spmd;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& t = m.values[f->args[i].value].type;
    if (inputs[i].shape != t.shape || static_cast<int64_t>(inputs[i].data.size()) != vol(t.shape))
      return fail(ErrorCode::invalid_argument, "input ", i, " does not match ", type_string(t));
    e.bind(f->args[i].value, {inputs[i]});
  }
  auto out = MESHPLAN_TRY(e.block(f->body));
  std::vector<Arr> result;
  for (auto& per : out) result.push_back(std::move(per.at(0)));
  return result;
}

}  // namespace

Result<std::vector<HostArray>> evaluate_reference(const Module& m,
                                                  const std::vector<HostArray>& inputs) {
  return run_entry(m, inputs, false);
}

Result<std::vector<HostArray>> evaluate_spmd(const Module& m,
                                             const std::vector<HostArray>& inputs) {
  return run_entry(m, inputs, true);
}

std::vector<HostArray> random_inputs(const Module& m, uint64_t seed) {
  std::vector<HostArray> out;
  const Func* f = m.entry();
  if (!f) return out;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const ArgInfo& a : f->args) {
    const TensorType& t = m.values[a.value].type;
    HostArray h{t.shape, std::vector<float>(static_cast<size_t>(vol(t.shape)))};
    for (float& x : h.data) x = dist(rng);
    if (t.element == "i1")  // booleans: 0 or 1
      for (float& x : h.data) x = x > 0 ? 1.0f : 0.0f;
    out.push_back(std::move(h));
  }
  return out;
}

}  // namespace meshplan::planner::shlo
