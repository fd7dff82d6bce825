// mesh_shard on an emulated mesh: host tensors written to per-chip shards (FullToShard) and
// read back (ShardToFull), through the Mesh interface so that every Mesh backend can share them.
#include <algorithm>
#include <cstring>

#include "mesh_internal.hpp"
#include "meshplan/device/emulated_mesh.hpp"

namespace meshplan::device {

using namespace mesh_detail;

namespace {

/// Position of chip `c`'s piece along tensor dim `d` (0 if no mesh axis splits d).
int64_t piece_index(const MeshDesc& mesh, const MeshShardSpec& spec, MeshCoord c, int d) {
  bool a0 = spec.shard_dims[0] == d, a1 = spec.shard_dims[1] == d;
  if (a0 && a1) return static_cast<int64_t>(c.row) * mesh.cols + c.col;
  if (a0) return c.row;
  if (a1) return c.col;
  return 0;
}

/// Copies the block of `full` (shape `fs`) that starts at `offset` and has shape `ls` to or from
/// the dense `local`. Row-major; runs along the last dim are contiguous in both.
void copy_nd(float* full, std::span<const int64_t> fs, float* local, std::span<const int64_t> ls,
             std::span<const int64_t> offset, bool to_local) {
  size_t rank = ls.size();
  if (rank == 0) {
    if (to_local)
      local[0] = full[0];
    else
      full[0] = local[0];
    return;
  }
  int64_t run = ls[rank - 1];
  int64_t rows = run ? volume(ls) / run : 0;
  std::vector<int64_t> idx(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t f = 0;
    for (size_t d = 0; d < rank; ++d) f = f * fs[d] + offset[d] + (d + 1 < rank ? idx[d] : 0);
    float* a = full + f;
    float* b = local + r * run;
    if (to_local)
      std::memcpy(b, a, static_cast<size_t>(run) * sizeof(float));
    else
      std::memcpy(a, b, static_cast<size_t>(run) * sizeof(float));
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < ls[d]) break;
      idx[d] = 0;
    }
  }
}

Status check_shapes(const Mesh& m, PerChip p, std::span<const int64_t> want, std::string_view role,
                    const std::string& label) {
  for (int i = 0; i < m.size(); ++i) {
    const TensorPlacement& t = p[static_cast<size_t>(i)];
    if (!std::ranges::equal(t.shape, want))
      return fail(ErrorCode::invalid_argument, label, ": chip ",
                  coord_name(m.descriptor().coord(i)), ": ", role, " '", t.name, "' has shape ",
                  shape_name(t.shape), ", the shard has ", shape_name(want));
  }
  return {};
}

Status check_host(std::span<const int64_t> full, size_t have, int64_t copies,
                  const std::string& label) {
  int64_t want = volume(full) * copies;
  if (static_cast<int64_t>(have) != want)
    return fail(ErrorCode::invalid_argument, label, ": host buffer holds ", have, " values, ",
                shape_name(full), copies > 1 ? str(" x ", copies, " chips") : std::string(),
                " needs ", want);
  return {};
}

}  // namespace

Status mesh_detail::full_to_shard_on(Mesh& m, std::span<const float> host,
                                     std::span<const int64_t> full_shape, const MeshShardSpec& spec,
                                     PerChip out) {
  std::string label = mesh_shard_label("FullToShard", spec);
  MESHPLAN_TRY(check_count(m, out, "output", label));
  auto local = mesh_shard_local_shape(m.descriptor(), full_shape, spec);
  if (!local) return std::unexpected(with_context(local.error(), "FullToShard"));
  MESHPLAN_TRY(check_shapes(m, out, *local, "output", label));
  int64_t per_chip = volume(*local);
  if (spec.type == MeshShardType::identity) {
    MESHPLAN_TRY(check_host(full_shape, host.size(), m.size(), label));
    for (int i = 0; i < m.size(); ++i)
      MESHPLAN_TRY(write_chip(
          m, i, out[static_cast<size_t>(i)],
          host.subspan(static_cast<size_t>(i * per_chip), static_cast<size_t>(per_chip)), label));
    return {};
  }
  MESHPLAN_TRY(check_host(full_shape, host.size(), 1, label));
  if (spec.type == MeshShardType::replicate) {
    for (int i = 0; i < m.size(); ++i)
      MESHPLAN_TRY(write_chip(m, i, out[static_cast<size_t>(i)], host, label));
    return {};
  }
  std::vector<float> shard(static_cast<size_t>(per_chip));
  std::vector<int64_t> offset(full_shape.size());
  for (int i = 0; i < m.size(); ++i) {
    for (size_t d = 0; d < offset.size(); ++d)
      offset[d] = piece_index(m.descriptor(), spec, m.descriptor().coord(i), static_cast<int>(d)) *
                  (*local)[d];
    copy_nd(const_cast<float*>(host.data()), full_shape, shard.data(), *local, offset, true);
    MESHPLAN_TRY(write_chip(m, i, out[static_cast<size_t>(i)], shard, label));
  }
  return {};
}

Status mesh_detail::shard_to_full_on(Mesh& m, PerChip in, const MeshShardSpec& spec,
                                     std::span<const int64_t> full_shape, std::span<float> host) {
  std::string label = mesh_shard_label("ShardToFull", spec);
  MESHPLAN_TRY(check_count(m, in, "input", label));
  auto local = mesh_shard_local_shape(m.descriptor(), full_shape, spec);
  if (!local) return std::unexpected(with_context(local.error(), "ShardToFull"));
  MESHPLAN_TRY(check_shapes(m, in, *local, "input", label));
  size_t per_chip = static_cast<size_t>(volume(*local));
  if (spec.type == MeshShardType::identity) {
    MESHPLAN_TRY(check_host(full_shape, host.size(), m.size(), label));
    // Read everything first, so a failing chip leaves the host buffer untouched.
    std::vector<std::vector<float>> parts;
    for (int i = 0; i < m.size(); ++i)
      parts.push_back(MESHPLAN_TRY(read_chip(m, i, in[static_cast<size_t>(i)], label)));
    for (size_t i = 0; i < parts.size(); ++i)
      std::copy(parts[i].begin(), parts[i].end(),
                host.begin() + static_cast<ptrdiff_t>(i * per_chip));
    return {};
  }
  MESHPLAN_TRY(check_host(full_shape, host.size(), 1, label));
  if (spec.type == MeshShardType::replicate) {
    std::vector<float> v = MESHPLAN_TRY(read_chip(m, 0, in[0], label));
    std::copy(v.begin(), v.end(), host.begin());
    return {};
  }
  std::vector<std::pair<int, std::vector<float>>> parts;
  for (int i = 0; i < m.size(); ++i) {
    MeshCoord c = m.descriptor().coord(i);
    // Along an axis that splits nothing the chips hold copies: take coordinate 0's.
    if ((spec.shard_dims[0] < 0 && c.row != 0) || (spec.shard_dims[1] < 0 && c.col != 0)) continue;
    parts.emplace_back(i, MESHPLAN_TRY(read_chip(m, i, in[static_cast<size_t>(i)], label)));
  }
  std::vector<int64_t> offset(full_shape.size());
  for (auto& [i, values] : parts) {
    for (size_t d = 0; d < offset.size(); ++d)
      offset[d] = piece_index(m.descriptor(), spec, m.descriptor().coord(i), static_cast<int>(d)) *
                  (*local)[d];
    copy_nd(host.data(), full_shape, values.data(), *local, offset, false);
  }
  return {};
}

Status EmulatedMesh::full_to_shard(std::span<const float> host, std::span<const int64_t> full_shape,
                                   const MeshShardSpec& spec, PerChip out) {
  return full_to_shard_on(*this, host, full_shape, spec, out);
}

Status EmulatedMesh::shard_to_full(PerChip in, const MeshShardSpec& spec,
                                   std::span<const int64_t> full_shape, std::span<float> host) {
  return shard_to_full_on(*this, in, spec, full_shape, host);
}

}  // namespace meshplan::device
