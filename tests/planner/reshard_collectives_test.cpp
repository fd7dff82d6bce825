// sdy-reshard-to-collectives as Shardy documents it: the cheapest collectives that turn a
// value's sharding into the reshard's. An axis that moves between dims is one all_to_all (every
// device keeps its bytes, split the other way), an axis replaced by an unused one of the same
// size is one collective_permute (each device sends its shard to one other), and only what the
// target drops is gathered, after what it adds has been sliced. Expected texts are worked out
// by hand from those rules, in Shardy's printed syntax.
#include <doctest/doctest.h>

#include "meshplan/planner/sharding_export.hpp"
#include "meshplan/planner/spmd.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

constexpr const char* kMeshes =
    "sdy.mesh @abc = <[\"a\"=2, \"b\"=2, \"c\"=2]>\n"
    "sdy.mesh @pq = <[\"p\"=2, \"q\"=4]>\n"
    "sdy.mesh @rev = <[\"a\"=2, \"b\"=2, \"c\"=2], device_ids=[7, 6, 5, 4, 3, 2, 1, 0]>\n";

/// @f(%arg0 sharded `from`) resharded to `to` (on `mesh`), returned.
std::string module(const std::string& from, const std::string& to, const std::string& mesh = "abc",
                   const std::string& to_mesh = "") {
  const std::string m = to_mesh.empty() ? mesh : to_mesh;
  return str(kMeshes, "func.func @f(%arg0: tensor<8x8x8xf32> {sdy.sharding = #sdy.sharding<@", mesh,
             ", ", from, ">}) -> tensor<8x8x8xf32> {\n", "  %0 = sdy.reshard %arg0 <@", m, ", ", to,
             "> : tensor<8x8x8xf32>\n", "  return %0 : tensor<8x8x8xf32>\n}\n");
}

/// The collectives (one per line, as printed) that replace the reshard of module(...).
std::string collectives(const std::string& text) {
  auto m = parse_module(text, "reshard.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto s = run_sdy_export_pass(*m, ExportPass::reshard_to_collectives);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  std::string printed = print_module(*m), out;
  size_t at = printed.find("{\n");
  REQUIRE(at != std::string::npos);
  for (size_t line = at + 2; line < printed.size();) {
    size_t end = printed.find('\n', line);
    std::string l = printed.substr(line, end - line);
    if (l.find("return") != std::string::npos) break;
    out += l.substr(l.find_first_not_of(' ')) + "\n";
    line = end + 1;
  }
  return out;
}

}  // namespace

TEST_CASE("an axis moving between dims is one all_to_all, not all_gather + all_slice") {
  CHECK(collectives(module("[{\"a\", \"b\"}, {}, {\"c\"}]", "[{\"a\"}, {\"b\"}, {\"c\"}]")) ==
        "%0 = sdy.all_to_all [{\"b\"}: 0->1] %arg0 out_sharding=<@abc, [{\"a\"}, {\"b\"}, "
        "{\"c\"}]> : tensor<8x8x8xf32>\n");
  // Two axes moving together, in their order: one all_to_all over both.
  CHECK(collectives(module("[{}, {\"b\", \"c\"}, {}]", "[{\"b\", \"c\"}, {}, {}]")) ==
        "%0 = sdy.all_to_all [{\"b\", \"c\"}: 1->0] %arg0 out_sharding=<@abc, [{\"b\", \"c\"}, "
        "{}, {}]> : tensor<8x8x8xf32>\n");
  // Axes from two dims into a third, each landing where the target wants it: two all_to_alls,
  // the major one ("a") first.
  CHECK(collectives(module("[{\"a\"}, {\"b\"}, {}]", "[{}, {}, {\"a\", \"b\"}]")) ==
        "%0 = sdy.all_to_all [{\"a\"}: 0->2] %arg0 out_sharding=<@abc, [{}, {\"b\"}, {\"a\"}]> : "
        "tensor<8x8x8xf32>\n"
        "%1 = sdy.all_to_all [{\"b\"}: 1->2] %0 out_sharding=<@abc, [{}, {}, {\"a\", \"b\"}]> : "
        "tensor<8x8x8xf32>\n");
}

TEST_CASE("an axis swapped for one of the same size is one collective_permute") {
  CHECK(collectives(module("[{\"a\"}, {}, {}]", "[{\"b\"}, {}, {}]")) ==
        "%0 = sdy.collective_permute %arg0 out_sharding=<@abc, [{\"b\"}, {}, {}]> : "
        "tensor<8x8x8xf32>\n");
  // Two dims trading their axes: shard sizes stay, devices exchange shards.
  CHECK(collectives(module("[{\"a\"}, {\"b\"}, {}]", "[{\"b\"}, {\"a\"}, {}]")) ==
        "%0 = sdy.collective_permute %arg0 out_sharding=<@abc, [{\"b\"}, {\"a\"}, {}]> : "
        "tensor<8x8x8xf32>\n");
  // Same axes, another device order (device_ids): data moves although the sharding reads alike.
  CHECK(collectives(module("[{\"a\"}, {}, {}]", "[{\"a\"}, {}, {}]", "abc", "rev")) ==
        "%0 = sdy.collective_permute %arg0 out_sharding=<@rev, [{\"a\"}, {}, {}]> : "
        "tensor<8x8x8xf32>\n");
}

TEST_CASE("what the target adds is sliced before what it drops is gathered") {
  // "q" (4) cannot replace "p" (2): slice dim 1 over "q" first (smaller shards), then gather
  // "p"; the all_gather never holds more than a quarter of dim 1.
  CHECK(collectives(module("[{\"p\"}, {}, {}]", "[{}, {\"q\"}, {}]", "pq")) ==
        "%0 = sdy.all_slice [{}, {\"q\"}, {}] %arg0 out_sharding=<@pq, [{\"p\"}, {\"q\"}, {}]> : "
        "tensor<8x8x8xf32>\n"
        "%1 = sdy.all_gather [{\"p\"}, {}, {}] %0 out_sharding=<@pq, [{}, {\"q\"}, {}]> : "
        "tensor<8x8x8xf32>\n");
  // Keeping the major half of "q": gather only its minor sub-axis.
  CHECK(collectives(module("[{\"q\"}, {}, {}]", "[{\"q\":(1)2}, {}, {}]", "pq")) ==
        "%0 = sdy.all_gather [{\"q\":(2)2}, {}, {}] %arg0 out_sharding=<@pq, [{\"q\":(1)2}, {}, "
        "{}]> : tensor<8x8x8xf32>\n");
  // Fully replicated target: gather on the source's mesh, whatever mesh the reshard names.
  CHECK(collectives(module("[{\"a\"}, {}, {\"c\"}]", "[{}, {}, {}]", "abc", "rev")) ==
        "%0 = sdy.all_gather [{\"a\"}, {}, {\"c\"}] %arg0 out_sharding=<@abc, [{}, {}, {}]> : "
        "tensor<8x8x8xf32>\n");
}

TEST_CASE("permute_pairs: each device receives the piece it needs from one that holds it") {
  MeshDecl mesh;
  mesh.name = "abc";
  mesh.axes = {{"a", 2}, {"b", 2}};
  auto sharding = [](std::vector<std::vector<std::string>> dims) {
    TensorSharding s;
    s.mesh = "abc";
    for (const auto& names : dims) {
      DimSharding d;
      for (const std::string& n : names) d.axes.push_back(AxisRef{n, 1, 0});
      s.dims.push_back(d);
    }
    return s;
  };
  using P = std::pair<int64_t, int64_t>;
  // [{"a"}, {"b"}] -> [{"b"}, {"a"}]: device (a=i, b=j) holds piece (i, j) and needs (j, i),
  // which device (a=j, b=i) holds: a transpose of the 2x2 device grid.
  CHECK(permute_pairs(mesh, sharding({{"a"}, {"b"}}), sharding({{"b"}, {"a"}})) ==
        std::vector<P>{{0, 0}, {2, 1}, {1, 2}, {3, 3}});
  // Nothing moves when the pieces stay where they are.
  CHECK(permute_pairs(mesh, sharding({{"a", "b"}, {}}), sharding({{"a", "b"}, {}})) ==
        std::vector<P>{{0, 0}, {1, 1}, {2, 2}, {3, 3}});
}
