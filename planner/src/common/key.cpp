// Canonical graph encoding for plan keys. Values are numbered by position: arguments in order,
// then op results in schedule order; names never enter the hash.
#include "meshplan/planner/key.hpp"

#include <cstring>
#include <variant>

#include "meshplan/device/collective_ops.hpp"

namespace meshplan::planner {

Hash128 graph_key(const Graph& g) {
  Hasher h;
  h.string("meshplan.graph.v1");
  std::vector<uint32_t> position(g.values.size(), 0);
  uint32_t next = 0;
  h.u64(g.arguments.size());
  for (ValueId a : g.arguments) {
    const Value& v = g.values[a];
    position[a] = next++;
    h.u8(static_cast<uint8_t>(v.kind)).u8(static_cast<uint8_t>(v.dtype)).u64(v.shape.size());
    for (int64_t d : v.shape) h.i64(d);
    if (v.kind == ArgKind::constant)
      h.u64(v.data.size()).bytes(v.data.data(), v.data.size() * sizeof(float));
  }
  h.u64(g.ops.size());
  for (const Op& op : g.ops) {
    h.u32(static_cast<uint32_t>(op.kind)).u64(op.operands.size());
    for (ValueId v : op.operands) h.u32(position[v]);
    h.u64(op.results.size());
    for (ValueId r : op.results) {
      position[r] = next++;
      const Value& v = g.values[r];
      h.u8(static_cast<uint8_t>(v.dtype)).u64(v.shape.size());
      for (int64_t d : v.shape) h.i64(d);
    }
    h.u64(op.attributes.size());
    for (const Attribute& a : op.attributes) {
      h.string(a.name).u8(static_cast<uint8_t>(a.value.index()));
      std::visit(
          [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, int64_t>)
              h.i64(x);
            else if constexpr (std::is_same_v<T, double>)
              h.f64(x);
            else if constexpr (std::is_same_v<T, bool>)
              h.u8(x ? 1 : 0);
            else if constexpr (std::is_same_v<T, std::string>)
              h.string(x);
            else {
              h.u64(x.size());
              for (auto e : x) h.bytes(&e, sizeof(e));
            }
          },
          a.value);
    }
  }
  h.u64(g.outputs.size());
  for (ValueId v : g.outputs) h.u32(position[v]);
  // Mesh programs only, so single-chip keys stay what they were. Axis names are names: the
  // shards refer to axes by position, so they never enter the key.
  if (!g.mesh.single_chip()) {
    h.string("mesh").i64(g.mesh.rows).i64(g.mesh.cols);
    for (const auto* shards : {&g.argument_shards, &g.output_shards}) {
      h.u64(shards->size());
      for (const device::MeshShardSpec& s : *shards) {
        h.u8(static_cast<uint8_t>(s.type)).i64(s.shard_dims[0]).i64(s.shard_dims[1]);
        h.u64(s.shard_shape.size());
        for (int64_t d : s.shard_shape) h.i64(d);
      }
    }
  }
  return h.digest();
}

Hash128 plan_key(const Hash128& gk, const device::ChipDesc& chip, const PlannerOptions& options) {
  Hasher h;
  h.string("meshplan.plan.v1").hash(gk).hash(chip.hash()).string(kPlannerVersion);
  h.string(options.policy);
  if (options.policy == "beam") {
    h.u32(options.beam_width).u8(options.beam_cost_mode ? 1 : 0);
    // Beam's bounds enter only when set away from their defaults, so default plans keep their keys.
    if (options.beam_max_combinations != 0 ||
        options.beam_max_evaluations != PlannerOptions{}.beam_max_evaluations)
      h.string("beam-bounds").u32(options.beam_max_combinations).u32(options.beam_max_evaluations);
  }
  if (options.policy != "dram") h.u32(options.max_legal_layouts);
  if (!options.output_overrides.empty() || !options.memreconfig.empty()) {
    h.string("overrides").u64(options.output_overrides.size());
    for (const std::string& s : options.output_overrides) h.string(s);
    h.u64(options.memreconfig.size());
    for (const std::string& s : options.memreconfig) h.string(s);
  }
  // Belady is the default and keeps the keys of earlier plans.
  if (options.spill != "belady") h.string("spill").string(options.spill);
  // Preparing conv weights is the default; turning it off changes the plans.
  if (!options.prepare_weights) h.string("no-prepare-weights");
  // Flattening conv regions is the default (plans of graphs without one are unchanged by it).
  if (!options.flatten_spatial) h.string("no-flatten-spatial");
  // Weights as given (bf16) is the default and keeps the keys of earlier plans.
  if (options.weight_dtype != device::DType::bf16 || !options.weight_dtype_overrides.empty()) {
    h.string("weight-dtype").u8(static_cast<uint8_t>(options.weight_dtype));
    h.u64(options.weight_dtype_overrides.size());
    for (const std::string& s : options.weight_dtype_overrides) h.string(s);
  }
  // A mesh other than the built-in one of its shape (a ring T3000, a mesh JSON file): plans made
  // for the default mesh keep their keys, and a ring plan never answers for a linear mesh.
  if (options.mesh && options.mesh->chips() > 1 &&
      options.mesh->hash() !=
          device::default_mesh(chip, options.mesh->rows, options.mesh->cols).hash())
    h.string("mesh").hash(options.mesh->hash());
  return h.digest();
}

}  // namespace meshplan::planner
