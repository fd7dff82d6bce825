// The shared command-line convention of meshplan's tools (see cli.hpp).
#include "cli.hpp"

#include <cstdio>

#include "meshplan/schemas/hash.hpp"
#include "meshplan/schemas/log.hpp"

#ifndef MESHPLAN_VERSION
#error "MESHPLAN_VERSION must be defined by the build (the project version)"
#endif

namespace meshplan::tools {

namespace {

/// The tool name the stderr log sink prefixes (one tool per process).
std::string g_log_tool;

void log_to_stderr(LogLevel level, std::string_view message, void*) {
  std::fprintf(stderr, "%s: %s: %.*s\n", g_log_tool.c_str(), to_string(level),
               static_cast<int>(message.size()), message.data());
}

}  // namespace

std::string version_text(std::string_view tool) {
  return std::string(tool) + " " + MESHPLAN_VERSION + " (planner " + std::string(kPlannerVersion) +
         ")";
}

Cli::Cli(std::string tool, std::string description)
    : tool_(std::move(tool)), app_(std::move(description), tool_) {
  app_.set_version_flag("--version", version_text(tool_), "Print the version and exit");
  app_.add_flag("-v,--verbose", verbose_, "Log meshplan's info messages to stderr (-vv: debug)");
  app_.add_flag("-q,--quiet", quiet_, "Print only results and errors");
  // Unknown options are collected and refused by name in parse(), in meshplan's error format.
  app_.allow_extras(true);
  app_.get_formatter()->column_width(34);
}

std::optional<int> Cli::parse(int argc, char** argv) {
  try {
    app_.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    std::fputs(app_.help().c_str(), stdout);
    return kExitOk;
  } catch (const CLI::CallForVersion& v) {
    std::printf("%s\n", v.what());
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // An unknown option explains a missing argument better than the missing argument does.
    for (const std::string& extra : app_.remaining())
      if (extra.size() > 1 && extra[0] == '-') return usage_error("unknown option '" + extra + "'");
    return usage_error(e.what());
  }
  for (const std::string& extra : app_.remaining()) {
    if (extra.size() > 1 && extra[0] == '-') return usage_error("unknown option '" + extra + "'");
    return usage_error("unexpected argument '" + extra + "'");
  }
  if (verbose_ > 0 && quiet_) return usage_error("-v and -q: give one of them");
  LogLevel level = quiet_          ? LogLevel::error
                   : verbose_ >= 2 ? LogLevel::debug
                   : verbose_ == 1 ? LogLevel::info
                                   : LogLevel::warning;
  g_log_tool = tool_;
  set_log_sink(log_to_stderr, nullptr, level);
  return std::nullopt;
}

int Cli::usage_error(std::string_view message) const {
  std::fprintf(stderr, "%s: error: invalid_argument: %.*s\nRun '%s --help' for the options.\n",
               tool_.c_str(), static_cast<int>(message.size()), message.data(), tool_.c_str());
  return kExitError;
}

std::vector<std::string> split_commas(std::string_view list) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    if (comma == std::string_view::npos) comma = list.size();
    if (comma > at) out.emplace_back(list.substr(at, comma - at));
    at = comma + 1;
  }
  return out;
}

}  // namespace meshplan::tools
