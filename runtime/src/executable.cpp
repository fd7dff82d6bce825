// Binding a plan to a mesh (or one device), its surface, checking a single-chip plan's inputs,
// and the host reference interpreter. Plans run in executable_run.cpp (Executable::run_bound).
#include "meshplan/runtime/executable.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <new>
#include <type_traits>

#include "meshplan/device/mesh.hpp"
#include "meshplan/device/op_model.hpp"
#include "meshplan/device/op_semantics.hpp"
#include "meshplan/runtime/input_transform.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "shape_text.hpp"

namespace meshplan::runtime {

namespace {

Status check_inputs(const PlanRef& p, std::span<const TensorView> inputs) {
  const auto* ids = p.plan().inputs();
  if (inputs.size() != ids->size())
    return fail(ErrorCode::invalid_argument, "plan '", p.name(), "' takes ", ids->size(),
                " inputs, got ", inputs.size());
  for (uint32_t i = 0; i < ids->size(); ++i) {
    // Inputs with a host transform (a prepared conv2d weight) take their host shape.
    if (input_transform(p, i)) {
      auto host = user_input_shape(p, i);
      if (!std::ranges::equal(inputs[i].shape, host))
        return fail(ErrorCode::invalid_argument, "input ", i, " '", p.placement(ids->Get(i)).name,
                    "': shape ", shape_text(inputs[i].shape), " does not match its host shape ",
                    shape_text(host), " (", input_transform_text(input_transform(p, i)), " ",
                    shape_text(p.placement(ids->Get(i)).shape), ")");
      if (static_cast<int64_t>(inputs[i].data.size()) != device::volume(host))
        return fail(ErrorCode::invalid_argument, "input ", i, " '", p.placement(ids->Get(i)).name,
                    "': ", inputs[i].data.size(), " values for its host shape ", shape_text(host),
                    ", which holds ", device::volume(host));
      continue;
    }
    device::TensorPlacement t = p.placement(ids->Get(i));
    bool same = inputs[i].shape.size() == t.shape.size() &&
                std::equal(t.shape.begin(), t.shape.end(), inputs[i].shape.begin());
    if (!same)
      return fail(ErrorCode::invalid_argument, "input ", i, " '", t.name, "': shape ",
                  shape_text(inputs[i].shape), " does not match the plan's ", shape_text(t.shape));
    if (static_cast<int64_t>(inputs[i].data.size()) != device::volume(t.shape))
      return fail(ErrorCode::invalid_argument, "input ", i, " '", t.name,
                  "': ", inputs[i].data.size(), " values for shape ", shape_text(t.shape));
  }
  return {};
}

std::span<const float> segment_floats(const PlanRef& p, int32_t segment) {
  auto bytes = p.segment(static_cast<uint32_t>(segment));
  return std::span<const float>(reinterpret_cast<const float*>(bytes.data()),
                                bytes.size() / sizeof(float));
}

/// Every tensor's placement is legal on `chip` and its reserved bytes lie inside the memory it
/// names, so that a plan which binds never asks the host for buffers sized beyond the device
/// (verify_plan bounds shapes; this bounds them by the chip).
Status check_placements_fit(const PlanRef& p, const device::ChipDesc& chip) {
  const auto* tensors = p.plan().tensors();
  for (uint32_t id = 0; id < tensors->size(); ++id) {
    device::TensorPlacement t = p.placement(id);
    if (auto ok = device::check_placement(t, chip); !ok)
      return std::unexpected(with_context(ok.error(), str("plan '", p.name(), "'")));
    uint64_t bytes = device::AddressMap(t, chip).bytes_per_bank();
    bool dram = t.buffer == device::BufferType::dram;
    uint64_t capacity = dram ? chip.dram_bank_size : chip.l1_size;
    if (bytes > capacity || t.address > capacity - bytes)
      return fail(ErrorCode::resource_exhausted, "plan '", p.name(), "': tensor ", id, " '", t.name,
                  "' ", shape_text(t.shape), " needs ", bytes, " bytes per ",
                  dram ? "DRAM bank" : "core", " at address ", t.address, "; ", chip.name, "'s ",
                  dram ? "DRAM banks" : "cores", " hold ", capacity);
  }
  return {};
}

/// A plan scalar as its device::OpConfig type; a reduce op past the last one reads as the last
/// (verify_plan refuses those on collectives, the only ops that read it).
template <class T, class From>
T from_fb(From v) {
  if constexpr (std::is_same_v<T, device::ReduceOp>)
    return static_cast<T>(std::min<uint8_t>(v, static_cast<uint8_t>(device::ReduceOp::min)));
  else
    return static_cast<T>(v);
}

/// Copies at most `max` entries of a plan vector (verify_plan bounds them; copy at most that
/// many regardless); returns how many.
template <class V, class T>
size_t copy_vector(const V* v, T* dst, size_t max) {
  size_t n = v ? std::min<size_t>(v->size(), max) : 0;
  for (size_t i = 0; i < n; ++i) dst[i] = static_cast<T>(v->Get(static_cast<uint32_t>(i)));
  return n;
}

}  // namespace

device::OpConfig op_config_of(const fb::OpPlan& op) {
  device::OpConfig c;
  const fb::OpConfig* f = op.config();
  if (!f) return c;
    // Field by field as op_config_fields.def lists them; the mesh size (a LOCAL row) is the plan
    // header's, set by Executable::run_bound.
#define MESHPLAN_CONFIG_SCALAR(name, type, init, fbs) c.name = from_fb<decltype(c.name)>(f->name());
#define MESHPLAN_CONFIG_LIST(name, type, count, sets_count, fbs) \
  {                                                              \
    size_t n = copy_vector(f->name(), c.name, device::kMaxRank); \
    if (sets_count) c.count = static_cast<uint8_t>(n);           \
  }
#define MESHPLAN_CONFIG_FIXED(name, type, n, fbs, ...) copy_vector(f->name(), c.name, n);
#define MESHPLAN_CONFIG_VECTOR(name, type, max, multiple, fbs)                           \
  if (f->name()) {                                                                       \
    using namespace device; /* The row's bound names device constants. */                \
    c.name.resize(std::min<size_t>(f->name()->size(), (max)) / (multiple) * (multiple)); \
    copy_vector(f->name(), c.name.data(), c.name.size());                                \
  }
    // Given bounds; infinite ones are flags (plan.fbs).
#define MESHPLAN_CONFIG_FLAGS(name, lower, upper, fbs) \
  if (f->name() & 4) {                                 \
    if (!(f->name() & 1)) c.lower = f->lower();        \
    if (!(f->name() & 2)) c.upper = f->upper();        \
  }
#include "meshplan/device/op_config_fields.def"
  return c;
}

namespace {

/// A single-chip plan meets `have`: the plan's device descriptor, and every placement fits.
Status check_chip_binding(const PlanRef& plan, const device::ChipDesc& have) {
  const fb::DeviceInfo* d = plan.plan().header()->device();
  Hash128 want{d->descriptor_hash()->lo(), d->descriptor_hash()->hi()};
  if (want != have.hash())
    return fail(ErrorCode::incompatible, "plan '", plan.name(), "' was made for device ",
                d->name() ? d->name()->string_view() : "?", " ", d->grid_x(), "x", d->grid_y(),
                " (descriptor ", want.hex().substr(0, 8), "), this device is ", have.name, " ",
                have.grid_x, "x", have.grid_y, " (descriptor ", have.hash().hex().substr(0, 8),
                ")");
  return check_placements_fit(plan, have);
}

/// A mesh plan meets `have`: its mesh shape, chip descriptor and mesh descriptor.
Status check_mesh_binding(const PlanRef& plan, const device::MeshDesc& have) {
  if (mesh_rows(plan) != have.rows || mesh_cols(plan) != have.cols)
    return fail(ErrorCode::incompatible, "plan '", plan.name(), "' was made for a ",
                mesh_rows(plan), "x", mesh_cols(plan), " mesh, this mesh ", have.name, " is ",
                have.rows, "x", have.cols);
  const fb::DeviceInfo* d = plan.plan().header()->device();
  Hash128 chip_hash{d->descriptor_hash()->lo(), d->descriptor_hash()->hi()};
  if (chip_hash != have.chip.hash())
    return fail(ErrorCode::incompatible, "plan '", plan.name(), "' was made for chip ",
                d->name() ? d->name()->string_view() : "?", " (descriptor ",
                chip_hash.hex().substr(0, 8), "), the mesh's chips are ", have.chip.name,
                " (descriptor ", have.chip.hash().hex().substr(0, 8), ")");
  auto desc = plan_mesh_desc(plan, have.chip);
  if (!desc) return std::unexpected(desc.error());
  if (desc->hash() != have.hash())
    return fail(ErrorCode::incompatible, "plan '", plan.name(), "' was made for mesh ", desc->name,
                " (", device::topology_name(desc->topology), ", ", desc->links,
                " links), this mesh is ", have.name, " (", device::topology_name(have.topology),
                ", ", have.links, " links)");
  return {};
}

}  // namespace

Result<std::unique_ptr<Executable>> Executable::bind(PlanRef plan, device::Mesh& mesh) {
  const device::MeshDesc& have = mesh.descriptor();
  if (is_mesh_plan(plan)) {
    MESHPLAN_TRY(check_mesh_binding(plan, have));
    return std::unique_ptr<Executable>(new Executable(plan, &mesh, nullptr));
  }
  if (have.rows != 1 || have.cols != 1)
    return fail(ErrorCode::incompatible, "plan '", plan.name(),
                "' is a single-chip plan: bind it to a 1x1 mesh or one Device, not to the ",
                have.rows, "x", have.cols, " mesh ", have.name);
  MESHPLAN_TRY(check_chip_binding(plan, mesh.chip(0).descriptor()));
  return std::unique_ptr<Executable>(new Executable(plan, &mesh, nullptr));
}

Result<std::unique_ptr<Executable>> Executable::bind(PlanRef plan, device::Device& device) {
  if (is_mesh_plan(plan))
    return fail(ErrorCode::incompatible, "plan '", plan.name(), "' is a ", mesh_rows(plan), "x",
                mesh_cols(plan),
                " mesh plan: bind it to a device::Mesh of that shape, not to one device");
  MESHPLAN_TRY(check_chip_binding(plan, device.descriptor()));
  return std::unique_ptr<Executable>(new Executable(plan, nullptr, &device));
}

size_t Executable::input_count() const {
  return plan_.plan().inputs()->size();
}
std::string_view Executable::input_name(size_t i) const {
  return plan_.placement(plan_.plan().inputs()->Get(static_cast<uint32_t>(i))).name;
}
std::span<const int64_t> Executable::input_shape(size_t i) const {
  return user_input_shape(plan_, i);
}
size_t Executable::output_count() const {
  return plan_.plan().outputs()->size();
}
std::string_view Executable::output_name(size_t i) const {
  return plan_.placement(plan_.plan().outputs()->Get(static_cast<uint32_t>(i))).name;
}
std::span<const int64_t> Executable::output_shape(size_t i) const {
  return host_shape(plan_, i, true);
}

namespace {

template <class NameAt>
Result<size_t> index_of(std::string_view what, std::string_view plan, size_t n, NameAt name_at,
                        std::string_view name) {
  for (size_t i = 0; i < n; ++i)
    if (name_at(i) == name) return i;
  std::string names;
  for (size_t i = 0; i < n; ++i) names += str(i ? ", '" : "'", name_at(i), "'");
  return fail(ErrorCode::not_found, "plan '", plan, "' has no ", what, " named '", name, "' (its ",
              what, "s: ", names, ")");
}

}  // namespace

Result<size_t> Executable::input_index(std::string_view name) const {
  return index_of(
      "input", plan_.name(), input_count(), [&](size_t i) { return input_name(i); }, name);
}

Result<size_t> Executable::output_index(std::string_view name) const {
  return index_of(
      "output", plan_.name(), output_count(), [&](size_t i) { return output_name(i); }, name);
}

Result<RunResult> Executable::run(std::span<const NamedTensorView> inputs) {
  constexpr size_t kInline = 16;
  size_t n = input_count();
  // Positions by name; small plans need no heap.
  TensorView inline_views[kInline];
  std::vector<TensorView> heap_views;
  std::span<TensorView> views(inline_views, std::min(n, kInline));
  if (n > kInline) {
    heap_views.resize(n);
    views = heap_views;
  }
  bool seen_inline[kInline] = {};
  std::vector<bool> seen_heap(n > kInline ? n : 0);
  auto seen = [&](size_t i) -> bool {
    return n > kInline ? static_cast<bool>(seen_heap[i]) : seen_inline[i];
  };
  auto mark = [&](size_t i) {
    if (n > kInline)
      seen_heap[i] = true;
    else
      seen_inline[i] = true;
  };
  for (const NamedTensorView& in : inputs) {
    size_t i = MESHPLAN_TRY(input_index(in.name));
    if (seen(i))
      return fail(ErrorCode::invalid_argument, "plan '", plan_.name(), "': input '", in.name,
                  "' is given twice");
    mark(i);
    views[i] = in.view;
  }
  for (size_t i = 0; i < n; ++i)
    if (!seen(i))
      return fail(ErrorCode::invalid_argument, "plan '", plan_.name(), "': input ", i, " '",
                  input_name(i), "' is missing");
  return run(std::span<const TensorView>(views.data(), n));
}

Result<RunResult> Executable::run(std::span<const TensorView> inputs) {
  bool mesh_plan = is_mesh_plan(plan_);
  MESHPLAN_TRY(mesh_plan ? check_host_inputs(plan_, inputs) : check_inputs(plan_, inputs));
  MESHPLAN_TRY(check_input_values(plan_, inputs));
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    return run_bound(inputs);
  } catch (const std::bad_alloc&) {
    return fail(ErrorCode::resource_exhausted, "plan '", plan_.name(),
                "': the host ran out of memory while running it");
  }
}

Result<std::vector<Tensor>> run_reference(const PlanRef& plan, std::span<const TensorView> inputs) {
  if (is_mesh_plan(plan)) return run_mesh_reference(plan, inputs);
  MESHPLAN_TRY(check_inputs(plan, inputs));
  const fb::Plan& p = plan.plan();
  std::vector<Tensor> values(p.tensors()->size());
  std::vector<bool> have(values.size(), false);
  for (uint32_t id = 0; id < values.size(); ++id) {
    const fb::TensorPlan* t = p.tensors()->Get(id);
    if (t->role() != fb::TensorRole::constant) continue;
    auto data = segment_floats(plan, t->segment());
    values[id] = Tensor(std::vector<int64_t>(t->shape()->begin(), t->shape()->end()));
    std::copy(data.begin(), data.end(), values[id].data.begin());
    have[id] = true;
  }
  for (uint32_t i = 0; i < p.inputs()->size(); ++i) {
    uint32_t id = p.inputs()->Get(i);
    auto shape = plan.placement(id).shape;
    values[id] = Tensor(std::vector<int64_t>(shape.begin(), shape.end()));
    MESHPLAN_TRY(apply_input_transform(plan, i, inputs[i], values[id].data));
    have[id] = true;
  }
  for (const fb::OpPlan* op : *p.ops()) {
    std::vector<device::HostView> in;
    for (uint32_t id : *op->operands()) {
      if (!have[id])
        return fail(ErrorCode::corrupt, "plan '", plan.name(), "': op reads tensor ", id,
                    " before it is written");
      in.push_back(device::HostView{values[id].shape, values[id].data});
    }
    uint32_t r = op->results()->Get(0);
    const fb::TensorPlan* t = p.tensors()->Get(r);
    values[r] = Tensor(std::vector<int64_t>(t->shape()->begin(), t->shape()->end()));
    MESHPLAN_TRY(device::reference(static_cast<device::OpKind>(op->kind()), in, op_config_of(*op),
                                   values[r].shape, values[r].data));
    have[r] = true;
  }
  std::vector<Tensor> outputs;
  for (uint32_t id : *p.outputs()) {
    if (!have[id])
      return fail(ErrorCode::corrupt, "plan '", plan.name(), "': output tensor ", id,
                  " is never written");
    outputs.push_back(values[id]);
  }
  return outputs;
}

}  // namespace meshplan::runtime
