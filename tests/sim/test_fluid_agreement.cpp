// The fluid backend against closed forms and against the simgrid backend on every case both can run without
// congestion control: the same transfers must arrive at the same times (1e-6 relative) where the routes are the same.
#include "railyard/common/child_process.hpp"

#include "railyard/models/lowering.hpp"
#include "railyard/sim/collective_runner.hpp"
#include "railyard/sim/simulation.hpp"

#include <simgrid/s4u/Actor.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

using namespace railyard;

namespace {

struct Transfer {
  int src, dst;
  double bytes;
  double start = 0; ///< the sender posts it at this time
};

sim::SimulationConfig config_for(sim::Backend backend)
{
  sim::SimulationConfig c;
  c.backend = backend;
  c.seed = 7;
  return c;
}

/// Every receiver posts its receives at time 0 and records when each transfer arrived; senders post at `start`.
std::vector<double> run_transfers(const topo::ClusterSpec& spec, const std::vector<Transfer>& transfers,
                                  const sim::SimulationConfig& config)
{
  return railyard::run_in_child([&] {
           const topo::Topology t = topo::build_topology(spec);
           sim::Simulation s(t, config);
           auto& net = s.network();
           std::vector<double> arrival(transfers.size(), -1);
           const int gpus = t.num_gpus();
           for (int g = 0; g < gpus; ++g) {
             std::vector<std::size_t> in, out;
             for (std::size_t i = 0; i < transfers.size(); ++i) {
               if (transfers[i].dst == g)
                 in.push_back(i);
               if (transfers[i].src == g)
                 out.push_back(i);
             }
             if (in.empty() && out.empty())
               continue;
             s.spawn(g, "gpu", [&net, &transfers, &arrival, in, out, g] {
               std::vector<sim::RequestId> reqs;
               std::vector<std::size_t> which;
               for (std::size_t i : in) {
                 reqs.push_back(net.irecv(g, transfers[i].src, i));
                 which.push_back(i);
               }
               std::vector<std::size_t> order = out;
               std::stable_sort(order.begin(), order.end(),
                                [&](std::size_t a, std::size_t b) { return transfers[a].start < transfers[b].start; });
               for (std::size_t i : order) {
                 if (transfers[i].start > net.now().seconds()) {
                   std::vector<sim::RequestId> tr{net.timer(Seconds(transfers[i].start))};
                   net.wait_any(tr);
                 }
                 net.isend(g, transfers[i].dst, i, Bytes(transfers[i].bytes));
               }
               while (!reqs.empty()) {
                 const std::size_t k = net.wait_any(reqs);
                 arrival[which[k]] = net.now().seconds();
                 reqs.erase(reqs.begin() + static_cast<long>(k));
                 which.erase(which.begin() + static_cast<long>(k));
               }
             });
           }
           s.run();
           const auto& tot = s.network().totals();
           arrival.push_back(tot.bytes_sent);
           arrival.push_back(tot.bytes_received);
           return arrival;
         })
      .values;
}

void expect_agree(const std::vector<double>& a, const std::vector<double>& b, double rel = 1e-6)
{
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    EXPECT_NEAR(a[i], b[i], rel * std::abs(b[i])) << "transfer " << i;
}

topo::ClusterSpec single_node(int gpus)
{
  topo::ClusterSpec s;
  s.kind = topo::ClusterKind::SingleNode;
  s.gpus_per_node = gpus;
  s.nvlink_bandwidth = units::GBps(100);
  s.nvlink_latency = units::us(1);
  return s;
}

// One flow alone: a + S / B, a = two NVLink hops.
TEST(FluidBasics, OneFlowTakesLatencyPlusSizeOverBandwidth)
{
  const auto out = run_transfers(single_node(2), {{0, 1, 1e9}}, config_for(sim::Backend::Fluid));
  EXPECT_NEAR(out[0], 2e-6 + 1e9 / 100e9, 1e-12);
}

// Two senders into GPU 2 share its NVSwitch -> GPU link: each gets B/2 until both end together.
TEST(FluidBasics, TwoFlowsOnOneLinkEachGetHalf)
{
  const auto out = run_transfers(single_node(3), {{0, 2, 1e9}, {1, 2, 1e9}}, config_for(sim::Backend::Fluid));
  EXPECT_NEAR(out[0], 2e-6 + 1e9 / 50e9, 1e-12);
  EXPECT_NEAR(out[1], 2e-6 + 1e9 / 50e9, 1e-12);
}

// A short flow shares the link for S_short / (B/2), then the long one has it alone:
// short ends at S_s / (B/2); long at S_s / (B/2) + (S_l - S_s) / B.
TEST(FluidBasics, ShortFlowLeavesThenLongOneSpeedsUp)
{
  const double B = 100e9, ss = 2e8, sl = 1e9, a = 2e-6;
  const auto out = run_transfers(single_node(3), {{0, 2, ss}, {1, 2, sl}}, config_for(sim::Backend::Fluid));
  EXPECT_NEAR(out[0], a + ss / (B / 2), 1e-12);
  EXPECT_NEAR(out[1], a + ss / (B / 2) + (sl - ss) / B, 1e-12);
}

// N flows into one bottleneck converge to fair shares: N senders of equal size all finish at a + N S / B.
TEST(FluidBasics, NFlowsIntoOneBottleneckGetFairShares)
{
  const int n = 7;
  std::vector<Transfer> tr;
  for (int i = 1; i <= n; ++i)
    tr.push_back({i, 0, 1e8});
  const auto out = run_transfers(single_node(n + 1), tr, config_for(sim::Backend::Fluid));
  for (int i = 0; i < n; ++i)
    EXPECT_NEAR(out[i], 2e-6 + n * 1e8 / 100e9, 1e-12) << "flow " << i;
}

// Max-min, not proportional: flows 0->2 and 1->2 share GPU 2's port, while 0->3 shares GPU 0's port with 0->2.
// Fill: every rate rises to 50 GB/s, where both ports saturate (0->2 + 0->3 = 100; 0->2 + 1->2 = 100).
TEST(FluidBasics, ProgressiveFillingOnTwoBottlenecks)
{
  const double B = 100e9, S = 1e9, a = 2e-6;
  const auto out =
      run_transfers(single_node(4), {{0, 2, S}, {1, 2, S}, {0, 3, S}}, config_for(sim::Backend::Fluid));
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(out[i], a + S / (B / 2), 1e-12);
}

TEST(FluidBasics, BytesSentEqualBytesReceived)
{
  std::vector<Transfer> tr;
  for (int i = 0; i < 6; ++i)
    tr.push_back({i, (i + 1) % 6, 1e6 * (i + 1), 1e-6 * i});
  const auto out = run_transfers(single_node(6), tr, config_for(sim::Backend::Fluid));
  EXPECT_EQ(out[tr.size()], out[tr.size() + 1]);
  EXPECT_EQ(out[tr.size()], 21e6);
}

// ---- Agreement with the simgrid backend ----

TEST(FluidAgreement, StaggeredFlowsOnOneNode)
{
  std::vector<Transfer> tr;
  for (int i = 0; i < 12; ++i)
    tr.push_back({i % 4, 4 + (i * 3) % 4, 1e7 * (1 + i % 5), 1e-5 * (i % 3)});
  const auto f = run_transfers(single_node(8), tr, config_for(sim::Backend::Fluid));
  const auto s = run_transfers(single_node(8), tr, config_for(sim::Backend::SimGrid));
  expect_agree(f, s);
}

topo::ClusterSpec fat_tree(int nodes, int gpn, double oversub)
{
  topo::ClusterSpec s;
  s.kind = topo::ClusterKind::FatTree;
  s.nodes = nodes;
  s.gpus_per_node = gpn;
  s.tiers = 2;
  s.leaf_downlinks = 4;
  s.oversubscription = oversub;
  return s;
}

// A random permutation on a 2:1 oversubscribed 2-tier fat tree with per-flow ECMP: flows collide on uplinks and get
// uneven max-min shares; both backends hash the same way (k-th flow of the pair, same seed), so the routes and the
// times agree.
TEST(FluidAgreement, FatTreePermutationWithCollisions)
{
  const auto spec = fat_tree(16, 1, 2.0);
  std::vector<int> perm(16);
  std::iota(perm.begin(), perm.end(), 0);
  std::uint64_t x = 12345;
  for (int i = 15; i > 0; --i) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    std::swap(perm[i], perm[static_cast<int>((x >> 33) % static_cast<std::uint64_t>(i + 1))]);
  }
  std::vector<Transfer> tr;
  for (int i = 0; i < 16; ++i)
    if (perm[i] != i)
      tr.push_back({i, perm[i], 5e8});
  const auto f = run_transfers(spec, tr, config_for(sim::Backend::Fluid));
  const auto s = run_transfers(spec, tr, config_for(sim::Backend::SimGrid));
  expect_agree(f, s);
}

TEST(FluidAgreement, NToOneIncastAcrossTheFabric)
{
  const auto spec = fat_tree(8, 1, 1.0);
  std::vector<Transfer> tr;
  for (int i = 1; i < 8; ++i)
    tr.push_back({i, 0, 2e8, 1e-6 * i});
  const auto f = run_transfers(spec, tr, config_for(sim::Backend::Fluid));
  const auto s = run_transfers(spec, tr, config_for(sim::Backend::SimGrid));
  expect_agree(f, s);
}

models::Schedule ring(const topo::Topology& t, Bytes size, int channels)
{
  models::CollectiveCall call;
  call.kind = models::CollectiveKind::AllReduce;
  call.bytes = size;
  call.ranks.resize(t.num_gpus());
  std::iota(call.ranks.begin(), call.ranks.end(), 0);
  call.algorithm = models::Algorithm::Ring;
  call.protocol = models::Protocol::Simple;
  call.channels = channels;
  return models::lower({call, t.gpus_per_node(), Seconds(0)});
}

double ring_time(const topo::ClusterSpec& spec, Bytes size, int channels, sim::Backend backend)
{
  return railyard::run_in_child([&] {
           const topo::Topology t = topo::build_topology(spec);
           sim::Simulation s(t, config_for(backend));
           const auto timings = sim::run_schedules(s, {ring(t, size, channels)});
           return std::vector<double>{timings.at(0).duration().seconds()};
         })
      .values.at(0);
}

TEST(FluidAgreement, RingAllReduceSingleNode)
{
  topo::ClusterSpec spec = single_node(8);
  spec.nvlink_bandwidth = units::GBps(450);
  spec.nvlink_latency = units::us(0.5);
  for (int channels : {1, 4}) {
    const double f = ring_time(spec, units::MiB(96), channels, sim::Backend::Fluid);
    const double s = ring_time(spec, units::MiB(96), channels, sim::Backend::SimGrid);
    EXPECT_NEAR(f, s, 1e-6 * s) << channels << " channels";
  }
}

TEST(FluidAgreement, RingAllReduceRailOptimized)
{
  topo::ClusterSpec spec;
  spec.kind = topo::ClusterKind::RailOptimized;
  spec.nodes = 4;
  spec.gpus_per_node = 8;
  spec.leaf_downlinks = 4;
  for (int channels : {1, 8}) {
    const double f = ring_time(spec, units::MiB(64), channels, sim::Backend::Fluid);
    const double s = ring_time(spec, units::MiB(64), channels, sim::Backend::SimGrid);
    EXPECT_NEAR(f, s, 1e-6 * s) << channels << " channels";
  }
}

// Event-driven ranks (FlowClient) and actors run the same rules: every collective of a sequence (ring, tree, grouped
// sends, alltoall; several channels; shared links) must start and end at the same simulated times either way.
// `intruder`: an actor on GPU 0 sleeps 50 us (SimGrid's CPU model holds that sleep), then sends 8 MiB from GPU 0 to
// GPU 5 across the collectives' links and waits for it; its wake and arrival times and SimGrid's final clock are
// appended. The network must not run ahead of SimGrid's clock while the sleep is under way.
std::vector<double> sequence_timings(sim::RankExecution execution, bool intruder = false)
{
  return railyard::run_in_child([&] {
           topo::ClusterSpec spec;
           spec.kind = topo::ClusterKind::FatTree;
           spec.nodes = 4;
           spec.gpus_per_node = 4;
           spec.leaf_downlinks = 4;
           spec.oversubscription = 2;
           const topo::Topology t = topo::build_topology(spec);
           std::vector<models::Schedule> schedules;
           schedules.push_back(ring(t, units::MiB(24), 4));
           models::CollectiveCall tree;
           tree.kind = models::CollectiveKind::AllReduce;
           tree.bytes = units::MiB(8);
           tree.ranks.resize(static_cast<std::size_t>(t.num_gpus()));
           std::iota(tree.ranks.begin(), tree.ranks.end(), 0);
           tree.algorithm = models::Algorithm::Tree;
           tree.protocol = models::Protocol::Simple;
           tree.channels = 2;
           schedules.push_back(models::lower({tree, t.gpus_per_node(), Seconds(0)}));
           models::CollectiveCall a2a = tree;
           a2a.kind = models::CollectiveKind::AllToAll;
           a2a.algorithm = models::Algorithm::Ring;
           schedules.push_back(models::lower({a2a, t.gpus_per_node(), Seconds(0)}));
           sim::Simulation s(t, config_for(sim::Backend::Fluid));
           double woke = -1, arrived = -1;
           if (intruder)
             s.spawn(0, "intruder", [&s, &woke, &arrived] {
               simgrid::s4u::this_actor::sleep_for(50e-6);
               woke = simgrid::s4u::Engine::get_clock();
               auto& net = s.network();
               const auto r = net.irecv(5, 0, 1u << 30);
               net.isend(0, 5, 1u << 30, units::MiB(8));
               net.wait_any({r});
               arrived = net.now().seconds();
               net.wait_sends();
             });
           const auto timings = sim::run_schedules(s, schedules, execution);
           std::vector<double> out;
           for (const auto& x : timings) {
             out.push_back(x.start.seconds());
             out.push_back(x.last_start.seconds());
             out.push_back(x.end.seconds());
           }
           out.push_back(static_cast<double>(s.network().totals().flows_received));
           out.push_back(s.network().totals().bytes_received);
           if (intruder) {
             out.push_back(woke);
             out.push_back(arrived);
           }
           out.push_back(simgrid::s4u::Engine::get_clock());
           return out;
         })
      .values;
}

TEST(FluidExecution, EventDrivenRanksMatchActorsOnEveryCollective)
{
  const auto clients = sequence_timings(sim::RankExecution::Auto);
  const auto actors = sequence_timings(sim::RankExecution::Actors);
  ASSERT_EQ(clients.size(), actors.size());
  ASSERT_EQ(clients.size(), 3u * 3 + 3);
  for (std::size_t i = 0; i < clients.size(); ++i)
    EXPECT_NEAR(clients[i], actors[i], 1e-9 * std::max(1e-6, std::abs(actors[i]))) << "value " << i;
  // Every collective took time, one after the other.
  for (std::size_t c = 0; c < 3; ++c)
    EXPECT_GT(clients[3 * c + 2], clients[3 * c]) << "collective " << c;
}

// Clients let the network take its next dates itself, ahead of SimGrid's clock, while nothing else in the simulation
// can act (FluidExecution.EventDrivenRanksMatchActorsOnEveryCollective compares SimGrid's final clock too). An actor
// that sleeps meanwhile and then sends must find the network at its wake-up date: the same times as when every rank
// is an actor, where the network never runs ahead.
TEST(FluidExecution, RunningAheadWaitsForOtherActors)
{
  const auto plain = sequence_timings(sim::RankExecution::Auto);
  const auto clients = sequence_timings(sim::RankExecution::Auto, true);
  const auto actors = sequence_timings(sim::RankExecution::Actors, true);
  ASSERT_EQ(clients.size(), 3u * 3 + 5);
  ASSERT_EQ(clients.size(), actors.size());
  for (std::size_t i = 0; i < clients.size(); ++i)
    EXPECT_NEAR(clients[i], actors[i], 1e-9 * std::max(1e-6, std::abs(actors[i]))) << "value " << i;
  // The intruder's transfer was posted when it woke, and took time; it shares links with the collectives.
  EXPECT_GT(clients[3 * 3 + 3], clients[3 * 3 + 2]);
  EXPECT_NE(clients[2], plain[2]);
}

} // namespace
