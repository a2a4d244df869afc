// Runs a function in a forked child process and brings back the numbers it produced, its wall time and its peak
// memory. SimGrid keeps one engine per process, so tests that compare two simulations, and benchmarks that measure
// each size's own peak memory, run each simulation in its own child.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace railyard {

struct ChildResult {
  std::vector<double> values;
  double wall_seconds = 0;  ///< wall-clock time of the child, fork to exit
  double max_rss_bytes = 0; ///< the child's peak resident set size (getrusage ru_maxrss)
  /// The child's user + system CPU time (getrusage): on a shared machine, steadier than its wall time.
  double cpu_seconds = 0;
};

/// Forks, runs `fn` in the child and returns what it returned. Throws std::runtime_error if the child fails (an
/// exception, a crash); the child's message goes to stderr.
ChildResult run_in_child(const std::function<std::vector<double>()>& fn);

/// How a program run by run_program ended.
struct ProgramResult {
  int exit_code = -1;     ///< -1 when it did not exit normally
  int signal = 0;         ///< the signal that ended it, 0 if none
  bool timed_out = false; ///< killed after the time limit
  double wall_seconds = 0;
  double max_rss_bytes = 0; ///< its peak resident set size (wait4's ru_maxrss)
};

/// Starts the program argv[0] (a path) with `argv` and returns its pid without waiting: stdin from /dev/null, stdout
/// to the file `stdout_path` (/dev/null when empty), stderr to `stderr_path` (the same file when the paths are
/// equal), both truncated. If it cannot be started, the child writes why to that stderr and exits 127. Throws
/// std::runtime_error if fork() fails.
int start_program(const std::vector<std::string>& argv, const std::string& stdout_path, const std::string& stderr_path);

/// Runs the program argv[0] (a path) with `argv`, stdout to /dev/null and stderr to the file `stderr_path`; kills it
/// with SIGKILL after `timeout_seconds` (0: no limit). For tests and benchmarks that measure a binary as users run it.
ProgramResult run_program(const std::vector<std::string>& argv, const std::string& stderr_path,
                          double timeout_seconds = 0);

} // namespace railyard
