// mesh_shard specs: type names, labels and the per-chip and host shapes they imply (the host
// transfers themselves are the emulator's, mesh_transfer.cpp).
#include "meshplan/device/mesh_shard.hpp"

#include <string>

#include "meshplan/device/mesh_desc.hpp"
#include "meshplan/device/types.hpp"

namespace meshplan::device {

std::string_view mesh_shard_type_name(MeshShardType t) {
  switch (t) {
    case MeshShardType::identity:
      return "identity";
    case MeshShardType::replicate:
      return "replicate";
    case MeshShardType::devices:
      return "devices";
  }
  return "?";
}

std::optional<MeshShardType> mesh_shard_type_from_name(std::string_view name) {
  for (MeshShardType t :
       {MeshShardType::identity, MeshShardType::replicate, MeshShardType::devices})
    if (mesh_shard_type_name(t) == name) return t;
  return std::nullopt;
}

std::string mesh_shard_label(std::string_view direction, const MeshShardSpec& spec) {
  std::string s = str("mesh_shard ", direction, "(", mesh_shard_type_name(spec.type));
  if (spec.type == MeshShardType::devices)
    s += str(", shard_dims=[", spec.shard_dims[0], ",", spec.shard_dims[1], "]");
  return s + ")";
}

namespace {

/// "[2,3]": a shape in error messages.
std::string dims_text(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Checks `spec` against a tensor of rank `rank` on a rows x cols mesh; pieces per tensor dim.
Result<std::vector<int64_t>> shard_pieces(int rows, int cols, std::span<const int64_t> shape,
                                          const MeshShardSpec& spec) {
  std::string label = mesh_shard_label("", spec);
  int rank = static_cast<int>(shape.size());
  if (static_cast<uint8_t>(spec.type) > static_cast<uint8_t>(MeshShardType::devices))
    return fail(ErrorCode::invalid_argument, "mesh_shard: unknown type ",
                static_cast<int>(spec.type));
  std::vector<int64_t> pieces(shape.size(), 1);
  if (spec.type != MeshShardType::devices) return pieces;
  for (int a = 0; a < 2; ++a)
    if (spec.shard_dims[static_cast<size_t>(a)] < -1 ||
        spec.shard_dims[static_cast<size_t>(a)] >= rank)
      return fail(ErrorCode::invalid_argument, label, ": shard_dims[", a,
                  "] = ", spec.shard_dims[static_cast<size_t>(a)],
                  " is not -1 or a dim of the rank-", rank, " tensor ", dims_text(shape));
  if (spec.shard_dims[0] < 0 && spec.shard_dims[1] < 0)
    return fail(ErrorCode::invalid_argument, label,
                ": no mesh axis splits the tensor (use replicate)");
  if (!spec.shard_shape.empty() && static_cast<int>(spec.shard_shape.size()) != rank)
    return fail(ErrorCode::invalid_argument, label, ": shard_shape has ", spec.shard_shape.size(),
                " dims, the tensor ", dims_text(shape), " has ", rank);
  for (int d = 0; d < rank; ++d) {
    int64_t& p = pieces[static_cast<size_t>(d)];
    for (int a = 0; a < 2; ++a)
      if (spec.shard_dims[static_cast<size_t>(a)] == d) p *= a == 0 ? rows : cols;
    if (!spec.shard_shape.empty() && spec.shard_shape[static_cast<size_t>(d)] != p)
      return fail(ErrorCode::invalid_argument, label, ": shard_shape ", dims_text(spec.shard_shape),
                  " says ", spec.shard_shape[static_cast<size_t>(d)], " pieces along dim ", d,
                  ", shard_dims on the ", rows, "x", cols, " mesh give ", p);
  }
  return pieces;
}

}  // namespace

Result<std::vector<int64_t>> mesh_shard_local_shape(const MeshDesc& mesh,
                                                    std::span<const int64_t> full_shape,
                                                    const MeshShardSpec& spec) {
  return mesh_shard_local_shape(mesh.rows, mesh.cols, full_shape, spec);
}

Result<std::vector<int64_t>> mesh_shard_full_shape(int rows, int cols,
                                                   std::span<const int64_t> local_shape,
                                                   const MeshShardSpec& spec) {
  auto pieces = MESHPLAN_TRY(shard_pieces(rows, cols, local_shape, spec));
  std::vector<int64_t> full(local_shape.begin(), local_shape.end());
  for (size_t d = 0; d < full.size(); ++d) {
    if (full[d] > (int64_t{1} << 48) / pieces[d])
      return fail(ErrorCode::invalid_argument, mesh_shard_label("", spec), ": dim ", d, " of ",
                  dims_text(local_shape), " times ", pieces[d], " pieces is too large");
    full[d] *= pieces[d];
  }
  return full;
}

Result<std::vector<int64_t>> mesh_shard_local_shape(int rows, int cols,
                                                    std::span<const int64_t> full_shape,
                                                    const MeshShardSpec& spec) {
  std::vector<int64_t> local(full_shape.begin(), full_shape.end());
  auto all_pieces = MESHPLAN_TRY(shard_pieces(rows, cols, full_shape, spec));
  std::string label = mesh_shard_label("", spec);
  int rank = static_cast<int>(full_shape.size());
  for (int d = 0; d < rank; ++d) {
    int64_t pieces = all_pieces[static_cast<size_t>(d)];
    if (local[static_cast<size_t>(d)] % pieces != 0)
      return fail(ErrorCode::invalid_argument, label, ": dim ", d, " of ", dims_text(full_shape),
                  " (size ", local[static_cast<size_t>(d)], ") does not split evenly into ", pieces,
                  " pieces");
    local[static_cast<size_t>(d)] /= pieces;
  }
  return local;
}

}  // namespace meshplan::device
