// SlotPool: the free list of the event loops (fluid network, event calendar, SimGrid requests). The order in which it
// hands slots out is part of what makes a run reproducible, so it is pinned here: released slots come back last-in
// first-out, as the hand-written free lists it replaced did, and new slots only when none is free.
#include "railyard/common/slot_pool.hpp"

#include <gtest/gtest.h>

#include <deque>
#include <stdexcept>
#include <string>

using railyard::SlotPool;

TEST(SlotPool, HandsOutNewSlotsThenReleasedOnesLastInFirstOut)
{
  SlotPool<std::string> pool;
  EXPECT_EQ(pool.acquire(), 0U);
  EXPECT_EQ(pool.acquire(), 1U);
  EXPECT_EQ(pool.acquire(), 2U);
  pool[1] = "one";
  pool.release(0);
  pool.release(2);
  EXPECT_EQ(pool.released(), 2U);
  EXPECT_EQ(pool.acquire(), 2U); // the last released first
  EXPECT_EQ(pool.acquire(), 0U);
  EXPECT_EQ(pool.acquire(), 3U); // none free: a new one
  EXPECT_EQ(pool.size(), 4U);
  EXPECT_EQ(pool[1], "one"); // slots in use are untouched
  EXPECT_THROW((void)pool.at(4), std::out_of_range);
}

TEST(SlotPool, AReleasedSlotKeepsItsContentsForTheNextUser)
{
  // The fluid network keeps a flow slot's generation across reuse, so stale events of the old flow are recognised.
  struct Slot {
    int generation = 0;
  };
  SlotPool<Slot> pool;
  const auto a = pool.acquire();
  pool[a].generation = 7;
  pool.release(a);
  const auto b = pool.acquire();
  EXPECT_EQ(b, a);
  EXPECT_EQ(pool[b].generation, 7);
}

TEST(SlotPool, OnADequeSlotsStayInPlaceAsThePoolGrows)
{
  // The SimGrid backend hands SimGrid a pointer into a request slot, which a vector would move when it grows.
  SlotPool<int, std::uint64_t, std::deque<int>> pool;
  const auto first = pool.acquire();
  const int* where = &pool[first];
  for (int i = 0; i < 10000; ++i)
    (void)pool.acquire();
  EXPECT_EQ(&pool[first], where);
}
