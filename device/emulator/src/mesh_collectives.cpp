// Mesh collectives: check every chip's placements and run OpModel::validate on each chip's part
// (the rules the planner applied), read all inputs, combine on the host in coordinate order,
// write every output, then advance the clocks of each group.
#include <algorithm>
#include <functional>

#include "mesh_internal.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/emulated_mesh.hpp"
#include "meshplan/device/op_cases.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/timing.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

using namespace mesh_detail;

namespace {

std::string at(const Mesh& m, int index) {
  return "chip " + coord_name(m.descriptor().coord(index));
}

Status check_axis(const Mesh& m, int axis, const std::string& label) {
  if (axis != 0 && axis != 1 && axis != -1)
    return fail(ErrorCode::invalid_argument, label, ": cluster_axis ", axis, " is out of range: a ",
                m.rows(), "x", m.cols(), " mesh has axis 0 (", m.rows(),
                " chips per column), axis 1 (", m.cols(), " chips per row) and -1 (all ", m.size(),
                " chips)");
  return {};
}

/// Chip `i`'s input matches the group's first chip `f` in shape and dtype.
Status check_like(const Mesh& m, PerChip in, int f, int i, const std::string& label) {
  const TensorPlacement &a = in[static_cast<size_t>(f)], &b = in[static_cast<size_t>(i)];
  if (!std::ranges::equal(a.shape, b.shape))
    return fail(ErrorCode::invalid_argument, label, ": ", at(m, i), ": input '", b.name,
                "' has shape ", shape_name(b.shape), ", ", at(m, f), " has ", shape_name(a.shape),
                " (a group's inputs must match)");
  if (a.dtype != b.dtype)
    return fail(ErrorCode::invalid_argument, label, ": ", at(m, i), ": input '", b.name, "' is ",
                dtype_name(b.dtype), ", ", at(m, f), " has ", dtype_name(a.dtype));
  return {};
}

/// OpModel::validate on every chip's part of the collective, chip by chip, as
/// EmulatedDevice::launch validates a single-chip op: the planner's rules (collective_ops.hpp's
/// shapes, layout_rules.cpp's tt-metal rules) are the launch's. The first refusal is returned
/// with validate()'s reason after the chip's coordinates. `operand_of(i)` is the chip whose input
/// stands for chip i's operand (collective_permute: a chip that sends nothing takes the shape
/// of the tensors it may receive).
Status validate_chips(
    const Mesh& m, OpKind kind, OpConfig config, PerChip in, PerChip out, const std::string& label,
    const std::function<int(int)>& operand_of = [](int i) { return i; }) {
  config.mesh_rows = static_cast<uint16_t>(m.rows());
  config.mesh_cols = static_cast<uint16_t>(m.cols());
  OpModel model(m.descriptor());
  for (int i = 0; i < m.size(); ++i) {
    const TensorPlacement* operands[] = {&in[static_cast<size_t>(operand_of(i))]};
    const TensorPlacement* results[] = {&out[static_cast<size_t>(i)]};
    OpValidation v = model.validate(OpLaunch{kind, label, operands, results, config});
    if (!v.ok) return fail(ErrorCode::invalid_argument, at(m, i), ": ", v.reason);
  }
  return {};
}

/// The checks every axis collective starts with: one input and one output per chip; on a valid
/// axis, inputs alike within each group (what no one chip's validation can see); then what
/// OpModel::validate accepts on each chip (`config` holds the call's attributes: a bad axis is
/// refused there with validate()'s reason).
Status check_call(const Mesh& m, PerChip in, PerChip out, OpKind kind, const OpConfig& config,
                  int axis, const std::string& label) {
  MESHPLAN_TRY(check_count(m, in, "input", label));
  MESHPLAN_TRY(check_count(m, out, "output", label));
  if (axis == 0 || axis == 1 || axis == -1)
    for (const auto& g : collective_groups(m.rows(), m.cols(), axis))
      for (int i : g) MESHPLAN_TRY(check_like(m, in, g[0], i, label));
  MESHPLAN_TRY(validate_chips(m, kind, config, in, out, label));
  return check_axis(m, axis, label);
}

/// The OpConfig of an axis collective called with these attributes.
OpConfig axis_config(int cluster_axis, int dim = 0, ReduceOp op = ReduceOp::sum) {
  OpConfig c;
  c.cluster_axis = static_cast<int8_t>(cluster_axis);
  c.collective_dim = dim;
  c.reduce = op;
  return c;
}

Status check_output(const Mesh& m, const TensorPlacement& o, std::span<const int64_t> want,
                    DType dtype, int i, const std::string& label) {
  if (!std::ranges::equal(o.shape, want))
    return fail(ErrorCode::invalid_argument, label, ": ", at(m, i), ": output '", o.name,
                "' has shape ", shape_name(o.shape), ", the result has ", shape_name(want));
  if (o.dtype != dtype)
    return fail(ErrorCode::invalid_argument, label, ": ", at(m, i), ": output '", o.name, "' is ",
                dtype_name(o.dtype), ", the input is ", dtype_name(dtype),
                " (collectives do not cast)");
  return {};
}

/// Bytes per element of a placement, for counting moved bytes.
double element_size(const TensorPlacement& t) {
  int64_t n = volume(t.shape);
  return n ? static_cast<double>(tensor_bytes(t)) / static_cast<double>(n) : 0.0;
}

void reduce_into(ReduceOp op, std::vector<float>& acc, const std::vector<float>& x) {
  for (size_t k = 0; k < acc.size(); ++k) {
    switch (op) {
      case ReduceOp::sum:
        acc[k] += x[k];
        break;
      case ReduceOp::max:  // max / min propagate NaN (StableHLO's maximum / minimum).
        acc[k] = scalar::maximum{}(acc[k], x[k]);
        break;
      case ReduceOp::min:
        acc[k] = scalar::minimum{}(acc[k], x[k]);
        break;
    }
  }
}

}  // namespace

/// The part every axis collective shares once its shapes are checked: read each group's inputs,
/// let `combine` make the outputs (by position), write them, time the group.
struct AxisCollective {
  Mesh& mesh;
  PerChip in, out;
  std::string label;
  CollectiveKind kind;
  std::vector<std::vector<int>> groups;

  /// combine(group's chips, inputs by position, outputs by position); remote(N, input volume) =
  /// elements a chip receives from other chips.
  Result<CollectiveRun> run(
      const std::function<void(const std::vector<int>&, std::vector<std::vector<float>>&,
                               std::vector<std::vector<float>>&)>& combine,
      const std::function<double(int64_t n, int64_t in_elems)>& remote,
      const std::function<uint64_t(int first)>& tensor_t,
      const std::function<void(std::span<const int> chips, uint64_t ns)>& advance) {
    std::vector<std::vector<std::vector<float>>> inputs(groups.size());
    for (size_t g = 0; g < groups.size(); ++g)
      for (int i : groups[g])
        inputs[g].push_back(MESHPLAN_TRY(read_chip(mesh, i, in[static_cast<size_t>(i)], label)));
    CollectiveRun run;
    run.groups = static_cast<uint32_t>(groups.size());
    std::vector<CollectiveTiming> timings;
    for (size_t g = 0; g < groups.size(); ++g) {
      const std::vector<int>& chips = groups[g];
      std::vector<std::vector<float>> outputs(chips.size());
      for (size_t p = 0; p < chips.size(); ++p)
        outputs[p].assign(static_cast<size_t>(volume(out[static_cast<size_t>(chips[p])].shape)),
                          0.0f);
      combine(chips, inputs[g], outputs);
      for (size_t p = 0; p < chips.size(); ++p)
        MESHPLAN_TRY(
            write_chip(mesh, chips[p], out[static_cast<size_t>(chips[p])], outputs[p], label));
      const TensorPlacement& first = in[static_cast<size_t>(chips[0])];
      int64_t n = static_cast<int64_t>(chips.size());
      run.bytes_moved +=
          static_cast<uint64_t>(remote(n, volume(first.shape)) * element_size(first)) *
          chips.size();
      timings.push_back(estimate_collective(mesh.descriptor(), kind, static_cast<uint32_t>(n),
                                            tensor_t(chips[0])));
    }
    for (size_t g = 0; g < groups.size(); ++g) {
      advance(groups[g], timings[g].duration_ns);
      if (timings[g].duration_ns >= run.timing.duration_ns) run.timing = timings[g];
      for (int i : groups[g])
        run.end_ns = std::max(run.end_ns, mesh.now_ns(mesh.descriptor().coord(i)));
    }
    return run;
  }
};

Result<CollectiveRun> mesh_detail::all_gather_on(Mesh& m, const AdvanceFn& advance, PerChip in,
                                                 PerChip out, int dim, int cluster_axis) {
  std::string label = str("all_gather(dim=", dim, ", cluster_axis=", cluster_axis, ")");
  MESHPLAN_TRY(check_call(m, in, out, OpKind::all_gather, axis_config(cluster_axis, dim),
                          cluster_axis, label));
  AxisCollective c{m,
                   in,
                   out,
                   label,
                   CollectiveKind::all_gather,
                   collective_groups(m.rows(), m.cols(), cluster_axis)};
  for (const auto& g : c.groups) {
    const TensorPlacement& first = in[static_cast<size_t>(g[0])];
    int d = MESHPLAN_TRY(normalize_dim(dim, first.shape.size(), label + ": " + at(m, g[0]), "dim"));
    std::vector<int64_t> want(first.shape.begin(), first.shape.end());
    want[static_cast<size_t>(d)] *= static_cast<int64_t>(g.size());
    for (int i : g) {
      MESHPLAN_TRY(check_like(m, in, g[0], i, label));
      MESHPLAN_TRY(check_output(m, out[static_cast<size_t>(i)], want, first.dtype, i, label));
    }
  }
  return c.run(
      [&](const std::vector<int>& chips, auto& ins, auto& outs) {
        auto shape = in[static_cast<size_t>(chips[0])].shape;
        int gd = dim < 0 ? dim + static_cast<int>(shape.size()) : dim;
        int64_t n = static_cast<int64_t>(ins.size());
        DimSplit is = split_at(shape, gd);
        for (auto& o : outs)
          for (int64_t p = 0; p < n; ++p)
            copy_block(ins[static_cast<size_t>(p)].data(), is, 0, o.data(), is.dim * n, p * is.dim,
                       is.dim);
      },
      [](int64_t n, int64_t elems) { return static_cast<double>((n - 1) * elems); },
      [&](int first) { return tensor_bytes(out[static_cast<size_t>(first)]); },
      [&](std::span<const int> chips, uint64_t ns) { advance(chips, ns); });
}

Result<CollectiveRun> mesh_detail::reduce_scatter_on(Mesh& m, const AdvanceFn& advance, PerChip in,
                                                     PerChip out, int dim, int cluster_axis,
                                                     ReduceOp op) {
  std::string label =
      str("reduce_scatter(dim=", dim, ", cluster_axis=", cluster_axis, ", ", reduce_name(op), ")");
  MESHPLAN_TRY(check_call(m, in, out, OpKind::reduce_scatter, axis_config(cluster_axis, dim, op),
                          cluster_axis, label));
  AxisCollective c{m,
                   in,
                   out,
                   label,
                   CollectiveKind::reduce_scatter,
                   collective_groups(m.rows(), m.cols(), cluster_axis)};
  for (const auto& g : c.groups) {
    const TensorPlacement& first = in[static_cast<size_t>(g[0])];
    int d = MESHPLAN_TRY(normalize_dim(dim, first.shape.size(), label + ": " + at(m, g[0]), "dim"));
    int64_t n = static_cast<int64_t>(g.size());
    if (first.shape[static_cast<size_t>(d)] % n != 0)
      return fail(ErrorCode::invalid_argument, label, ": ", at(m, g[0]), ": input '", first.name,
                  "' ", shape_name(first.shape), ": dim ", d, " of size ",
                  first.shape[static_cast<size_t>(d)], " does not split evenly over ", n, " chips");
    std::vector<int64_t> want(first.shape.begin(), first.shape.end());
    want[static_cast<size_t>(d)] /= n;
    for (int i : g) {
      MESHPLAN_TRY(check_like(m, in, g[0], i, label));
      MESHPLAN_TRY(check_output(m, out[static_cast<size_t>(i)], want, first.dtype, i, label));
    }
  }
  return c.run(
      [&](const std::vector<int>& chips, auto& ins, auto& outs) {
        std::vector<float> acc = ins[0];
        for (size_t p = 1; p < ins.size(); ++p) reduce_into(op, acc, ins[p]);
        auto shape = in[static_cast<size_t>(chips[0])].shape;
        DimSplit s = split_at(shape, dim < 0 ? dim + static_cast<int>(shape.size()) : dim);
        int64_t part = s.dim / static_cast<int64_t>(outs.size());
        for (size_t p = 0; p < outs.size(); ++p)
          copy_block(acc.data(), s, static_cast<int64_t>(p) * part, outs[p].data(), part, 0, part);
      },
      [](int64_t n, int64_t elems) {
        return static_cast<double>((n - 1) * elems) / static_cast<double>(n);
      },
      [&](int first) { return tensor_bytes(in[static_cast<size_t>(first)]); },
      [&](std::span<const int> chips, uint64_t ns) { advance(chips, ns); });
}

Result<CollectiveRun> mesh_detail::all_reduce_on(Mesh& m, const AdvanceFn& advance, PerChip in,
                                                 PerChip out, int cluster_axis, ReduceOp op) {
  std::string label = str("all_reduce(cluster_axis=", cluster_axis, ", ", reduce_name(op), ")");
  MESHPLAN_TRY(check_call(m, in, out, OpKind::all_reduce, axis_config(cluster_axis, 0, op),
                          cluster_axis, label));
  AxisCollective c{m,
                   in,
                   out,
                   label,
                   CollectiveKind::all_reduce,
                   collective_groups(m.rows(), m.cols(), cluster_axis)};
  for (const auto& g : c.groups)
    for (int i : g) {
      MESHPLAN_TRY(check_like(m, in, g[0], i, label));
      const TensorPlacement& first = in[static_cast<size_t>(g[0])];
      MESHPLAN_TRY(
          check_output(m, out[static_cast<size_t>(i)], first.shape, first.dtype, i, label));
    }
  return c.run(
      [&](const std::vector<int>& chips, auto& ins, auto& outs) {
        std::vector<float> acc = ins[0];
        for (size_t p = 1; p < ins.size(); ++p) reduce_into(op, acc, ins[p]);
        (void)chips;
        for (auto& o : outs) o = acc;
      },
      [](int64_t n, int64_t elems) {
        return 2.0 * static_cast<double>((n - 1) * elems) / static_cast<double>(n);
      },
      [&](int first) { return tensor_bytes(in[static_cast<size_t>(first)]); },
      [&](std::span<const int> chips, uint64_t ns) { advance(chips, ns); });
}

Result<CollectiveRun> mesh_detail::all_to_all_on(Mesh& m, const AdvanceFn& advance, PerChip in,
                                                 PerChip out, int split_dim, int concat_dim,
                                                 int cluster_axis) {
  std::string label = str("all_to_all(split_dim=", split_dim, ", concat_dim=", concat_dim,
                          ", cluster_axis=", cluster_axis, ")");
  OpConfig config = axis_config(cluster_axis);
  config.split_dim = split_dim;
  config.concat_dim = concat_dim;
  MESHPLAN_TRY(check_call(m, in, out, OpKind::all_to_all, config, cluster_axis, label));
  AxisCollective c{m,
                   in,
                   out,
                   label,
                   CollectiveKind::all_to_all,
                   collective_groups(m.rows(), m.cols(), cluster_axis)};
  for (const auto& g : c.groups) {
    const TensorPlacement& first = in[static_cast<size_t>(g[0])];
    std::string where = label + ": " + at(m, g[0]);
    int sd = MESHPLAN_TRY(normalize_dim(split_dim, first.shape.size(), where, "split_dim"));
    int cd = MESHPLAN_TRY(normalize_dim(concat_dim, first.shape.size(), where, "concat_dim"));
    int64_t n = static_cast<int64_t>(g.size());
    if (first.shape[static_cast<size_t>(sd)] % n != 0)
      return fail(ErrorCode::invalid_argument, where, ": input '", first.name, "' ",
                  shape_name(first.shape), ": split_dim ", sd, " of size ",
                  first.shape[static_cast<size_t>(sd)], " does not split evenly over ", n,
                  " chips");
    std::vector<int64_t> want(first.shape.begin(), first.shape.end());
    want[static_cast<size_t>(sd)] /= n;
    want[static_cast<size_t>(cd)] *= n;
    for (int i : g) {
      MESHPLAN_TRY(check_like(m, in, g[0], i, label));
      MESHPLAN_TRY(check_output(m, out[static_cast<size_t>(i)], want, first.dtype, i, label));
    }
  }
  return c.run(
      [&](const std::vector<int>& chips, auto& ins, auto& outs) {
        int64_t n = static_cast<int64_t>(ins.size());
        auto shape = in[static_cast<size_t>(chips[0])].shape;
        int rank = static_cast<int>(shape.size());
        int sd = split_dim < 0 ? split_dim + rank : split_dim,
            cd = concat_dim < 0 ? concat_dim + rank : concat_dim;
        std::vector<int64_t> piece(shape.begin(), shape.end());
        DimSplit is = split_at(piece, sd);
        piece[static_cast<size_t>(sd)] /= n;
        DimSplit ps = split_at(piece, cd);
        int64_t chunk = is.dim / n, out_dim = ps.dim * n;
        std::vector<float> tmp(static_cast<size_t>(volume(piece)));
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < n; ++i) {
            copy_block(ins[static_cast<size_t>(i)].data(), is, j * chunk, tmp.data(), chunk, 0,
                       chunk);
            copy_block(tmp.data(), ps, 0, outs[static_cast<size_t>(j)].data(), out_dim, i * ps.dim,
                       ps.dim);
          }
      },
      [](int64_t n, int64_t elems) {
        return static_cast<double>((n - 1) * elems) / static_cast<double>(n);
      },
      [&](int first) { return tensor_bytes(in[static_cast<size_t>(first)]); },
      [&](std::span<const int> chips, uint64_t ns) { advance(chips, ns); });
}

Result<CollectiveRun> mesh_detail::collective_permute_on(
    Mesh& m, const AdvanceFn& advance, PerChip in, PerChip out,
    std::span<const std::pair<MeshCoord, MeshCoord>> pairs) {
  std::string label = str("collective_permute(", pairs.size(), " pairs)");
  MESHPLAN_TRY(check_count(m, in, "input", label));
  MESHPLAN_TRY(check_count(m, out, "output", label));
  std::vector<int> source_of(static_cast<size_t>(m.size()), -1);
  std::vector<bool> is_source(static_cast<size_t>(m.size()), false);
  for (const auto& [s, t] : pairs) {
    for (MeshCoord c : {s, t})
      if (!m.descriptor().contains(c))
        return fail(ErrorCode::invalid_argument, label, ": pair ", coord_name(s), " -> ",
                    coord_name(t), ": chip ", coord_name(c), " is outside the ", m.rows(), "x",
                    m.cols(), " mesh");
    int si = m.descriptor().index(s), ti = m.descriptor().index(t);
    if (is_source[static_cast<size_t>(si)])
      return fail(ErrorCode::invalid_argument, label, ": chip ", coord_name(s),
                  " is the source of two pairs");
    if (source_of[static_cast<size_t>(ti)] >= 0)
      return fail(ErrorCode::invalid_argument, label, ": chip ", coord_name(t),
                  " is the target of two pairs");
    is_source[static_cast<size_t>(si)] = true;
    source_of[static_cast<size_t>(ti)] = si;
  }
  // Every chip's output has the shape of the inputs; sources must agree with each other.
  int first = -1;
  for (int i = 0; i < m.size(); ++i)
    if (is_source[static_cast<size_t>(i)] && first < 0) first = i;
  OpConfig config;
  for (const auto& [s, t] : pairs) {
    config.pairs.push_back(static_cast<uint8_t>(m.descriptor().index(s)));
    config.pairs.push_back(static_cast<uint8_t>(m.descriptor().index(t)));
  }
  MESHPLAN_TRY(validate_chips(m, OpKind::collective_permute, config, in, out, label, [&](int i) {
    return is_source[static_cast<size_t>(i)] || first < 0 ? i : first;
  }));
  for (int i = 0; i < m.size(); ++i)
    if (is_source[static_cast<size_t>(i)]) MESHPLAN_TRY(check_like(m, in, first, i, label));
  const TensorPlacement& model = in[static_cast<size_t>(first < 0 ? 0 : first)];
  for (int i = 0; i < m.size(); ++i)
    MESHPLAN_TRY(check_output(m, out[static_cast<size_t>(i)], model.shape, model.dtype, i, label));
  std::vector<std::vector<float>> values(static_cast<size_t>(m.size()));
  for (int i = 0; i < m.size(); ++i)
    if (is_source[static_cast<size_t>(i)])
      values[static_cast<size_t>(i)] =
          MESHPLAN_TRY(read_chip(m, i, in[static_cast<size_t>(i)], label));
  std::vector<float> zeros;
  CollectiveRun run;
  run.groups = 1;
  std::vector<int> involved;
  for (int i = 0; i < m.size(); ++i) {
    int s = source_of[static_cast<size_t>(i)];
    if (s < 0 && zeros.empty()) zeros.assign(static_cast<size_t>(volume(model.shape)), 0.0f);
    MESHPLAN_TRY(write_chip(m, i, out[static_cast<size_t>(i)],
                            s < 0 ? zeros : values[static_cast<size_t>(s)], label));
    if (s >= 0 && s != i) run.bytes_moved += tensor_bytes(model);
    if (s >= 0 || is_source[static_cast<size_t>(i)]) involved.push_back(i);
  }
  run.timing = estimate_permute(m.descriptor(), pairs, tensor_bytes(model));
  run.end_ns = advance(involved, run.timing.duration_ns);
  return run;
}

Result<CollectiveRun> mesh_detail::all_slice_on(Mesh& m, const AdvanceFn& advance, PerChip in,
                                                PerChip out, int dim, int cluster_axis) {
  std::string label = str("all_slice(dim=", dim, ", cluster_axis=", cluster_axis, ")");
  MESHPLAN_TRY(check_call(m, in, out, OpKind::all_slice, axis_config(cluster_axis, dim),
                          cluster_axis, label));
  auto all = collective_groups(m.rows(), m.cols(), cluster_axis);
  std::vector<int> position(static_cast<size_t>(m.size()));
  for (const auto& g : all) {
    const TensorPlacement& first = in[static_cast<size_t>(g[0])];
    int d = MESHPLAN_TRY(normalize_dim(dim, first.shape.size(), label + ": " + at(m, g[0]), "dim"));
    int64_t n = static_cast<int64_t>(g.size());
    if (first.shape[static_cast<size_t>(d)] % n != 0)
      return fail(ErrorCode::invalid_argument, label, ": ", at(m, g[0]), ": input '", first.name,
                  "' ", shape_name(first.shape), " dim ", d, " does not split into ", n, " pieces");
    std::vector<int64_t> want(first.shape.begin(), first.shape.end());
    want[static_cast<size_t>(d)] /= n;
    for (size_t p = 0; p < g.size(); ++p) {
      MESHPLAN_TRY(check_like(m, in, g[0], g[p], label));
      MESHPLAN_TRY(check_output(m, out[static_cast<size_t>(g[p])], want, first.dtype, g[p], label));
      position[static_cast<size_t>(g[p])] = static_cast<int>(p);
    }
  }
  // Read everything, then write: a failing chip leaves every input untouched.
  std::vector<std::vector<float>> inputs;
  for (int i = 0; i < m.size(); ++i)
    inputs.push_back(MESHPLAN_TRY(read_chip(m, i, in[static_cast<size_t>(i)], label)));
  CollectiveRun run;
  run.groups = static_cast<uint32_t>(all.size());
  for (int i = 0; i < m.size(); ++i) {
    const TensorPlacement& t = in[static_cast<size_t>(i)];
    int d = dim < 0 ? dim + static_cast<int>(t.shape.size()) : dim;
    DimSplit s = split_at(t.shape, d);
    const TensorPlacement& o = out[static_cast<size_t>(i)];
    int64_t len = o.shape[static_cast<size_t>(d)];
    std::vector<float> slice(static_cast<size_t>(volume(o.shape)));
    copy_block(inputs[static_cast<size_t>(i)].data(), s, position[static_cast<size_t>(i)] * len,
               slice.data(), len, 0, len);
    MESHPLAN_TRY(write_chip(m, i, o, slice, label));
    // A local copy of the kept slice, timed by the chip's data-movement model.
    const TensorPlacement* operands[] = {&o};
    const TensorPlacement* results[] = {&o};
    OpLaunch copy{OpKind::to_memory_config, "all_slice", operands, results, OpConfig{}};
    uint64_t ns = estimate(m.descriptor().chip, copy).duration_ns;
    int chip_index[] = {i};
    advance(chip_index, ns);
    if (ns >= run.timing.duration_ns) {
      run.timing = CollectiveTiming{};
      run.timing.duration_ns = run.timing.transfer_ns = ns;
      run.timing.chips = 1;
    }
    run.end_ns = std::max(run.end_ns, m.now_ns(m.descriptor().coord(i)));
  }
  return run;
}

Result<CollectiveRun> EmulatedMesh::all_gather(PerChip in, PerChip out, int dim, int cluster_axis) {
  return all_gather_on(
      *this, [this](std::span<const int> c, uint64_t ns) { return advance(c, ns); }, in, out, dim,
      cluster_axis);
}
Result<CollectiveRun> EmulatedMesh::reduce_scatter(PerChip in, PerChip out, int dim,
                                                   int cluster_axis, ReduceOp op) {
  return reduce_scatter_on(
      *this, [this](std::span<const int> c, uint64_t ns) { return advance(c, ns); }, in, out, dim,
      cluster_axis, op);
}
Result<CollectiveRun> EmulatedMesh::all_reduce(PerChip in, PerChip out, int cluster_axis,
                                               ReduceOp op) {
  return all_reduce_on(
      *this, [this](std::span<const int> c, uint64_t ns) { return advance(c, ns); }, in, out,
      cluster_axis, op);
}
Result<CollectiveRun> EmulatedMesh::all_to_all(PerChip in, PerChip out, int split_dim,
                                               int concat_dim, int cluster_axis) {
  return all_to_all_on(
      *this, [this](std::span<const int> c, uint64_t ns) { return advance(c, ns); }, in, out,
      split_dim, concat_dim, cluster_axis);
}
Result<CollectiveRun> EmulatedMesh::collective_permute(
    PerChip in, PerChip out, std::span<const std::pair<MeshCoord, MeshCoord>> pairs) {
  return collective_permute_on(
      *this, [this](std::span<const int> c, uint64_t ns) { return advance(c, ns); }, in, out,
      pairs);
}
Result<CollectiveRun> EmulatedMesh::all_slice(PerChip in, PerChip out, int dim, int cluster_axis) {
  return all_slice_on(
      *this, [this](std::span<const int> c, uint64_t ns) { return advance(c, ns); }, in, out, dim,
      cluster_axis);
}

}  // namespace meshplan::device
