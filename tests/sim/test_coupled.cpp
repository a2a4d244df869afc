// Coupled communication (CommModel::Coupled): each channel of a lowered collective is one coupled fluid flow. Lone
// collectives against the closed form (isolated_collective_time) and the per-step flows replay; physics against
// formulas: multiplicity on a link, sharing between collectives, bytes conserved.
#include "railyard/common/child_process.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/sim/replay.hpp"
#include "replay_support.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

namespace railyard {
namespace {

using models::Algorithm;
using models::CollectiveKind;
using models::Protocol;
using workloads::GroupKind;
using workloads::Op;
using workloads::RankGraphBuilder;
using workloads::Workload;

/// One collective over `ranks` (global GPU ids), every other GPU idle.
Workload one_collective(int gpus, const std::vector<int>& ranks, CollectiveKind kind, double bytes)
{
  Workload w;
  const int c = w.add_communicator("comm", GroupKind::DP, ranks);
  for (int r = 0; r < gpus; ++r) {
    RankGraphBuilder b;
    if (std::find(ranks.begin(), ranks.end(), r) != ranks.end())
      b.add(Op::make_collective(kind, Bytes(bytes), c, -1, 0), "collective");
    w.add_rank(b.finish());
  }
  return w;
}

/// NCCL's lowering with the algorithm and protocol forced (NCCL's choice of channels kept).
sim::ReplayOptions forced(const topo::Topology& t, sim::CommModel comm, Algorithm a, Protocol p)
{
  sim::ReplayOptions o;
  o.comm = comm;
  o.lower = [&t, a, p](const models::CollectiveCall& call, const InputLocation& where) {
    models::CollectiveCall c = sim::resolve_call(call, t, sim::NcclSettings{}, where);
    c.algorithm = a;
    c.protocol = p;
    return models::lower(sim::lowering_input(c, t, sim::NcclSettings{}, Seconds(0)));
  };
  return o;
}

struct Case {
  std::string name;
  topo::ClusterSpec spec;
  std::vector<int> ranks;
  CollectiveKind kind;
  Algorithm algo;
  Protocol proto;
  double bytes;
  bool symmetric;          ///< every transfer of a step moves at one rate in the per-step replay too
  bool mixed_ring = false; ///< a ring over NVLink and network hops
};

/// Coupled, analytical and per-step flows (fluid backend) step times of one collective alone; the coupled run's bytes
/// sent and received and its congestion factor.
std::vector<double> times(const Case& c)
{
  auto run = [&](sim::CommModel m) {
    return run_in_child([&] {
             const topo::Topology t = topo::build_topology(c.spec);
             sim::SimulationConfig cfg;
             cfg.backend = sim::Backend::Fluid;
             const auto r = sim::replay_workload(one_collective(t.num_gpus(), c.ranks, c.kind, c.bytes), t, cfg,
                                                 nullptr, forced(t, m, c.algo, c.proto));
             return std::vector<double>{r.step_time.seconds(), r.flows.bytes_sent, r.flows.bytes_received,
                                        r.collectives.empty() ? 0.0 : r.collectives[0].factor()};
           })
        .values;
  };
  const auto coupled = run(sim::CommModel::Coupled);
  const auto analytical = run(sim::CommModel::Analytical);
  const auto flows = run(sim::CommModel::Flows);
  return {coupled[0], analytical[0], flows[0], coupled[1], coupled[2], coupled[3], flows[1]};
}

// A lone collective: where every transfer of a step moves at one rate (a ring or NVLS inside one node, a ring or PAT
// with one GPU per node), the coupled flow's latency + bytes / rate is the per-step replay's time and the closed
// form's, to rounding. Where the hops differ (NVLink and network in one ring, trees, chains), the per-step replay
// overlaps one channel's per-hop latency with another's bytes, which a channel at one rate cannot: the coupled time is
// its critical path's latency plus its bytes at the rate it gets, within 15% of the per-step replay on these cases
// (sim/README.md, "Collective-level flows", has the table), where the closed form's rounds are up to 2.2x off. The
// ring over NVLink and network hops is the exception: since a connection holds NCCL_STEPS slots (2 ring Simple steps),
// its NVLink steps run ahead at their own rates in the per-step replay, which one rate per channel cannot show; coupled
// stays above it, by 20% here (9% when a connection held one step).
TEST(Coupled, LoneCollectivesAgainstClosedFormAndFlows)
{
  const auto one = test::h100_nodes(1);
  const auto four = test::h100_nodes(4);
  const std::vector<int> rail0{0, 8, 16, 24};
  const std::vector<Case> cases{
      {"ring all_reduce, 1 node", one, test::first_ranks(8), CollectiveKind::AllReduce, Algorithm::Ring,
       Protocol::Simple, 256e6, true},
      {"ring all_gather, 1 node", one, test::first_ranks(8), CollectiveKind::AllGather, Algorithm::Ring,
       Protocol::Simple, 256e6, true},
      {"ring reduce_scatter LL128, 1 node", one, test::first_ranks(8), CollectiveKind::ReduceScatter, Algorithm::Ring,
       Protocol::LL128, 64e6, true},
      {"NVLS all_reduce, 1 node", one, test::first_ranks(8), CollectiveKind::AllReduce, Algorithm::Nvls,
       Protocol::Simple, 64e6, true},
      {"ring all_reduce of 0 bytes, 1 node", one, test::first_ranks(8), CollectiveKind::AllReduce, Algorithm::Ring,
       Protocol::Simple, 0, true},
      {"ring all_reduce, 4 nodes x 1 GPU", four, rail0, CollectiveKind::AllReduce, Algorithm::Ring, Protocol::Simple,
       256e6, true},
      {"PAT all_gather, 4 nodes x 1 GPU", four, rail0, CollectiveKind::AllGather, Algorithm::Pat, Protocol::Simple,
       64e6, true},
      {"ring all_reduce, 4 nodes x 8", four, test::first_ranks(32), CollectiveKind::AllReduce, Algorithm::Ring,
       Protocol::Simple, 256e6, false, true},
      {"tree all_reduce, 4 nodes x 8", four, test::first_ranks(32), CollectiveKind::AllReduce, Algorithm::Tree,
       Protocol::Simple, 64e6, false},
      {"NVLSTree all_reduce, 4 nodes x 8", four, test::first_ranks(32), CollectiveKind::AllReduce, Algorithm::NvlsTree,
       Protocol::Simple, 64e6, false},
      {"ring broadcast, 4 nodes x 8", four, test::first_ranks(32), CollectiveKind::Broadcast, Algorithm::Ring,
       Protocol::Simple, 64e6, false},
      {"all_to_all, 4 nodes x 8", four, test::first_ranks(32), CollectiveKind::AllToAll, Algorithm::Ring,
       Protocol::Simple, 64e6, false},
  };
  std::printf("%-36s %12s %12s %12s %10s %10s\n", "collective alone", "coupled ms", "closed ms", "flows ms", "vs flows",
              "closed/fl");
  for (const auto& c : cases) {
    const auto v = times(c);
    std::printf("%-36s %12.6f %12.6f %12.6f %+9.2f%% %+9.2f%%\n", c.name.c_str(), v[0] * 1e3, v[1] * 1e3, v[2] * 1e3,
                100 * (v[0] / v[2] - 1), 100 * (v[1] / v[2] - 1));
    EXPECT_EQ(v[3], v[4]) << c.name << ": bytes sent and received differ";
    EXPECT_NEAR(v[3], v[6], 1e-12 * v[6]) << c.name << ": the coupled and per-step replays move different bytes";
    EXPECT_NEAR(v[5], 1.0, 1e-12) << c.name << ": a collective alone has no congestion";
    if (c.symmetric) {
      EXPECT_NEAR(v[0], v[2], 1e-9 * v[2]) << c.name << " against flows";
      EXPECT_NEAR(v[0], v[1], 1e-9 * v[1]) << c.name << " against the closed form";
    } else if (c.mixed_ring) {
      // Known gap (sim/README.md): one rate for every edge of a channel, against steps that run at their own rates.
      EXPECT_GE(v[0], v[2]) << c.name << ": coupled is the pessimistic side here";
      EXPECT_LE(v[0], 1.25 * v[2]) << c.name << " against flows";
    } else {
      EXPECT_NEAR(v[0], v[2], 0.15 * v[2]) << c.name << " against flows";
    }
  }
}

/// One ring channel over `order` (global GPU ids in ring order): `steps` steps of `chunk` bytes on every edge, no
/// launch or per-hop cost, so a step takes exactly the slowest edge's chunk / rate (links have no latency).
models::Schedule bare_ring(const std::vector<int>& order, int steps, double chunk)
{
  models::Schedule s;
  s.kind = CollectiveKind::AllReduce;
  s.algorithm = Algorithm::Ring;
  s.bytes = Bytes(chunk * steps);
  s.gpus = order;
  std::vector<int> ranks(order.size());
  std::iota(ranks.begin(), ranks.end(), 0);
  s.patterns.push_back(models::Pattern::ring("ring", ranks));
  s.channels.resize(1);
  for (int i = 0; i < steps; ++i)
    s.channels[0].push_back(models::Step{0, Bytes(chunk), Bytes(chunk), Seconds(0), std::nullopt});
  return s;
}

/// Links without latency: times are bytes over rates alone.
topo::ClusterSpec no_latency(topo::ClusterSpec s)
{
  s.nvlink_latency = Seconds(0);
  s.pcie_latency = Seconds(0);
  s.nic_latency = Seconds(0);
  s.fabric_latency = Seconds(0);
  return s;
}

/// Communicators of `rings` (each in ring order), one all-reduce each, all starting at 0; each lowered as bare_ring.
std::vector<double> run_rings(const topo::ClusterSpec& spec, const std::vector<std::vector<int>>& rings,
                              sim::CommModel comm, sim::EcmpMode ecmp, int steps, double chunk)
{
  return run_in_child([&] {
           const topo::Topology t = topo::build_topology(spec);
           Workload w;
           std::vector<int> comm_of(t.num_gpus(), -1);
           for (std::size_t i = 0; i < rings.size(); ++i) {
             const int c = w.add_communicator("ring" + std::to_string(i), GroupKind::DP, rings[i]);
             for (int g : rings[i])
               comm_of[g] = c;
           }
           for (int g = 0; g < t.num_gpus(); ++g) {
             RankGraphBuilder b;
             if (comm_of[g] >= 0)
               b.add(Op::make_collective(CollectiveKind::AllReduce, Bytes(chunk * steps), comm_of[g], -1, 0), "ar");
             w.add_rank(b.finish());
           }
           sim::SimulationConfig cfg;
           cfg.backend = sim::Backend::Fluid;
           cfg.fluid.ecmp = ecmp;
           sim::ReplayOptions o;
           o.comm = comm;
           o.lower = [steps, chunk](const models::CollectiveCall& call, const InputLocation&) {
             return bare_ring(call.ranks, steps, chunk);
           };
           const auto r = sim::replay_workload(w, t, cfg, nullptr, o);
           std::vector<double> v{r.step_time.seconds(), r.flows.bytes_sent, r.flows.bytes_received};
           for (const auto& c : r.collectives)
             v.push_back(c.factor());
           return v;
         })
      .values;
}

// A ring whose order crosses between two leaves twice puts two of its edges on each leaf's only uplink: multiplicity 2
// there halves its rate (C / 2), against C when the order crosses once. Per-step flows agree.
TEST(Coupled, TwoEdgesOnOneUplinkHalveTheRing)
{
  topo::ClusterSpec spec;
  spec.kind = topo::ClusterKind::FatTree;
  spec.nodes = 4;
  spec.gpus_per_node = 1;
  spec.leaf_downlinks = 2;
  spec.oversubscription = 2; // one uplink per leaf: nodes 0, 1 on leaf 0; 2, 3 on leaf 1
  spec = no_latency(spec);
  const double c = spec.nic_bandwidth.bytes_per_sec();
  ASSERT_EQ(c, spec.fabric_bandwidth.bytes_per_sec());
  const int steps = 6;
  const double chunk = 8e6;
  for (auto comm : {sim::CommModel::Coupled, sim::CommModel::Flows}) {
    const std::string name = sim::to_string(comm);
    const auto once = run_rings(spec, {{0, 1, 2, 3}}, comm, sim::EcmpMode::PerQp, steps, chunk);
    const auto twice = run_rings(spec, {{0, 2, 1, 3}}, comm, sim::EcmpMode::PerQp, steps, chunk);
    EXPECT_NEAR(once[0], steps * chunk / c, 1e-9 * once[0]) << name;
    EXPECT_NEAR(twice[0], steps * chunk / (c / 2), 1e-9 * twice[0]) << name;
    EXPECT_EQ(twice[1], twice[2]) << name; // every byte sent arrived
    EXPECT_DOUBLE_EQ(twice[1], 4 * steps * chunk) << name;
  }
}

// Eight DP rings (one per rail: GPU r of each of 8 nodes) at once. Rail-optimized: every ring stays on its rail's
// leaf, each edge alone on its NIC links: rate C. A 2:1 fat tree with one node per leaf: each ring edge leaves its
// leaf, 8 rings x 1 edge over 4 uplinks, sprayed evenly: 2 edges' worth per uplink, rate C / 2, and each ring alone
// (1 edge over 4 uplinks) would have run at C: congestion factor 2.
TEST(Coupled, EightConcurrentDpRingsTakeTheTimeTheLinkLoadPredicts)
{
  std::vector<std::vector<int>> rings(8);
  for (int r = 0; r < 8; ++r)
    for (int n = 0; n < 8; ++n)
      rings[r].push_back(n * 8 + r);
  topo::ClusterSpec rail;
  rail.kind = topo::ClusterKind::RailOptimized;
  rail.nodes = 8;
  rail.gpus_per_node = 8;
  rail.leaf_downlinks = 32;
  rail = no_latency(rail);
  topo::ClusterSpec fat = rail;
  fat.kind = topo::ClusterKind::FatTree;
  fat.leaf_downlinks = 8; // one node per leaf
  fat.oversubscription = 2;
  const double c = rail.nic_bandwidth.bytes_per_sec();
  const int steps = 14;
  const double chunk = 4e6;
  const auto on_rail = run_rings(rail, rings, sim::CommModel::Coupled, sim::EcmpMode::Spray, steps, chunk);
  const auto on_fat = run_rings(fat, rings, sim::CommModel::Coupled, sim::EcmpMode::Spray, steps, chunk);
  EXPECT_NEAR(on_rail[0], steps * chunk / c, 1e-9 * on_rail[0]);
  EXPECT_NEAR(on_fat[0], steps * chunk / (c / 2), 1e-9 * on_fat[0]);
  ASSERT_EQ(on_fat.size(), 3u + 8u);
  for (int r = 0; r < 8; ++r) {
    EXPECT_NEAR(on_rail[3 + r], 1.0, 1e-9) << "ring " << r;
    EXPECT_NEAR(on_fat[3 + r], 2.0, 1e-9) << "ring " << r;
  }
  // The per-step flows replay sees the same load.
  const auto flows_fat = run_rings(fat, rings, sim::CommModel::Flows, sim::EcmpMode::Spray, steps, chunk);
  EXPECT_NEAR(flows_fat[0], on_fat[0], 1e-9 * on_fat[0]);
}

} // namespace
} // namespace railyard
