// The command-line convention every meshplan tool shares (CLI11): --help and --version, -v/-q
// routed to the logging hook, one error format and one set of exit codes.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace meshplan::tools {

/// Exit codes of every tool: success (also --help, --version), an error (bad arguments
/// included; the message names what and where), and a check that ran and failed
/// (meshplan-run --check, cache verify, meshplan-zoo).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;
inline constexpr int kExitCheckFailed = 2;

/// "meshplan-run 0.1.0 (planner 0.3.0)": the tool, the project version and the planner version
/// that plans record (a cache made by another planner version is re-planned, not reused).
std::string version_text(std::string_view tool);

/// One tool's CLI11 application with the shared flags: -h/--help, --version, -v (repeatable:
/// info, then debug messages) and -q (errors only). Messages of meshplan's libraries go to
/// stderr as "TOOL: LEVEL: MESSAGE"; the default level is warning. Not thread-safe (a tool
/// parses once, in main).
class Cli {
 public:
  Cli(std::string tool, std::string description);

  CLI::App& app() { return app_; }
  const std::string& tool() const { return tool_; }

  /// Parses argv. Returns nullopt when the tool should go on, or the exit code to return now:
  /// kExitOk after printing --help or --version, kExitError after printing
  /// "TOOL: error: invalid_argument: ..." naming an unknown option, a missing or bad value.
  std::optional<int> parse(int argc, char** argv);

  /// -q was given: the tool prints only results and errors.
  bool quiet() const { return quiet_; }

  /// Prints "TOOL: error: MESSAGE" and a pointer to --help; returns kExitError.
  int usage_error(std::string_view message) const;

 private:
  std::string tool_;
  CLI::App app_;
  int verbose_ = 0;
  bool quiet_ = false;
};

/// Splits "a,b,,c" into {"a", "b", "c"} (empty items dropped).
std::vector<std::string> split_commas(std::string_view list);

}  // namespace meshplan::tools
