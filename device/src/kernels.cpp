// Kernel dispatch: validates nothing itself (EmulatedDevice::launch ran OpModel::validate), times
// the op with the shared timing model and runs the kernel of its family.
#include "kernels.hpp"

#include "meshplan/device/timing.hpp"

namespace meshplan::device {

Result<OpTiming> run_kernel(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op) {
  OpTiming timing = estimate(chip, op);
  switch (op.kind) {
    case OpKind::matmul:
      MESHPLAN_TRY(run_matmul(memory, chip, op, timing.cores_used));
      break;
    case OpKind::add:
    case OpKind::relu:
      MESHPLAN_TRY(run_eltwise(memory, chip, op, timing.cores_used));
      break;
    case OpKind::to_memory_config:
      MESHPLAN_TRY(run_data_movement(memory, chip, op, timing.cores_used));
      break;
    case OpKind::linear:
      MESHPLAN_TRY(run_matmul(memory, chip, op, timing.cores_used));
      break;
    case OpKind::gelu:
    case OpKind::silu:
    case OpKind::sigmoid:
    case OpKind::tanh:
    case OpKind::exp:
    case OpKind::log:
    case OpKind::sqrt:
    case OpKind::rsqrt:
    case OpKind::reciprocal:
    case OpKind::neg:
    case OpKind::abs:
      MESHPLAN_TRY(run_eltwise(memory, chip, op, timing.cores_used));
      break;
    case OpKind::subtract:
    case OpKind::multiply:
    case OpKind::divide:
    case OpKind::maximum:
    case OpKind::minimum:
      MESHPLAN_TRY(run_eltwise(memory, chip, op, timing.cores_used));
      break;
    case OpKind::reduce_sum:
      MESHPLAN_TRY(run_reduction(memory, chip, op, timing.cores_used));
      break;
    case OpKind::reduce_mean:
      MESHPLAN_TRY(run_reduction(memory, chip, op, timing.cores_used));
      break;
    case OpKind::reduce_max:
      MESHPLAN_TRY(run_reduction(memory, chip, op, timing.cores_used));
      break;
    case OpKind::softmax:
      MESHPLAN_TRY(run_reduction(memory, chip, op, timing.cores_used));
      break;
    case OpKind::layer_norm:
      MESHPLAN_TRY(run_reduction(memory, chip, op, timing.cores_used));
      break;
    case OpKind::rms_norm:
      MESHPLAN_TRY(run_reduction(memory, chip, op, timing.cores_used));
      break;
    case OpKind::reshape:
      MESHPLAN_TRY(run_shape_op(memory, chip, op, timing.cores_used));
      break;
    case OpKind::permute:
      MESHPLAN_TRY(run_shape_op(memory, chip, op, timing.cores_used));
      break;
    case OpKind::concat:
      MESHPLAN_TRY(run_shape_op(memory, chip, op, timing.cores_used));
      break;
    case OpKind::slice:
      MESHPLAN_TRY(run_shape_op(memory, chip, op, timing.cores_used));
      break;
    case OpKind::embedding:
      MESHPLAN_TRY(run_shape_op(memory, chip, op, timing.cores_used));
      break;
    case OpKind::typecast:
      MESHPLAN_TRY(run_shape_op(memory, chip, op, timing.cores_used));
      break;
    case OpKind::conv2d:
      MESHPLAN_TRY(run_conv(memory, chip, op, timing.cores_used));
      break;
    case OpKind::max_pool2d:
      MESHPLAN_TRY(run_conv(memory, chip, op, timing.cores_used));
      break;
    case OpKind::avg_pool2d:
      MESHPLAN_TRY(run_conv(memory, chip, op, timing.cores_used));
      break;
    case OpKind::global_avg_pool2d:
      MESHPLAN_TRY(run_conv(memory, chip, op, timing.cores_used));
      break;
    case OpKind::eq:
    case OpKind::ne:
    case OpKind::lt:
    case OpKind::le:
    case OpKind::gt:
    case OpKind::ge:
    case OpKind::where:
    case OpKind::clamp:
      MESHPLAN_TRY(run_eltwise(memory, chip, op, timing.cores_used));
      break;
    case OpKind::reduce_min:
    case OpKind::reduce_prod:
      MESHPLAN_TRY(run_reduction(memory, chip, op, timing.cores_used));
      break;
    case OpKind::all_gather:
    case OpKind::reduce_scatter:
    case OpKind::all_reduce:
    case OpKind::all_to_all:
    case OpKind::collective_permute:
    case OpKind::all_slice:
      return fail(ErrorCode::invalid_argument, "op '", op.name, "': ", op_name(op.kind),
                  " is a mesh op: run it through a Mesh");
  }
  return timing;
}

}  // namespace meshplan::device
