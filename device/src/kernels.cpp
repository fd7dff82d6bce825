// Kernel dispatch: validates nothing itself (EmulatedDevice::launch ran OpModel::validate), times
// the op with the shared timing model and runs the kernel of its family.
#include "kernels.hpp"

#include "meshplan/device/timing.hpp"

namespace meshplan::device {

Result<OpTiming> run_kernel(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op) {
  OpTiming timing = estimate(chip, op);
  switch (op.kind) {
    case OpKind::matmul: MESHPLAN_TRY(run_matmul(memory, chip, op, timing.cores_used)); break;
    case OpKind::add:
    case OpKind::relu: MESHPLAN_TRY(run_eltwise(memory, chip, op, timing.cores_used)); break;
    case OpKind::to_memory_config: MESHPLAN_TRY(run_data_movement(memory, chip, op, timing.cores_used)); break;
  }
  return timing;
}

}  // namespace meshplan::device
