// The queue model of coupled communication (DCQCN and PFC on coupled flows, coupled_queues.cpp), through the replay
// engine: where no switch port is offered more than its capacity it changes nothing (exactly the max-min answer); an
// incast obeys the receiver's link (never faster than its bytes over its capacity) and agrees with the per-transfer
// fluid network's queue model; PFC drops no byte and every byte sent arrives; the adaptive steps give what stepping
// every time_step gives.
#include "railyard/common/child_process.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/sim/replay.hpp"
#include "replay_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace railyard {
namespace {

using models::CollectiveKind;
using workloads::GroupKind;
using workloads::Op;
using workloads::RankGraphBuilder;
using workloads::Workload;

using test::one_spine;

/// Every GPU of `senders` sends `bytes` to GPU `to` at time 0 (one communicator of all GPUs).
Workload incast(int gpus, const std::vector<int>& senders, int to, double bytes)
{
  Workload w;
  std::vector<int> all(static_cast<std::size_t>(gpus));
  for (int g = 0; g < gpus; ++g)
    all[static_cast<std::size_t>(g)] = g;
  const int c = w.add_communicator("all", GroupKind::Other, all);
  for (int g = 0; g < gpus; ++g) {
    RankGraphBuilder b;
    if (g == to)
      for (int s : senders)
        b.add(Op::make_recv(c, s, Bytes(bytes), 0, 0), "recv");
    for (int s : senders)
      if (g == s) b.add(Op::make_send(c, to, Bytes(bytes), 0, 0), "send");
    w.add_rank(b.finish());
  }
  return w;
}

/// Step time, bytes sent and received, max queue, ECN marks, pause time, overflow bytes, CNPs.
std::vector<double> run(const topo::ClusterSpec& spec, const Workload& w, sim::CongestionControl cc, bool pfc,
                        bool adaptive, sim::CommModel comm = sim::CommModel::Coupled, std::uint64_t seed = 1)
{
  return run_in_child([&] {
           const topo::Topology t = topo::build_topology(spec);
           sim::SimulationConfig cfg;
           cfg.backend = sim::Backend::Fluid;
           cfg.fluid.cc = cc;
           cfg.fluid.pfc.enabled = pfc;
           cfg.fluid.adaptive_steps = adaptive;
           cfg.seed = seed;
           sim::ReplayOptions o;
           o.comm = comm;
           o.lower = sim::nccl_lowering(t, sim::NcclSettings{}, Seconds(0));
           const auto r = sim::replay_workload(w, t, cfg, nullptr, o);
           const auto& st = r.network->stats;
           return std::vector<double>{r.step_time.seconds(),
                                      r.flows.bytes_sent,
                                      r.flows.bytes_received,
                                      st.max_queue,
                                      st.ecn_marks,
                                      st.pause_time,
                                      st.overflow_bytes,
                                      static_cast<double>(st.cnps),
                                      static_cast<double>(st.rate_decreases)};
         })
      .values;
}

// A ring whose every edge has a link of its own (one GPU per node on a rail-optimized fabric: NIC to leaf to NIC) is
// offered no port beyond its capacity: with DCQCN and PFC on, nothing queues, no packet is marked, and the time is the
// max-min time exactly.
TEST(CoupledQueues, NoCongestionChangesNothing)
{
  topo::ClusterSpec spec;
  spec.kind = topo::ClusterKind::RailOptimized;
  spec.nodes = 8;
  spec.gpus_per_node = 1;
  spec.leaf_downlinks = 8;
  Workload w;
  const int c = w.add_communicator("ring", GroupKind::DP, test::first_ranks(8));
  for (int g = 0; g < 8; ++g) {
    RankGraphBuilder b;
    b.add(Op::make_collective(CollectiveKind::AllReduce, Bytes(256.0 * 1024 * 1024), c, -1, 0), "ar");
    w.add_rank(b.finish());
  }
  const auto plain = run(spec, w, sim::CongestionControl::None, false, true);
  const auto cc = run(spec, w, sim::CongestionControl::Dcqcn, true, true);
  ASSERT_EQ(plain.size(), 9U);
  ASSERT_EQ(cc.size(), 9U);
  EXPECT_NEAR(cc[0], plain[0], 1e-9 * plain[0]);
  EXPECT_EQ(cc[3], 0.0); // no queue
  EXPECT_EQ(cc[4], 0.0); // no mark
  EXPECT_EQ(cc[5], 0.0); // no pause
}

// Eight senders of 8 MiB into one 400 Gb/s NIC port. The port delivers at most its capacity: the incast takes at least
// 8 x 8 MiB / 50 GB/s (1.342 ms), with PFC alone within 2% of that (PFC keeps the port's queue fed). Against the
// per-transfer fluid network, whose queue model is the reference (each message one flow there too): PFC alone and
// DCQCN alone agree within 2% on time, deepest queue and marks. With both, DCQCN's outcome hangs on which senders draw
// one CNP more (half their rate for milliseconds: 2.41 or 4.27 ms in either model, by seed), so the two are held to
// the same two outcomes: the fastest and the slowest of eight seeds within 2%. PFC's headroom holds every byte (no
// overflow) and every byte sent arrives.
TEST(CoupledQueues, IncastAgreesWithThePerTransferNetwork)
{
  const topo::ClusterSpec spec = one_spine();
  const double bytes = 8.0 * 1024 * 1024;
  const Workload w = incast(16, {4, 5, 6, 7, 8, 9, 10, 11}, 0, bytes);
  const double bound = 8 * bytes / spec.nic_bandwidth.bytes_per_sec();
  struct Case {
    const char* name;
    sim::CongestionControl cc;
    bool pfc;
  };
  for (const Case& c :
       {Case{"pfc", sim::CongestionControl::None, true}, Case{"dcqcn", sim::CongestionControl::Dcqcn, false}}) {
    const auto r = run(spec, w, c.cc, c.pfc, true);
    const auto f = run(spec, w, c.cc, c.pfc, true, sim::CommModel::Flows);
    ASSERT_EQ(r.size(), 9U) << c.name;
    ASSERT_EQ(f.size(), 9U) << c.name;
    std::printf("%-6s coupled %.6f s q %.0f B marks %.0f | flows %.6f s q %.0f B marks %.0f | bound %.6f s\n", c.name,
                r[0], r[3], r[4], f[0], f[3], f[4], bound);
    EXPECT_GE(r[0], bound) << c.name;
    EXPECT_NEAR(r[0], f[0], 0.02 * f[0]) << c.name;
    EXPECT_NEAR(r[3], f[3], 0.02 * f[3]) << c.name;
    EXPECT_NEAR(r[4], f[4], 0.02 * f[4] + 1e-9) << c.name;
    EXPECT_GT(r[3], 0.0) << c.name; // it queued
    EXPECT_DOUBLE_EQ(r[1], 8 * bytes) << c.name;
    EXPECT_NEAR(r[2], r[1], 1e-9 * r[1]) << c.name;
  }
  {
    const auto r = run(spec, w, sim::CongestionControl::None, true, true);
    EXPECT_LE(r[0], 1.02 * bound);
    EXPECT_GT(r[5], 0.0); // PFC paused the senders
    EXPECT_EQ(r[6], 0.0); // and dropped no byte
  }
  // Per model, the fastest and slowest of eight seeds (the two outcomes) and the mean.
  double c_min = 1e9, c_max = 0, f_min = 1e9, f_max = 0, coupled = 0, flows = 0;
  for (std::uint64_t seed = 1; seed <= 8; ++seed) {
    const auto r = run(spec, w, sim::CongestionControl::Dcqcn, true, true, sim::CommModel::Coupled, seed);
    const auto f = run(spec, w, sim::CongestionControl::Dcqcn, true, true, sim::CommModel::Flows, seed);
    ASSERT_EQ(r.size(), 9U);
    ASSERT_EQ(f.size(), 9U);
    EXPECT_GE(r[0], bound) << seed;
    EXPECT_EQ(r[6], 0.0) << seed; // PFC drops no byte
    EXPECT_NEAR(r[2], r[1], 1e-9 * r[1]) << seed;
    EXPECT_GT(r[7], 0.0) << seed; // CNPs went back
    c_min = std::min(c_min, r[0]);
    c_max = std::max(c_max, r[0]);
    f_min = std::min(f_min, f[0]);
    f_max = std::max(f_max, f[0]);
    coupled += r[0] / 8;
    flows += f[0] / 8;
  }
  std::printf("dcqcn+pfc over 8 seeds: coupled %.6f .. %.6f s (mean %.6f), flows %.6f .. %.6f s (mean %.6f)\n", c_min,
              c_max, coupled, f_min, f_max, flows);
  EXPECT_NEAR(c_min, f_min, 0.02 * f_min);
  EXPECT_NEAR(c_max, f_max, 0.02 * f_max);
}

// The adaptive steps integrate only while a port is congested; stepping every 1 us throughout is the reference. On an
// incast (DCQCN + PFC, and DCQCN alone) the two agree within 1% on time, deepest queue, marks and pause time. Two rings
// crossing one oversubscribed uplink with DCQCN + PFC are chaotic: which lane draws the next CNP first moves a run by
// up to 3% in time and 7% in marks either way, seed by seed, in either integration (measured 2026-12-07 over 16 seeds),
// so one seed cannot hold the two to 1%. They are held to the same outcome over 16 seeds instead: the means of time,
// deepest queue, marks and pause time within 1%. The same rings with DCQCN alone (16 seeds: time apart by 0.00% on
// each) and with PFC alone (nothing drawn) agree seed by seed: one seed each.
TEST(CoupledQueues, AdaptiveStepsMatchFixedSteps)
{
  const topo::ClusterSpec spec = one_spine();
  const Workload in = incast(16, {4, 5, 6, 7, 8, 9, 10, 11}, 0, 8.0 * 1024 * 1024);
  // Two rings of four nodes each on two leaves: both cross leaf 0's and leaf 1's uplink, which a 2:1 fat tree halves.
  topo::ClusterSpec fat;
  fat.kind = topo::ClusterKind::FatTree;
  fat.nodes = 8;
  fat.gpus_per_node = 1;
  fat.leaf_downlinks = 4;
  fat.oversubscription = 4; // one 400 Gb/s uplink for four NICs
  Workload rings;
  const int a = rings.add_communicator("a", GroupKind::DP, {0, 4, 1, 5});
  const int b = rings.add_communicator("b", GroupKind::DP, {2, 6, 3, 7});
  for (int g = 0; g < 8; ++g) {
    RankGraphBuilder rb;
    rb.add(Op::make_collective(CollectiveKind::AllReduce, Bytes(64.0 * 1024 * 1024), g % 4 < 2 ? a : b, -1, 0), "ar");
    rings.add_rank(rb.finish());
  }
  struct Case {
    const char* name;
    const topo::ClusterSpec& spec;
    const Workload& w;
    sim::CongestionControl cc;
    bool pfc;
    int seeds;
  };
  for (const Case& c : {Case{"incast dcqcn+pfc", spec, in, sim::CongestionControl::Dcqcn, true, 1},
                        Case{"incast dcqcn", spec, in, sim::CongestionControl::Dcqcn, false, 1},
                        Case{"rings dcqcn+pfc", fat, rings, sim::CongestionControl::Dcqcn, true, 16},
                        Case{"rings dcqcn", fat, rings, sim::CongestionControl::Dcqcn, false, 1},
                        Case{"rings pfc", fat, rings, sim::CongestionControl::None, true, 1}}) {
    // Means over the seeds of time, deepest queue, marks and pause time (indices of run()'s answer).
    constexpr std::size_t kIdx[] = {0, 3, 4, 5};
    std::vector<double> ad(4, 0.0), fx(4, 0.0);
    double spread = 0; // the largest relative gap in time of one seed
    for (int seed = 1; seed <= c.seeds; ++seed) {
      const auto r = run(c.spec, c.w, c.cc, c.pfc, true, sim::CommModel::Coupled, static_cast<std::uint64_t>(seed));
      const auto f = run(c.spec, c.w, c.cc, c.pfc, false, sim::CommModel::Coupled, static_cast<std::uint64_t>(seed));
      ASSERT_EQ(r.size(), 9U) << c.name;
      ASSERT_EQ(f.size(), 9U) << c.name;
      for (std::size_t i = 0; i < 4; ++i) {
        ad[i] += r[kIdx[i]] / c.seeds;
        fx[i] += f[kIdx[i]] / c.seeds;
      }
      spread = std::max(spread, std::abs(r[0] / f[0] - 1));
    }
    std::printf("%-17s (%2d seed(s)) adaptive %.6f s q %.0f marks %.1f pause %.4g | fixed %.6f s q %.0f marks %.1f "
                "pause %.4g | one seed's time apart by up to %.2f%%\n",
                c.name, c.seeds, ad[0], ad[1], ad[2], ad[3], fx[0], fx[1], fx[2], fx[3], 100 * spread);
    EXPECT_NEAR(ad[0], fx[0], 0.01 * fx[0]) << c.name;
    EXPECT_GT(fx[1], 0.0) << c.name; // it is congested
    EXPECT_NEAR(ad[1], fx[1], 0.01 * fx[1]) << c.name;
    EXPECT_NEAR(ad[2], fx[2], 0.01 * fx[2]) << c.name;
    EXPECT_NEAR(ad[3], fx[3], 0.01 * fx[3] + 1e-12) << c.name;
  }
}

} // namespace
} // namespace railyard
