// graph.json text builders and a plan-run-check helper shared by the op-family tests
// (ops_graph_test, ops_select_graph_test).
#pragma once

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"

namespace meshplan::test::gjson {

inline std::string ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + "]";
}

inline std::string arg(const std::string& name, const std::vector<int64_t>& shape,
                       const std::string& kind = "input", const std::string& dtype = "bf16",
                       const std::vector<float>& data = {}) {
  std::ostringstream s;
  s << R"({"value": {"name": ")" << name << R"(", "shape": )" << ints(shape) << R"(, "dtype": ")"
    << dtype << R"("}, "kind": ")" << kind << '"';
  if (!data.empty()) {
    s << R"(, "data": [)";
    for (size_t i = 0; i < data.size(); ++i) s << (i ? "," : "") << data[i];
    s << "]";
  }
  s << "}";
  return s.str();
}

/// One op; `attrs` is the JSON list body, e.g. {"name": "perm", "ints": [1, 0]}.
inline std::string op(const std::string& name, const std::string& kind,
                      const std::vector<std::string>& operands, const std::string& attrs = "") {
  std::string s = R"({"name": ")" + name + R"(", "kind": ")" + kind + R"(", "operands": [)";
  for (size_t i = 0; i < operands.size(); ++i) s += (i ? ", \"" : "\"") + operands[i] + "\"";
  s += R"(], "results": [{"name": ")" + name + R"(_out"}])";
  if (!attrs.empty()) s += R"(, "attributes": [)" + attrs + "]";
  return s + "}";
}

inline std::string graph(const std::string& name, const std::vector<std::string>& args,
                         const std::vector<std::string>& ops,
                         const std::vector<std::string>& outputs) {
  std::string s = R"({"name": ")" + name + R"(", "arguments": [)";
  for (size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
  s += R"(], "ops": [)";
  for (size_t i = 0; i < ops.size(); ++i) s += (i ? ", " : "") + ops[i];
  s += R"(], "outputs": [)";
  for (size_t i = 0; i < outputs.size(); ++i) s += (i ? ", \"" : "\"") + outputs[i] + "_out\"";
  return s + "]}";
}

/// Plans, verifies, runs on the emulator and on the reference; returns the check report.
inline runtime::CheckReport plan_and_run(const std::string& json, uint64_t seed = 1) {
  auto g = planner::import_graph_json(json, "test.json");
  REQUIRE_MESSAGE(g, g.error().message);
  auto plan =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE_MESSAGE(plan, plan.error().message);
  auto ref = runtime::verify_plan(plan->bytes, "test");
  REQUIRE_MESSAGE(ref, ref.error().message);
  auto dev = device::EmulatedDevice::create(device::wormhole_b0());
  REQUIRE(dev);
  auto exe = runtime::Executable::bind(*ref, **dev);
  REQUIRE(exe);
  auto inputs = runtime::random_inputs(*ref, seed);
  auto views = runtime::views_of(inputs);
  auto run = (*exe)->run(views);
  REQUIRE_MESSAGE(run, run.error().message);
  CHECK(run->device_ns > 0);
  // Every planned op ran: the graph's, plus the reshapes flatten_spatial puts at conv regions'
  // edges.
  CHECK(run->ops.size() == ref->plan().ops()->size());
  CHECK(run->ops.size() >= g->ops.size());
  auto want = runtime::run_reference(*ref, views);
  REQUIRE_MESSAGE(want, want.error().message);
  runtime::CheckReport report =
      runtime::check_outputs(run->outputs, *want, runtime::kDefaultTolerance);
  CAPTURE(report.relative_error);
  CHECK(report.ok);
  // Outputs are not all zero (a kernel that wrote nothing would still "match" a zero reference).
  CHECK(report.scale > 0.0);
  return report;
}

inline std::string import_error(const std::string& json) {
  auto g = planner::import_graph_json(json, "bad.json");
  return g ? std::string() : g.error().message;
}

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace meshplan::test::gjson
