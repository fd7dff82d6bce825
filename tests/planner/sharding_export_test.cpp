// Shardy's export passes one at a time (sdy_export_passes.md), each run alone on a module as
// written, as `--stop-after=sdy-NAME` runs them. Expected texts are worked out from the passes'
// documented effect, in Shardy's printed syntax.
#include <doctest/doctest.h>

#include "meshplan/planner/sharding_export.hpp"
#include "meshplan/planner/sharding_strategies.hpp"

using namespace meshplan;
using namespace meshplan::planner::shlo;

namespace {

constexpr const char* kModule =
    "sdy.mesh @mesh = <[\"x\"=4, \"y\"=2]>\n"
    "sdy.mesh @other = <[\"a\"=2, \"b\"=2]>\n"
    "func.func @main(%arg0: tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"x\", ?}, "
    "{?}], replicated={\"y\"}>}) -> (tensor<8x16xf32> {sdy.sharding = #sdy.sharding<@mesh, "
    "[{}p0, {\"x\"}p1]>}) {\n"
    "  %0 = stablehlo.negate %arg0 {sdy.sharding = #sdy.sharding_per_value<[<@mesh, [{\"x\", ?}, "
    "{\"y\", ?}]>]>, sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, "
    "j=16}>} : tensor<8x16xf32>\n"
    "  %1 = sdy.sharding_constraint %0 <@mesh, [{}, {\"x\", ?}]> : tensor<8x16xf32>\n"
    "  sdy.sharding_group %1 group_id=3 : tensor<8x16xf32>\n"
    "  return %1 : tensor<8x16xf32>\n"
    "}\n";

std::string exported(const std::string& text, std::string_view pass) {
  auto m = parse_module(text, "doc.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  auto p = export_pass_from_name(pass);
  REQUIRE(p.has_value());
  auto s = run_sdy_export_pass(*m, *p);
  REQUIRE_MESSAGE(s.has_value(), s.error().message);
  return print_module(*m);
}

/// `text` with its first occurrence of `from` replaced by `to` (which must occur).
std::string edit(std::string text, std::string_view from, std::string_view to) {
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE("export passes are named by Shardy's pass flags") {
  CHECK(export_pass_from_name("sdy-close-shardings") == ExportPass::close_shardings);
  CHECK(export_pass_from_name("sdy-reshard-to-collectives") == ExportPass::reshard_to_collectives);
  CHECK(export_pass_from_name("sdy-insert-explicit-reshards") ==
        ExportPass::insert_explicit_reshards);
  CHECK_FALSE(export_pass_from_name("close-shardings").has_value());
  CHECK_FALSE(export_pass_from_name("sdy-propagation").has_value());
}

TEST_CASE("sdy-close-shardings: open dims close, priorities and replicated axes leave") {
  // Only the shardings change: a closed dim already means "replicated on the rest", so the
  // explicit replicated={"y"} goes; the constraint's target closes too.
  std::string want = kModule;
  want = edit(want, "[{\"x\", ?}, {?}], replicated={\"y\"}>", "[{\"x\"}, {}]>");
  want = edit(want, "[{}p0, {\"x\"}p1]", "[{}, {\"x\"}]");
  want = edit(want, "[{\"x\", ?}, {\"y\", ?}]", "[{\"x\"}, {\"y\"}]");
  want = edit(want, "<@mesh, [{}, {\"x\", ?}]>", "<@mesh, [{}, {\"x\"}]>");
  CHECK(exported(kModule, "sdy-close-shardings") == want);
}

TEST_CASE("sdy-sharding-constraint-to-reshard keeps the constraint's sharding as written") {
  std::string want = edit(kModule, "sdy.sharding_constraint %0", "sdy.reshard %0");
  CHECK(exported(kModule, "sdy-sharding-constraint-to-reshard") == want);
}

TEST_CASE("sdy-remove-sharding-groups and sdy-drop-sharding-rules remove only their target") {
  CHECK(exported(kModule, "sdy-remove-sharding-groups") ==
        edit(kModule, "  sdy.sharding_group %1 group_id=3 : tensor<8x16xf32>\n", ""));
  CHECK(exported(kModule, "sdy-drop-sharding-rules") ==
        edit(kModule, ", sdy.sharding_rule = #sdy.op_sharding_rule<([i, j])->([i, j]) {i=8, j=16}>",
             ""));
}

TEST_CASE("sdy-reshard-to-collectives acts on every function, on the mesh its reshards name") {
  // @g's mesh is not the module's first: moving "a" from dim 0 to dim 1 is one all_to_all
  // (each device keeps its shard's bytes, split the other way), then un-sharding dim 1 is an
  // all_gather over "a". @main (no reshard) is printed unchanged.
  std::string text = std::string(kModule) +
                     "func.func @g(%arg0: tensor<8x8xf32> {sdy.sharding = "
                     "#sdy.sharding<@other, [{\"a\"}, {}]>}) -> tensor<8x8xf32> {\n"
                     "  %0 = sdy.reshard %arg0 <@other, [{}, {\"a\"}]> : tensor<8x8xf32>\n"
                     "  %1 = sdy.reshard %0 <@other, [{}, {}]> : tensor<8x8xf32>\n"
                     "  return %1 : tensor<8x8xf32>\n"
                     "}\n";
  std::string want =
      edit(text,
           "  %0 = sdy.reshard %arg0 <@other, [{}, {\"a\"}]> : tensor<8x8xf32>\n"
           "  %1 = sdy.reshard %0 <@other, [{}, {}]> : tensor<8x8xf32>\n",
           "  %0 = sdy.all_to_all [{\"a\"}: 0->1] %arg0 out_sharding=<@other, [{}, {\"a\"}]> : "
           "tensor<8x8xf32>\n"
           "  %1 = sdy.all_gather [{}, {\"a\"}] %0 out_sharding=<@other, [{}, {}]> : "
           "tensor<8x8xf32>\n");
  CHECK(exported(text, "sdy-reshard-to-collectives") == want);
}

TEST_CASE("sdy.all_to_all reads and prints in Shardy's syntax") {
  // Shardy's form names each parameter's axes, then source->target dims: `{"b"}: 0->2`.
  std::string text =
      "sdy.mesh @mesh = <[\"a\"=2, \"b\"=2, \"c\"=2]>\n"
      "func.func @main(%arg0: tensor<8x8x8xf32> {sdy.sharding = #sdy.sharding<@mesh, [{\"a\", "
      "\"b\"}, {\"c\"}, {}]>}) -> tensor<8x8x8xf32> {\n"
      "  %0 = sdy.all_to_all [{\"b\"}: 0->2, {\"c\"}: 1->0] %arg0 out_sharding=<@mesh, [{\"a\", "
      "\"c\"}, {}, {\"b\"}]> : tensor<8x8x8xf32>\n"
      "  return %0 : tensor<8x8x8xf32>\n"
      "}\n";
  auto m = parse_module(text, "doc.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  CHECK(print_module(*m) == text);
  const Op& a2a = m->ops[m->funcs[0].body.ops[0]];
  REQUIRE(a2a.all_to_all.size() == 2);
  CHECK(a2a.all_to_all[1].axes[0].name == "c");
  CHECK(a2a.all_to_all[1].src == 1);
  CHECK(a2a.all_to_all[1].tgt == 0);
}

TEST_CASE("the text-only stages take tensors beyond a chip's memory; planning refuses them") {
  // 24576 x 8192 x 16384 bf16 is 3.3e12 elements (6 TiB): Shardy's passes only rewrite the
  // module, so the sdy stages read it; lowering it to a plan is refused at the argument.
  const std::string text =
      "sdy.mesh @m = <[\"x\"=2, \"y\"=4]>\n"
      "func.func @f(%arg0: tensor<24576x8192x16384xbf16> {sdy.sharding = #sdy.sharding<@m, "
      "[{\"x\"}, {}, {}]>}) -> (tensor<24576x8192x16384xbf16> {sdy.sharding = "
      "#sdy.sharding<@m, [{\"x\"}, {}, {}]>}) {\n"
      "  %0 = sdy.reshard %arg0 <@m, [{}, {\"x\"}, {}]> : tensor<24576x8192x16384xbf16>\n"
      "  %1 = sdy.reshard %0 <@m, [{\"x\"}, {}, {}]> : tensor<24576x8192x16384xbf16>\n"
      "  return %1 : tensor<24576x8192x16384xbf16>\n"
      "}\n";
  auto device = parse_module(text, "big.mlir");
  REQUIRE_FALSE(device.has_value());
  CHECK(device.error().message ==
        "big.mlir:2:11: @f argument 0 tensor<24576x8192x16384xbf16>: shape [24576x8192x16384] "
        "holds 3298534883328 elements, more than the limit of 4294967296");
  auto m = parse_module_for_propagation(text, "big.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  REQUIRE(run_sdy_export_pass(*m, *export_pass_from_name("sdy-reshard-to-collectives")));
  // "x" moves from dim 0 to dim 1 and back: one all_to_all each way, as for any size.
  const std::string out = print_module(*m);
  CHECK(out.find("sdy.all_to_all [{\"x\"}: 0->1] %arg0 out_sharding=<@m, [{}, {\"x\"}, {}]>") !=
        std::string::npos);
  CHECK(out.find("sdy.all_to_all [{\"x\"}: 1->0] %0 out_sharding=<@m, [{\"x\"}, {}, {}]>") !=
        std::string::npos);
  // Past 2^48 elements even the text stages refuse (byte sizes times devices must fit 64 bits).
  std::string huge = text;
  for (size_t at = 0; (at = huge.find("24576x8192x16384", at)) != std::string::npos; at += 21)
    huge.replace(at, 16, "24576x8192x16384x1024");
  for (size_t at = 0; (at = huge.find("{}]", at)) != std::string::npos; at += 7)
    huge.replace(at, 3, "{}, {}]");
  auto too_big = parse_module_for_propagation(huge, "huge.mlir");
  REQUIRE_FALSE(too_big.has_value());
  CHECK(too_big.error().message.find("holds more than 281474976710656 elements") !=
        std::string::npos);
}

TEST_CASE("sdy-insert-explicit-reshards: fft keeps its transformed dims whole") {
  // FFT over the last dim: the batch dim passes through, the transformed dim needs replication,
  // so "b" moves to the batch dim before the fft and back after it. Complex values are read
  // only by the text-only stages, and the pretty form prints back as MLIR prints it.
  const std::string text =
      "sdy.mesh @m = <[\"a\"=2, \"b\"=2]>\n"
      "func.func @f(%arg0: tensor<8x16xcomplex<f32>> {sdy.sharding = #sdy.sharding<@m, "
      "[{\"a\"}, {\"b\"}]>}) -> (tensor<8x16xcomplex<f32>> {sdy.sharding = #sdy.sharding<@m, "
      "[{\"a\"}, {\"b\"}]>}) {\n"
      "  %0 = stablehlo.fft %arg0, type = IFFT, length = [16] {sdy.sharding = "
      "#sdy.sharding_per_value<[<@m, [{\"a\"}, {\"b\"}]>]>} : (tensor<8x16xcomplex<f32>>) -> "
      "tensor<8x16xcomplex<f32>>\n"
      "  return %0 : tensor<8x16xcomplex<f32>>\n"
      "}\n";
  auto m = parse_module_for_propagation(text, "fft.mlir");
  REQUIRE_MESSAGE(m.has_value(), m.error().message);
  REQUIRE(run_sdy_export_pass(*m, *export_pass_from_name("sdy-insert-explicit-reshards")));
  CHECK(print_module(*m) ==
        "sdy.mesh @m = <[\"a\"=2, \"b\"=2]>\n"
        "func.func @f(%arg0: tensor<8x16xcomplex<f32>> {sdy.sharding = #sdy.sharding<@m, "
        "[{\"a\"}, {\"b\"}]>}) -> (tensor<8x16xcomplex<f32>> {sdy.sharding = #sdy.sharding<@m, "
        "[{\"a\"}, {\"b\"}]>}) {\n"
        "  %0 = sdy.reshard %arg0 <@m, [{\"a\", \"b\"}, {}]> : tensor<8x16xcomplex<f32>>\n"
        "  %1 = stablehlo.fft %0, type =  IFFT, length = [16] {sdy.sharding = "
        "#sdy.sharding_per_value<[<@m, [{\"a\", \"b\"}, {}]>]>} : (tensor<8x16xcomplex<f32>>) -> "
        "tensor<8x16xcomplex<f32>>\n"
        "  %2 = sdy.reshard %1 <@m, [{\"a\"}, {\"b\"}]> : tensor<8x16xcomplex<f32>>\n"
        "  return %2 : tensor<8x16xcomplex<f32>>\n"
        "}\n");
  // Planning computes values: complex types stay a located refusal there.
  auto plan = parse_module(text, "fft.mlir");
  REQUIRE_FALSE(plan.has_value());
  CHECK(plan.error().message.find("fft.mlir:2:") == 0);
  CHECK(plan.error().message.find("complex<f32> is not supported") != std::string::npos);
  // The generic form takes the same rule.
  auto generic = parse_module_for_propagation(
      "sdy.mesh @m = <[\"a\"=2, \"b\"=2]>\n"
      "func.func @f(%arg0: tensor<8x16xcomplex<f32>> {sdy.sharding = #sdy.sharding<@m, "
      "[{\"a\"}, {\"b\"}]>}) -> tensor<8x16xcomplex<f32>> {\n"
      "  %0 = \"stablehlo.fft\"(%arg0) {fft_type = #stablehlo<fft_type FFT>, fft_length = "
      "array<i64: 16>} : (tensor<8x16xcomplex<f32>>) -> tensor<8x16xcomplex<f32>>\n"
      "  return %0 : tensor<8x16xcomplex<f32>>\n"
      "}\n",
      "generic.mlir");
  REQUIRE_MESSAGE(generic.has_value(), generic.error().message);
  REQUIRE(run_sdy_export_pass(*generic, *export_pass_from_name("sdy-insert-explicit-reshards")));
  CHECK(print_module(*generic).find("  %0 = sdy.reshard %arg0 <@m, [{\"a\", \"b\"}, {}]>") !=
        std::string::npos);
  // An fft type the spec does not define is refused where it is written.
  std::string bad = text;
  bad.replace(bad.find("IFFT"), 4, "DCT");
  auto refused = parse_module_for_propagation(bad, "fft.mlir");
  REQUIRE_FALSE(refused.has_value());
  CHECK(refused.error().message.find("fft type DCT is not one of FFT, IFFT, RFFT, IRFFT") !=
        std::string::npos);
}
