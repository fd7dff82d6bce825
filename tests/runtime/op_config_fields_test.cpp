// device::OpConfig's field list (op_config_fields.def) and schemas/plan.fbs's OpConfig table
// cannot drift apart: the plan rows of the list are the table's fields, in the table's order,
// with its types, and a plan that stores no field reads back as OpConfig's defaults.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "meshplan/runtime/executable.hpp"

using namespace meshplan;

namespace {

struct Field {
  std::string name, type;
  bool operator==(const Field&) const = default;
};

std::ostream& operator<<(std::ostream& out, const Field& f) {
  return out << f.name << ": " << f.type;
}

/// The plan rows of op_config_fields.def.
std::vector<Field> listed_fields() {
  std::vector<Field> out;
#define MESHPLAN_CONFIG_SCALAR(name, type, init, fbs) out.push_back({#name, #fbs});
#define MESHPLAN_CONFIG_LIST(name, type, count, sets_count, fbs) out.push_back({#name, #fbs});
#define MESHPLAN_CONFIG_FIXED(name, type, n, fbs, ...) out.push_back({#name, #fbs});
#define MESHPLAN_CONFIG_VECTOR(name, type, max, multiple, fbs) out.push_back({#name, #fbs});
#define MESHPLAN_CONFIG_BOUND(name, type, init, fbs) out.push_back({#name, #fbs});
#define MESHPLAN_CONFIG_FLAGS(name, lower, upper, fbs) out.push_back({#name, #fbs});
#include "meshplan/device/op_config_fields.def"
  return out;
}

std::string trim(std::string s) {
  size_t a = s.find_first_not_of(" \t"), b = s.find_last_not_of(" \t");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

/// The fields of `table OpConfig` in the schema text: "name: type [= default];" lines.
std::vector<Field> schema_fields(const std::string& fbs) {
  std::vector<Field> out;
  std::istringstream in(fbs);
  std::string line;
  bool inside = false;
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (!inside) {
      inside = t == "table OpConfig {";
      continue;
    }
    if (t == "}") break;
    if (t.empty() || t.starts_with("//")) continue;
    size_t colon = t.find(':'), end = t.find_first_of("=;");
    REQUIRE_MESSAGE(colon != std::string::npos, "unexpected line in OpConfig: ", t);
    REQUIRE_MESSAGE(end != std::string::npos, "unexpected line in OpConfig: ", t);
    out.push_back({trim(t.substr(0, colon)), trim(t.substr(colon + 1, end - colon - 1))});
  }
  return out;
}

}  // namespace

TEST_CASE("op_config_fields.def lists plan.fbs's OpConfig fields in order, with their types") {
  std::ifstream file(MESHPLAN_SOURCE_DIR "/schemas/plan.fbs");
  REQUIRE(file);
  std::stringstream text;
  text << file.rdbuf();
  std::vector<Field> schema = schema_fields(text.str());
  std::vector<Field> listed = listed_fields();
  REQUIRE(schema.size() > 40);  // The parse found the table.
  CHECK(schema.size() == listed.size());
  for (size_t i = 0; i < std::min(schema.size(), listed.size()); ++i) {
    INFO("field ", i);
    CHECK(listed[i] == schema[i]);
  }
}

TEST_CASE("a plan OpConfig that stores no field reads as every listed default") {
  flatbuffers::FlatBufferBuilder b;
  auto config = fb::OpConfigBuilder(b).Finish();
  auto name = b.CreateString("op");
  auto ids = b.CreateVector(std::vector<uint32_t>{0});
  b.Finish(fb::CreateOpPlan(b, fb::OpKind::relu, name, ids, ids, config));
  device::OpConfig c =
      runtime::op_config_of(*flatbuffers::GetRoot<fb::OpPlan>(b.GetBufferPointer()));
  const device::OpConfig d{};
#define MESHPLAN_CONFIG_SCALAR(name, type, init, fbs) CHECK_MESSAGE(c.name == d.name, #name);
#define MESHPLAN_CONFIG_LOCAL(name, type, init) CHECK_MESSAGE(c.name == d.name, #name);
#define MESHPLAN_CONFIG_LIST(name, type, count, sets_count, fbs) \
  CHECK_MESSAGE(std::equal(c.name, c.name + device::kMaxRank, d.name), #name);
#define MESHPLAN_CONFIG_FIXED(name, type, n, fbs, ...) \
  CHECK_MESSAGE(std::equal(c.name, c.name + (n), d.name), #name);
#define MESHPLAN_CONFIG_VECTOR(name, type, max, multiple, fbs) CHECK_MESSAGE(c.name.empty(), #name);
#define MESHPLAN_CONFIG_BOUND(name, type, init, fbs) CHECK_MESSAGE(c.name == d.name, #name);
#include "meshplan/device/op_config_fields.def"
}
