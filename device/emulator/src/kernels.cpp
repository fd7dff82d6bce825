// Kernel dispatch: validates nothing itself (EmulatedDevice::launch ran OpModel::validate), times
// the op with the shared timing model and runs the kernel of its family (ops.def's family column).
#include "kernels.hpp"

#include "meshplan/device/timing.hpp"

namespace meshplan::device {

Result<OpTiming> run_kernel(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op) {
  OpTiming timing = estimate(chip, op);
  switch (op_family(op.kind)) {
    case OpFamily::matmul:
      MESHPLAN_TRY(run_matmul(memory, chip, op, timing.cores_used));
      break;
    case OpFamily::eltwise_unary:
    case OpFamily::eltwise_binary:
    case OpFamily::compare:
    case OpFamily::select:
      MESHPLAN_TRY(run_eltwise(memory, chip, op, timing.cores_used));
      break;
    case OpFamily::memory:
      MESHPLAN_TRY(run_data_movement(memory, chip, op, timing.cores_used));
      break;
    case OpFamily::reduction:
    case OpFamily::softmax:
    case OpFamily::norm:
      MESHPLAN_TRY(run_reduction(memory, chip, op, timing.cores_used));
      break;
    case OpFamily::shape:
    case OpFamily::gather:
    case OpFamily::convert:
      MESHPLAN_TRY(run_shape_op(memory, chip, op, timing.cores_used));
      break;
    case OpFamily::conv:
    case OpFamily::pool:
      MESHPLAN_TRY(run_conv(memory, chip, op, timing.cores_used));
      break;
    case OpFamily::collective:
      return fail(ErrorCode::invalid_argument, "op '", op.name, "': ", op_name(op.kind),
                  " is a mesh op: run it through a Mesh");
  }
  return timing;
}

}  // namespace meshplan::device
