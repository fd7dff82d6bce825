// The timing model: how long the real chip would take for one op. The emulator advances its
// clock by it and the planner scores plans with it (OpModel::cost), so both agree. The kernels do
// not depend on it.
//
// duration = dispatch + max(compute, data movement)
//            (conv2d: + one block's data movement + n_blocks x block hand-off; see below)
// A slice ttnn runs through row-major (a tiled input with a step, rank 1, a sharded input, or a
// begin of the last two dims off the tile grid) is three such launches: untilize, the row-major
// slice, tilize (timing.cpp, docs/hardware-rules.md).
//
// compute: the busiest core's work: tile-matmuls x cycles per tile-matmul (16 at LoFi, x2 at
//   HiFi2, x3 HiFi3, x4 HiFi4, over matmul_utilization), or elements / eltwise_elems_per_cycle,
//   over the clock (row ops, reductions, conv2d and pools: see timing.cpp).
//
// data movement: the busiest of four paths, each a rate of the ChipDesc (docs/hardware-rules.md
// names each one's source; the assumptions are marked there):
//   - the core's incoming traffic: reads of other cores' L1 at noc_bytes_per_cycle, reads of
//     DRAM at dram_read_bytes_per_cycle (one core's measured DRAM read rate), multicast blocks
//     at mcast_bytes_per_cycle (the measured multicast rate), one after another;
//   - its write NoC port (2 NoCs: readers use one, writers the other), noc_bytes_per_cycle;
//   - its own L1, for data already on the core, l1_bytes_per_cycle (an assumption);
//   - DRAM, dram_gbps over all banks (the achievable, measured rate, not the peak), for every
//     byte any core reads from or writes to DRAM.
// What each core moves, per placement:
//   - DRAM: its share crosses its NoC port once and counts against the DRAM bandwidth.
//   - L1 interleaved (pages spread over every core's L1: every core reads from every bank), or a
//     sharded tensor read by cores that do not hold it: its share crosses its port, weighted by
//     link contention. Assumption: each NoC is a unidirectional 2-D torus over the grid (as on
//     Wormhole), so uniform traffic crosses on average (n - 1) / 2 links per dimension of n
//     routers; with `r` cores each moving b bytes, the busiest link carries
//     r x b x max(grid_x - 1, grid_y - 1) / 2 / cores bytes. The factor is
//     max(1, r x hops / cores): 3.5 for all 64 cores of an 8x8 Wormhole, 1 for a single reader.
//   - L1 sharded, used by the core that holds it (an operand sharded exactly like the op's
//     result when each result element comes from the operand element at the same place:
//     elementwise ops, casts, reshapes keeping the 2-D view, row ops on height shards; a sharded
//     result written by the op on its shard grid; a reshard leaving the shard grid it runs on):
//     local L1 traffic only, nothing on the NoC. Permute, concat, slice, embedding, conv2d and
//     pools move elements between shards and read over the NoC.
//   - matmul programs: the busiest core reads its in0 block (per_core_m x K tiles) and in1 block
//     (K x per_core_n). Multicast blocks (mcast_2d: in0 along rows, in1 along columns; mcast_1d:
//     the multicast operand) are read once from their source by one sender per row/column (a
//     local read when the source is sharded) and multicast to every other core; the sender
//     reads the next block while the last one is multicast, so the slower of its read and the
//     multicast (at mcast_bytes_per_cycle) sets every participant's pace. Program none reads, on
//     every core, the in0 rows and in1 columns its contiguous range of output tiles spans, so cores
//     sharing rows or columns read (and for DRAM, fetch from DRAM) them again; its sharded result
//     is written remotely (it computes tiles off their shard).
//   - conv2d (conv_blocking.hpp): each core reads its 1/cores share of the input over the NoC
//     (halo rows aside) and writes the im2col blocks it builds (rows_per_core x k_tiles tiles)
//     into its own L1; the weight block (the core's columns' share of the weight as stored:
//     k_tiles x cols_per_core tiles in matmul form, more for a padded [O, KH, KW, I] tiling)
//     and the bias are read
//     by one sender per group of cores sharing a column range and multicast to the group (as
//     matmul in1; all the weights leave their source): once when the weights stay resident in L1,
//     once per activation block when they do not fit and stream through (so larger blocks
//     re-read them less often); the result as for every op.
// conv2d pipeline: a core walks its rows_per_core output tile rows in n_blocks =
//   ceil(rows_per_core / act_block_h) blocks, each block's K in div = act_block_w_div chunks
//   (conv_blocking.hpp); reader, compute and writer overlap across the n = n_blocks x div
//   (block, chunk) steps (double-buffered activation chunk), so
//     busy = max(compute, movement) + min(compute, movement) / n + n x hand-off
//   the middle term the pipeline's one unoverlapped step: when movement is the bottleneck, the
//   last step's compute after its data arrived; when compute is, the first step's movement
//   before compute can start (a two-stage pipeline of n equal steps). The last term is the
//   per-step synchronisation: each chunk is handed from reader to compute like a block (the
//   partials stay in compute's f32 buffer between chunks). Assumption (no published figure):
//   a hand-off costs conv_block_sync_cycles (500: the reader's barrier on its NoC reads plus the
//   circular-buffer semaphores; the order of a DRAM read round trip), chosen a priori. Movement in
//   bytes does not depend on div: a K split pays off only through the taller blocks its smaller
//   activation buffer lets fit (streamed weights are re-read once per block). Larger blocks pay
//   more fill, smaller ones more hand-offs; the planner picks the (height, div) pair with the
//   lowest total.
// Not modelled: NoC latency per request (bandwidth-bound transfers), DRAM traffic contending with
// L1 traffic on the NoC links, interleaved DRAM bank imbalance.
#pragma once

#include <span>

#include "meshplan/device/device.hpp"

namespace meshplan::device {

/// Cores an op uses: min(config grid cores, output tiles).
uint32_t cores_used(const OpLaunch& op);

/// Simulated cost of `op` on `chip`. Pure: no device state.
OpTiming estimate(const ChipDesc& chip, const OpLaunch& op);

/// Time to move `bytes` over PCIe between the host and one chip's DRAM: to the device at
/// pcie_h2d_gbps, from it at pcie_d2h_gbps (achievable rates; bandwidth only, no per-transfer
/// latency). A plan's inputs in and outputs out are reported with it, apart from the op time.
uint64_t host_transfer_ns(const ChipDesc& chip, uint64_t bytes, bool to_device);

}  // namespace meshplan::device
