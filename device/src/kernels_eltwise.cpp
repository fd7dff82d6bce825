// Elementwise kernels: unary ops (relu, gelu, exp, ...) and binary ops (add, subtract, multiply,
// divide, maximum, minimum) with numpy broadcasting over the logical shape and a fused activation.
#include "kernel_blocks.hpp"
#include "scalar_ops.hpp"

namespace meshplan::device {

Status run_eltwise(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  std::vector<Blocks> in;
  for (const TensorPlacement* t : op.operands)
    in.push_back(MESHPLAN_TRY(load_blocks(memory, chip, *t)));
  size_t rank = op.results[0]->shape.size();
  Activation act = op.config.activation;
  if (is_unary(op.kind))
    return write_elements(memory, chip, op, cores, [&](const int64_t* idx) {
      return apply_activation(act, unary_value(op.kind, in[0].at(idx)));
    });
  if (is_binary(op.kind))
    return write_elements(memory, chip, op, cores, [&](const int64_t* idx) {
      return apply_activation(
          act, binary_value(op.kind, in[0].at_broadcast(idx, rank), in[1].at_broadcast(idx, rank)));
    });
  return fail(ErrorCode::internal, op_name(op.kind), " is not an elementwise op");
}

}  // namespace meshplan::device
