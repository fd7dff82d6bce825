// Sharding annotations for a global (single-device) graph: the mesh it should run on and how its
// arguments and outputs are split, in Shardy's terms. They live beside the Graph, never in it
// (Graph::mesh describes a per-device program); export_stablehlo() turns graph + annotations into
// a StableHLO/Shardy module for the mesh pipeline. graph.json carries them in optional fields
// (Graph.mesh_axes, Argument.sharding, Graph.output_shardings).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "meshplan/planner/graph.hpp"

namespace meshplan::planner {

struct MeshAnnotations {
  /// Mesh axes, major first, as `sdy.mesh @mesh = <["x"=2, "y"=4]>` declares them. Empty: the
  /// graph names no mesh (the caller's --mesh applies, with the pipeline's default axis names).
  std::vector<std::pair<std::string, int64_t>> axes;
  /// Per argument name: the Shardy per-dim sharding text that follows `@mesh, ` inside
  /// `#sdy.sharding<...>`, e.g. `[{}, {"x", "y"}]` or `[{"x", ?}, {}], replicated={"y"}`.
  /// Arguments not listed are unannotated (propagation may shard them).
  std::vector<std::pair<std::string, std::string>> arguments;
  /// Parallel to Graph::outputs ("" = no sharding given), or empty.
  std::vector<std::string> outputs;

  bool empty() const { return axes.empty() && arguments.empty() && outputs.empty(); }
  /// The sharding text of argument `name`, or "" when none is given.
  std::string_view argument(std::string_view name) const {
    for (const auto& [n, s] : arguments)
      if (n == name) return s;
    return {};
  }
  /// rows x cols of the mesh: first axis x product of the others (1x1 without axes).
  int64_t rows() const { return axes.empty() ? 1 : axes.front().second; }
  int64_t cols() const {
    int64_t c = 1;
    for (size_t i = 1; i < axes.size(); ++i) c *= axes[i].second;
    return c;
  }
};

/// A global graph with its sharding annotations (what annotated graph.json files hold).
struct AnnotatedGraph {
  Graph graph;
  MeshAnnotations annotations;
};

}  // namespace meshplan::planner
