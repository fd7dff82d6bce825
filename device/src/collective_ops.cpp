// Shape rules, groups and timing of the collective ops (see collective_ops.hpp).
#include "meshplan/device/collective_ops.hpp"

#include <algorithm>
#include <sstream>

#include "meshplan/device/collective_timing.hpp"
#include "meshplan/device/formats.hpp"
#include "meshplan/device/op_cases.hpp"
#include "meshplan/device/timing.hpp"

namespace meshplan::device {

namespace {

std::string shape_text(std::span<const int64_t> s) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < s.size(); ++i) out << (i ? "x" : "") << s[i];
  out << "]";
  return out.str();
}

/// `dim` normalised against `rank` (negatives count from the back), or an error naming `attr`.
Result<size_t> normalise_dim(int64_t dim, size_t rank, std::string_view attr,
                             std::span<const int64_t> shape) {
  int64_t r = static_cast<int64_t>(rank);
  int64_t d = dim < 0 ? dim + r : dim;
  if (d < 0 || d >= r)
    return fail(ErrorCode::invalid_argument, attr, " ", dim, " is out of range for the rank-", r,
                " operand ", shape_text(shape));
  return static_cast<size_t>(d);
}

uint64_t bytes_of(const TensorPlacement& t) {
  return static_cast<uint64_t>(page_count(t)) * t.page_size;
}

}  // namespace

bool is_collective(OpKind kind) {
  return op_family(kind) == OpFamily::collective;
}

bool has_cluster_axis(OpKind kind) {
  return is_collective(kind) && kind != OpKind::collective_permute;
}

int collective_group_size(const OpConfig& c) {
  switch (c.cluster_axis) {
    case -1:
      return static_cast<int>(c.mesh_rows) * c.mesh_cols;
    case 0:
      return c.mesh_rows;
    case 1:
      return c.mesh_cols;
    default:
      return 0;
  }
}

std::vector<std::vector<int>> collective_groups(int rows, int cols, int cluster_axis) {
  std::vector<std::vector<int>> groups;
  if (cluster_axis == -1) {
    groups.emplace_back();
    for (int i = 0; i < rows * cols; ++i) groups.back().push_back(i);
  } else if (cluster_axis == 0) {
    for (int c = 0; c < cols; ++c) {
      groups.emplace_back();
      for (int r = 0; r < rows; ++r) groups.back().push_back(r * cols + c);
    }
  } else {
    for (int r = 0; r < rows; ++r) {
      groups.emplace_back();
      for (int c = 0; c < cols; ++c) groups.back().push_back(r * cols + c);
    }
  }
  return groups;
}

std::vector<std::pair<int, int>> permute_pairs(const OpConfig& c) {
  std::vector<std::pair<int, int>> pairs;
  for (size_t i = 0; i + 1 < c.pairs.size(); i += 2) pairs.emplace_back(c.pairs[i], c.pairs[i + 1]);
  return pairs;
}

Result<Shape> infer_collective_shape(OpKind kind, std::span<const std::span<const int64_t>> in,
                                     const OpConfig& c) {
  if (in.size() != 1)
    return fail(ErrorCode::invalid_argument, op_name(kind), " takes 1 operand, got ", in.size());
  int chips = static_cast<int>(c.mesh_rows) * c.mesh_cols;
  if (chips <= 1)
    return fail(ErrorCode::invalid_argument, op_name(kind), " is a mesh op but the mesh is ",
                c.mesh_rows, "x", c.mesh_cols, " (a single chip)");
  std::span<const int64_t> s = in[0];
  Shape out(s.begin(), s.end());
  int n = 1;
  if (has_cluster_axis(kind)) {
    if (c.cluster_axis < -1 || c.cluster_axis > 1)
      return fail(ErrorCode::invalid_argument, op_name(kind), ": cluster_axis ",
                  int{c.cluster_axis}, " is not 0, 1 or -1 (the whole mesh)");
    n = collective_group_size(c);
  }
  auto split = [&](int64_t dim, std::string_view attr) -> Status {
    size_t d = MESHPLAN_TRY(normalise_dim(dim, s.size(), attr, s));
    if (out[d] % n != 0)
      return fail(ErrorCode::invalid_argument, op_name(kind), ": ", attr, " ", dim, " of ",
                  shape_text(s), " (size ", s[d], ") does not split into ", n,
                  " pieces (cluster_axis ", int{c.cluster_axis}, " on a ", c.mesh_rows, "x",
                  c.mesh_cols, " mesh)");
    out[d] /= n;
    return {};
  };
  auto gather = [&](int64_t dim, std::string_view attr) -> Status {
    size_t d = MESHPLAN_TRY(normalise_dim(dim, s.size(), attr, s));
    out[d] *= n;
    return {};
  };
  switch (kind) {
    case OpKind::all_gather:
      MESHPLAN_TRY(gather(c.collective_dim, "dim"));
      break;
    case OpKind::reduce_scatter:
    case OpKind::all_slice:
      MESHPLAN_TRY(split(c.collective_dim, "dim"));
      break;
    case OpKind::all_reduce:
      break;
    case OpKind::all_to_all:
      MESHPLAN_TRY(split(c.split_dim, "split_dim"));
      MESHPLAN_TRY(gather(c.concat_dim, "concat_dim"));
      break;
    case OpKind::collective_permute: {
      if (c.pairs.size() % 2 != 0)
        return fail(ErrorCode::invalid_argument, "collective_permute has ", c.pairs.size(),
                    " pair entries, expected (source, target) pairs");
      if (c.pairs.size() > 2 * size_t{kMaxMeshChips})
        return fail(ErrorCode::invalid_argument, "collective_permute has ", c.pairs.size() / 2,
                    " pairs, more than ", kMaxMeshChips);
      std::vector<bool> source(static_cast<size_t>(chips)), target(static_cast<size_t>(chips));
      for (auto [from, to] : permute_pairs(c)) {
        if (from >= chips || to >= chips)
          return fail(ErrorCode::invalid_argument, "collective_permute: pair (", from, ", ", to,
                      ") names a chip outside the ", c.mesh_rows, "x", c.mesh_cols,
                      " mesh (chips 0 to ", chips - 1, ")");
        if (source[static_cast<size_t>(from)] || target[static_cast<size_t>(to)])
          return fail(ErrorCode::invalid_argument, "collective_permute: pair (", from, ", ", to,
                      ") repeats a ", source[static_cast<size_t>(from)] ? "source" : "target");
        source[static_cast<size_t>(from)] = target[static_cast<size_t>(to)] = true;
      }
      break;
    }
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE_(family, collective, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      return fail(ErrorCode::internal, op_name(kind), " is not a collective");
  }
  return out;
}

MeshDesc default_mesh(const ChipDesc& chip, int rows, int cols) {
  MeshDesc m;
  m.name = str(rows, "x", cols);
  m.rows = static_cast<uint16_t>(std::clamp(rows, 1, 0xFFFF));
  m.cols = static_cast<uint16_t>(std::clamp(cols, 1, 0xFFFF));
  m.topology = Topology::linear;
  m.links = 1;
  for (std::string_view name : builtin_mesh_names())
    if (auto b = builtin_mesh(name); b && b->rows == m.rows && b->cols == m.cols) {
      m.name = b->name;
      m.topology = b->topology;
      m.links = b->links;
      m.hop_latency_ns = b->hop_latency_ns;
      break;
    }
  m.links = std::max<uint32_t>(1, std::min(m.links, chip.ethernet_links));
  m.chip = chip;
  return m;
}

MeshDesc default_collective_mesh(const ChipDesc& chip, const OpConfig& config) {
  return default_mesh(chip, config.mesh_rows, config.mesh_cols);
}

uint64_t collective_op_ns(const MeshDesc& given, const OpLaunch& op) {
  if (op.operands.empty() || op.results.empty()) return 0;
  MeshDesc mesh = given;
  if (mesh.rows != op.config.mesh_rows || mesh.cols != op.config.mesh_cols) {
    mesh.rows = std::max<uint16_t>(1, op.config.mesh_rows);
    mesh.cols = std::max<uint16_t>(1, op.config.mesh_cols);
  }
  const TensorPlacement& in = *op.operands[0];
  const TensorPlacement& out = *op.results[0];
  uint32_t n = static_cast<uint32_t>(std::max(0, collective_group_size(op.config)));
  switch (op.kind) {
    case OpKind::all_gather:
      return estimate_collective(mesh, CollectiveKind::all_gather, n, bytes_of(out)).duration_ns;
    case OpKind::reduce_scatter:
      return estimate_collective(mesh, CollectiveKind::reduce_scatter, n, bytes_of(in)).duration_ns;
    case OpKind::all_reduce:
      return estimate_collective(mesh, CollectiveKind::all_reduce, n, bytes_of(in)).duration_ns;
    case OpKind::all_to_all:
      return estimate_collective(mesh, CollectiveKind::all_to_all, n, bytes_of(in)).duration_ns;
    case OpKind::collective_permute: {
      std::vector<std::pair<MeshCoord, MeshCoord>> pairs;
      for (auto [from, to] : permute_pairs(op.config))
        if (from < mesh.chips() && to < mesh.chips())
          pairs.emplace_back(mesh.coord(from), mesh.coord(to));
      return estimate_permute(mesh, pairs, bytes_of(in)).duration_ns;
    }
    case OpKind::all_slice: {
      // A local copy of the kept slice: the data-movement time of reading and writing it.
      const TensorPlacement* operands[] = {&out};
      OpLaunch copy = op;
      copy.kind = OpKind::to_memory_config;
      copy.operands = operands;
      return estimate(mesh.chip, copy).duration_ns;
    }
#define MESHPLAN_OP(name, lo, hi, family, timing, flags, shlo, scalar) \
  MESHPLAN_CASE_OUTSIDE_(family, collective, name)
#include "meshplan/device/ops.def"
#undef MESHPLAN_OP
      return 0;
  }
  return 0;
}

}  // namespace meshplan::device
