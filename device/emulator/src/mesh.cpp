// Mesh: construction, per-chip clocks, groups along an axis, and the shared helpers.
#include "meshplan/device/emulated_mesh.hpp"

#include <algorithm>
#include <cstring>

#include "mesh_internal.hpp"
#include "meshplan/device/collective_ops.hpp"

namespace meshplan::device {

Result<std::unique_ptr<EmulatedMesh>> EmulatedMesh::create(MeshDesc desc) {
  MESHPLAN_TRY(desc.verify());
  std::unique_ptr<EmulatedMesh> mesh(new EmulatedMesh(std::move(desc)));
  mesh->chips_.reserve(static_cast<size_t>(mesh->size()));
  for (int i = 0; i < mesh->size(); ++i) {
    auto chip = EmulatedDevice::create(mesh->desc_.chip);
    if (!chip)
      return std::unexpected(
          with_context(chip.error(), str("mesh chip ", coord_name(mesh->desc_.coord(i)))));
    mesh->chips_.push_back(std::move(*chip));
  }
  mesh->waited_ns_.assign(static_cast<size_t>(mesh->size()), 0);
  return mesh;
}

uint64_t EmulatedMesh::now_ns(MeshCoord c) const {
  size_t i = static_cast<size_t>(desc_.index(c));
  return chips_[i]->now_ns() + waited_ns_[i];
}

uint64_t EmulatedMesh::now_ns() const {
  uint64_t t = 0;
  for (int i = 0; i < size(); ++i) t = std::max(t, now_ns(desc_.coord(i)));
  return t;
}

void EmulatedMesh::reset() {
  for (auto& c : chips_) c->reset();
  std::fill(waited_ns_.begin(), waited_ns_.end(), 0);
}

uint64_t EmulatedMesh::resident_bytes() const {
  uint64_t n = 0;
  for (const auto& c : chips_) n += c->resident_bytes();
  return n;
}

std::vector<std::vector<int>> EmulatedMesh::groups(int axis) const {
  return collective_groups(rows(), cols(), axis);
}

uint64_t EmulatedMesh::advance(std::span<const int> chips, uint64_t duration_ns) {
  uint64_t start = 0;
  for (int i : chips) start = std::max(start, now_ns(desc_.coord(i)));
  uint64_t end = start + duration_ns;
  for (int i : chips) waited_ns_[static_cast<size_t>(i)] += end - now_ns(desc_.coord(i));
  return end;
}

namespace mesh_detail {

DimSplit split_at(std::span<const int64_t> shape, int dim) {
  DimSplit s;
  for (int d = 0; d < static_cast<int>(shape.size()); ++d) {
    if (d < dim)
      s.outer *= shape[static_cast<size_t>(d)];
    else if (d == dim)
      s.dim = shape[static_cast<size_t>(d)];
    else
      s.inner *= shape[static_cast<size_t>(d)];
  }
  return s;
}

void copy_block(const float* src, DimSplit s, int64_t src_begin, float* dst, int64_t dst_dim,
                int64_t dst_begin, int64_t len) {
  size_t n = static_cast<size_t>(len * s.inner) * sizeof(float);
  if (n == 0) return;
  for (int64_t o = 0; o < s.outer; ++o)
    std::memcpy(dst + (o * dst_dim + dst_begin) * s.inner, src + (o * s.dim + src_begin) * s.inner,
                n);
}

std::string shape_name(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

Result<int> normalize_dim(int dim, size_t rank, const std::string& label, std::string_view what) {
  int r = static_cast<int>(rank);
  if (dim < -r || dim >= r)
    return fail(ErrorCode::invalid_argument, label, ": ", what, " ", dim,
                " is out of range for rank ", r);
  return dim < 0 ? dim + r : dim;
}

uint64_t tensor_bytes(const TensorPlacement& t) {
  return static_cast<uint64_t>(page_count(t)) * t.page_size;
}

Result<std::vector<float>> read_chip(Mesh& mesh, int index, const TensorPlacement& t,
                                     const std::string& label) {
  std::vector<float> v(static_cast<size_t>(volume(t.shape)));
  auto ok = mesh.chip(index).read(t, v);
  if (!ok)
    return std::unexpected(with_context(
        ok.error(), str(label, ": chip ", coord_name(mesh.descriptor().coord(index)))));
  return v;
}

Status write_chip(Mesh& mesh, int index, const TensorPlacement& t, std::span<const float> values,
                  const std::string& label) {
  auto ok = mesh.chip(index).write(t, values);
  if (!ok)
    return std::unexpected(with_context(
        ok.error(), str(label, ": chip ", coord_name(mesh.descriptor().coord(index)))));
  return {};
}

Status check_count(const Mesh& mesh, PerChip p, std::string_view role, const std::string& label) {
  if (static_cast<int>(p.size()) != mesh.size())
    return fail(ErrorCode::invalid_argument, label, ": ", p.size(), " ", role, " placements for a ",
                mesh.rows(), "x", mesh.cols(), " mesh of ", mesh.size(),
                " chips (one per chip, in chip-index order)");
  return {};
}

}  // namespace mesh_detail

}  // namespace meshplan::device
