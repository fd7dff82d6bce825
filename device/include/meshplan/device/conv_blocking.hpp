// conv2d activation blocking (after TTNN's height-sharded conv): how each core walks its output
// rows in blocks of act_block_h tile rows of the im2col matrix, each block's K in act_block_w_div
// chunks, and the circular buffers that takes. One truth shared by OpModel (validation, circular
// buffers), the timing model, the emulator's conv2d kernel and the planner's block candidates.
//
// K split (TTNN's act_block_w_div): a block of act_block_h tile rows multiplies its
// act_block_h x k_tiles slice of the im2col matrix by the weights in `div` chunks of
// k_block_tiles = k_tiles / div columns of K, so the activation buffer holds one chunk
// (act_block_h x k_block_tiles, double-buffered) and taller blocks fit; with streamed weights a
// taller block means fewer re-reads of the weights. The chunks' products accumulate into an f32
// partials buffer of act_block_h x cols_per_core tiles (as TTNN's matmul does with its
// intermediate CB when K spans several blocks), kept apart from the output block that the
// packer writes in the result dtype once the last chunk is in: counted only when div > 1 (with
// one chunk the product goes straight to the output block). Accumulating in f32 in K order
// makes the results bit-identical for every div.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "meshplan/device/device.hpp"

namespace meshplan::device {

/// A conv2d launch resolved against its act_block_h. Sizes in tiles of the output's 2-D tile
/// view [N * OH * ceil(OW / 32) tile rows, ceil(O / 32) tile columns]; the im2col matrix has the
/// same rows and K = KH * KW * I / groups columns per group.
struct ConvBlocking {
  int64_t kh = 1, kw = 1;       ///< The window (OpConfig::kernel; see conv_window()).
  int64_t k = 0;                ///< im2col K of one group, elements: KH * KW * I / groups.
  int64_t k_tiles = 0;          ///< ceil(k / 32).
  int64_t rows = 0;             ///< Output tile rows.
  int64_t cols = 0;             ///< Output tile columns.
  uint32_t cores = 1;           ///< Cores with work (cores_used()).
  int64_t pages_per_core = 0;   ///< Output tiles per core, a contiguous range in page order.
  int64_t rows_per_core = 0;    ///< Most tile rows one core's range spans (the busiest core).
  int64_t cols_per_core = 0;    ///< Most tile columns one core's range spans.
  int64_t act_block_h = 1;      ///< Tile rows per block, resolved (0 in the config = 1).
  int64_t n_blocks = 1;         ///< ceil(rows_per_core / act_block_h).
  int64_t act_block_w_div = 1;  ///< K chunks per block, resolved (0 in the config = 1).
  int64_t k_block_tiles = 0;    ///< K tiles per chunk: k_tiles / act_block_w_div.
  /// The weight block stays in L1 for the whole op (k_tiles x cols_per_core tiles, read once)
  /// when it fits beside the other buffers and the L1 output and the config does not ask for
  /// streaming (OpConfig::stream_weights); otherwise one output tile column of one K chunk of
  /// weights (k_block_tiles tiles, double-buffered) streams through, and every activation
  /// block reads the core's k_tiles x cols_per_core weight tiles again.
  bool weights_resident = true;
  uint64_t output_l1 = 0;  ///< L1 bytes per core of the op's results (0 for DRAM results).
};

/// The conv2d window [KH, KW]: OpConfig::kernel. A config that leaves kernel at its default
/// {1, 1} with a rank-4 [O, KH, KW, I/g] weight (graphs and tests that predate conv2d carrying its
/// window) takes the window from that weight. Precondition: op is a conv2d with 2+ operands.
void conv_window(const OpLaunch& op, int64_t* kh, int64_t* kw);

/// Resolves op.config.act_block_h and act_block_w_div for a conv2d launch on its result's tile
/// grid and checks them: height 0 (auto) is one tile row per block (the smallest circular
/// buffers; the planner always writes an explicit height), otherwise the height runs as
/// conv_block_height(rows_per_core, act_block_h); div 0 (auto) is 1, otherwise it must divide
/// k_tiles (the chunks are whole tiles of equal width, as TTNN requires of act_block_w_div) and
/// pass conv_k_split_rule. Decides weights_resident on `chip`'s usable L1 (and
/// op.config.stream_weights). The message names the value and what it must divide; callers
/// prefix the op. Preconditions: operand/result counts and shapes were checked (rank-4 NHWC
/// input and result).
Result<ConvBlocking> resolve_conv(const OpLaunch& op, const ChipDesc& chip);

/// The block height a conv2d with `rows_per_core` tile rows per core runs for a requested
/// act_block_h of `requested` tile rows (>= 1): the largest divisor of rows_per_core not above
/// it. tt-metal (conv2d_utils.cpp, determine_per_core_conv_block_config) replaces an
/// act_block_h_override that does not divide the core's output tile rows by that divisor, with
/// a warning, rather than refusing it.
int64_t conv_block_height(int64_t rows_per_core, int64_t requested);

/// tt-metal's K-split rule for a width-sharded input (determine_per_core_conv_block_config's
/// TT_ASSERT): the input channels, padded to a multiple of 32 x the input's cores, must be a
/// multiple of 32 x cores x `div`. The refusal naming the input, or empty when `div` is fine
/// (always for inputs that are not width-sharded). Precondition: op is a conv2d with operands.
std::string conv_k_split_rule(const OpLaunch& op, int64_t div);

/// Re-blocks a resolved conv2d to height `act_block_h` (dividing rows_per_core) and `div` K
/// chunks (dividing k_tiles), deciding residency as resolve_conv does (resident unless `stream`
/// or the resident buffers and the L1 output exceed `chip`'s usable L1). resolve_conv ends with
/// it; the planner uses it to size candidate blocks without resolving the launch again.
void set_conv_blocks(ConvBlocking& b, const OpLaunch& op, const ChipDesc& chip, int64_t act_block_h,
                     int64_t div, bool stream);

/// Circular-buffer bytes per core of a resolved conv2d: the activation block (act_block_h x
/// k_block_tiles, input dtype, double-buffered), the weight block (resident: k_tiles x
/// cols_per_core; streamed: 2 x k_block_tiles; weight dtype), the output block (act_block_h x
/// cols_per_core, result dtype), with div > 1 the f32 partials block (act_block_h x
/// cols_per_core tiles of 4096 bytes), with a bias its cols_per_core tiles and, when the op
/// frees its input (OpConfig::deallocate_activation), the halo buffer (conv_halo_bytes).
uint64_t conv_cb_bytes(const ConvBlocking& b, const OpLaunch& op);

/// Bytes per core of the halo buffer a conv2d that frees its input copies the input into first
/// (TTNN's halo step): the core's share of the padded input, N * (H + pad_t + pad_b) *
/// (W + pad_l + pad_r) pixels over the cores with work, plus the window's reach into the next
/// core's share ((KH - 1) * DH padded rows and (KW - 1) * DW pixels), at most the whole padded
/// input; C channels each, in the input's dtype (its tile bytes per element).
uint64_t conv_halo_bytes(const ConvBlocking& b, const OpLaunch& op);

/// The K chunk counts worth trying: the divisors of k_tiles, smallest first.
std::vector<uint32_t> conv_k_divisors(int64_t k_tiles);

/// Block heights worth trying for a conv2d with `rows_per_core` tile rows per core: its
/// divisors, largest first, at most `max_count` of them (spread over the range when there are
/// more: the largest, the smallest, and evenly spaced ones between).
std::vector<uint32_t> conv_block_heights(int64_t rows_per_core, size_t max_count);

}  // namespace meshplan::device
