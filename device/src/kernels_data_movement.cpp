// Data movement kernels: to_memory_config copies every tile from one placement to another
// (DRAM <-> L1, interleaved <-> interleaved; converting dtype if the result's differs).
#include "kernels.hpp"
#include "tile_io.hpp"

namespace meshplan::device {

Status run_data_movement(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  TileIO in(memory, chip, *op.operands[0]), out(memory, chip, *op.results[0]);
  return for_each_core(out.grid().pages(), cores, [&](uint32_t, int64_t begin, int64_t end) -> Status {
    float tile[kTileElems];
    for (int64_t p = begin; p < end; ++p) {
      MESHPLAN_TRY(in.read(p, tile));
      MESHPLAN_TRY(out.write(p, tile));
    }
    return {};
  });
}

}  // namespace meshplan::device
