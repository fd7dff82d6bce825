// Host f32 SPMD simulation of a mesh plan (run_mesh_reference): written independently of the
// emulated Mesh so that each checks the other.
#include <algorithm>
#include <cmath>
#include <limits>

#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/op_cases.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/input_transform.hpp"
#include "meshplan/runtime/mesh_plan.hpp"

namespace meshplan::runtime {

namespace {

using Values = std::vector<float>;
using Shape = std::vector<int64_t>;

/// Row-major strides view: [outer, dim, inner] around `d`.
struct Around {
  int64_t outer = 1, dim = 1, inner = 1;
};
Around around(std::span<const int64_t> s, size_t d) {
  Around a;
  for (size_t i = 0; i < s.size(); ++i) (i < d ? a.outer : i == d ? a.dim : a.inner) *= s[i];
  return a;
}

/// Piece `p` of `n` along dim `d` of `x`.
Values slice_piece(const Values& x, std::span<const int64_t> s, size_t d, int64_t p, int64_t n) {
  Around a = around(s, d);
  int64_t len = a.dim / n;
  Values out(static_cast<size_t>(a.outer * len * a.inner));
  for (int64_t o = 0; o < a.outer; ++o)
    std::copy_n(x.begin() + (o * a.dim + p * len) * a.inner, len * a.inner,
                out.begin() + o * len * a.inner);
  return out;
}

/// Concatenation along dim `d` of equally shaped pieces of shape `s`.
Values concat(const std::vector<Values>& parts, std::span<const int64_t> s, size_t d) {
  Around a = around(s, d);
  int64_t n = static_cast<int64_t>(parts.size());
  Values out(static_cast<size_t>(a.outer * a.dim * n * a.inner));
  for (int64_t o = 0; o < a.outer; ++o)
    for (int64_t p = 0; p < n; ++p)
      std::copy_n(parts[static_cast<size_t>(p)].begin() + o * a.dim * a.inner, a.dim * a.inner,
                  out.begin() + (o * a.dim * n + p * a.dim) * a.inner);
  return out;
}

Values reduce(const std::vector<const Values*>& xs, device::ReduceOp op) {
  Values acc = *xs[0];
  for (size_t i = 1; i < xs.size(); ++i)
    for (size_t k = 0; k < acc.size(); ++k) {
      float v = (*xs[i])[k];
      // max / min propagate NaN (StableHLO's maximum / minimum).
      acc[k] = op == device::ReduceOp::sum           ? acc[k] + v
               : std::isnan(acc[k]) || std::isnan(v) ? acc[k] + v
               : op == device::ReduceOp::max         ? std::max(acc[k], v)
                                                     : std::min(acc[k], v);
    }
  return acc;
}

size_t norm(int64_t d, size_t rank) {
  return static_cast<size_t>(d < 0 ? d + static_cast<int64_t>(rank) : d);
}

/// Pieces along each tensor dim for chip `c` of a rows x cols mesh under a devices shard.
Shape chip_offsets(const device::MeshShardSpec& spec, int cols, int c,
                   std::span<const int64_t> local) {
  Shape off(local.size(), 0);
  int r = c / cols, k = c % cols;
  for (size_t d = 0; d < local.size(); ++d) {
    bool a0 = spec.shard_dims[0] == static_cast<int32_t>(d),
         a1 = spec.shard_dims[1] == static_cast<int32_t>(d);
    int64_t piece = a0 && a1 ? static_cast<int64_t>(r) * cols + k : a0 ? r : a1 ? k : 0;
    off[d] = piece * local[d];
  }
  return off;
}

/// Copies the block at `off` with shape `local` between the full tensor and a dense local one.
void block(Values& full, std::span<const int64_t> fs, Values& local, std::span<const int64_t> ls,
           std::span<const int64_t> off, bool to_local) {
  int64_t n = device::volume(ls);
  Shape idx(ls.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rem = i, f = 0;
    for (size_t d = ls.size(); d-- > 0;) {
      idx[d] = rem % ls[d];
      rem /= ls[d];
    }
    for (size_t d = 0; d < ls.size(); ++d) f = f * fs[d] + off[d] + idx[d];
    if (to_local)
      local[static_cast<size_t>(i)] = full[static_cast<size_t>(f)];
    else
      full[static_cast<size_t>(f)] = local[static_cast<size_t>(i)];
  }
}

}  // namespace

Result<std::vector<Tensor>> run_mesh_reference(const PlanRef& plan,
                                               std::span<const TensorView> inputs) {
  MESHPLAN_TRY(check_host_inputs(plan, inputs));
  const fb::Plan& p = plan.plan();
  const int rows = mesh_rows(plan), cols = mesh_cols(plan), chips = rows * cols;
  const size_t n_tensors = p.tensors()->size();
  // values[tensor][chip]
  std::vector<std::vector<Values>> values(n_tensors);
  std::vector<bool> have(n_tensors, false);
  auto shape_of = [&](uint32_t id) { return plan.placement(id).shape; };
  for (uint32_t id = 0; id < n_tensors; ++id) {
    const fb::TensorPlan* t = p.tensors()->Get(id);
    if (t->role() != fb::TensorRole::constant) continue;
    auto bytes = plan.segment(static_cast<uint32_t>(t->segment()));
    const float* f = reinterpret_cast<const float*>(bytes.data());
    values[id].assign(static_cast<size_t>(chips), Values(f, f + bytes.size() / sizeof(float)));
    have[id] = true;
  }
  for (uint32_t i = 0; i < p.inputs()->size(); ++i) {
    uint32_t id = p.inputs()->Get(i);
    auto local = shape_of(id);
    auto full = host_shape(plan, i, false);
    device::MeshShardSpec spec = boundary_shard(plan, i, false);
    // A prepared conv2d weight (replicated) is prepared on the host first, as the run does.
    Values host(inputs[i].data.begin(), inputs[i].data.end());
    if (input_transform(plan, i)) {
      host.assign(static_cast<size_t>(device::volume(full)), 0.0f);
      MESHPLAN_TRY(apply_input_transform(plan, i, inputs[i], host));
    }
    int64_t per_chip = device::volume(local);
    for (int c = 0; c < chips; ++c) {
      Values v(static_cast<size_t>(per_chip));
      if (spec.type == device::MeshShardType::identity)
        std::copy_n(host.begin() + c * per_chip, per_chip, v.begin());
      else if (spec.type == device::MeshShardType::replicate)
        v = host;
      else
        block(host, full, v, local, chip_offsets(spec, cols, c, local), true);
      values[id].push_back(std::move(v));
    }
    have[id] = true;
  }
  for (const fb::OpPlan* op : *p.ops()) {
    for (uint32_t id : *op->operands())
      if (!have[id])
        return fail(ErrorCode::corrupt, "plan '", plan.name(), "': op reads tensor ", id,
                    " before it is written");
    auto kind = static_cast<device::OpKind>(op->kind());
    device::OpConfig config = op_config_of(*op);
    config.mesh_rows = static_cast<uint16_t>(rows);
    config.mesh_cols = static_cast<uint16_t>(cols);
    uint32_t r = op->results()->Get(0);
    auto out_shape = shape_of(r);
    size_t out_volume = static_cast<size_t>(device::volume(out_shape));
    std::vector<Values> result(static_cast<size_t>(chips), Values(out_volume, 0.0f));
    if (!device::is_collective(kind)) {
      for (int c = 0; c < chips; ++c) {
        std::vector<device::HostView> in;
        for (uint32_t id : *op->operands())
          in.push_back(device::HostView{shape_of(id), values[id][static_cast<size_t>(c)]});
        MESHPLAN_TRY(
            device::reference(kind, in, config, out_shape, result[static_cast<size_t>(c)]));
      }
    } else {
      uint32_t a = op->operands()->Get(0);
      auto in_shape = shape_of(a);
      std::vector<std::span<const int64_t>> shapes{in_shape};
      auto inferred = device::infer_collective_shape(kind, shapes, config);
      if (!inferred || !std::ranges::equal(*inferred, out_shape))
        return fail(ErrorCode::corrupt, "plan '", plan.name(), "': collective ",
                    device::op_name(kind), " result shape does not follow from its operand");
      const auto& x = values[a];
      if (kind == device::OpKind::collective_permute) {
        for (auto [from, to] : device::permute_pairs(config))
          result[static_cast<size_t>(to)] = x[static_cast<size_t>(from)];
      } else {
        for (const auto& group : device::collective_groups(rows, cols, config.cluster_axis)) {
          int64_t n = static_cast<int64_t>(group.size());
          std::vector<const Values*> xs;
          for (int c : group) xs.push_back(&x[static_cast<size_t>(c)]);
          for (int64_t pos = 0; pos < n; ++pos) {
            Values& o = result[static_cast<size_t>(group[static_cast<size_t>(pos)])];
            switch (kind) {
              case device::OpKind::all_gather: {
                std::vector<Values> parts;
                for (auto* v : xs) parts.push_back(*v);
                o = concat(parts, in_shape, norm(config.collective_dim, in_shape.size()));
                break;
              }
              case device::OpKind::reduce_scatter:
                o = slice_piece(reduce(xs, config.reduce), in_shape,
                                norm(config.collective_dim, in_shape.size()), pos, n);
                break;
              case device::OpKind::all_reduce:
                o = reduce(xs, config.reduce);
                break;
              case device::OpKind::all_slice:
                o = slice_piece(*xs[static_cast<size_t>(pos)], in_shape,
                                norm(config.collective_dim, in_shape.size()), pos, n);
                break;
              case device::OpKind::all_to_all: {
                size_t sd = norm(config.split_dim, in_shape.size());
                size_t cd = norm(config.concat_dim, in_shape.size());
                std::vector<Values> parts;
                for (auto* v : xs) parts.push_back(slice_piece(*v, in_shape, sd, pos, n));
                Shape piece(in_shape.begin(), in_shape.end());
                piece[sd] /= n;
                o = concat(parts, piece, cd);
                break;
              }
              case device::OpKind::collective_permute:  // handled above
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE_(family, collective, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
                break;  // not a collective: handled above
            }
          }
        }
      }
    }
    values[r] = std::move(result);
    have[r] = true;
  }
  std::vector<Tensor> outputs;
  for (uint32_t i = 0; i < p.outputs()->size(); ++i) {
    uint32_t id = p.outputs()->Get(i);
    if (!have[id])
      return fail(ErrorCode::corrupt, "plan '", plan.name(), "': output tensor ", id,
                  " is never written");
    auto local = shape_of(id);
    auto full = host_shape(plan, i, true);
    device::MeshShardSpec spec = boundary_shard(plan, i, true);
    Tensor t(Shape(full.begin(), full.end()));
    if (spec.type == device::MeshShardType::identity) {
      t.data.clear();
      for (int c = 0; c < chips; ++c)
        t.data.insert(t.data.end(), values[id][static_cast<size_t>(c)].begin(),
                      values[id][static_cast<size_t>(c)].end());
    } else if (spec.type == device::MeshShardType::replicate) {
      std::copy(values[id][0].begin(), values[id][0].end(), t.data.begin());
    } else {
      Values host(t.data.size());
      for (int c = 0; c < chips; ++c) {
        int r = c / cols, k = c % cols;
        if ((spec.shard_dims[0] < 0 && r != 0) || (spec.shard_dims[1] < 0 && k != 0)) continue;
        block(host, full, values[id][static_cast<size_t>(c)], local,
              chip_offsets(spec, cols, c, local), false);
      }
      std::copy(host.begin(), host.end(), t.data.begin());
    }
    outputs.push_back(std::move(t));
  }
  return outputs;
}

}  // namespace meshplan::runtime
