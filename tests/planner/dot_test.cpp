// --emit=dot: the planned graph as Graphviz text is well-formed (balanced braces outside strings,
// terminated strings), has one node per op, declares every edge endpoint, and marks the moves
// the planner inserted.
#include "meshplan/planner/dot.hpp"

#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {

/// What a DOT text declares, as far as a small tokenizer sees it.
struct DotShape {
  std::string problem;  ///< Empty when well-formed.
  std::set<std::string> nodes;
  std::vector<std::pair<std::string, std::string>> edges;
};

/// Reads statements of the form `ID [attrs];`, `A -> B [attrs];` and `graph|node|edge [..];`
/// inside one `digraph "name" { ... }`. Strings may hold escaped quotes and braces.
DotShape parse_dot(const std::string& text) {
  DotShape d;
  // Pass 1: braces balance outside strings and every string ends.
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
      else if (c == '\n')
        return {"newline inside a string at " + std::to_string(i), {}, {}};
      continue;
    }
    if (c == '"') in_string = true;
    if (c == '{') ++depth;
    if (c == '}' && --depth < 0) return {"unbalanced } at " + std::to_string(i), {}, {}};
  }
  if (in_string) return {"unterminated string", {}, {}};
  if (depth != 0) return {"unbalanced braces", {}, {}};
  if (text.rfind("digraph \"", 0) != 0) return {"does not start with digraph", {}, {}};
  // Pass 2: one statement per line between the first '{' line and the final '}'.
  size_t at = text.find('\n') + 1;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    std::string line = text.substr(at, end - at);
    at = end == std::string::npos ? text.size() : end + 1;
    if (line == "}") continue;
    if (line.rfind("  ", 0) != 0 || line.back() != ';') {
      d.problem = "bad statement: " + line;
      return d;
    }
    line = line.substr(2);
    std::string head = line.substr(0, line.find(" ["));
    if (head == "graph" || head == "node" || head == "edge") continue;
    size_t arrow = head.find(" -> ");
    if (arrow == std::string::npos) {
      if (!d.nodes.insert(head).second) {
        d.problem = "node declared twice: " + head;
        return d;
      }
    } else {
      d.edges.emplace_back(head.substr(0, arrow), head.substr(arrow + 4));
    }
  }
  return d;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("--emit=dot: one node per op, every edge endpoint declared, moves marked") {
  size_t moves_seen = 0;
  for (const char* model : {"examples/models/mlp.json", "examples/models/transformer_block.json",
                            "examples/models/small_cnn.json"})
    for (const char* policy : {"dram", "greedy", "df-sharding"}) {
      CAPTURE(model);
      CAPTURE(policy);
      auto g = planner::load_graph_file(test::source_path(model));
      REQUIRE(g);
      planner::PlannerOptions options;
      options.policy = policy;
      auto plan = planner::compile(*g, device::wormhole_b0(), options);
      REQUIRE(plan);
      const fb::Plan* p = fb::GetSizePrefixedPlan(plan->bytes.data());
      std::string dot = planner::render_dot(*p, g->name);
      DotShape d = parse_dot(dot);
      REQUIRE(d.problem == "");
      size_t op_nodes = 0, reshards = 0, spills = 0;
      for (const std::string& n : d.nodes) op_nodes += n.rfind("op", 0) == 0;
      CHECK(op_nodes == p->ops()->size());
      for (uint32_t i = 0; i < p->ops()->size(); ++i) {
        CHECK(d.nodes.count("op" + std::to_string(i)) == 1);
        reshards += p->ops()->Get(i)->origin() == fb::OpOrigin::reshard;
        spills += p->ops()->Get(i)->origin() == fb::OpOrigin::spill;
      }
      for (const auto& [from, to] : d.edges) {
        CHECK_MESSAGE(d.nodes.count(from) == 1, "undeclared edge source " << from);
        CHECK_MESSAGE(d.nodes.count(to) == 1, "undeclared edge target " << to);
      }
      // One edge per operand use and per output.
      size_t uses = p->outputs()->size();
      for (const fb::OpPlan* op : *p->ops()) uses += op->operands()->size();
      CHECK(d.edges.size() == uses);
      CHECK(count(dot, "[reshard] ") == reshards);
      CHECK(count(dot, "[spill] ") == spills);
      moves_seen += reshards + spills;
      CHECK(dot == planner::render_dot(*p, g->name));  // deterministic
    }
  CHECK(moves_seen > 0);  // the marks were exercised, not only counted as zero
}

TEST_CASE("dot strings are escaped and the checker rejects broken text") {
  CHECK(planner::dot_escape("a\"b\\c\nd") == "a\\\"b\\\\c\\nd");
  CHECK(parse_dot("digraph \"g\" {\n  a [label=\"x\"];\n  a -> b;\n}\n").problem == "");
  CHECK(parse_dot("digraph \"g\" {\n  a [label=\"x}\"];\n}\n").problem == "");
  CHECK(parse_dot("digraph \"g\" {\n  a [label=\"x];\n}\n").problem != "");
  CHECK(parse_dot("digraph \"g\" {\n  a [label=\"x\"];\n").problem != "");
  CHECK(parse_dot("digraph \"g\" {\n  a;\n  a;\n}\n").problem != "");
}
