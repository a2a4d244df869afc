// A switch egress queue of the fluid backend's queue model as a first-in first-out queue of arrival batches.
//
// The bytes of every flow that reach the queue during one step of the queue model form one batch, and batches leave in
// the order they came: what is at the head leaves first, whatever arrives behind it. Inside a batch the flows leave in
// proportion to what each brought, as bytes that arrived during the same step would interleave. Serving every flow in
// proportion to its whole backlog instead (a processor-sharing queue) lets a flow that stopped arriving drain
// geometrically behind one that keeps arriving, never quite emptying, while a FIFO sends its last byte within
// queue / capacity of its arrival.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace railyard::sim::fluid {

/// Bytes of one flow in one arrival batch.
struct FifoEntry {
  std::uint32_t flow = 0;  ///< the flow's index in the queue model's flow table
  std::uint32_t batch = 0; ///< arrival batch: entries with the same number arrived in the same step
  std::uint8_t queue = 0;  ///< which of the flow's queued hops this queue is
  double bytes = 0;
};

class FluidFifo {
public:
  /// Starts the batch of the current step; push() adds to it.
  void begin_batch() { ++batch_; }
  void push(std::uint32_t flow, std::uint8_t queue, double bytes)
  {
    if (!(bytes > 0))
      return;
    entries_.push_back(FifoEntry{flow, batch_, queue, bytes});
    bytes_ += bytes;
  }
  [[nodiscard]] double bytes() const { return empty() ? 0.0 : bytes_; }
  [[nodiscard]] bool empty() const { return head_ == entries_.size(); }

  /// Sends up to `budget` bytes from the head: whole batches first, then the head batch's flows in proportion to
  /// their bytes in it. leave(flow, queue, bytes) is called per departing entry. Returns the bytes sent.
  template <class Leave>
  double serve(double budget, Leave&& leave)
  {
    double sent = 0;
    while (head_ < entries_.size() && budget > 0) {
      std::size_t end = head_;
      double batch_bytes = 0;
      while (end < entries_.size() && entries_[end].batch == entries_[head_].batch)
        batch_bytes += entries_[end++].bytes;
      if (batch_bytes <= budget) {
        for (std::size_t i = head_; i < end; ++i)
          leave(entries_[i].flow, entries_[i].queue, entries_[i].bytes);
        budget -= batch_bytes;
        sent += batch_bytes;
        head_ = end;
        continue;
      }
      const double share = budget / batch_bytes;
      for (std::size_t i = head_; i < end; ++i) {
        const double dep = entries_[i].bytes * share;
        entries_[i].bytes -= dep;
        leave(entries_[i].flow, entries_[i].queue, dep);
      }
      sent += budget;
      budget = 0;
    }
    bytes_ -= sent;
    if (empty()) {
      entries_.clear();
      head_ = 0;
      bytes_ = 0;
    } else if (head_ > 64 && 2 * head_ > entries_.size()) {
      entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    return sent;
  }

  /// Drops a flow's entries: it ended with a rounding residue still listed here.
  void erase_flow(std::uint32_t flow)
  {
    double gone = 0;
    const auto first = entries_.begin() + static_cast<std::ptrdiff_t>(head_);
    const auto last = std::remove_if(first, entries_.end(), [&](const FifoEntry& e) {
      if (e.flow != flow)
        return false;
      gone += e.bytes;
      return true;
    });
    entries_.erase(last, entries_.end());
    bytes_ = std::max(0.0, bytes_ - gone);
  }

private:
  std::vector<FifoEntry> entries_;
  std::size_t head_ = 0;
  double bytes_ = 0;
  std::uint32_t batch_ = 0;
};

/// The FIFOs of one egress port, one per priority that has used it (PFC pauses a priority, not the port).
struct PortFifos {
  std::vector<std::pair<int, FluidFifo>> by_priority;
  FluidFifo& at(int priority)
  {
    for (auto& [p, f] : by_priority)
      if (p == priority)
        return f;
    by_priority.emplace_back(priority, FluidFifo{});
    return by_priority.back().second;
  }
};

} // namespace railyard::sim::fluid
