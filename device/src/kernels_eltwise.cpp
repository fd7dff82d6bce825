// Elementwise kernels (add, relu) with numpy broadcasting over the logical shape.
#include "kernels.hpp"
#include "tile_io.hpp"

namespace meshplan::device {

namespace {

/// No broadcasting: operand tile p feeds output tile p, computed in tile order without
/// untilizing (the common case, and the one tiny ops hit).
Status run_eltwise_same_shape(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores,
                              TileIO& out) {
  const TileGrid& og = out.grid();
  std::vector<TileIO> ins;
  ins.reserve(op.operands.size());
  for (const TensorPlacement* t : op.operands) ins.emplace_back(memory, chip, *t);
  return for_each_core(og.pages(), cores, [&](uint32_t, int64_t begin, int64_t end) -> Status {
    float x[kTileElems], y[kTileElems];
    for (int64_t p = begin; p < end; ++p) {
      MESHPLAN_TRY(ins[0].read(p, x));
      if (op.kind == OpKind::add) {
        MESHPLAN_TRY(ins[1].read(p, y));
        for (int i = 0; i < kTileElems; ++i) x[i] += y[i];
      } else if (op.kind == OpKind::relu) {
        for (int i = 0; i < kTileElems; ++i) x[i] = std::max(x[i], 0.0f);
      }
      if (op.config.activation != Activation::none)
        for (int i = 0; i < kTileElems; ++i) x[i] = activate(op.config.activation, x[i]);
      // Edge tiles: padding outside the logical shape is written as 0.
      TileCoords tc = tile_coords(og, p);
      if (tc.row0 + kTileH > og.rows || tc.col0 + kTileW > og.cols)
        for (int r = 0; r < kTileH; ++r)
          for (int c = 0; c < kTileW; ++c)
            if (tc.row0 + r >= og.rows || tc.col0 + c >= og.cols) x[tile_offset(r, c)] = 0.0f;
      MESHPLAN_TRY(out.write(p, x));
    }
    return {};
  });
}

}  // namespace

/// Elementwise ops with numpy broadcasting over the logical shape.
Status run_eltwise(ChipMemory& memory, const ChipDesc& chip, const OpLaunch& op, uint32_t cores) {
  TileIO out(memory, chip, *op.results[0]);
  const TileGrid& og = out.grid();
  auto oshape = op.results[0]->shape;
  size_t n_in = op.operands.size();
  bool same_shapes = true;
  for (const TensorPlacement* t : op.operands)
    same_shapes = same_shapes && std::equal(t->shape.begin(), t->shape.end(), oshape.begin(), oshape.end());
  if (same_shapes) return run_eltwise_same_shape(memory, chip, op, cores, out);
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
