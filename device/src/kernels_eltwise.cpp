// Elementwise kernels (add, relu) with numpy broadcasting over the logical shape.
#include "kernels.hpp"
#include "tile_io.hpp"

namespace meshplan::device {

/// Elementwise ops with numpy broadcasting over the logical shape.
Status run_eltwise(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  TileIO out(memory, chip, *op.results[0]);
  const TileGrid& og = out.grid();
  auto oshape = op.results[0]->shape;
  size_t n_in = op.operands.size();
  std::vector<std::vector<float>> blocks(n_in);
  std::vector<TileGrid> grids(n_in);
  for (size_t i = 0; i < n_in; ++i) {
    TileIO in(memory, chip, *op.operands[i]);
    grids[i] = in.grid();
    MESHPLAN_TRY(in.read_all_blocks(blocks[i]));
  }
  // Value of operand i at the output's logical (batch, row, col), broadcasting.
  auto value = [&](size_t i, int64_t batch, int64_t row, int64_t col) -> float {
    auto ishape = op.operands[i]->shape;
    const TileGrid& g = grids[i];
    int64_t r = g.rows == 1 ? 0 : row, c = g.cols == 1 ? 0 : col;
    if (ishape.size() < 2) r = 0;
    // Map the output batch index onto the operand's batch dims (right-aligned, size-1 dims broadcast).
    int64_t ib = 0;
    if (g.batch > 1) {
      int64_t rem = batch, stride = 1;
      size_t orank = oshape.size(), irank = ishape.size();
      for (size_t d = 2; d < orank; ++d) {
        size_t od = orank - 1 - d;
        int64_t coord = rem % oshape[od];
        rem /= oshape[od];
        if (d < irank) {
          size_t id = irank - 1 - d;
          if (ishape[id] != 1) ib += coord * stride;
          stride *= ishape[id];
        }
      }
    }
    int64_t per_matrix = (g.rows + kTileH - 1) / kTileH;
    int64_t page = (ib * per_matrix + r / kTileH) * g.tiles_w + c / kTileW;
    return blocks[i][page * kTileElems + (r % kTileH) * kTileW + (c % kTileW)];
  };
  return for_each_core(og.pages(), cores, [&](uint32_t, int64_t begin, int64_t end) -> Status {
    float tile[kTileElems];
    for (int64_t p = begin; p < end; ++p) {
      TileCoords tc = tile_coords(og, p);
      for (int r = 0; r < kTileH; ++r)
        for (int c = 0; c < kTileW; ++c) {
          int64_t row = tc.row0 + r, col = tc.col0 + c;
          float v = 0.0f;
          if (row < og.rows && col < og.cols) {
            switch (op.kind) {
              case OpKind::add: v = value(0, tc.batch, row, col) + value(1, tc.batch, row, col); break;
              case OpKind::relu: v = std::max(value(0, tc.batch, row, col), 0.0f); break;
              default: break;
            }
            v = activate(op.config.activation, v);
          }
          tile[tile_offset(r, c)] = v;
        }
      MESHPLAN_TRY(out.write(p, tile));
    }
    return {};
  });
}

}  // namespace meshplan::device
