// From the wrapped global program to the mapped per-device program, choosing the reshard
// collectives: Shardy's sequence when the emulated mesh runs each of its collectives, else a
// sequence it does run.
#include <optional>
#include <string_view>

#include "mesh/spmd_reshard.hpp"
#include "mesh/spmd_util.hpp"
#include "meshplan/planner/mesh_mapping.hpp"

namespace meshplan::planner::shlo {

namespace {

/// True when every collective of the per-device program runs along one physical dim or the
/// whole system under the program's mesh mapping (a collective_permute takes any pairs).
bool runs_physically(const Module& m) {
  const MeshDecl* mesh = m.main_mesh();
  const Func* f = m.entry();
  if (!mesh || !f) return true;
  auto map = mesh_mapping(m);
  if (!map) return false;
  AxisMath math{*mesh};
  for (OpId o : f->body.ops) {
    if (m.ops[o].name != "sdy.manual_computation" || m.ops[o].regions.empty()) continue;
    for (OpId i : m.ops[o].regions[0].ops) {
      const Op& op = m.ops[i];
      const std::string_view n = op.name;
      if (n == "sdy.all_slice") {
        for (const auto& axes : op.dim_axes) {
          auto kept = math.without_trivial(axes);
          if (!kept.empty() && !physical_cluster_axis(*mesh, *map, replica_groups(*mesh, kept)))
            return false;
        }
      } else if (n == "stablehlo.all_gather" || n == "stablehlo.all_reduce" ||
                 n == "stablehlo.reduce_scatter" || n == "stablehlo.all_to_all") {
        auto c = collective_info(m, op);
        if (!c) return false;
        if (!c->groups.empty() && c->groups[0].size() > 1 &&
            !physical_cluster_axis(*mesh, *map, c->groups))
          return false;
      }
    }
  }
  return true;
}

}  // namespace

Status lower_to_local(Module& m, const PipelineOptions& o) {
  auto done = [&](Stage s) { return o.stop_after == s; };
  auto lower = [&](Module& x, ReshardMode mode) -> Status {
    MESHPLAN_TRY(reshards_to_collectives(x, mode));
    if (done(Stage::collectives)) return {};
    MESHPLAN_TRY(global_to_local_shapes(x));
    if (done(Stage::local_shapes)) return {};
    MESHPLAN_TRY(close_shardings(x));
    // The result must be a well-formed per-device program (a bug here is meshplan's).
    if (x.main_mesh() && has_manual_computation(x, *x.entry()))
      MESHPLAN_TRY(verify_local_program(x));
    MESHPLAN_TRY(map_mesh_axes(x, o));
    return {};
  };
  if (done(Stage::collectives) || done(Stage::local_shapes) || !m.main_mesh())
    return lower(m, ReshardMode::shardy);
  const Module global = m;
  Status first = lower(m, ReshardMode::shardy);
  if (first && runs_physically(m)) return {};
  std::optional<Status> moving;  // why the physical sequence fails, when Shardy's is a move
  for (ReshardMode mode : {ReshardMode::physical, ReshardMode::gather_slice}) {
    Module again = global;
    Status s = lower(again, mode);
    if (s && runs_physically(again)) {
      m = std::move(again);
      return {};
    }
    if (!s && !moving) moving = s;
  }
  // A reshard between meshes of other device layouts, which Shardy's sequence leaves: what
  // stops the plans' own lowering of it.
  if (!first && first.error().message.find("other device layouts") != std::string::npos) {
    if (moving) return *moving;
    return fail(first.error().code, first.error().message,
                "; through the module's mesh it needs collectives over groups that are no "
                "physical dim of the system (e.g. over sub-axes)");
  }
  return first;  // Shardy's sequence and what stops it
}

}  // namespace meshplan::planner::shlo
