// The plan report opened in a real browser: headless Chromium parses the HTML and dumps the DOM
// it built; the DOM must hold one table row and one timeline span per op, both SVG figures and
// every rectangle the file contains (a browser silently moves or drops misplaced markup, so
// counting in the DOM catches what a text check cannot). Without `chromium` on PATH the test
// says so loudly; with MESHPLAN_REQUIRE_CHROMIUM=1 in the environment that is a failure.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/planner/report.hpp"
#include "test_util.hpp"

using namespace meshplan;

namespace {

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

bool chromium_on_path() {
  return test::run_shell("command -v chromium").status == 0;
}

}  // namespace

TEST_CASE("the plan report renders in headless Chromium with one row and one span per op") {
  if (!chromium_on_path()) {
    const char* require = std::getenv("MESHPLAN_REQUIRE_CHROMIUM");
    bool required = require && std::string(require) == "1";
    MESSAGE(
        "*** chromium is NOT on PATH: the HTML report was NOT checked in a browser "
        "(install the Debian package 'chromium'; set MESHPLAN_REQUIRE_CHROMIUM=1 to make "
        "this a failure) ***");
    CHECK_MESSAGE(!required, "MESHPLAN_REQUIRE_CHROMIUM=1 but chromium is not on PATH");
    return;
  }
  auto g = planner::load_graph_file(test::source_path("examples/models/mlp.json"));
  REQUIRE(g);
  planner::PlannerOptions greedy;
  greedy.policy = "greedy";
  auto plan = planner::compile(*g, device::wormhole_b0(), greedy);
  REQUIRE(plan);
  auto dram =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE(dram);
  const fb::Plan* p = fb::GetSizePrefixedPlan(plan->bytes.data());
  planner::ReportPlan plans[] = {{p, "greedy"},
                                 {fb::GetSizePrefixedPlan(dram->bytes.data()), "dram"}};
  auto html = planner::render_report(plans);
  REQUIRE(html);

  test::TempDir dir;
  std::string file = dir.file("plan.html");
  std::ofstream(file, std::ios::binary) << *html;
  // A private profile folder: Chromium must not touch the user's, and runs must not share one.
  test::CommandOutput dom = test::run_shell(
      "timeout 120 chromium --headless --disable-gpu --no-sandbox "
      "--no-first-run --user-data-dir=" +
      dir.file("profile") + " --dump-dom file://" + file + " 2>/dev/null");
  REQUIRE_MESSAGE(dom.status == 0, "chromium failed: " << dom.text.substr(0, 2000));
  INFO("DOM (first 2000 characters): " << dom.text.substr(0, 2000));
  size_t ops = p->ops()->size();
  REQUIRE(ops > 0);
  CHECK(count(dom.text, "<tr class=\"op") == ops);
  CHECK(count(dom.text, "<rect class=\"span\"") == ops);
  CHECK(count(dom.text, "<rect class=\"cb\"") == ops);
  CHECK(count(dom.text, "<svg class=\"l1map\"") == 1);
  CHECK(count(dom.text, "<svg class=\"timeline\"") == 1);
  CHECK(count(dom.text, "<tr class=\"policy\"") == 2);
  // Every SVG shape of the file made it into the DOM, inside an <svg> (not foster-parented).
  for (const char* shape : {"<rect class=\"tensor\"", "<line class=\"spill\""})
    CHECK_MESSAGE(count(dom.text, shape) == count(*html, shape), shape);
  CHECK(count(*html, "<rect class=\"tensor\"") > 0);  // greedy keeps tensors in L1
  CHECK(dom.text.find("parsererror") == std::string::npos);
  CHECK(dom.text.find("</html>") != std::string::npos);
}
