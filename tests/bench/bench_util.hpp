// Helpers for benchmarks: synthetic graphs and a reporter that prints side-by-side ratios.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "meshplan/planner/graph.hpp"

namespace meshplan::bench {

/// A chain of `layers` (matmul, add, relu) blocks on [rows, width] activations: 3 * layers ops.
planner::Graph mlp_chain(int layers, int64_t rows, int64_t width);

/// Console reporter that also remembers each benchmark's real time per iteration (ns), so the
/// main can print ratios measured in the same run.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override;
  /// Prints "label: a / b = ratio" for each pair whose two benchmarks ran.
  void print_ratios(
      const std::vector<std::pair<std::string, std::pair<std::string, std::string>>>& pairs) const;

 private:
  std::map<std::string, double> ns_;
};

}  // namespace meshplan::bench
