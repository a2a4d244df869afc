// sim::EventCalendar: date order, and posting order within a date, however the events were posted: the order of a
// (date, sequence number) priority queue (htsim's EventList), which the test keeps alongside as the reference.
#include "railyard/sim/event_calendar.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <queue>
#include <random>
#include <tuple>
#include <vector>

using railyard::sim::EventCalendar;

namespace {

struct Posted {
  double t;
  std::uint64_t seq;
  int id;
};
struct Later {
  bool operator()(const Posted& a, const Posted& b) const { return a.t > b.t || (a.t == b.t && a.seq > b.seq); }
};

} // namespace

TEST(EventCalendar, RunsByDateThenPostingOrder)
{
  EventCalendar<int> cal;
  cal.post(2.0, 1);
  cal.post(1.0, 2);
  cal.post(2.0, 3);
  cal.post(1.0, 4);
  std::vector<int> ran;
  while (!cal.empty())
    cal.run_next([&](int e) { ran.push_back(e); });
  EXPECT_EQ(ran, (std::vector<int>{2, 4, 1, 3}));
  EXPECT_EQ(cal.next_date(), EventCalendar<int>::kNever);
}

// Thousands of dates (more than the 256-entry table of recent dates, so dates are forgotten and get second buckets),
// many ties, and events posted while others run, at the running date and later: the calendar runs them in exactly
// the order of the reference priority queue.
TEST(EventCalendar, MatchesADateAndSequencePriorityQueueUnderTiesAndReposting)
{
  std::mt19937_64 rng(12345);
  std::uniform_int_distribution<int> date(0, 4000); // integer dates in ns: many ties
  std::uniform_int_distribution<int> coin(0, 3);
  EventCalendar<int> cal;
  std::priority_queue<Posted, std::vector<Posted>, Later> ref;
  std::uint64_t seq = 0;
  int next_id = 0;
  auto post = [&](double t) {
    cal.post(t, next_id);
    ref.push({t, seq++, next_id});
    ++next_id;
  };
  for (int i = 0; i < 20000; ++i)
    post(date(rng) * 1e-9);
  std::vector<int> got, want;
  while (!cal.empty()) {
    const double now = cal.next_date();
    cal.run_next([&](int e) {
      got.push_back(e);
      if (next_id < 60000) {
        if (coin(rng) == 0) post(now);                       // at the running date: runs after what is there
        if (coin(rng) == 0) post(now + date(rng) * 1e-9);    // later
      }
    });
  }
  while (!ref.empty()) {
    want.push_back(ref.top().id);
    ref.pop();
  }
  ASSERT_EQ(got.size(), want.size());
  EXPECT_EQ(got, want);
}
