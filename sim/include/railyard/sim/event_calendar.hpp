// The one event calendar of Railyard's own event loops (the fluid network, the replay's event executor): events at
// dates in seconds, run in date order and, at one date, in the order they were posted, as htsim's EventList orders
// by (time, sequence number). A date's events are one bucket (collectives move in lockstep, so thousands of flows
// often end at the same date); posting mostly goes to the date posted last, and a small table of recent dates finds
// the others without a search.
#pragma once

#include "railyard/common/hash.hpp"
#include "railyard/common/slot_pool.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

namespace railyard::sim {

template <class Event>
class EventCalendar {
public:
  static constexpr double kNever = std::numeric_limits<double>::infinity();

  /// Posts `e` at date `t` (seconds), after every event already posted at `t`.
  void post(double t, const Event& e)
  {
    std::uint32_t k;
    if (t == last_date_) {
      k = last_bucket_;
    } else {
      std::uint64_t bits;
      std::memcpy(&bits, &t, sizeof bits);
      RecentDate& r = recent_[splitmix64(bits) & (recent_.size() - 1)];
      if (r.t == t && buckets_[r.bucket].seq == r.seq) {
        k = r.bucket;
      } else {
        // A date may own several buckets (when the recent-date table forgot it): they run in creation order and only
        // the newest takes new events, so a date's events still run in posting order.
        k = buckets_.acquire();
        buckets_[k].t = t;
        buckets_[k].seq = ++seq_;
        heap_.push_back(Pending{t, seq_, k});
        std::push_heap(heap_.begin(), heap_.end(), Later{});
        r = RecentDate{t, seq_, k};
      }
      last_date_ = t;
      last_bucket_ = k;
    }
    buckets_[k].events.push_back(e);
  }

  /// The earliest date with events; kNever when none is left.
  [[nodiscard]] double next_date() const { return heap_.empty() ? kNever : heap_.front().t; }
  [[nodiscard]] bool empty() const { return heap_.empty(); }

  /// Runs `run(event)` for the events of the earliest date's oldest bucket, in posting order. Events `run` posts at
  /// that date join its end when it is the date's newest bucket, else the newest one, so they run after it.
  template <class Run>
  void run_next(Run&& run)
  {
    const std::uint32_t k = heap_.front().bucket;
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
    for (std::size_t i = 0; i < buckets_[k].events.size(); ++i) {
      const Event e = buckets_[k].events[i]; // a copy: `run` may post, and posting may move the bucket's events
      run(e);
    }
    if (last_bucket_ == k) last_date_ = -kNever;
    buckets_[k].events.clear();
    buckets_[k].seq = 0;
    buckets_.release(k);
  }

private:
  static constexpr std::uint32_t kNone = ~std::uint32_t{0};
  struct Bucket {
    double t = 0;
    std::uint64_t seq = 0; ///< creation order; 0 once run (a reused bucket gets a new one)
    std::vector<Event> events;
  };
  struct Pending {
    double t;
    std::uint64_t seq;
    std::uint32_t bucket;
  };
  struct Later {
    bool operator()(const Pending& x, const Pending& y) const { return x.t > y.t || (x.t == y.t && x.seq > y.seq); }
  };
  struct RecentDate {
    double t = -kNever;
    std::uint64_t seq = 0;
    std::uint32_t bucket = kNone;
  };
  SlotPool<Bucket> buckets_;
  std::vector<Pending> heap_; ///< min-heap of buckets by (date, creation order)
  std::uint64_t seq_ = 0;
  std::array<RecentDate, 256> recent_{}; ///< the newest bucket of recently used dates, by a hash of the date
  double last_date_ = -kNever;
  std::uint32_t last_bucket_ = kNone;
};

} // namespace railyard::sim
