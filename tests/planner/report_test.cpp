// The HTML plan report: well-formed markup, one row per op, the L1 map and the comparison.
#include "meshplan/planner/report.hpp"

#include <doctest/doctest.h>

#include <regex>

#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner;

namespace {

/// A minimal XML well-formedness check: every start tag is closed in order (void elements must
/// be self-closed), attributes are quoted, no bare '<' or '&' in text. Returns "" or the problem.
std::string check_well_formed(const std::string& doc) {
  std::vector<std::string> stack;
  size_t i = doc.find("<html");
  if (i == std::string::npos) return "no <html>";
  static const std::regex kEntity("^&(amp|lt|gt|quot|#39);");
  while (i < doc.size()) {
    char c = doc[i];
    if (c == '&') {
      std::smatch m;
      std::string rest = doc.substr(i, 8);
      if (!std::regex_search(rest, m, kEntity)) return "bare & at " + std::to_string(i);
      ++i;
      continue;
    }
    if (c != '<') {
      ++i;
      continue;
    }
    size_t end = doc.find('>', i);
    if (end == std::string::npos) return "unterminated tag at " + std::to_string(i);
    std::string tag = doc.substr(i + 1, end - i - 1);
    i = end + 1;
    if (tag.empty()) return "empty tag";
    if (tag[0] == '/') {
      std::string name = tag.substr(1);
      if (stack.empty() || stack.back() != name) return "mismatched </" + name + ">";
      stack.pop_back();
      continue;
    }
    bool self_closed = tag.back() == '/';
    std::string name = tag.substr(0, tag.find_first_of(" /"));
    // Attributes must be name="value".
    static const std::regex kAttrs(R"(^[a-zA-Z0-9:-]+(\s+[a-zA-Z:-]+="[^"<]*")*\s*/?$)");
    if (!std::regex_match(tag, kAttrs)) return "bad attributes in <" + tag + ">";
    if (!self_closed) stack.push_back(name);
  }
  return stack.empty() ? "" : "unclosed <" + stack.back() + ">";
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("the report is well-formed and has one row per op") {
  auto g = load_graph_file(test::source_path("examples/models/mlp.json"));
  REQUIRE(g);
  auto plan = compile(*g, device::wormhole_b0(), PlannerOptions::with_policy("dram"));
  REQUIRE(plan);
  const fb::Plan* p = fb::GetSizePrefixedPlan(plan->bytes.data());
  ReportPlan one[] = {{p, "dram"}};
  auto html = render_report(one);
  REQUIRE(html);
  CHECK(check_well_formed(*html) == "");
  CHECK(count(*html, "<tr class=\"op") == p->ops()->size());
  CHECK(count(*html, "<rect class=\"span\"") == p->ops()->size());
  CHECK(count(*html, "<rect class=\"cb\"") == p->ops()->size());
  CHECK(html->find("<svg class=\"l1map\"") != std::string::npos);
  CHECK(html->find("http://") ==
        html->find("http://www.w3.org/2000/svg"));  // no external resources
  CHECK(html->find("Policy comparison") == std::string::npos);
  ReportPlan two[] = {{p, "dram"}, {p, "dram again"}};
  auto compared = render_report(two);
  REQUIRE(compared);
  CHECK(check_well_formed(*compared) == "");
  CHECK(count(*compared, "<tr class=\"policy\"") == 2);
}

TEST_CASE("the well-formedness check itself catches broken markup") {
  CHECK(check_well_formed("<html><body><p>a</p></body></html>") == "");
  CHECK(check_well_formed("<html><body><p>a</body></html>") != "");
  CHECK(check_well_formed("<html><body>a & b</body></html>") != "");
  CHECK(check_well_formed("<html><body x=1></body></html>") != "");
  CHECK(html_escape("<a href=\"x\">&'") == "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
}
