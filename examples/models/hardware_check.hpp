// Validation against hardware: Llama-3.1-8B at batch 1 as Tenstorrent's tt-metal demo runs it
// (32 decoder layers and the LM head; bfloat4_b FF1/FF3 weights, bfloat8_b everywhere else;
// tensor parallel over the chips of an n300 and a T3000), planned (never run: the weights are
// 8 GB) and its simulated decode throughput set beside the published measurement.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "meshplan/schemas/error.hpp"

namespace meshplan::models {

/// One published measurement (tt-metal, models/tt_transformers/PERF.md, "Performance": batch 1,
/// 128-token prefill, 200 decode iterations; see docs/figures.md for the exact source).
struct PublishedPoint {
  std::string model;   ///< "llama3.1_8b"
  std::string device;  ///< "n150", "n300", "t3k"
  int rows = 1, cols = 1;
  double decode_tps = 0;  ///< Tokens per second per user.
  double ttft_ms = 0;     ///< Time to first token (128-token prefill); 0 when not published.
};
std::vector<PublishedPoint> published_points();

struct HardwareCheckOptions {
  std::string policy = "greedy";
  bool prefill = true;  ///< Also plan the 128-token prefill (TTFT); decode only when false.
  /// Calibrate the one free parameter, the chips' per-op dispatch time (ChipDesc::dispatch_ns),
  /// on the first point (n150 decode) and hold the others out; false: the descriptors as built.
  bool calibrate = true;
};

struct HardwareCheckRow {
  PublishedPoint point;
  bool calibration_point = false;  ///< The point dispatch_ns was fitted on (not held out).
  double uncalibrated_tps = 0;     ///< With the descriptors' own dispatch_ns.
  uint32_t decode_ops = 0;         ///< Ops of the decode plan (per chip).
  double decode_us = 0;            ///< Simulated device time of one decode step (slowest chip).
  double simulated_tps = 0;        ///< 1e6 / decode_us.
  double ratio = 0;                ///< simulated_tps / published decode_tps.
  double prefill_ms = 0;           ///< Simulated device time of the prefill (0: not planned).
  double ttft_ratio = 0;           ///< published ttft_ms / prefill_ms (> 1: simulated faster).
  double weight_bytes = 0;         ///< Weight bytes one chip reads per decode step, as planned.
};

struct HardwareCheck {
  std::vector<HardwareCheckRow> rows;   ///< One per published point, in order.
  uint64_t dispatch_ns = 0;             ///< The per-op dispatch time the rows were timed with.
  uint64_t descriptor_dispatch_ns = 0;  ///< The descriptors' own.
};

/// Plans every published point's configuration.
Result<HardwareCheck> hardware_check(const HardwareCheckOptions& options);

/// The decode context the check plans: the mean position over the published runs' decode
/// iterations (128 prefilled tokens, 200 generated: positions 128..327).
inline constexpr int64_t kCheckDecodePast = 227;

}  // namespace meshplan::models
