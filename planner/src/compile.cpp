// The planner's entry point (planner.hpp): the passes in order, from the user's graph to the
// plan's bytes: prepared weights, flattened spatial regions, the layout policy, block-float
// weight storage, the schedule and the verified memory plan, then emission (emit.hpp).
#include <vector>

#include "emit/emit.hpp"
#include "layout/plan_packed.hpp"
#include "memory/memory_packed.hpp"
#include "meshplan/device/collective_ops.hpp"
#include "meshplan/device/matmul_program.hpp"
#include "meshplan/planner/flatten_spatial.hpp"
#include "meshplan/planner/key.hpp"
#include "meshplan/planner/memory_plan.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/policy.hpp"
#include "meshplan/planner/prepare_weights.hpp"
#include "meshplan/planner/schedule.hpp"

namespace meshplan::planner {

Result<device::MeshDesc> planning_mesh(const Graph& graph, const device::ChipDesc& chip,
                                       const PlannerOptions& options) {
  const int rows = graph.mesh.rows, cols = graph.mesh.cols;
  if (!options.mesh || graph.mesh.single_chip()) {
    if (options.mesh && options.mesh->chips() > 1)
      return fail(ErrorCode::invalid_argument, "graph '", graph.name,
                  "' is a single-chip program: it cannot be planned for the ", options.mesh->rows,
                  "x", options.mesh->cols, " mesh ", options.mesh->name);
    device::MeshDesc mesh = device::default_mesh(chip, rows, cols);
    if (!graph.mesh.single_chip()) MESHPLAN_TRY(mesh.verify());
    return mesh;
  }
  const device::MeshDesc& mesh = *options.mesh;
  if (mesh.rows != rows || mesh.cols != cols)
    return fail(ErrorCode::invalid_argument, "graph '", graph.name, "' runs on a ", rows, "x", cols,
                " mesh, the mesh it was to be planned for (", mesh.name, ") is ", mesh.rows, "x",
                mesh.cols);
  if (mesh.chip.hash() != chip.hash())
    return fail(ErrorCode::invalid_argument, "mesh ", mesh.name, " is made of ", mesh.chip.name,
                " chips (descriptor ", mesh.chip.hash().hex().substr(0, 8),
                "), the plan is for chip ", chip.name, " (descriptor ",
                chip.hash().hex().substr(0, 8), ")");
  MESHPLAN_TRY(mesh.verify());
  return mesh;
}

Result<CompiledPlan> compile(const Graph& original, const device::ChipDesc& chip,
                             const PlannerOptions& options) {
  MESHPLAN_TRY(chip.verify());
  // conv2d weights in their prepared form (prepare_weights.hpp); the graph is copied only when
  // the pass has something to rewrite. `source` is what the policies plan; the key stays that of
  // the user's graph.
  Graph prepared_graph;
  std::vector<PreparedWeight> prepared;
  const Graph* source = &original;
  if (options.prepare_weights &&
      (!conv_weight_candidates(original).empty() || !conv_constant_candidates(original).empty())) {
    prepared_graph = original;
    prepared = MESHPLAN_TRY(prepare_conv_weights(prepared_graph));
    source = &prepared_graph;
  }
  // conv2d / pool regions on flattened activations (flatten_spatial.hpp), after the weights
  // (which it leaves alone).
  FlattenResult flattened;
  if (options.flatten_spatial && find_spatial_regions(*source).count > 0) {
    if (source != &prepared_graph) prepared_graph = original;
    flattened = MESHPLAN_TRY(flatten_spatial(prepared_graph));
    source = &prepared_graph;
  }
  // Mesh programs run on options.mesh, else on the built-in mesh of their shape
  // (device::default_mesh); plan_key() adds the mesh's hash when it is not that default, so the
  // key determines the mesh descriptor either way.
  const device::MeshDesc mesh = MESHPLAN_TRY(planning_mesh(original, chip, options));
  // The policy returns the planned graph: the original ops plus inserted reshards and spills.
  // The L1 packing fitting made of it last (on its schedule) serves the memory plan unless
  // block-float storage below changes the layouts it packed.
  // Weights in a block float (PlannerOptions::weight_dtype): the policies plan them in their
  // storage dtype, so that every choice is costed on the bytes the plan will read (a block-float
  // weight moves half or a quarter of its bf16 bytes, which changes which matmul program is
  // cheapest); the planned graph keeps their logical dtype.
  const std::vector<WeightStorage> stored =
      MESHPLAN_TRY(weight_storage(*source, options.weight_dtype, options.weight_dtype_overrides));
  Graph stored_graph;
  const Graph* planning = source;
  if (!stored.empty()) {
    stored_graph = *source;
    for (const WeightStorage& w : stored) stored_graph.values[w.value].dtype = w.dtype;
    planning = &stored_graph;
  }
  L1Packing packing;
  Schedule schedule;
  LayoutResult planned =
      MESHPLAN_TRY(plan_layout_packed(*planning, chip, options, packing, schedule));
  // Their tiled tensors, and the moved copies the policy made of them, take the storage dtype;
  // memory, timing and the runtime's upload follow the planned dtype.
  if (!stored.empty()) {
    std::vector<bool> block(planned.graph.values.size(), false);
    auto store = [&](ValueId v, device::DType dtype, device::DType logical) {
      // The planned graph's values keep the logical dtype (the weights' and their copies').
      planned.graph.values[v].dtype = logical;
      TensorLayout& t = planned.layout.tensors[v];
      if (t.layout != device::TileLayout::tile) {
        t.dtype = logical;
        planned.notes.push_back("weight '" + planned.graph.values[v].name +
                                "' is planned row-major: kept in " +
                                std::string(device::dtype_name(t.dtype)));
        return;
      }
      t.dtype = dtype;
      block[v] = true;
    };
    for (const WeightStorage& w : stored) store(w.value, w.dtype, source->values[w.value].dtype);
    for (OpId o = 0; o < planned.graph.ops.size(); ++o) {
      const Op& op = planned.graph.ops[o];
      if (planned.origin[o] != OpOrigin::graph && !op.operands.empty() && block[op.operands[0]])
        for (ValueId r : op.results)
          store(r, planned.layout.tensors[op.operands[0]].dtype,
                planned.graph.values[op.operands[0]].dtype);
    }
    // A matmul on block-float weights runs at the fidelity tt-metal's demos pair with their
    // dtype (device::weight_fidelity: bfp4_b LoFi, bfp8_b HiFi2).
    for (OpId o = 0; o < planned.graph.ops.size(); ++o) {
      const Op& op = planned.graph.ops[o];
      if ((op.kind == device::OpKind::matmul || op.kind == device::OpKind::linear) &&
          op.operands.size() > 1 && block[op.operands[1]])
        planned.layout.configs[o].fidelity =
            device::weight_fidelity(planned.layout.tensors[op.operands[1]].dtype);
    }
  }
  // The L1 memory plan on the planned graph's schedule, verified before anything is written.
  if (!stored.empty())
    packing = MESHPLAN_TRY(pack_l1(planned.graph, schedule, planned.layout, chip));
  MemoryPlan memory =
      MESHPLAN_TRY(plan_memory_packed(planned.graph, schedule, planned.layout, chip, packing));
  MESHPLAN_TRY(verify_memory_packed(planned.graph, schedule, planned.layout, memory, chip,
                                    packing.cb_bytes));

  CompiledPlan out;
  out.graph_key = graph_key(original);
  out.key = plan_key(out.graph_key, chip, options);
  out.notes = planned.notes;
  out.bytes = MESHPLAN_TRY(emit_plan({original, *source, prepared, flattened, mesh, planned,
                                      schedule, memory, out.key, out.graph_key},
                                     chip, options));
  return out;
}

}  // namespace meshplan::planner
