// Progress of a long run on stderr: simulated time, work done, rate and ETA. The engines publish what they did into a
// ProgressProbe (relaxed atomic stores, a few per event); a ProgressReporter thread reads the probe every few seconds
// and prints a line. Nothing reads the probe back into the simulation, so recording progress cannot change what is
// simulated (the same inputs give the same outputs with or without --progress).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace railyard::sim {

struct ProgressProbe {
  /// What `total` counts and the reporter shows as done: transfers delivered (collectives) or ops completed
  /// (workload replay).
  enum class Unit { Transfers, Ops };

  std::atomic<double> now_s{0};               ///< simulated time reached
  std::atomic<std::uint64_t> transfers{0};    ///< transfers delivered so far
  std::atomic<std::uint64_t> ops{0};          ///< workload ops completed so far
  std::atomic<std::uint64_t> events{0};       ///< engine events processed (fluid dates, SimGrid clock steps, op ends)
  std::atomic<std::uint64_t> total{0};        ///< units the run will do, once known (0: unknown: no percentage, no ETA)
  std::atomic<const char*> phase{"starting"}; ///< what the run is doing: a string literal ("lowering the calls", ...)

  void publish_transfers(double now, std::uint64_t delivered)
  {
    now_s.store(now, std::memory_order_relaxed);
    transfers.store(delivered, std::memory_order_relaxed);
    events.fetch_add(1, std::memory_order_relaxed);
  }
  void publish_ops(double now, std::uint64_t completed)
  {
    now_s.store(now, std::memory_order_relaxed);
    ops.store(completed, std::memory_order_relaxed);
    events.fetch_add(1, std::memory_order_relaxed);
  }
};

/// Prints "railyard: progress: ..." to `out` every `interval` while it lives, and a last line when it stops.
class ProgressReporter {
public:
  ProgressReporter(const ProgressProbe& probe, ProgressProbe::Unit unit, std::ostream& out,
                   std::chrono::milliseconds interval);
  ~ProgressReporter();
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  /// Stops the thread and prints the final line (idempotent; the destructor calls it).
  void finish();

  /// One line for the probe's state after `elapsed` of wall time: simulated time, done of total units (percent),
  /// rate per wall second, engine events, ETA at the current rate.
  static std::string line(const ProgressProbe& probe, ProgressProbe::Unit unit, double elapsed_s);

private:
  void loop();

  const ProgressProbe& probe_;
  ProgressProbe::Unit unit_;
  std::ostream& out_;
  std::chrono::milliseconds interval_;
  std::chrono::steady_clock::time_point start_;
  std::mutex mutex_;
  std::condition_variable wake_;
  bool stop_ = false;
  bool finished_ = false;
  std::thread thread_;
};

} // namespace railyard::sim
