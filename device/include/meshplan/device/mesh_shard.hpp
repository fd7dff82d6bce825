// How a host tensor maps onto the chips of a mesh (tt-mlir's mesh_shard): the boundary of a
// per-device program. Plain data shared by the graph IR, plans and device::Mesh.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "meshplan/schemas/error.hpp"

namespace meshplan::device {

struct MeshDesc;

/// Values match fb::MeshShardType.
enum class MeshShardType : uint8_t {
  identity = 0,   ///< The host already holds each chip's tensor: back to back in chip-index order.
  replicate = 1,  ///< Every chip holds the whole tensor (to host: chip (0,0)'s copy).
  devices = 2,    ///< Split along tensor dims over mesh axes (see shard_dims).
};
std::string_view mesh_shard_type_name(MeshShardType type);
std::optional<MeshShardType> mesh_shard_type_from_name(std::string_view name);

/// A mesh_shard. For `devices`, shard_dims[a] is the tensor dim that mesh axis a splits, or -1
/// when the tensor is replicated along axis a. If both axes split the same dim, it is cut into
/// rows * cols pieces, axis 0 major. Chip (r, c) holds piece r (or c) along the dim of its axis.
/// `shard_shape` is optional (tt-mlir's attribute of that name): the number of pieces per tensor
/// dim; when given it must agree with what shard_dims implies on the mesh.
struct MeshShardSpec {
  MeshShardType type = MeshShardType::replicate;
  std::array<int32_t, 2> shard_dims = {-1, -1};
  std::vector<int64_t> shard_shape = {};
  friend bool operator==(const MeshShardSpec&, const MeshShardSpec&) = default;
};

/// "mesh_shard DIRECTION(TYPE[, shard_dims=[a,b]])": how errors name a mesh_shard.
std::string mesh_shard_label(std::string_view direction, const MeshShardSpec& spec);

/// The per-chip shape of a host tensor of `full_shape` under `spec` on a rows x cols mesh
/// (`identity`: the full shape itself is the per-chip shape). Errors if a split dim does not
/// divide evenly, a shard dim is out of range, or shard_shape disagrees.
Result<std::vector<int64_t>> mesh_shard_local_shape(int rows, int cols,
                                                    std::span<const int64_t> full_shape,
                                                    const MeshShardSpec& spec);
Result<std::vector<int64_t>> mesh_shard_local_shape(const MeshDesc& mesh,
                                                    std::span<const int64_t> full_shape,
                                                    const MeshShardSpec& spec);
/// The inverse: the host (full) shape of a tensor whose per-chip shape is `local_shape`
/// (identity and replicate: the local shape). Errors as above (shard dims out of range,
/// shard_shape disagreeing, an overflowing dim).
Result<std::vector<int64_t>> mesh_shard_full_shape(int rows, int cols,
                                                   std::span<const int64_t> local_shape,
                                                   const MeshShardSpec& spec);

}  // namespace meshplan::device
