// Data movement kernels: to_memory_config copies every tile from one placement to another
// between any two layouts (DRAM/L1, interleaved or sharded, tiled or row-major), converting
// dtype if the result's differs (tiled copies of one 4-byte dtype move the words as they are, so
// integers stay exact).
#include "core_pool.hpp"
#include "kernels.hpp"
#include "tensor_io.hpp"
#include "tile_io.hpp"

namespace meshplan::device {

Status run_data_movement(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op,
                         uint32_t cores) {
  const TensorPlacement& src = *op.operands[0];
  const TensorPlacement& dst = *op.results[0];
  if (src.layout != TileLayout::tile || dst.layout != TileLayout::tile) {
    // Row-major on either side: move logical values (tilize / untilize / re-page on the way).
    std::vector<float> values(static_cast<size_t>(volume(src.shape)));
    MESHPLAN_TRY(read_tensor(memory, chip, src, values));
    return write_tensor(memory, chip, dst, values);
  }
  TileIO in(memory, chip, *op.operands[0]), out(memory, chip, *op.results[0]);
  if (src.dtype == dst.dtype && element_bytes(src.dtype) == 4)
    return for_each_core(memory, chip, *op.results[0], out.grid().pages(), cores, kTileCopyNs,
                         [&](uint32_t, int64_t begin, int64_t end) -> Status {
                           uint32_t words[kTileElems];
                           for (int64_t p = begin; p < end; ++p) {
                             in.read_words(p, words);
                             out.write_words(p, words);
                           }
                           return {};
                         });
  return for_each_core(memory, chip, *op.results[0], out.grid().pages(), cores, kTileCopyNs,
                       [&](uint32_t, int64_t begin, int64_t end) -> Status {
                         float tile[kTileElems];
                         for (int64_t p = begin; p < end; ++p) {
                           MESHPLAN_TRY(in.read(p, tile));
                           MESHPLAN_TRY(out.write(p, tile));
                         }
                         return {};
                       });
}

}  // namespace meshplan::device
