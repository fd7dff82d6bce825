// Legal layouts and configs: candidate tensor layouts (L1 sharded on core grids that divide the
// tile counts, L1 interleaved, DRAM interleaved) and OpModel queries on planner-side layouts.
// Every policy asks these helpers; OpModel is the only judge of legality and cost.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "meshplan/device/op_model.hpp"
#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/layout.hpp"

namespace meshplan::planner {

template <typename T>
class KeyMemo;

/// Tiled bf16-style layouts in one memory, interleaved.
TensorLayout interleaved_layout(const Value& v, device::BufferType buffer);

/// The placement (address 0) of `v` in `layout`; views into `v`.
device::TensorPlacement placement_of(const Value& v, const TensorLayout& layout);

/// Bytes one core holds of an L1 tensor (0 for DRAM).
uint64_t l1_bytes_per_core(const Value& v, const TensorLayout& layout,
                           const device::ChipDesc& chip);

/// Candidate layouts of `v`, best first: L1 sharded (height, width, block; most cores first),
/// then L1 interleaved, then DRAM interleaved. At most `max_layouts` (DRAM is always kept).
std::vector<TensorLayout> layout_candidates(const Value& v, const device::ChipDesc& chip,
                                            uint32_t max_layouts);

/// The op config that runs an op producing `result`: the shard grid for sharded results, the
/// full chip grid otherwise.
device::OpConfig config_for(const device::OpConfig& base, const TensorLayout& result,
                            const device::ChipDesc& chip);

/// Whether a matmul/linear config leaves the program to the planner: program none with no block
/// sizes given (what op_config() gives when the graph names no program).
bool is_auto_matmul(device::OpKind kind, const device::OpConfig& config);

/// The multicast program configs tried for an auto matmul on `base`'s grid: mcast_2d (and with
/// transpose_mcast), mcast_1d multicasting in0 (cores split N) and in1 (cores split M); each
/// with default blocks and with one-tile K steps (smaller circular buffers).
std::vector<device::OpConfig> matmul_program_configs(const device::OpConfig& base);

/// Fixes the program of every auto matmul of `plan` to the cheapest valid one on its final
/// layouts (the one OpQuery::timing scored it with). Graph-given programs are kept, and so are
/// the configs of ops marked in `kept` (by OpId; the policy chose them).
Status choose_matmul_programs(const Graph& g, LayoutPlan& plan, const device::ChipDesc& chip,
                              const std::vector<bool>& kept = {});

/// Whether a conv2d config leaves its activation block height or its K split to the planner
/// (act_block_h or act_block_w_div 0, what op_config() gives when the graph has no such
/// attribute).
bool is_auto_conv(device::OpKind kind, const device::OpConfig& config);

/// Most block heights tried per conv2d launch (conv_block_configs).
inline constexpr size_t kMaxConvBlockHeights = 8;
/// Most K splits tried per block height (conv_block_configs).
inline constexpr size_t kMaxConvKSplits = 2;

/// The (act_block_h, act_block_w_div) configs tried for a conv2d launch. Heights: the one
/// launch.config gives (as the device runs it: device::conv_block_height), else the divisors of the
/// busiest core's output tile rows (device::conv_block_heights), largest first, at most
/// kMaxConvBlockHeights. Per height, K splits: the one launch.config gives, else the divisors of
/// k_tiles that a width-sharded input allows (device::conv_k_split_rule), smallest first, keeping
/// the first kMaxConvKSplits whose circular buffers plus the op's L1 output fit in `budget`
/// bytes per core (at most the usable L1; a larger split only adds hand-offs and saves fill, so the
/// smallest that fit are the ones worth costing). A split whose resident weights do not fit
/// `budget` but would fit the whole usable L1 is offered with stream_weights set, so the residency
/// the plan carries is the one the planner fitted. When nothing fits, the one config with the
/// smallest buffers (for choose_conv_blocks' fallback). At most kMaxConvBlockHeights x
/// kMaxConvKSplits configs. Empty when the launch has no conv2d blocking (bad shapes) or its given
/// split does not divide (OpModel names it).
std::vector<device::OpConfig> conv_block_configs(const device::OpLaunch& launch,
                                                 const device::ChipDesc& chip,
                                                 uint64_t budget = UINT64_MAX);

/// Fixes act_block_h, act_block_w_div and stream_weights of every conv2d of `plan` on its final
/// layouts: the cheapest valid config (as OpQuery::timing scores it) whose circular buffers fit
/// beside the L1 tensors live across the op (per core, from the schedule), streaming the
/// weights when only that fits; when none fits, the valid config with the smallest circular
/// buffers. Graph-given heights and splits are kept, and so are the configs of ops marked in
/// `kept` (by OpId; the policy chose them).
Status choose_conv_blocks(const Graph& g, LayoutPlan& plan, const device::ChipDesc& chip,
                          const std::vector<bool>& kept = {});

/// The conv2d configs of tt-mlir's legacy search space (LegalOpConfigAnalysis: act_block_h
/// override 0, 64, 32 rows; act_block_w_div 1) for `launch`, in that order: the busiest core's
/// whole tile rows (what TTNN's height 0 resolves to), 2 tile rows, 1 tile row, each kept when it
/// divides those rows and differs from an earlier one. A height or K split the graph gives is
/// kept instead (the height as the device runs it: device::conv_block_height). Empty when the
/// launch has no conv2d blocking (bad shapes) or its given split does not divide.
std::vector<device::OpConfig> legacy_conv_configs(const device::OpLaunch& launch,
                                                  const device::ChipDesc& chip);

/// Text of a layout ("l1 height_sharded 8x1 [32x64]", "dram interleaved").
std::string layout_string(const TensorLayout& layout);

/// OpModel queries over planner values and layouts, memoized: OpModel is pure, so equal launches
/// (same kind, config, shapes and layouts; names aside) get the cached answer. A cached failure's
/// `reason` may name another op with the same signature: error paths use explain(), which asks
/// OpModel afresh. Not thread-safe (the memo).
class OpQuery {
 public:
  /// Collectives are costed on `mesh` (its topology, links and hop latency) when given, else on
  /// device::default_collective_mesh() of each op's group. Other ops ignore it.
  OpQuery(const Graph& graph, const device::ChipDesc& chip,
          const std::optional<device::MeshDesc>& mesh = std::nullopt);
  ~OpQuery();
  const device::OpModel& model() const { return model_; }
  const device::ChipDesc& chip() const { return model_.chip(); }

  /// OpModel::validate of `kind` named `name` on these operand/result values and layouts.
  device::OpValidation validate(device::OpKind kind, std::string_view name,
                                std::span<const ValueId> operands,
                                std::span<const TensorLayout* const> operand_layouts,
                                ValueId result, const TensorLayout& result_layout,
                                const device::OpConfig& config) const;
  /// validate() without the memo: the reason names this op and its tensors.
  device::OpValidation explain(device::OpKind kind, std::string_view name,
                               std::span<const ValueId> operands,
                               std::span<const TensorLayout* const> operand_layouts, ValueId result,
                               const TensorLayout& result_layout,
                               const device::OpConfig& config) const;
  /// OpModel::cost of the same launch. For an auto matmul (is_auto_matmul), the cost of its
  /// cheapest valid program config (program none included): see resolve_config().
  device::OpTiming timing(device::OpKind kind, std::string_view name,
                          std::span<const ValueId> operands,
                          std::span<const TensorLayout* const> operand_layouts, ValueId result,
                          const TensorLayout& result_layout, const device::OpConfig& config) const;
  /// The config timing() scored: `config`, or for an auto matmul its cheapest valid program.
  device::OpConfig resolve_config(device::OpKind kind, std::string_view name,
                                  std::span<const ValueId> operands,
                                  std::span<const TensorLayout* const> operand_layouts,
                                  ValueId result, const TensorLayout& result_layout,
                                  const device::OpConfig& config) const;
  /// validate() and cost() with one memo key: the cost when the launch is valid.
  std::optional<uint64_t> cost_if_valid(device::OpKind kind, std::string_view name,
                                        std::span<const ValueId> operands,
                                        std::span<const TensorLayout* const> operand_layouts,
                                        ValueId result, const TensorLayout& result_layout,
                                        const device::OpConfig& config) const;
  /// Its duration, in ns.
  uint64_t cost(device::OpKind kind, std::string_view name, std::span<const ValueId> operands,
                std::span<const TensorLayout* const> operand_layouts, ValueId result,
                const TensorLayout& result_layout, const device::OpConfig& config) const;
  /// validate() and timing() with one memo key: the timing when the launch is valid.
  std::optional<device::OpTiming> timing_if_valid(
      device::OpKind kind, std::string_view name, std::span<const ValueId> operands,
      std::span<const TensorLayout* const> operand_layouts, ValueId result,
      const TensorLayout& result_layout, const device::OpConfig& config) const;
  /// Validation and cost of moving `v` from `from` to `to` (a to_memory_config op).
  device::OpValidation validate_move(ValueId v, const TensorLayout& from,
                                     const TensorLayout& to) const;
  device::OpValidation explain_move(ValueId v, const TensorLayout& from,
                                    const TensorLayout& to) const;
  uint64_t move_cost(ValueId v, const TensorLayout& from, const TensorLayout& to) const;

 private:
  /// The launch's memo key (exact bytes, names aside), built in key_ and returned as a view of it.
  std::string_view key(device::OpKind kind, std::span<const ValueId> operands,
                       std::span<const TensorLayout* const> operand_layouts, ValueId result,
                       const TensorLayout& result_layout, const device::OpConfig& config) const;
  struct Best {
    device::OpTiming timing;
    device::OpConfig config;
  };
  /// The launch's entry in cost_memo_, made on a miss.
  const Best& best(device::OpKind kind, std::string_view name, std::span<const ValueId> operands,
                   std::span<const TensorLayout* const> operand_layouts, ValueId result,
                   const TensorLayout& result_layout, const device::OpConfig& config) const;
  /// best() when key_ holds the launch's key and `hash` its hash.
  const Best& best_keyed(uint64_t hash, device::OpKind kind, std::string_view name,
                         std::span<const ValueId> operands,
                         std::span<const TensorLayout* const> operand_layouts, ValueId result,
                         const TensorLayout& result_layout, const device::OpConfig& config) const;
  /// validate()'s entry in valid_memo_ when key_ holds the launch's key and `hash` its hash.
  const device::OpValidation& valid_keyed(uint64_t hash, device::OpKind kind, std::string_view name,
                                          std::span<const ValueId> operands,
                                          std::span<const TensorLayout* const> operand_layouts,
                                          ValueId result, const TensorLayout& result_layout,
                                          const device::OpConfig& config) const;
  /// Calls f(OpLaunch) on the placements of these values and layouts.
  template <typename F>
  auto with_launch(device::OpKind kind, std::string_view name, std::span<const ValueId> operands,
                   std::span<const TensorLayout* const> operand_layouts, ValueId result,
                   const TensorLayout& result_layout, const device::OpConfig& config, F&& f) const;

  const Graph& graph_;
  device::OpModel model_;
  // Memos keyed by the launch's key bytes through a fixed-size hash (key_memo.hpp); key_ is the
  // buffer key() builds in, reused so that a lookup allocates nothing.
  mutable std::string key_;
  mutable std::unique_ptr<KeyMemo<device::OpValidation>> valid_memo_;
  mutable std::unique_ptr<KeyMemo<Best>> cost_memo_;
};

}  // namespace meshplan::planner
