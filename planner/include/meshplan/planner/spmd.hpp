// The mesh (SPMD) pipeline of seed 003 on the StableHLO module IR: argument annotations,
// propagation, explicit reshards, wrapping into a manual computation, reshards -> collectives,
// global -> local shapes, closing shardings. Each pass is a function; run_pipeline chains them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "meshplan/planner/graph.hpp"
#include "meshplan/planner/sharding.hpp"
#include "meshplan/planner/stablehlo.hpp"

namespace meshplan::planner::shlo {

/// Pipeline stages, in order; `--stop-after` names them.
enum class Stage {
  import,
  tt_arguments,
  shard_status,
  argument_sharding,
  sharding_constraints,
  propagation,
  constraint_to_reshard,
  explicit_reshards,
  wrap,
  collectives,
  local_shapes,
  close,
};
/// "import", "propagation", "explicit-reshards", "collectives", "local-shapes", ... or nullopt.
std::optional<Stage> stage_from_name(std::string_view name);
std::string_view stage_name(Stage stage);

struct PipelineOptions {
  /// The system's mesh (--mesh): used when the module declares none, as
  /// `sdy.mesh @mesh = <["model"=rows, "batch"=cols]>`; a module's own mesh must have as many
  /// devices. 0x0 = not given: the module's own mesh decides (1x1 when it declares none).
  int64_t mesh_rows = 1;
  int64_t mesh_cols = 1;
  /// Host tensors at the boundary. false (the default): every argument is a global host array
  /// that the runtime splits per its sdy.sharding (ttcore.shard_status<unsharded>), and every
  /// result is assembled to its global array. true: arguments carrying an sdy.sharding arrive
  /// already split, one piece per chip (seed 003's JAX / torch-xla convention,
  /// ttcore.shard_status<sharded>, mesh_shard identity). A ttcore.shard_status the module
  /// states on an argument wins over both.
  bool presharded_arguments = false;
  /// Per argument: "input", "parameter", "constant" (empty: none given, no ttcore annotation).
  std::vector<std::string> argument_types;
  Stage stop_after = Stage::close;
  /// When set, the passes append what they decided and why (e.g. the batch-parallel analysis),
  /// one sentence each, for the compile summary.
  std::vector<std::string>* notes = nullptr;
};

/// Pass 2: ttcore.argument_type from options.argument_types.
Status apply_argument_types(Module& m, const std::vector<std::string>& types);
/// Pass 3: ttcore.shard_status on every argument: `sharded` when `presharded` and the argument
/// carries an sdy.sharding, else `unsharded` (arguments that already state one keep it).
Status apply_shard_status(Module& m, bool presharded = false);
/// Pass 4: when nothing is annotated, declare the mesh and shard the batch factor
/// (analyze_batch: the factor of the first result's dim 0, through every op) of the inputs over
/// the mesh axes of size > 1 ("batch" first) that divide it. Inputs are the arguments typed
/// `input`, or, when no types are given, every argument that carries the batch factor.
Status apply_argument_sharding(Module& m, const PipelineOptions& options);
/// Pass 7: sdy.sharding_constraint -> sdy.reshard.
Status constraints_to_reshards(Module& m);
/// Pass 8: an sdy.reshard wherever an operand's sharding differs from what its op's factor
/// shardings need (and at the return against the function's result shardings); an
/// sdy.all_reduce after each op whose reduction factors are sharded.
Status insert_explicit_reshards(Module& m);
/// Pass 9: every op of the entry function under one sdy.manual_computation (manual_axes={}).
Status wrap_under_manual_computation(Module& m);
/// Pass 10: each sdy.reshard becomes the collectives Shardy's sdy-reshard-to-collectives
/// chooses (sdy.all_slice, sdy.collective_permute, sdy.all_to_all, sdy.all_gather);
/// sdy.all_reduce + sdy.all_slice on the same axes fuse into sdy.reduce_scatter.
Status reshards_to_collectives(Module& m);
/// Pass 11: manual_axes = all mesh axes, every tensor inside gets its local shape, sdy.sharding
/// annotations leave; Shardy collectives become StableHLO collectives with replica groups
/// (sdy.all_slice stays: it is a local slice, no communication).
Status global_to_local_shapes(Module& m);
/// Pass 12: open dimensions of the manual computation's shardings are closed.
Status close_shardings(Module& m);

/// Runs the passes up to and including options.stop_after.
Status run_pipeline(Module& m, const PipelineOptions& options);

/// A collective of the per-device program, as the runtime will see it.
struct CollectiveInfo {
  std::string
      kind;  ///< all_gather, all_reduce, reduce_scatter, all_to_all, collective_permute, all_slice
  int64_t dim = -1;  ///< gather / scatter / split dim
  int64_t concat_dim = -1;
  int cluster_axis = -1;  ///< mesh axis index when the groups run along one whole axis, else -1
  std::vector<std::vector<int64_t>> groups;  ///< device ids, in order along the group
  std::string reduction = "sum";
  std::vector<std::pair<int64_t, int64_t>> pairs;  ///< collective_permute: (source, target) ids
};
/// Reads a collective op of a local program (StableHLO generic form or sdy.all_slice).
Result<CollectiveInfo> collective_info(const Module& m, const Op& op);

/// Devices grouped along `axes` (major first): devices differing only in those axes' coordinates
/// form one group, ordered by their coordinate along the axes. Device ids are row-major.
std::vector<std::vector<int64_t>> replica_groups(const MeshDecl& mesh,
                                                 const std::vector<AxisRef>& axes);

/// The (source, target) device pairs (row-major ids, one per device, self-pairs included: a
/// device nobody targets would get zeros) of the collective_permute that reshards `src` to
/// `tgt`, two shardings that split each dim into equally many pieces: every device receives
/// the piece `tgt` gives it from a device holding it under `src`, itself when it does.
std::vector<std::pair<int64_t, int64_t>> permute_pairs(const MeshDecl& mesh,
                                                       const TensorSharding& src,
                                                       const TensorSharding& tgt);

/// Sum of the bytes each device sends over the bottleneck link per collective of the local
/// program (all_gather / reduce_scatter (N-1)/N*T, all_reduce 2(N-1)/N*T, all_to_all (N-1)/N*T,
/// T = the full tensor of the group), with the op counts by kind.
struct CommStats {
  double bytes = 0;
  std::vector<std::pair<std::string, int>> counts;
  /// One per collective, by source location (the op whose reshard or reduction made it).
  struct Item {
    std::string kind;
    Location loc;
    double bytes = 0;  ///< Sent per device over its bottleneck link.
    int group = 1;     ///< Devices per replica group.
  };
  std::vector<Item> ops;
  int count(std::string_view kind) const;
};
Result<CommStats> communication(const Module& local_program);

}  // namespace meshplan::planner::shlo

namespace meshplan::planner::shlo {

/// Lowers the per-device program (the manual computation's body when there is one, else the
/// entry function) to the graph IR the layout planner takes, with local shapes:
///  - elementwise ops -> the meshplan op of the same meaning; maximum(x, splat 0) -> relu;
///    convert -> typecast; select(compare(a, b, GT|GE|LT|LE), a|b, b|a) -> maximum / minimum;
///  - compare (FLOAT, SIGNED, UNSIGNED) -> eq .. ge, lowered only when something other than
///    such a maximum / minimum select uses it; select -> where; clamp with splat constant
///    bounds -> clamp, with tensor bounds -> maximum then minimum. i1 values are 0/1 in the
///    compared values' dtype (folded i1 constants and i1 arguments: bf16, nonzero = true);
///    convert to i1 -> ne(x, 0); i1 and /
///    or / not -> multiply / maximum / eq(x, 0);
///  - constant and iota are folded, and become constant arguments where an op needs them
///    (splats used by a broadcasting op as one-element constants);
///  - broadcast_in_dim -> nothing (a numpy-broadcasting consumer absorbs it), with a permute /
///    reshape when its dims are not trailing-aligned; elsewhere multiply by ones (exact);
///  - reshape, transpose -> permute, concatenate -> concat, slice;
///  - dot_general -> matmul (transpose_a/b, or permute + reshape to [batch..., M, K] x
///    [batch..., K, N], then reshape to the result);
///  - reduce with an add / maximum / minimum / multiply region -> reduce_sum / reduce_max /
///    reduce_min / reduce_prod (a non-identity init joins the result once);
///  - 2-D convolution -> conv2d with permutes to NHWC / OHWI and back;
///  - custom_call @meshplan.<op> -> that op and its `meshplan.<attr>` attributes;
///  - collectives -> the graph's collective ops (cluster_axis from the replica groups).
/// Anything else fails with "file:line:col: unimplemented: <what>".
Result<Graph> lower_to_graph(const Module& m);

}  // namespace meshplan::planner::shlo

namespace meshplan::planner::shlo {

/// A host <-> mesh transfer at the boundary of the per-device program (TTIR MeshShardOp).
struct MeshShard {
  bool to_device = true;             ///< FullToShard (an input) or ShardToFull (an output).
  size_t index = 0;                  ///< Operand / result index of the manual computation.
  std::string type;                  ///< "identity" (pre-sharded), "replicate" or "devices".
  std::vector<int64_t> shard_shape;  ///< Pieces per tensor dim.
  std::vector<int64_t> shard_dims;   ///< Per mesh axis: the tensor dim it splits, or -1.
  std::string str() const;
};

/// The mesh_shard ops of a per-device program (after local-shapes): one per manual computation
/// operand and result. Inputs marked ttcore.shard_status<sharded> are `identity`.
Result<std::vector<MeshShard>> mesh_shards(const Module& local_program);

/// Checks a per-device program: one manual computation over all mesh axes; its block arguments
/// and results have the local shapes of their shardings; no sdy.reshard/sharding_constraint and
/// no sdy.sharding annotation remains inside; every collective's replica groups partition the
/// mesh. Errors name the op and location.
Status verify_local_program(const Module& local_program);

/// Deterministic summary of a per-device program: mesh, boundary mesh_shards and collectives
/// (kind, dim, cluster_axis, group size, bytes), one per line.
Result<std::string> print_spmd_summary(const Module& local_program);

}  // namespace meshplan::planner::shlo
