// Host transforms of plan inputs: conv2d weights prepared on the host before upload.
#include "meshplan/runtime/input_transform.hpp"

#include <algorithm>

#include "meshplan/device/conv_weights.hpp"
#include "meshplan/runtime/mesh_plan.hpp"
#include "shape_text.hpp"

namespace meshplan::runtime {

std::string_view input_transform_text(const fb::InputTransform* t) {
  if (t && t->kind() == fb::InputTransformKind::reshape)
    return "an NHWC activation the plan flattens into";
  return "a conv2d weight the plan prepares into";
}

const fb::InputTransform* input_transform(const PlanRef& plan, size_t index) {
  const auto* list = plan.plan().input_transforms();
  if (!list || index >= list->size()) return nullptr;
  const fb::InputTransform* t = list->Get(static_cast<uint32_t>(index));
  return t->kind() == fb::InputTransformKind::none ? nullptr : t;
}

std::span<const int64_t> user_input_shape(const PlanRef& plan, size_t index) {
  if (const fb::InputTransform* t = input_transform(plan, index))
    return std::span<const int64_t>(t->host_shape()->data(), t->host_shape()->size());
  return host_shape(plan, index, false);
}

Status apply_input_transform(const PlanRef& plan, size_t index, TensorView in,
                             std::span<float> out) {
  const fb::InputTransform* t = input_transform(plan, index);
  auto device_shape = host_shape(plan, index, false);
  auto name = [&] {
    return plan.placement(plan.plan().inputs()->Get(static_cast<uint32_t>(index))).name;
  };
  if (!t) {
    if (in.data.size() != out.size())
      return fail(ErrorCode::invalid_argument, "input ", index, " '", name(), "': ", in.data.size(),
                  " values for shape ", shape_text(device_shape));
    std::copy(in.data.begin(), in.data.end(), out.begin());
    return {};
  }
  auto host = user_input_shape(plan, index);
  if (!std::ranges::equal(in.shape, host))
    return fail(ErrorCode::invalid_argument, "input ", index, " '", name(), "': shape ",
                shape_text(in.shape), " does not match its host shape ", shape_text(host), " (",
                input_transform_text(t), " ", shape_text(device_shape), ")");
  if (static_cast<int64_t>(in.data.size()) != device::volume(host))
    return fail(ErrorCode::invalid_argument, "input ", index, " '", name(), "': ", in.data.size(),
                " values for its host shape ", shape_text(host), ", which holds ",
                device::volume(host));
  if (t->kind() == fb::InputTransformKind::reshape) {
    // The flattened form holds the same row-major bytes (verify_plan checked the volumes).
    if (in.data.size() != out.size())
      return fail(ErrorCode::invalid_argument, "input ", index, " '", name(), "': ", in.data.size(),
                  " values for the flattened shape ", shape_text(device_shape));
    std::copy(in.data.begin(), in.data.end(), out.begin());
    return {};
  }
  auto r = device::prepare_conv_weight(device::HostView{in.shape, in.data}, t->groups(), out);
  if (!r) return fail(r.error().code, "input ", index, " '", name(), "': ", r.error().message);
  return {};
}

}  // namespace meshplan::runtime
