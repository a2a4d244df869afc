// Runs a function in a forked child process and brings back the numbers it produced, its wall time and its peak
// memory. SimGrid keeps one engine per process, so tests that compare two simulations, and benchmarks that measure
// each size's own peak memory, run each simulation in its own child.
#pragma once

#include <functional>
#include <vector>

namespace railyard {

struct ChildResult {
  std::vector<double> values;
  double wall_seconds = 0;       ///< wall-clock time of the child, fork to exit
  double max_rss_bytes = 0;      ///< the child's peak resident set size (getrusage ru_maxrss)
  /// The child's user + system CPU time (getrusage): on a shared machine, steadier than its wall time.
  double cpu_seconds = 0;
};

/// Forks, runs `fn` in the child and returns what it returned. Throws std::runtime_error if the child fails (an
/// exception, a crash); the child's message goes to stderr.
ChildResult run_in_child(const std::function<std::vector<double>()>& fn);

} // namespace railyard
