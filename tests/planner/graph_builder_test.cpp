// GraphBuilder: eager shapes, deferred errors, and graphs equal to their JSON form.
#include "meshplan/planner/graph_builder.hpp"

#include <doctest/doctest.h>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/key.hpp"

using namespace meshplan;
using namespace meshplan::planner;

TEST_CASE("building an MLP layer infers shapes as it goes") {
  GraphBuilder b("layer");
  auto x = b.input("x", {64, 256});
  auto w = b.parameter("w", {256, 512});
  auto bias = b.parameter("b", {1, 512});
  auto h = b.op("matmul", {x, w}, {attr("activation", "none")}, "fc");
  CHECK(b.shape(h) == std::vector<int64_t>{64, 512});
  auto z = b.relu(b.add(h, bias, "bias"), "act");
  b.output(z);
  auto g = b.build();
  REQUIRE(g);
  CHECK(g->ops.size() == 3);
  CHECK(g->values[g->outputs[0]].shape == std::vector<int64_t>{64, 512});
  // Its JSON form imports to the same graph (and so the same key).
  auto json = export_graph_json(*g);
  REQUIRE(json);
  auto again = import_graph_json(*json);
  REQUIRE(again);
  CHECK(graph_key(*again) == graph_key(*g));
}

TEST_CASE("the first error is kept and returned by build") {
  GraphBuilder b("bad");
  auto x = b.input("x", {4, 8});
  auto w = b.parameter("w", {9, 8});
  auto h = b.matmul(x, w, "mm");
  CHECK(h == GraphBuilder::kInvalid);
  CHECK(b.shape(h).empty());
  auto later = b.relu(h, "act");  // depends on the failed op
  CHECK(later == GraphBuilder::kInvalid);
  b.output(later);
  auto g = b.build();
  REQUIRE_FALSE(g);
  CHECK(g.error().message.find("op 'mm' (matmul)") != std::string::npos);
  CHECK(g.error().message.find("contracting") != std::string::npos);

  GraphBuilder u("unknown");
  auto y = u.input("y", {2, 2});
  CHECK(u.op("softplus_squared", {y}) == GraphBuilder::kInvalid);
  REQUIRE(u.error());
  CHECK(u.error()->message.find("unknown op 'softplus_squared'") != std::string::npos);
}

TEST_CASE("a graph without outputs does not build") {
  GraphBuilder b("empty");
  b.relu(b.input("x", {2, 2}));
  auto g = b.build();
  REQUIRE_FALSE(g);
  CHECK(g.error().message.find("no outputs") != std::string::npos);
}
