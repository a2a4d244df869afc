#include "railyard/sim/progress.hpp"

#include "railyard/common/units.hpp"

#include <fmt/format.h>

namespace railyard::sim {

namespace {

std::string duration_text(double s)
{
  const auto total = static_cast<long long>(s + 0.5);
  return fmt::format("{}:{:02}:{:02}", total / 3600, total / 60 % 60, total % 60);
}

} // namespace

ProgressReporter::ProgressReporter(const ProgressProbe& probe, ProgressProbe::Unit unit, std::ostream& out,
                                   std::chrono::milliseconds interval)
    : probe_(probe), unit_(unit), out_(out), interval_(interval), start_(std::chrono::steady_clock::now()),
      thread_([this] { loop(); })
{
}

ProgressReporter::~ProgressReporter()
{
  finish();
}

void ProgressReporter::finish()
{
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (finished_) return;
    finished_ = stop_ = true;
  }
  wake_.notify_all();
  thread_.join();
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  out_ << "railyard: progress: finished: " << line(probe_, unit_, elapsed) << std::endl;
}

void ProgressReporter::loop()
{
  std::unique_lock<std::mutex> lock(mutex_);
  while (!wake_.wait_for(lock, interval_, [this] { return stop_; })) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    out_ << "railyard: progress: " << probe_.phase.load(std::memory_order_relaxed) << ": "
         << line(probe_, unit_, elapsed) << std::endl;
  }
}

std::string ProgressReporter::line(const ProgressProbe& probe, ProgressProbe::Unit u, double elapsed_s)
{
  const bool transfers = u == ProgressProbe::Unit::Transfers;
  const std::string unit = transfers ? "transfers" : "ops";
  const double now = probe.now_s.load(std::memory_order_relaxed);
  const auto done = (transfers ? probe.transfers : probe.ops).load(std::memory_order_relaxed);
  const auto total = probe.total.load(std::memory_order_relaxed);
  const auto events = probe.events.load(std::memory_order_relaxed);
  const double rate = elapsed_s > 0 ? static_cast<double>(done) / elapsed_s : 0.0;
  std::string s = fmt::format("simulated {}, {} {}", format_seconds(Seconds(now)), done, unit);
  if (total > 0)
    s += fmt::format(" of {} ({:.1f}%)", total, 100.0 * static_cast<double>(done) / static_cast<double>(total));
  s += fmt::format(", {:.3g} {}/s, {} events, wall {}", rate, unit, events, duration_text(elapsed_s));
  if (total > 0 && done < total && rate > 0) s += ", ETA " + duration_text(static_cast<double>(total - done) / rate);
  return s;
}

} // namespace railyard::sim
