// Opens a plan cache with the installed C++ runtime, runs the plan on the emulated chip it was
// made for and compares y with loops over the same inputs.
//   consumer CACHE.mpc NAME
#include <cmath>
#include <cstdio>
#include <vector>

#include "inputs.h"
#include "meshplan/device/emulator.hpp"
#include "meshplan/runtime/executable.hpp"
#include "meshplan/runtime/plan_cache.hpp"

using namespace meshplan;

int main(int argc, char** argv) {
  if (argc != 3) return std::fprintf(stderr, "usage: consumer CACHE.mpc NAME\n"), 64;
  auto cache = runtime::PlanCache::open(argv[1]);
  if (!cache) return std::fprintf(stderr, "%s\n", cache.error().message.c_str()), 1;
  auto plan = cache->find(argv[2]);
  if (!plan) return std::fprintf(stderr, "%s\n", plan.error().message.c_str()), 1;
  auto chip = device::builtin_chip(plan->plan().header()->device()->name()->string_view());
  if (!chip) return std::fprintf(stderr, "%s\n", chip.error().message.c_str()), 1;
  auto dev = device::EmulatedDevice::create(*chip);
  if (!dev) return std::fprintf(stderr, "%s\n", dev.error().message.c_str()), 1;
  auto exe = runtime::Executable::bind(*plan, **dev);
  if (!exe) return std::fprintf(stderr, "%s\n", exe.error().message.c_str()), 1;

  std::vector<float> x(M * K), w(K * N), b(N);
  fill_inputs(x.data(), w.data(), b.data());
  const int64_t xs[] = {M, K}, ws[] = {K, N}, bs[] = {1, N};
  const runtime::NamedTensorView in[] = {{"x", {xs, x}}, {"w", {ws, w}}, {"b", {bs, b}}};
  auto result = (*exe)->run(std::span<const runtime::NamedTensorView>(in));
  if (!result) return std::fprintf(stderr, "%s\n", result.error().message.c_str()), 1;
  if (result->outputs.size() != 1 || result->outputs[0].data.size() != size_t{M} * N)
    return std::fprintf(stderr, "unexpected outputs\n"), 1;
  double worst = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j)
      worst = std::max(worst, std::fabs(result->outputs[0].data[i * N + j] - expected_y(i, j)));
  std::printf("consumer (C++): y[0][0] = %.4f (expected %.4f), max abs error %.6f, %llu ns\n",
              result->outputs[0].data[0], expected_y(0, 0), worst,
              static_cast<unsigned long long>(result->device_ns));
  return worst <= 1e-3 ? 0 : 2;
}
