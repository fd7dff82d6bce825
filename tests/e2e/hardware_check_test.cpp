// The hardware check (meshplan-zoo --hardware-check): Llama-3.1-8B decode as tt-metal's demo
// runs it, planned for n150, n300 (TP 2) and T3000 (TP 8). The weight bytes each chip reads per
// step are worked out here from the architecture and the block-float tile sizes; the step can
// never be faster than those bytes crossing DRAM; the calibration fits only the first point.
#include <doctest/doctest.h>

#include "hardware_check.hpp"
#include "meshplan/device/descriptor.hpp"

namespace meshplan {

namespace {

/// Weight bytes per chip of Llama-3.1-8B (32 layers, hidden 4096, 8 KV heads of 128, FFN 14336,
/// vocab 128256) with bfp4_b w1/w3 (576 bytes per 32x32 tile), bfp8_b other matrices (1088),
/// matrices split `tp` ways, the bf16 norm weights [4096] replicated (one tile row: 128 tiles of
/// 2048 bytes).
double weight_bytes(int64_t tp) {
  const double tile = 1024.0;
  const double bf8 = (4096.0 * 4096 * 2 + 4096.0 * 1024 * 2 + 14336.0 * 4096) / tile * 1088;
  const double bf4 = 4096.0 * 14336 * 2 / tile * 576;
  const double norm = 128.0 * 2048;
  const double layer = (bf8 + bf4) / static_cast<double>(tp) + 2 * norm;
  const double head = 4096.0 * 128256 / tile * 1088 / static_cast<double>(tp);
  // A per-chip (mesh) program receives each layer's attention scale constant [1] as an argument
  // from the host: one bf16 tile per layer.
  const double scales = tp > 1 ? 32.0 * 2048 : 0.0;
  return 32 * layer + norm + head + scales;
}

}  // namespace

TEST_CASE("hardware check: one row per published point, weights and DRAM floor as worked out") {
  models::HardwareCheckOptions options;
  options.prefill = false;  // decode only: the test plans, never runs
  auto check = models::hardware_check(options);
  REQUIRE_MESSAGE(check, (check ? std::string() : check.error().message));
  REQUIRE(check->rows.size() == 3);
  const char* devices[] = {"n150", "n300", "t3k"};
  const int64_t tp[] = {1, 2, 8};
  const device::ChipDesc chip = device::wormhole_b0();
  const double l1_all =
      static_cast<double>(chip.cores()) * (chip.l1_usable_top() - chip.l1_unreserved_base);
  for (size_t i = 0; i < 3; ++i) {
    const models::HardwareCheckRow& r = check->rows[i];
    CAPTURE(r.point.device);
    CHECK(r.point.device == devices[i]);
    CHECK(r.point.model == "llama3.1_8b");
    CHECK(r.weight_bytes == doctest::Approx(weight_bytes(tp[i])).epsilon(1e-12));
    // No plan is faster than its weights crossing DRAM once (less what all of L1 could hold).
    double floor_us = (r.weight_bytes - l1_all) / chip.dram_gbps / 1000.0;
    CHECK(r.decode_us >= floor_us);
    CHECK(r.simulated_tps == doctest::Approx(1e6 / r.decode_us));
    CHECK(r.ratio == doctest::Approx(r.simulated_tps / r.point.decode_tps));
    CHECK(r.calibration_point == (i == 0));
  }
  // Only the first point is fitted: it lands on its published figure (plans may shift a little
  // with the dispatch time), the others are what the model predicts.
  CHECK(check->rows[0].ratio == doctest::Approx(1.0).epsilon(0.02));
  CHECK(check->dispatch_ns != check->descriptor_dispatch_ns);
  // More chips, less time per step.
  CHECK(check->rows[1].decode_us < check->rows[0].decode_us);
  CHECK(check->rows[2].decode_us < check->rows[1].decode_us);
}

}  // namespace meshplan
