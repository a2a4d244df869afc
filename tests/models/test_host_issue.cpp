// The host side of back-to-back collective calls (models/host_issue.hpp) and what NCCL runs on one 8x A100 node at
// the sizes of the published A100 sweep (stas00/ml-engineering network/README.md, nccl-tests -g 8). Expected values
// are computed here: the host cost from its formula, NCCL's choice and channels from NCCL 2.26.2's tuning.cc and
// topoGetAlgoInfo (src/enqueue.cc) with the constants written out.
#include "railyard/common/error.hpp"
#include "railyard/models/host_issue.hpp"
#include "railyard/models/nccl_tuning.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

using namespace railyard;
using namespace railyard::models;

namespace {

double us_of(Seconds t)
{
  return t / units::us(1);
}

} // namespace

TEST(HostIssue, IterationIsCallsTimesPerCallAndPerChannelCost)
{
  const HostIssueCost c{units::us(5), units::us(0.25)};
  // 8 calls of 4 channels: 8 x (5 + 4 x 0.25) = 48 us.
  EXPECT_NEAR(us_of(host_issue_time(c, 8, 4)), 8 * (5 + 4 * 0.25), 1e-9);
  // One call of one channel: 5.25 us.
  EXPECT_NEAR(us_of(host_issue_time(c, 1, 1)), 5.25, 1e-9);
  EXPECT_THROW((void)host_issue_time(c, 0, 4), InputError);
  EXPECT_THROW((void)host_issue_time(c, 8, 0), InputError);
}

TEST(HostIssue, BackToBackIterationsRunAtTheSlowerSide)
{
  EXPECT_EQ(back_to_back_time(units::us(30), units::us(45)), units::us(45));   // the thread cannot keep up
  EXPECT_EQ(back_to_back_time(units::us(300), units::us(45)), units::us(300)); // kernels queue, the GPUs set it
}

TEST(HostIssue, FitRecoversAnExactLineAndRefusesWhatCannotBeSeparated)
{
  // Samples on t = 4 x (3 + 0.5 x channels) us exactly: the fit returns 3 and 0.5 with zero residual.
  std::vector<HostBoundSample> s;
  for (int ch : {1, 2, 8, 24})
    s.push_back({ch, units::us(4 * (3 + 0.5 * ch))});
  const auto fit = fit_host_issue(s, 4, "synthetic");
  EXPECT_NEAR(us_of(fit.cost.per_call), 3.0, 1e-9);
  EXPECT_NEAR(us_of(fit.cost.per_channel), 0.5, 1e-9);
  EXPECT_NEAR(fit.rms_relative_residual, 0.0, 1e-12);

  // One channel count cannot tell the two costs apart.
  EXPECT_THROW((void)fit_host_issue({{8, units::us(40)}, {8, units::us(42)}}, 8, "one count"), InputError);
  // Times that fall with more channels are not host-bound: negative per-channel cost.
  EXPECT_THROW((void)fit_host_issue({{1, units::us(80)}, {16, units::us(40)}}, 8, "falling"), InputError);
}

// ---------------------------------------------------------------------------------------------------------------
// What NCCL 2.26.2 runs for all_reduce on one DGX A100 (8 GPUs, 12 NVLink3 links each).

namespace {

// derive_graphs: ring 12 channels x 20 GB/s (SM80_NVLINK_BW 20 x 12 links = 240 GB/s), comm channels 2 x 12 = 24
// (ncclTopoPostset); tests/models/test_nccl_tuning.cpp checks the graphs themselves.
NcclTuningInput a100(double bytes)
{
  return make_input(node_spec(NodeLayout::DgxA100), 1, CollectiveKind::AllReduce, Bytes(bytes));
}

// ncclTopoTuneModel for Ring on one node, 8 ranks, nsteps = 2 x 7 = 14 NVLink hops, algbw = busbw x 8 / 14.
// Ring/LL:     6.6 + 14 x 0.6 = 15.0 us,  busbw min(llMaxBws[Ampere][1 node] 87.7, 12 x 20 x 0.5 = 120) = 87.7
// Ring/LL128: 14.0 + 14 x 1.9 = 40.6 us,  busbw min(12 x 20 x 0.92 = 220.8, 12 x perChMaxRingLL128Bw 20 = 240)
// Ring/Simple: 8.4 + 14 x 3.4 = 56.0 us,  busbw 12 x 20 = 240
double ring_us(Protocol p, double bytes)
{
  const double lat = p == Protocol::LL ? 15.0 : p == Protocol::LL128 ? 40.6 : 56.0;
  const double bus = p == Protocol::LL ? 87.7 : p == Protocol::LL128 ? 220.8 : 240.0;
  return lat + bytes / (1000.0 * bus * 8.0 / 14.0);
}

} // namespace

TEST(NcclA100, PickAndChannelsAtThePublishedSizes)
{
  const double KiB = 1024, MiB = 1024 * KiB;
  struct Expect {
    double bytes;
    Protocol proto;
    int channels;
  };
  // Protocol: the cheapest of the three Ring rows above (Tree is slower at every size here: its Simple/LL128
  // latencies are higher and its bus bandwidth is halved). Channels (topoGetAlgoInfo): start at 24 and drop while
  // bytes < nc x nt x threshold; Ring/LL: nt 512, threshold NCCL_LL_THREAD_THRESHOLD 8 x nRanks 8 = 64, so
  // nc = min(24, floor(bytes / 32768)); LL128 (nt 640, threshold 8) and Simple (nt 512, threshold 64) keep 24 above
  // 24 x 5120 and 24 x 32768 bytes.
  const Expect cases[] = {
      {32 * KiB, Protocol::LL, 1},     {64 * KiB, Protocol::LL, 2},      {128 * KiB, Protocol::LL, 4},
      {256 * KiB, Protocol::LL, 8},    {512 * KiB, Protocol::LL, 16},    {1 * MiB, Protocol::LL, 24},
      {2 * MiB, Protocol::LL, 24},     {4 * MiB, Protocol::LL128, 24},   {8 * MiB, Protocol::LL128, 24},
      {16 * MiB, Protocol::LL128, 24}, {64 * MiB, Protocol::Simple, 24}, {1024 * MiB, Protocol::Simple, 24},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.bytes);
    // The protocol the formulas pick.
    Protocol best = Protocol::LL;
    for (Protocol p : {Protocol::LL128, Protocol::Simple})
      if (ring_us(p, c.bytes) < ring_us(best, c.bytes)) best = p;
    ASSERT_EQ(best, c.proto) << "the hand-written expectation disagrees with the formulas";
    const auto pick = choose(a100(c.bytes));
    ASSERT_TRUE(pick.has_value());
    EXPECT_EQ(pick->algorithm, Algorithm::Ring);
    EXPECT_EQ(pick->protocol, c.proto);
    EXPECT_EQ(pick->channels, c.channels);
    EXPECT_NEAR(us_of(pick->time), ring_us(c.proto, c.bytes), 1e-6);
  }
}

TEST(NcclA100, LlChannelsGrowLinearlyWithSizeUpToTheCommunicator)
{
  // Between 32 KiB and 768 KiB each Ring/LL channel carries the same 32 KiB (nc = bytes / 32768), so on the GPU the
  // time barely changes with size, while a host that pays per channel pays in proportion to the size: the
  // signature of the published A100 sweep between 32 KiB and 512 KiB (bench/bench_nccl_validation).
  for (int nc = 1; nc <= 24; ++nc) {
    const auto pick = choose(a100(nc * 32768.0));
    ASSERT_TRUE(pick.has_value());
    ASSERT_EQ(pick->protocol, Protocol::LL);
    EXPECT_EQ(pick->channels, nc);
  }
}
