// Benchmark main: runs every benchmark, then prints the ratios the README quotes.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "bench_util.hpp"
#include "meshplan/device/op_semantics.hpp"

namespace meshplan::bench {

planner::Graph mlp_chain(int layers, int64_t rows, int64_t width) {
  planner::Graph g;
  g.name = "chain";
  auto value = [&](std::string name, std::vector<int64_t> shape, int argument,
                   planner::ArgKind kind) {
    planner::Value v;
    v.name = std::move(name);
    v.shape = std::move(shape);
    v.argument = argument;
    v.kind = kind;
    g.values.push_back(std::move(v));
    if (argument >= 0) g.arguments.push_back(static_cast<planner::ValueId>(g.values.size() - 1));
    return static_cast<planner::ValueId>(g.values.size() - 1);
  };
  int args = 0;
  planner::ValueId x = value("x", {rows, width}, args++, planner::ArgKind::input);
  for (int l = 0; l < layers; ++l) {
    std::string s = std::to_string(l);
    planner::ValueId w = value("w" + s, {width, width}, args++, planner::ArgKind::parameter);
    planner::ValueId b = value("b" + s, {1, width}, args++, planner::ArgKind::parameter);
    planner::ValueId h = value("h" + s, {}, -1, planner::ArgKind::input);
    planner::ValueId z = value("z" + s, {}, -1, planner::ArgKind::input);
    planner::ValueId a = value("a" + s, {}, -1, planner::ArgKind::input);
    g.ops.push_back(planner::Op{"fc" + s, device::OpKind::matmul, {x, w}, {h}, {}});
    g.ops.push_back(planner::Op{"bias" + s, device::OpKind::add, {h, b}, {z}, {}});
    g.ops.push_back(planner::Op{"act" + s, device::OpKind::relu, {z}, {a}, {}});
    x = a;
  }
  g.outputs.push_back(x);
  auto ok = planner::validate(g);
  if (!ok) std::fprintf(stderr, "mlp_chain: %s\n", ok.error().message.c_str());
  return g;
}

void RatioReporter::ReportRuns(const std::vector<Run>& runs) {
  for (const Run& r : runs)
    if (r.run_type == Run::RT_Iteration && r.iterations > 0)
      ns_[r.benchmark_name()] =
          r.GetAdjustedRealTime() * (r.time_unit == benchmark::kMicrosecond   ? 1e3
                                     : r.time_unit == benchmark::kMillisecond ? 1e6
                                                                              : 1.0);
  ConsoleReporter::ReportRuns(runs);
}

void RatioReporter::print_ratios(
    const std::vector<std::pair<std::string, std::pair<std::string, std::string>>>& pairs) const {
  std::printf("\nratios measured in this run:\n");
  // MESHPLAN_RATIOS_JSON names a file to also write the ratios to (make bench collects it).
  const char* json_path = std::getenv("MESHPLAN_RATIOS_JSON");
  FILE* json = json_path ? std::fopen(json_path, "w") : nullptr;
  if (json) std::fprintf(json, "[\n");
  bool first = true;
  for (const auto& [label, ab] : pairs) {
    auto a = ns_.find(ab.first), b = ns_.find(ab.second);
    if (a == ns_.end() || b == ns_.end()) continue;
    std::printf("  %-48s %12.1f ns / %12.1f ns = %10.1fx\n", label.c_str(), a->second, b->second,
                a->second / b->second);
    if (json)
      std::fprintf(json,
                   "%s  {\"name\": \"%s\", \"numerator\": \"%s\", \"denominator\": \"%s\", "
                   "\"numerator_ns\": %.1f, "
                   "\"denominator_ns\": %.1f, \"ratio\": %.3f, \"ratio_text\": \"%.1fx\"}",
                   first ? "" : ",\n", label.c_str(), ab.first.c_str(), ab.second.c_str(),
                   a->second, b->second, a->second / b->second, a->second / b->second);
    first = false;
  }
  if (json) {
    std::fprintf(json, "\n]\n");
    std::fclose(json);
  }
}

}  // namespace meshplan::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  meshplan::bench::RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> pairs{
      {"cold start: JSON import+plan vs cache open+find+bind",
       {"BM_LoadFromJson", "BM_ColdStartFromCache"}},
      {"transformer_block: emulator vs f32 host reference",
       {"BM_EmulateTransformerBlock", "BM_ReferenceTransformerBlock"}},
      {"small_cnn: emulator vs f32 host reference", {"BM_EmulateSmallCnn", "BM_ReferenceSmallCnn"}},
      {"plan 10k-op transformer: greedy vs dram",
       {"BM_PlanTransformer10k/greedy", "BM_PlanTransformer10k/dram"}},
      {"plan 10k-op transformer: beam (K=8) vs greedy",
       {"BM_PlanTransformer10k/beam", "BM_PlanTransformer10k/greedy"}},
      {"plan 10k-op transformer: df-sharding vs greedy",
       {"BM_PlanTransformer10k/df_sharding", "BM_PlanTransformer10k/greedy"}},
      {"emulated matmul 256 (pooled) vs f32 triple loop",
       {"BM_EmulatedMatmul/256/real_time", "BM_HostTripleLoop/256/real_time"}},
      {"emulated matmul 512 (pooled) vs f32 triple loop",
       {"BM_EmulatedMatmul/512/real_time", "BM_HostTripleLoop/512/real_time"}},
      {"emulated matmul 512: serial vs pooled",
       {"BM_EmulatedMatmulSerial/512/real_time", "BM_EmulatedMatmul/512/real_time"}},
      {"dispatch: relu 32x32 launch vs validate alone", {"BM_DispatchRelu32", "BM_ValidateRelu32"}},
      {"mesh: propagation+collectives vs parse (10k ops)",
       {"BM_MeshPipeline/10000", "BM_MeshParse/10000"}},
      {"mesh: lower per-device program vs parse (10k ops)",
       {"BM_MeshLower/10000", "BM_MeshParse/10000"}},
      {"cold start: plan JSON parse+verify+bind vs cache",
       {"BM_LoadPlanFromJson", "BM_ColdStartFromCache"}},
      {"cold start vs warm find (verified once)", {"BM_ColdStartFromCache", "BM_WarmFind"}},
      // A server's first request on a plan against its second (tests/bench/server_bench.cpp).
      {"server: first vs second request (warm-up at load)",
       {"BM_ServerFirstRequest/iterations:20/manual_time",
        "BM_ServerSecondRequest/iterations:20/manual_time"}},
      {"server: first vs second request (no warm-up)",
       {"BM_ServerFirstRequestNoWarmUp/iterations:20/manual_time",
        "BM_ServerSecondRequestNoWarmUp/iterations:20/manual_time"}},
      {"cold start: full structural verify vs checksummed",
       {"BM_ColdStartFullVerify", "BM_ColdStartFromCache"}},
      {"verify_plan vs checksum alone", {"BM_VerifyPlanOnly", "BM_ChecksumOnly"}},
      {"FlatBuffers structural verifier: plain vs flattened",
       {"BM_StructuralVerifierPlain", "BM_StructuralVerifierFlattened"}},
      {"plan 10k-op transformer: greedy spill=dp vs belady",
       {"BM_PlanTransformer10k/greedy_dp", "BM_PlanTransformer10k/greedy"}},
      // Kernels on the core pool (tests/bench/kernels_bench.cpp): serial / pooled.
      {"kernels: add 8x256x256 serial vs pooled",
       {"BM_KernelSerial/add/real_time", "BM_KernelPooled/add/real_time"}},
      {"kernels: gelu 8x256x256 serial vs pooled",
       {"BM_KernelSerial/gelu/real_time", "BM_KernelPooled/gelu/real_time"}},
      {"kernels: softmax last dim serial vs pooled",
       {"BM_KernelSerial/softmax_last/real_time", "BM_KernelPooled/softmax_last/real_time"}},
      {"kernels: softmax dim 0 serial vs pooled",
       {"BM_KernelSerial/softmax_dim0/real_time", "BM_KernelPooled/softmax_dim0/real_time"}},
      {"kernels: conv2d 32x32x64 3x3 serial vs pooled",
       {"BM_KernelSerial/conv2d/real_time", "BM_KernelPooled/conv2d/real_time"}},
      {"kernels: matmul 512 serial vs pooled",
       {"BM_KernelSerial/matmul/real_time", "BM_KernelPooled/matmul/real_time"}},
  };
  // The pool's crossover: serial / forced-pooled eltwise add per size in tiles (> 1: pool wins).
  for (int tiles = 8; tiles <= 512; tiles *= 2)
    pairs.push_back({"pool crossover: add of " + std::to_string(tiles) + " tiles serial/pooled",
                     {"BM_PoolCrossoverSerial/" + std::to_string(tiles) + "/real_time",
                      "BM_PoolCrossoverPooled/" + std::to_string(tiles) + "/real_time"}});
  pairs.push_back({"tiny relu 64x32: forced pool vs inline",
                   {"BM_TinyLaunchForcedPool/real_time", "BM_TinyLaunchInline64x32/real_time"}});
  reporter.print_ratios(pairs);
  benchmark::Shutdown();
  return 0;
}
