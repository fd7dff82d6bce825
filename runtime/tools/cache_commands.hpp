// meshplan-run's `cache` subcommands: ls, verify, gc.
#pragma once

namespace meshplan::tools {

/// Runs `meshplan-run cache ls|verify|gc CACHE.mpc [options]`; argv[0] is "cache". Returns the
/// process exit code (0 ok, 1 usage or I/O error, 2 verify found damaged entries).
int cache_command(int argc, char** argv);

}  // namespace meshplan::tools
