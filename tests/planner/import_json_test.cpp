// graph.json import: round trips and every validation error, each naming what and where.
#include "meshplan/planner/import_json.hpp"

#include <doctest/doctest.h>

#include "test_util.hpp"

using namespace meshplan;
using namespace meshplan::planner;

namespace {

constexpr const char* kSmall = R"({
  name: "small",
  arguments: [
    { value: { name: "x", shape: [4, 8], dtype: "bf16" } },
    { value: { name: "w", shape: [8, 16], dtype: "bf16" }, kind: parameter },
    { value: { name: "c", shape: [1, 16], dtype: "bf16" }, kind: constant,
      data: [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15] }
  ],
  ops: [
    { name: "mm", kind: "matmul", operands: ["x", "w"], results: [{ name: "h" }],
      attributes: [{ name: "activation", s: "relu" }] },
    { name: "bias", kind: "add", operands: ["h", "c"], results: [{ name: "y", shape: [4, 16] }] }
  ],
  outputs: ["y"]
})";

Error import_error(const std::string& json) {
  auto g = import_graph_json(json, "bad.json");
  REQUIRE_FALSE(g);
  return g.error();
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("a valid graph imports with inferred shapes") {
  auto g = import_graph_json(kSmall, "small.json");
  REQUIRE(g);
  CHECK(g->name == "small");
  CHECK(g->arguments.size() == 3);
  CHECK(g->ops.size() == 2);
  CHECK(g->values[g->ops[0].results[0]].shape == std::vector<int64_t>{4, 16});
  CHECK(g->values[2].kind == ArgKind::constant);
  CHECK(g->values[2].data.size() == 16);
  auto config = op_config(g->ops[0]);
  REQUIRE(config);
  CHECK(config->activation == device::Activation::relu);
}

TEST_CASE("arguments' dtypes are the file's; results' are inferred when left out") {
  // x is f32 and i i32 as written; y = relu(x) has no dtype in the file and takes x's (f32).
  std::string json = R"({ arguments: [{ value: { name: "x", shape: [2, 2], dtype: "f32" } },
      { value: { name: "i", shape: [2, 2], dtype: "i32" } }],
    ops: [ { name: "r", kind: "relu", operands: ["x"], results: [{ name: "y" }] } ],
    outputs: ["y", "i"] })";
  auto g = import_graph_json(json, "dtypes.json");
  REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
  CHECK(g->values[g->arguments[0]].dtype == DType::f32);
  CHECK(g->values[g->arguments[1]].dtype == DType::i32);
  CHECK(g->values[g->ops[0].results[0]].dtype == DType::f32);
  // Exported graph.json names every value's dtype, results included.
  auto text = export_graph_json(*g);
  REQUIRE(text);
  size_t count = 0;
  for (size_t at = text->find("dtype"); at != std::string::npos; at = text->find("dtype", at + 1))
    ++count;
  CHECK(count == 3);
}

TEST_CASE("export then import gives the same graph") {
  auto g = import_graph_json(kSmall, "small.json");
  REQUIRE(g);
  auto json = export_graph_json(*g);
  REQUIRE(json);
  auto again = import_graph_json(*json, "roundtrip.json");
  REQUIRE(again);
  CHECK(again->print() == g->print());
  auto json2 = export_graph_json(*again);
  REQUIRE(json2);
  CHECK(*json2 == *json);
}

TEST_CASE("the example MLP imports") {
  auto g = load_graph_file(test::source_path("examples/models/mlp.json"));
  REQUIRE(g);
  CHECK(g->ops.size() == 8);
  CHECK(g->print().find("fc1") != std::string::npos);
}

TEST_CASE("ops may appear in any order; the importer sorts them") {
  std::string json = R"({ arguments: [{ value: { name: "x", shape: [2, 2], dtype: "bf16" } }],
    ops: [ { name: "second", kind: "relu", operands: ["a"], results: [{ name: "b" }] },
           { name: "first", kind: "relu", operands: ["x"], results: [{ name: "a" }] } ],
    outputs: ["b"] })";
  auto g = import_graph_json(json);
  REQUIRE(g);
  CHECK(g->ops[0].name == "first");
  CHECK(g->ops[1].name == "second");
}

TEST_CASE("validation errors name the op and values") {
  std::string base = kSmall;
  SUBCASE("malformed JSON reports the line") {
    Error e = import_error(replace(base, "outputs: [\"y\"]", "outputs: [\"y\""));
    CHECK(e.code == ErrorCode::invalid_argument);
    CHECK(e.message.find("bad.json:15:1: expecting: , instead got: }") != std::string::npos);
  }
  SUBCASE("unknown field") {
    Error e = import_error(replace(base, "name: \"small\"", "name: \"small\", colour: 3"));
    CHECK(e.message.find("colour") != std::string::npos);
  }
  SUBCASE("missing required field") {
    Error e = import_error(replace(base, "kind: \"add\", ", ""));
    CHECK(e.message.find("kind") != std::string::npos);
  }
  SUBCASE("unknown op") {
    Error e = import_error(replace(base, "kind: \"add\"", "kind: \"frobnicate\""));
    CHECK(e.message.find("op 'bias'") != std::string::npos);
    CHECK(e.message.find("unknown op 'frobnicate'") != std::string::npos);
    CHECK(e.message.find("matmul") != std::string::npos);  // lists the known ops
  }
  SUBCASE("wrong operand count") {
    Error e = import_error(replace(base, R"(operands: ["h", "c"])", R"(operands: ["h"])"));
    CHECK(e.message.find("op 'bias' (add) takes 2 operand(s), got 1") != std::string::npos);
  }
  SUBCASE("shape mismatch") {
    Error e = import_error(replace(base, "shape: [8, 16]", "shape: [9, 16]"));
    CHECK(e.message.find("op 'mm' (matmul): shape mismatch") != std::string::npos);
    CHECK(e.message.find("'x' [4x8]") != std::string::npos);
    CHECK(e.message.find("'w' [9x16]") != std::string::npos);
  }
  SUBCASE("declared result shape differs") {
    Error e = import_error(replace(base, "shape: [4, 16]", "shape: [4, 17]"));
    CHECK(e.message.find("result 'y' is declared [4x17] but the operands give [4x16]") !=
          std::string::npos);
  }
  SUBCASE("dtype mismatch") {
    Error e = import_error(replace(base, R"(name: "w", shape: [8, 16], dtype: "bf16" })",
                                   R"(name: "w", shape: [8, 16], dtype: f32 })"));
    CHECK(e.message.find("op 'mm' (matmul): dtype mismatch") != std::string::npos);
    CHECK(e.message.find("'w' is f32") != std::string::npos);
  }
  SUBCASE("undefined value") {
    Error e = import_error(replace(base, R"(operands: ["h", "c"])", R"(operands: ["h", "nope"])"));
    CHECK(e.message.find("op 'bias': operand 'nope' is not defined") != std::string::npos);
  }
  SUBCASE("undefined output") {
    Error e = import_error(replace(base, R"(outputs: ["y"])", R"(outputs: ["z"])"));
    CHECK(e.message.find("output 'z' is not defined") != std::string::npos);
  }
  SUBCASE("duplicate value name") {
    Error e =
        import_error(replace(base, R"(results: [{ name: "h" }])", R"(results: [{ name: "x" }])"));
    CHECK(e.message.find("duplicate value name 'x'") != std::string::npos);
  }
  SUBCASE("duplicate op name") {
    Error e = import_error(replace(base, R"(name: "bias")", R"(name: "mm")"));
    CHECK(e.message.find("duplicate op name 'mm'") != std::string::npos);
  }
  SUBCASE("cycle") {
    std::string json = R"({ arguments: [{ value: { name: "x", shape: [2, 2], dtype: "bf16" } }],
      ops: [ { name: "p", kind: "add", operands: ["x", "b"], results: [{ name: "a" }] },
             { name: "q", kind: "relu", operands: ["a"], results: [{ name: "b" }] } ],
      outputs: ["b"] })";
    Error e = import_error(json);
    CHECK(e.message.find("cycle through ops 'p', 'q'") != std::string::npos);
  }
  SUBCASE("unknown attribute") {
    Error e =
        import_error(replace(base, R"(name: "activation", s: "relu")", R"(name: "fuse", b: true)"));
    CHECK(e.message.find("op 'mm' (matmul): unknown attribute 'fuse'") != std::string::npos);
  }
  SUBCASE("ill-typed attribute") {
    Error e = import_error(
        replace(base, R"(name: "activation", s: "relu")", R"(name: "transpose_a", i: 1)"));
    CHECK(e.message.find("'transpose_a' must be a bool") != std::string::npos);
  }
  SUBCASE("attribute with two values") {
    Error e = import_error(replace(base, R"(name: "activation", s: "relu")",
                                   R"(name: "activation", s: "relu", i: 2)"));
    CHECK(e.message.find("exactly one") != std::string::npos);
  }
  SUBCASE("constant with the wrong amount of data") {
    Error e = import_error(replace(base, "data: [0,1,2,3,", "data: [1,2,3,"));
    CHECK(e.message.find("constant 'c' has 15 values") != std::string::npos);
  }
  SUBCASE("non-positive dimension") {
    Error e = import_error(replace(base, "shape: [4, 8]", "shape: [4, 0]"));
    CHECK(e.message.find("argument 'x'") != std::string::npos);
  }
  SUBCASE("no outputs") {
    Error e = import_error(replace(base, R"(outputs: ["y"])", "outputs: []"));
    CHECK(e.message.find("no outputs") != std::string::npos);
  }
  SUBCASE("an argument without a dtype") {
    Error e = import_error(replace(base, R"(name: "w", shape: [8, 16], dtype: "bf16" })",
                                   R"(name: "w", shape: [8, 16] })"));
    CHECK(e.message.find("bad.json: argument 'w' has no dtype") != std::string::npos);
  }
  SUBCASE("a missing file") {
    auto g = load_graph_file("/nonexistent/model.json");
    REQUIRE_FALSE(g);
    CHECK(g.error().code == ErrorCode::not_found);
    CHECK(g.error().message.find("/nonexistent/model.json") != std::string::npos);
  }
}

TEST_CASE("graph.json's common form and the forms only flatbuffers' parser reads import alike") {
  // kSmall is in the strict reader's form; each variant uses something that reader leaves to
  // flatbuffers' parser (a comment, an escape), or another spelling both take (quoted keys,
  // trailing commas, an enum as a bare name, a bool attribute).
  auto plain = import_graph_json(kSmall, "small.json");
  REQUIRE(plain);
  std::string base = kSmall;
  std::vector<std::string> variants = {
      "// a comment\n" + base,
      replace(base, R"(name: "small")", R"(name: "sm\u0061ll")"),
      replace(replace(base, R"(name: "small")", R"("name": "small")"), "ops: [", R"("ops": [)"),
      replace(base, R"(outputs: ["y"])", R"(outputs: ["y",],)"),
      replace(base, R"(dtype: "bf16" } },)", R"(dtype: bf16 }, },)"),
  };
  for (const std::string& text : variants) {
    CAPTURE(text);
    auto g = import_graph_json(text, "variant.json");
    REQUIRE_MESSAGE(g, (g ? std::string() : g.error().message));
    CHECK(g->print() == plain->print());
  }
  auto flag = import_graph_json(
      replace(
          base, R"(attributes: [{ name: "activation", s: "relu" }])",
          R"(attributes: [{ name: "activation", s: "relu" }, { name: "transpose_b", b: false }])"),
      "flag.json");
  REQUIRE_MESSAGE(flag, (flag ? std::string() : flag.error().message));
  auto config = op_config(flag->ops[0]);
  REQUIRE(config);
  CHECK_FALSE(config->transpose_b);
  CHECK(config->activation == device::Activation::relu);
}

TEST_CASE("malformed graph.json in the common form gets a located error") {
  std::string base = kSmall;
  // Line 4 of kSmall holds x's shape; line 6 c's; line 12 the bias op.
  CHECK(
      import_error(replace(base, "shape: [4, 8]", "shape: [4,, 8]")).message.find("bad.json:4:") !=
      std::string::npos);
  CHECK(import_error(replace(base, "shape: [4, 8]", "shape: [99999999999999999999, 8]"))
            .message.find("bad.json:4:") != std::string::npos);
  CHECK(
      import_error(replace(base, "shape: [4, 8]", "shape: [4.5, 8]")).message.find("bad.json:4:") !=
      std::string::npos);
  CHECK(
      import_error(replace(base, "kind: constant", "kind: constnt")).message.find("bad.json:6:") !=
      std::string::npos);
  Error e = import_error(replace(base, "kind: \"add\"", "kind: add"));
  CHECK_MESSAGE(e.message.find("bad.json:12:") != std::string::npos, e.message);
  e = import_error(replace(base, "name: \"small\"", "name: \"small\", name: \"again\""));
  CHECK(e.message.find("bad.json:") != std::string::npos);
  e = import_error(base + " trailing");
  CHECK(e.message.find("bad.json:") != std::string::npos);
}
