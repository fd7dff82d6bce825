// Every op family end to end through the planner under the `dram` policy: graph.json ->
// planner::compile -> runtime::verify_plan on the bytes -> Executable on an EmulatedDevice ->
// run_reference -> check_outputs. Also: attributes reach the plan intact, and bad attributes,
// operand counts and shapes are clear errors naming the op.
#include <doctest/doctest.h>

#include <sstream>

#include "meshplan/device/emulator.hpp"
#include "meshplan/planner/graph_builder.hpp"
#include "meshplan/planner/import_json.hpp"
#include "meshplan/planner/planner.hpp"
#include "meshplan/runtime/check.hpp"
#include "meshplan/runtime/executable.hpp"
#include "planner/graph_json_util.hpp"

using namespace meshplan;
using namespace meshplan::test::gjson;

namespace {

const std::string kRelu = R"({"name": "activation", "s": "relu"})";

}  // namespace

TEST_CASE("elementwise family plans and runs end to end") {
  std::string json = graph(
      "eltwise",
      {arg("x", {45, 70}), arg("y", {70}), arg("z", {45, 1}),
       arg("one", {1}, "constant", "bf16", {1.5f}), arg("w", {70, 33}, "parameter"),
       arg("b", {33}, "parameter")},
      {op("s", "subtract", {"x", "y"}), op("m", "multiply", {"s_out", "z"}), op("a", "abs", {"y"}),
       op("e", "add", {"a_out", "one"}), op("d", "divide", {"m_out", "e_out"}),
       op("mx", "maximum", {"d_out", "x"}),
       op("mn", "minimum", {"mx_out", "y"}, R"({"name": "activation", "s": "tanh"})"),
       op("g", "gelu", {"mn_out"}), op("sg", "sigmoid", {"g_out"}), op("t", "tanh", {"sg_out"}),
       op("ex", "exp", {"t_out"}), op("l", "log", {"ex_out"}), op("sq", "sqrt", {"ex_out"}),
       op("rs", "rsqrt", {"ex_out"}), op("rc", "reciprocal", {"ex_out"}),
       op("n", "neg", {"rc_out"}), op("si", "silu", {"n_out"}), op("r", "relu", {"si_out"}),
       op("lin", "linear", {"mn_out", "w", "b"}, R"({"name": "activation", "s": "gelu"})")},
      {"l", "sq", "rs", "r", "si", "lin"});
  plan_and_run(json);
}

TEST_CASE("reduction and normalisation family plans and runs end to end") {
  std::string json = graph(
      "norms", {arg("x", {2, 45, 70}), arg("w", {70}, "parameter"), arg("b", {1, 70}, "parameter")},
      {op("ln", "layer_norm", {"x", "w", "b"}, R"({"name": "epsilon", "f": 0.001})"),
       op("rn", "rms_norm", {"x", "w"}), op("ln0", "layer_norm", {"x"}),
       op("sm", "softmax", {"ln_out"}, R"({"name": "dim", "i": -1})"),
       op("rsum", "reduce_sum", {"sm_out"},
          R"({"name": "dims", "ints": [-1]}, {"name": "keepdim", "b": true})"),
       op("rmean", "reduce_mean", {"rn_out"}, R"({"name": "dims", "ints": [0, 2]})"),
       op("rmax", "reduce_max", {"x"}, R"({"name": "dims", "ints": [1]})"),
       op("rall", "reduce_sum", {"ln0_out"}), op("sum2", "add", {"sm_out", "rsum_out"})},
      {"ln", "rn", "sm", "rsum", "rmean", "rmax", "sum2"});
  plan_and_run(json);
}

TEST_CASE("data movement family plans and runs end to end") {
  std::vector<float> ids;
  for (int i = 0; i < 15; ++i) ids.push_back(static_cast<float>((i * 11) % 50));
  std::string json =
      graph("shapes",
            {arg("x", {2, 45, 70}), arg("y", {70, 10}), arg("ids", {3, 5}, "constant", "i32", ids),
             arg("table", {50, 16}, "parameter"), arg("f", {33, 40}, "input", "f32")},
            {op("rs", "reshape", {"x"}, R"({"name": "shape", "ints": [90, -1]})"),
             op("pt", "permute", {"rs_out"}, R"({"name": "perm", "ints": [1, 0]})"),
             op("sl", "slice", {"pt_out"},
                R"({"name": "begins", "ints": [0, 5]}, {"name": "ends", "ints": [70, 80]},)"
                R"( {"name": "steps", "ints": [1, 2]})"),
             op("cc", "concat", {"sl_out", "y", "sl_out"}, R"({"name": "axis", "i": 1})"),
             op("tc", "typecast", {"cc_out"}, R"({"name": "dtype", "s": "f32"})"),
             op("emb", "embedding", {"ids", "table"}),
             op("fb", "typecast", {"f"}, R"({"name": "dtype", "s": "bf16"})")},
            {"tc", "emb", "fb"});
  plan_and_run(json);
}

TEST_CASE("conv family plans and runs end to end") {
  std::string json = graph(
      "cnn",
      {arg("x", {1, 12, 11, 8}), arg("w", {16, 3, 3, 8}, "parameter"), arg("b", {16}, "parameter"),
       arg("dw", {16, 3, 3, 1}, "parameter"), arg("w2", {16, 10}, "parameter"),
       arg("b2", {10}, "parameter")},
      {op("conv", "conv2d", {"x", "w", "b"}, R"({"name": "padding", "ints": [1, 1]}, )" + kRelu),
       op("dconv", "conv2d", {"conv_out", "dw"},
          R"({"name": "groups", "i": 16}, {"name": "padding", "ints": [1, 1]}, {"name": "dilation", "ints": [1, 1]})"),
       op("mp", "max_pool2d", {"dconv_out"},
          R"({"name": "kernel", "ints": [2, 2]}, {"name": "stride", "ints": [2, 2]})"),
       op("ap", "avg_pool2d", {"mp_out"},
          R"({"name": "kernel", "ints": [3, 3]}, {"name": "padding", "ints": [1, 1]})"),
       op("gp", "global_avg_pool2d", {"ap_out"}),
       op("flat", "reshape", {"gp_out"}, R"({"name": "shape", "ints": [1, 16]})"),
       op("fc", "linear", {"flat_out", "w2", "b2"})},
      {"fc", "mp"});
  plan_and_run(json);
}

TEST_CASE("attributes reach the plan intact") {
  std::string json =
      graph("attrs", {arg("x", {2, 45, 70}), arg("w", {70}, "parameter")},
            {op("sl", "slice", {"x"},
                R"({"name": "begins", "ints": [1, -40]}, {"name": "ends", "ints": [2, 44]})"),
             op("pt", "permute", {"x"}, R"({"name": "perm", "ints": [2, 0, 1]})"),
             op("r", "reduce_max", {"x"},
                R"({"name": "dims", "ints": [0, -1]}, {"name": "keepdim", "b": true})"),
             op("n", "rms_norm", {"x", "w"}, R"({"name": "epsilon", "f": 0.25})"),
             op("t", "typecast", {"x"}, R"({"name": "dtype", "s": "i32"})")},
            {"sl", "pt", "r", "n", "t"});
  auto g = planner::import_graph_json(json, "attrs.json");
  REQUIRE_MESSAGE(g, g.error().message);
  auto plan =
      planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("dram"));
  REQUIRE(plan);
  auto ref = runtime::verify_plan(plan->bytes, "attrs");
  REQUIRE(ref);
  for (const fb::OpPlan* fop : *ref->plan().ops()) {
    std::string name = fop->name()->str();
    CAPTURE(name);
    const planner::Op* gop = nullptr;
    for (const planner::Op& o : g->ops)
      if (o.name == name) gop = &o;
    REQUIRE(gop);
    device::OpConfig want = *planner::op_config(*gop);
    device::OpConfig got = runtime::op_config_of(*fop);
    CHECK(got.num_dims == want.num_dims);
    CHECK(std::equal(got.dims, got.dims + got.num_dims, want.dims));
    CHECK(got.keepdim == want.keepdim);
    CHECK(got.epsilon == want.epsilon);
    CHECK(got.dtype == want.dtype);
    CHECK(got.num_slice == want.num_slice);
    CHECK(std::equal(got.begins, got.begins + got.num_slice, want.begins));
    CHECK(std::equal(got.ends, got.ends + got.num_slice, want.ends));
    CHECK(std::equal(got.steps, got.steps + got.num_slice, want.steps));
  }
  // Spot values, so the comparison above cannot pass with both sides empty.
  CHECK(planner::op_config(g->ops[0])->begins[1] == -40);
  CHECK(planner::op_config(g->ops[3])->epsilon == 0.25f);
  // The typecast result is planned as i32.
  for (const fb::TensorPlan* t : *ref->plan().tensors())
    if (t->name()->str() == "t_out") CHECK(t->dtype() == fb::DType::i32);
  // Attributes enter the graph key: a different perm is a different plan.
  std::string other = json;
  other.replace(other.find("[2, 0, 1]"), 9, "[1, 2, 0]");
  auto g2 = planner::import_graph_json(other, "attrs2.json");
  REQUIRE(g2);
  CHECK(planner::graph_key(*g) != planner::graph_key(*g2));
}

TEST_CASE("bad attributes, operand counts and shapes are clear errors naming the op") {
  auto one = [](const std::string& kind, const std::string& attrs,
                std::vector<int64_t> shape = {4, 6}) {
    return graph("bad", {arg("x", shape)}, {op("the_op", kind, {"x"}, attrs)}, {"the_op"});
  };
  std::string e = import_error(one("permute", R"({"name": "perm2", "ints": [1, 0]})"));
  CHECK(contains(e, "op 'the_op' (permute)"));
  CHECK(contains(e, "unknown attribute 'perm2'"));
  e = import_error(one("permute", R"({"name": "perm", "i": 1})"));
  CHECK(contains(e, "attribute 'perm' must be a list of integers"));
  e = import_error(one("relu", R"({"name": "epsilon", "f": 0.1})"));
  CHECK(contains(e, "(relu): unknown attribute 'epsilon'"));
  e = import_error(one("reshape", ""));
  CHECK(contains(e, "(reshape): missing attribute 'shape'"));
  e = import_error(one("typecast", R"({"name": "dtype", "s": "f16"})"));
  CHECK(contains(e, "attribute 'dtype' must be one of"));
  e = import_error(one("max_pool2d", R"({"name": "kernel", "ints": [2, 2, 2]})", {1, 4, 4, 2}));
  CHECK(contains(e, "attribute 'kernel' has 3 entries, expected 2"));
  e = import_error(one("layer_norm", R"({"name": "epsilon", "s": "tiny"})"));
  CHECK(contains(e, "attribute 'epsilon' must be a number"));
  e = import_error(graph("act", {arg("x", {4, 6})},
                         {op("sum", "add", {"x", "x"}, R"({"name": "activation", "s": "swish"})")},
                         {"sum"}));
  CHECK(contains(e, "op 'sum' (add): attribute 'activation' must be one of"));
  e = import_error(
      one("slice", R"({"name": "begins", "ints": [0, 0]}, {"name": "ends", "ints": [2]})"));
  CHECK(contains(e, "another of begins/ends/steps has 2"));
  // Shape errors name the op and the operand shapes.
  e = import_error(one("reshape", R"({"name": "shape", "ints": [5, 5]})"));
  CHECK(contains(e, "op 'the_op' (reshape)"));
  CHECK(contains(e, "'x' [4x6]"));
  // Variadic concat: at most kMaxOperands operands.
  std::vector<std::string> nine(9, "x");
  e = import_error(graph("wide", {arg("x", {4, 6})}, {op("cat", "concat", nine)}, {"cat"}));
  CHECK(contains(e, "op 'cat' (concat) takes 1 to 8 operand(s), got 9"));
  // Embedding indices must be integers.
  e = import_error(graph("emb", {arg("ids", {3}), arg("t", {5, 4})},
                         {op("em", "embedding", {"ids", "t"})}, {"em"}));
  CHECK(contains(e, "op 'em' (embedding)"));
  CHECK(contains(e, "must be i32 or u32"));
}

TEST_CASE("GraphBuilder infers result dtypes of typecast and embedding eagerly") {
  planner::GraphBuilder b("builder");
  auto ids = b.constant("ids", {2, 3}, {0, 1, 2, 3, 4, 1}, device::DType::i32);
  auto table = b.parameter("table", {5, 8});
  auto e = b.op("embedding", {ids, table}, {}, "emb");
  auto t = b.op("typecast", {e}, {planner::attr("dtype", "f32")}, "cast");
  auto s = b.op("softmax", {t}, {}, "sm");
  b.output(s);
  REQUIRE_FALSE(b.error());
  auto g = b.build();
  REQUIRE_MESSAGE(g, g.error().message);
  CHECK(g->values[e].dtype == device::DType::bf16);
  CHECK(g->values[t].dtype == device::DType::f32);
  CHECK(g->values[s].dtype == device::DType::f32);
  planner::GraphBuilder bad("bad");
  auto f = bad.input("f", {2, 3});
  bad.op("embedding", {f, bad.parameter("tab", {5, 8})}, {}, "emb");
  REQUIRE(bad.error());
  CHECK(
      contains(bad.error()->message, "op 'emb' (embedding): embedding indices must be i32 or u32"));
}

TEST_CASE("an f32 pool is refused with tt-metal's reason, naming the op") {
  // tt-metal's pools read bf16 only; every layout the planner could give the op is refused.
  for (const char* kind : {"max_pool2d", "avg_pool2d"}) {
    CAPTURE(kind);
    auto g = planner::import_graph_json(
        graph("pool", {arg("x", {1, 8, 8, 32}, "input", "f32")},
              {op("mp", kind, {"x"},
                  R"({"name": "kernel", "ints": [2, 2]}, {"name": "stride", "ints": [2, 2]})")},
              {"mp"}),
        "pool.json");
    REQUIRE_MESSAGE(g, g.error().message);
    auto plan =
        planner::compile(*g, device::wormhole_b0(), planner::PlannerOptions::with_policy("greedy"));
    REQUIRE_FALSE(plan.has_value());
    CHECK(contains(plan.error().message, std::string("op 'mp' (") + kind +
                                             "): operand 'x' is f32; tt-metal's pool2d: \"Only "
                                             "BFLOAT16 supported for now\""));
  }
}
