// The checks a program carries (StableHLO interpreter checks, `custom_call @check.expect_*`):
// the planner makes each check's actual and expected tensors plan outputs whose names hold the
// check record (docs/formats.md); these functions find them and compare them after a run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "meshplan/runtime/executable.hpp"

namespace meshplan::runtime {

/// Device tolerance of a float check: |actual - expected| <= kCheckAbsTolerance +
/// kCheckRelTolerance * |expected| (two bf16 steps relative, 2^-10 absolute). Applies where the
/// check's own criterion is tighter than what a bf16/f32 device computes.
inline constexpr double kCheckRelTolerance = 1.0 / 64;
inline constexpr double kCheckAbsTolerance = 1.0 / 1024;

/// One check of a plan: outputs `actual` and `expected` (positions in the plan's outputs).
struct ProgramCheck {
  size_t index = 0;
  std::string kind;      ///< expect_close, expect_eq or expect_almost_eq.
  std::string element;   ///< The module's element type ("f32", "bf16", "f64", "i32", "i1"...).
  std::string location;  ///< file:line:col of the check in the module.
  size_t actual = 0, expected = 0;
};

/// The plan's checks in check order, read from its output names. A plan without checks gives an
/// empty list; a check name that is malformed or lacks its pair is a corrupt error naming it.
Result<std::vector<ProgramCheck>> program_checks(const Executable& exe);

/// What one check found.
struct CheckOutcome {
  ProgramCheck check;
  bool ok = false;
  /// Every element met the check's own criterion (3 ULP for expect_close, 1e-3 for
  /// expect_almost_eq, equality for expect_eq), not only the device tolerance.
  bool exact = false;
  size_t elements = 0, failures = 0;
  /// The worst element: its index, values and |actual - expected| (NaN/inf mismatches first).
  std::vector<int64_t> worst_index;
  double worst_actual = 0, worst_expected = 0, worst_diff = 0;
  /// One line: "check 0 (expect_close, f32) at file:11:5: PASS ...".
  std::string text() const;
};

/// Compares each check's outputs of a run. Integer and boolean checks are exact; float checks
/// pass an element that meets the check's own criterion (StableHLO's interpreter: expect_close
/// within 3 ULP of the module's type, expect_almost_eq within 1e-3, expect_eq equal; NaN matches
/// NaN) or the device tolerance (finite values only; infinities must match).
std::vector<CheckOutcome> evaluate_checks(const std::vector<ProgramCheck>& checks,
                                          const std::vector<Tensor>& outputs);

}  // namespace meshplan::runtime
