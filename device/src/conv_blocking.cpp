// conv2d activation blocking (see conv_blocking.hpp).
#include "meshplan/device/conv_blocking.hpp"

#include <algorithm>

#include "meshplan/device/formats.hpp"
#include "meshplan/device/placement.hpp"
#include "meshplan/device/timing.hpp"

namespace meshplan::device {

void conv_window(const OpLaunch& op, int64_t* kh, int64_t* kw) {
  *kh = op.config.kernel[0];
  *kw = op.config.kernel[1];
  bool unset = *kh == 1 && *kw == 1;
  if (unset && op.operands.size() >= 2 && op.operands[1]->shape.size() == 4) {
    *kh = op.operands[1]->shape[1];
    *kw = op.operands[1]->shape[2];
  }
}

Result<ConvBlocking> resolve_conv(const OpLaunch& op, const ChipDesc& chip) {
  if (op.operands.size() < 2 || op.results.empty() || op.operands[0]->shape.size() != 4 ||
      op.results[0]->shape.size() != 4)
    return fail(ErrorCode::invalid_argument, "conv2d needs an NHWC input, a weight and a result");
  ConvBlocking b;
  conv_window(op, &b.kh, &b.kw);
  int64_t groups = std::max<int32_t>(1, op.config.groups);
  int64_t cin = op.operands[0]->shape[3];
  if (b.kh <= 0 || b.kw <= 0 || cin % groups != 0)
    return fail(ErrorCode::invalid_argument, "conv2d window [", b.kh, ",", b.kw, "] with ", cin,
                " input channels in ", groups, " groups has no im2col form");
  b.k = b.kh * b.kw * (cin / groups);
  b.k_tiles = (b.k + kTileW - 1) / kTileW;
  TileGrid g = tile_grid(op.results[0]->shape);
  b.rows = g.tiles_h;
  b.cols = g.tiles_w;
  int64_t pages = g.pages();
  b.cores = cores_used(op);
  b.pages_per_core = std::max<int64_t>(1, (pages + b.cores - 1) / b.cores);
  // The kernel's split (for_each_core): contiguous page ranges of pages_per_core tiles.
  for (int64_t p0 = 0; p0 < pages; p0 += b.pages_per_core) {
    int64_t p1 = std::min(pages, p0 + b.pages_per_core);
    int64_t r = (p1 - 1) / b.cols - p0 / b.cols + 1;
    int64_t c = r == 1   ? p1 - p0
                : r == 2 ? std::min(b.cols, b.cols - p0 % b.cols + (p1 - 1) % b.cols + 1)
                         : b.cols;
    b.rows_per_core = std::max(b.rows_per_core, r);
    b.cols_per_core = std::max(b.cols_per_core, c);
  }
  b.rows_per_core = std::max<int64_t>(1, b.rows_per_core);
  b.cols_per_core = std::max<int64_t>(1, b.cols_per_core);
  // A height that does not divide the core's rows runs as the closest smaller one that does, as
  // tt-metal replaces such an act_block_h_override (with a warning) rather than refusing it.
  int64_t h =
      op.config.act_block_h == 0 ? 1 : conv_block_height(b.rows_per_core, op.config.act_block_h);
  uint32_t div = op.config.act_block_w_div;
  if (div != 0 && b.k_tiles % div != 0)
    return fail(ErrorCode::invalid_argument, "act_block_w_div ", div,
                " does not divide the im2col K of ", b.k_tiles, " tiles (K = ", b.kh, "x", b.kw,
                "x", cin / groups, " = ", b.k, " elements): K chunks are whole, equal tiles");
  if (std::string why = conv_k_split_rule(op, div == 0 ? 1 : div); !why.empty())
    return fail(ErrorCode::invalid_argument, why);
  for (const TensorPlacement* t : op.results)
    if (t->buffer == BufferType::l1) b.output_l1 += AddressMap(*t, chip).bytes_per_bank();
  set_conv_blocks(b, op, chip, h, div == 0 ? 1 : div, op.config.stream_weights);
  return b;
}

void set_conv_blocks(ConvBlocking& b, const OpLaunch& op, const ChipDesc& chip, int64_t act_block_h,
                     int64_t div, bool stream) {
  b.act_block_h = act_block_h;
  b.n_blocks = b.rows_per_core / act_block_h;
  b.act_block_w_div = div;
  b.k_block_tiles = b.k_tiles / div;
  b.weights_resident = true;  // conv_cb_bytes below sizes the resident weight block.
  b.weights_resident = !stream && conv_cb_bytes(b, op) + b.output_l1 <=
                                      chip.l1_usable_top() - chip.l1_unreserved_base;
}

uint64_t conv_cb_bytes(const ConvBlocking& b, const OpLaunch& op) {
  uint64_t block = static_cast<uint64_t>(b.act_block_h * b.cols_per_core);
  uint64_t act = 2ull * b.act_block_h * b.k_block_tiles * tile_bytes(op.operands[0]->dtype);
  int64_t weight_tiles = b.weights_resident ? b.k_tiles * b.cols_per_core : 2 * b.k_block_tiles;
  uint64_t weight = static_cast<uint64_t>(weight_tiles) * tile_bytes(op.operands[1]->dtype);
  uint64_t out = block * tile_bytes(op.results[0]->dtype);
  uint64_t partials = b.act_block_w_div > 1 ? block * tile_bytes(DType::f32) : 0;
  uint64_t bias = op.operands.size() > 2
                      ? static_cast<uint64_t>(b.cols_per_core) * tile_bytes(op.operands[2]->dtype)
                      : 0;
  uint64_t halo = op.config.deallocate_activation ? conv_halo_bytes(b, op) : 0;
  return act + weight + out + partials + bias + halo;
}

uint64_t conv_halo_bytes(const ConvBlocking& b, const OpLaunch& op) {
  const auto& x = op.operands[0]->shape;
  bool flat = op.config.input_n != 0;
  int64_t n = flat ? op.config.input_n : x[0], h = flat ? op.config.input_h : x[1],
          w = flat ? op.config.input_w : x[2], c = x[3];
  int64_t ph = h + op.config.padding[0] + op.config.padding[1];
  int64_t pw = w + op.config.padding[2] + op.config.padding[3];
  int64_t padded = n * ph * pw;
  int64_t share = (padded + b.cores - 1) / b.cores;
  int64_t overlap = (b.kh - 1) * std::max<int64_t>(1, op.config.dilation[0]) * pw +
                    (b.kw - 1) * std::max<int64_t>(1, op.config.dilation[1]);
  int64_t pixels = std::min(padded, share + overlap);
  uint64_t elems = static_cast<uint64_t>(pixels * c);
  uint64_t tile = tile_bytes(op.operands[0]->dtype);
  return (elems * tile + kTileElems - 1) / kTileElems;
}

int64_t conv_block_height(int64_t rows_per_core, int64_t requested) {
  int64_t h = std::clamp<int64_t>(requested, 1, std::max<int64_t>(1, rows_per_core));
  while (rows_per_core % h != 0) --h;
  return h;
}

std::string conv_k_split_rule(const OpLaunch& op, int64_t div) {
  const TensorPlacement& in = *op.operands[0];
  if (in.memory != MemLayout::width_sharded || in.shape.empty()) return {};
  // tt-metal pads the input channels to a multiple of 32 per channel core (every core of a
  // width-sharded input) and splits each core's channels into act_block_w_div whole tiles.
  int64_t cores = static_cast<int64_t>(in.shard.cores());
  int64_t channels = in.shape.back();
  int64_t padded = (channels + 32 * cores - 1) / (32 * cores) * (32 * cores);
  if (padded % (32 * cores * div) == 0) return {};
  return str("input '", in.name, "' is width_sharded over ", cores, " cores: its ", channels,
             " channels pad to ", padded, " (a multiple of 32 x ", cores,
             "), not a multiple of 32 x ", cores, " x act_block_w_div ", div, " = ",
             32 * cores * div,
             "; tt-metal's width-sharded conv2d splits each core's channels into "
             "act_block_w_div whole tiles (TT_ASSERT \"Padded In Channels = ",
             padded, ", num_cores = ", cores, ", act_block_w_div = ", div, "\")");
}

std::vector<uint32_t> conv_k_divisors(int64_t k_tiles) {
  std::vector<uint32_t> out;
  for (int64_t d = 1; d <= k_tiles; ++d)
    if (k_tiles % d == 0) out.push_back(static_cast<uint32_t>(d));
  return out;
}

std::vector<uint32_t> conv_block_heights(int64_t rows_per_core, size_t max_count) {
  std::vector<uint32_t> divisors;
  for (int64_t d = rows_per_core; d >= 1; --d)
    if (rows_per_core % d == 0) divisors.push_back(static_cast<uint32_t>(d));
  if (max_count == 0) return {};
  if (divisors.size() <= max_count) return divisors;
  if (max_count == 1) return {divisors.front()};
  std::vector<uint32_t> out;
  for (size_t i = 0; i < max_count; ++i) {
    size_t at = i * (divisors.size() - 1) / (max_count - 1);
    if (out.empty() || out.back() != divisors[at]) out.push_back(divisors[at]);
  }
  return out;
}

}  // namespace meshplan::device
