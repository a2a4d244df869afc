// Every algorithm and protocol simulated against the time its step structure gives in closed form. A hop costs its
// path latency a (GPU -> NVSwitch -> GPU: two NVLink hops; across nodes GPU -> NIC -> leaf -> NIC -> GPU) plus the
// transfer at the rate the port's flows share; the expected times below add these up step by step.
#include "railyard/common/child_process.hpp"
#include "railyard/models/lowering.hpp"
#include "railyard/sim/collective_runner.hpp"
#include "railyard/topologies/topology.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

using namespace railyard;
using models::Algorithm;
using models::CollectiveKind;
using models::Protocol;

namespace {

constexpr double kKiB = 1024.0, kMiB = 1024.0 * 1024;

topo::ClusterSpec one_node(int gpus, double nvlink_Bps, double hop_s)
{
  topo::ClusterSpec s;
  s.kind = topo::ClusterKind::SingleNode;
  s.nodes = 1;
  s.gpus_per_node = gpus;
  s.nvlink_bandwidth = BytesPerSec(nvlink_Bps);
  s.nvlink_latency = Seconds(hop_s);
  return s;
}

// Nodes on one rail-optimized fabric: PCIe 0.5 us and NIC 1 us per end, so a GPU-to-GPU hop between nodes on one
// rail is 2 x (0.5 + 1) = 3 us; 1 us per NVLink hop inside a node.
topo::ClusterSpec rail_nodes(int nodes, int gpus_per_node, double nic_Bps)
{
  topo::ClusterSpec s;
  s.kind = topo::ClusterKind::RailOptimized;
  s.nodes = nodes;
  s.gpus_per_node = gpus_per_node;
  s.nvlink_bandwidth = units::GBps(400);
  s.nvlink_latency = units::us(0.5);
  s.pcie_bandwidth = units::GBps(64);
  s.pcie_latency = units::us(0.5);
  s.nic_bandwidth = BytesPerSec(nic_Bps);
  s.nic_latency = units::us(1.0);
  s.fabric_bandwidth = BytesPerSec(nic_Bps);
  s.fabric_latency = units::us(0.6);
  s.leaf_downlinks = 32;
  return s;
}

models::LoweringInput input(CollectiveKind kind, double bytes, std::vector<int> ranks, Algorithm a, Protocol p,
                            int channels, int gpus_per_node)
{
  models::LoweringInput in;
  in.call.kind = kind;
  in.call.bytes = Bytes(bytes);
  in.call.ranks = std::move(ranks);
  in.call.algorithm = a;
  in.call.protocol = p;
  in.call.channels = channels;
  in.gpus_per_node = gpus_per_node;
  return in;
}

std::vector<int> first(int n)
{
  std::vector<int> r(n);
  std::iota(r.begin(), r.end(), 0);
  return r;
}

// Simulates the schedules in order and returns each one's duration, then the flow totals (sent, received, bytes
// sent, bytes received).
std::vector<double> simulate(const topo::ClusterSpec& spec, const std::vector<models::Schedule>& schedules)
{
  return run_in_child([&] {
           const topo::Topology t = topo::build_topology(spec);
           sim::Simulation s(t, {});
           const auto timings = sim::run_schedules(s, schedules);
           std::vector<double> out;
           for (const auto& tm : timings)
             out.push_back(tm.duration().seconds());
           const auto& tot = s.network().totals();
           out.insert(out.end(),
                      {double(tot.flows_sent), double(tot.flows_received), tot.bytes_sent, tot.bytes_received});
           return out;
         })
      .values;
}

double simulate_one(const topo::ClusterSpec& spec, const models::LoweringInput& in)
{
  return simulate(spec, {models::lower(in)}).at(0);
}

// LL sends 8 data bytes per 16 wire bytes, LL128 120 per 128: ring all_gather in one loop is n-1 steps of S/n, each
// taking a + S/n x wire factor / B (the channels share the port), so T = (n-1)(a + w S / (n B)).
TEST(Protocols, WireEfficiencyStretchesEveryRingStep)
{
  const int n = 8, channels = 2;
  const double B = 100e9, hop = 0.5e-6, a = 2 * hop;
  // One loop: at most channels x n x chunk (LL chunk 32 KiB of payload, LL128 576,000 B).
  const double S = 480 * kKiB;
  const struct {
    Protocol p;
    double w;
  } cases[] = {{Protocol::LL, 16.0 / 8.0}, {Protocol::LL128, 128.0 / 120.0}, {Protocol::Simple, 1.0}};
  for (const auto& c : cases) {
    const double expected = (n - 1) * (a + c.w * S / (n * B));
    const double got = simulate_one(one_node(n, B, hop),
                                    input(CollectiveKind::AllGather, S, first(n), Algorithm::Ring, c.p, channels, n));
    EXPECT_NEAR(got, expected, 0.01 * expected) << models::to_string(c.p);
  }
}

// The overhead is a per-hop latency before forwarding, the launch a fixed cost before the first sends: ring
// all_reduce takes L + 2(n-1)(a + S/(nB) + o).
TEST(StepCosts, LaunchAndPerHopLatencyAddToEveryRingStep)
{
  const int n = 8;
  const double B = 100e9, hop = 0.5e-6, a = 2 * hop, S = 4 * kMiB, L = 8.4e-6, o = 3.4e-6;
  auto in = input(CollectiveKind::AllReduce, S, first(n), Algorithm::Ring, Protocol::Simple, 1, n);
  in.costs.launch = Seconds(L);
  in.costs.intra_hop = Seconds(o);
  const double expected = L + 2 * (n - 1) * (a + S / (n * B) + o);
  EXPECT_NEAR(simulate_one(one_node(n, B, hop), in), expected, 0.01 * expected);
}

// Tree on two GPUs: the leaf streams its K chunks up while the root streams the sums down on the other link. The
// leaf's step k sends chunk k up and receives chunk k-1 down, and its step k+1 goes once step k is done; the
// connection holds NCCL_STEPS = 8 chunks, so the receives are posted ahead and a connection streams its transfers
// back to back. With x = c/B: chunks 0 and 1 go at once, reaching the root at U_0 = x + a and U_1 = 2x + a (behind
// chunk 0); the root returns chunk k on arrival, D_k = U_k + x + a; the leaf sends chunk k+1 once chunk k-1 is back,
// U_{k+1} = D_{k-1} + x + a = U_{k-1} + 2(x + a). For even K the last sum arrives at D_{K-1} = (K+1) x + K a (one hop
// latency less than (K+1)(x + a), what one step of buffering per connection took).
TEST(Tree, TwoGpusStreamUpAndDownAtOnce)
{
  const double B = 100e9, hop = 0.5e-6, a = 2 * hop;
  for (Protocol p : {Protocol::Simple, Protocol::LL}) {
    const double chunk = p == Protocol::Simple ? 512 * kKiB : 32 * kKiB; // one NCCL step of payload
    const double wire = p == Protocol::Simple ? 1.0 : 2.0;
    const int K = 12;
    const double expected = (K + 1) * wire * chunk / B + K * a;
    const double got = simulate_one(one_node(2, B, hop),
                                    input(CollectiveKind::AllReduce, K * chunk, first(2), Algorithm::Tree, p, 1, 2));
    EXPECT_NEAR(got, expected, 0.01 * expected) << models::to_string(p);
  }
}

// Tree depth: 8 nodes of one GPU run NCCL's binary tree 0 - 4 - {2, 6} - {1, 3, 5, 7} (trees.cc): height 3 and
// depth 3. A message of 8 bytes goes up 3 hops and down 3 hops: 6 a with a = 3 us.
TEST(Tree, TinyMessageCrossesTheTreeUpAndDown)
{
  const double a = 3e-6;
  const double expected = 6 * a;
  const double got = simulate_one(rail_nodes(8, 1, 50e9),
                                  input(CollectiveKind::AllReduce, 8, first(8), Algorithm::Tree, Protocol::LL, 1, 1));
  EXPECT_NEAR(got, expected, 0.01 * expected);
}

// A chain of n GPUs on one node: its middle GPUs send every chunk twice (up and down) over one port, so in steady
// state a chunk leaves every c/(B/2) plus the hop latency a the chain's step order leaves between chunks (a middle
// rank forwards a chunk in the step after the one it arrived in; the connection FIFO's depth does not hide that), and
// busbw = 2(n-1)/n x S / T approaches (n-1)/n x B x (2c/B) / (2c/B + a); the pipeline's fill and drain (2(n-1)
// hops) cost at most 2n more chunks.
TEST(Tree, ChainOnOneNodeHalvesThePortForUpAndDown)
{
  const int n = 4, K = 256;
  const double B = 100e9, hop = 0.5e-6, a = 2 * hop, chunk = 512 * kKiB, S = K * chunk;
  const double t = simulate_one(one_node(n, B, hop),
                                input(CollectiveKind::AllReduce, S, first(n), Algorithm::Tree, Protocol::Simple, 1, n));
  const double busbw = 2.0 * (n - 1) / n * S / t;
  const double steady = (n - 1.0) / n * B * (2 * chunk / B) / (2 * chunk / B + a);
  EXPECT_LT(busbw, steady * 1.001);
  EXPECT_GT(busbw, steady * K / (K + 2.0 * n));
}

// NVLS on one node: each loop of D = n x chunk bytes per channel puts D (n+1)/n on every port at efficiency e, the
// C channels sharing the port: T = (n+1)/n x S / (e B) + loops x a. With 5..8 GPUs busbw then grows as
// 2(n-1)/(n+1), the shape NVIDIA/nccl issue 1455 reports (420, 440, 460, 480 GB/s).
TEST(Nvls, OneNodeLoopsAtTheMultimemEfficiency)
{
  const double B = 370.8e9, hop = 0.5e-6, a = 2 * hop, e = 0.85;
  const int channels = 16;
  const double S = 1024 * kMiB;
  for (int n : {5, 8}) {
    auto in = input(CollectiveKind::AllReduce, S, first(n), Algorithm::Nvls, Protocol::Simple, channels, 8);
    in.costs.nvls_efficiency = e;
    const double loops = std::ceil(S / channels / (n * 128 * kKiB));
    const double expected = (n + 1.0) / n * S / (e * B) + loops * a;
    EXPECT_NEAR(simulate_one(one_node(8, B, hop), in), expected, 0.01 * expected) << n << " GPUs";
  }
}

// NVLSTree, 2 nodes x 4 GPUs, 8 bytes: NVLS reduce in the node (a_i), up to the root node (a_n), down (a_n) after
// the network hop latency o, NVLS multicast (a_i) after o again: L + 2 a_i + 2 a_n + 2 o.
TEST(NvlsTree, TinyMessageCrossesNvlsAndTheNetworkTwice)
{
  const double ai = 1e-6, an = 3e-6, o = 2e-6, L = 5e-6;
  auto in = input(CollectiveKind::AllReduce, 8, first(8), Algorithm::NvlsTree, Protocol::Simple, 1, 4);
  in.costs.launch = Seconds(L);
  in.costs.inter_hop = Seconds(o);
  const double expected = L + 2 * ai + 2 * an + 2 * o;
  EXPECT_NEAR(simulate_one(rail_nodes(2, 4, 50e9), in), expected, 0.01 * expected);
}

// PAT all_gather, 8 nodes x 1 GPU: log2(8) = 3 steps per chunk moving 1, 2, 4 blocks, so the NIC carries
// (n-1)/n S in all and every step of every chunk pays one hop a: T = (n-1)/n S/B + pieces x 3 a.
TEST(Pat, AllGatherMovesDoublingBlocksOverTheNics)
{
  const int n = 8;
  const double B = 50e9, a = 3e-6, S = 64 * kMiB;
  const double pieces = S / n / (512 * kKiB); // 512 KiB chunks: 512 KiB x 1 channel x 32 <= 64 MiB
  const double expected = (n - 1.0) / n * S / B + pieces * 3 * a;
  const double got = simulate_one(
      rail_nodes(n, 1, B), input(CollectiveKind::AllGather, S, first(n), Algorithm::Pat, Protocol::Simple, 1, 1));
  EXPECT_NEAR(got, expected, 0.01 * expected);
}

// Broadcast and reduce: a pipeline of K chunks over a chain of n-1 hops, each rank forwarding a chunk as it arrives.
// A connection holds NCCL_STEPS = 8 chunks (BROADCAST_CHUNKSTEPS = 1) and streams them back to back, so the first
// rank sends chunk k at k c/B and the hop latency is paid once per hop, not once per chunk: chunk k reaches position p
// at (k + p) c/B + p a, the last at (K + n - 2) c/B + (n - 1) a. (One step of buffering per connection, before,
// took (K + n - 2)(c/B + a).)
TEST(RingChain, BroadcastAndReducePipelineChunksAlongTheRing)
{
  const int n = 8, K = 20;
  const double B = 100e9, hop = 0.5e-6, a = 2 * hop, c = 512 * kKiB;
  const double expected = (K + n - 2) * c / B + (n - 1) * a;
  for (auto kind : {CollectiveKind::Broadcast, CollectiveKind::Reduce}) {
    auto in = input(kind, K * c, first(n), Algorithm::Ring, Protocol::Simple, 1, n);
    in.call.root = 3;
    EXPECT_NEAR(simulate_one(one_node(n, B, hop), in), expected, 0.01 * expected) << models::to_string(kind);
  }
}

// alltoall on one node: all n-1 rounds at once, each port sending S/n to each of n-1 peers: T = (n-1)/n S/B + a.
TEST(P2p, AlltoallRoundsShareThePort)
{
  const int n = 8;
  const double B = 100e9, hop = 0.5e-6, a = 2 * hop, S = 64 * kMiB;
  const double expected = (n - 1.0) / n * S / B + a;
  EXPECT_NEAR(simulate_one(one_node(n, B, hop),
                           input(CollectiveKind::AllToAll, S, first(n), Algorithm::Ring, Protocol::Simple, 16, n)),
              expected, 0.01 * expected);
}

// A group runs its members at once: two sends between disjoint GPU pairs take as long as one (S/B + a); seven
// sends out of one GPU share its port (7 S/B + a).
TEST(Groups, MembersRunAtOnce)
{
  const double B = 100e9, hop = 0.5e-6, a = 2 * hop, S = 16 * kMiB;
  const auto disjoint = models::merge_group({models::lower_p2p({{0, 1, Bytes(S)}}, 8, 8, {}, Seconds(0)),
                                             models::lower_p2p({{2, 3, Bytes(S)}}, 8, 8, {}, Seconds(0))},
                                            8);
  std::vector<models::P2pTransfer> fan;
  for (int d = 1; d < 8; ++d)
    fan.push_back({0, d, Bytes(S)});
  const auto fanout = models::lower_p2p(fan, 8, 8, {}, Seconds(0));
  // Each in its own simulation: run back to back, GPUs 4-7 would start the second while GPU 0 still sends.
  EXPECT_NEAR(simulate(one_node(8, B, hop), {disjoint}).at(0), S / B + a, 0.01 * (S / B + a));
  EXPECT_NEAR(simulate(one_node(8, B, hop), {fanout}).at(0), 7 * S / B + a, 0.01 * (7 * S / B + a));
}

// PXN: an alltoall between two rail-optimized nodes routes every cross-rail transfer over NVLink to the GPU on the
// destination's rail, so each one touches exactly one leaf, the destination's rail, and no spine.
TEST(P2p, PxnKeepsAlltoallTrafficOnTheDestinationRail)
{
  const auto spec = rail_nodes(2, 8, 50e9);
  const topo::Topology t = topo::build_topology(spec);
  const auto s =
      models::lower(input(CollectiveKind::AllToAll, 16 * kMiB, first(16), Algorithm::Ring, Protocol::Simple, 16, 8));
  int checked = 0;
  for (const auto& ch : s.channels)
    for (const auto& st : ch) {
      const auto& p = s.patterns[st.pattern];
      for (int r = 0; r < s.nranks(); ++r)
        for (int peer : p.sends(r)) {
          const int src = s.gpus[r], dst = s.gpus[peer];
          if (t.node_of(src) == t.node_of(dst)) continue;
          int leaves = 0;
          for (auto id : t.route(src, dst, 0, 1, true)) {
            const auto& v = t.vertex(t.link_target(id));
            EXPECT_NE(v.kind, topo::VertexKind::Spine);
            if (v.kind == topo::VertexKind::Leaf) {
              ++leaves;
              EXPECT_EQ(v.local, t.local_of(dst));
            }
          }
          EXPECT_EQ(leaves, 1) << src << "->" << dst;
          ++checked;
        }
    }
  EXPECT_EQ(checked, 2 * 8 * 8); // every ordered pair of GPUs on different nodes
}

// Whatever the algorithm, every flow sent is received, byte for byte.
TEST(Conservation, EveryAlgorithmDeliversWhatItSends)
{
  const auto spec = rail_nodes(2, 4, 50e9);
  std::vector<models::Schedule> s;
  s.push_back(
      models::lower(input(CollectiveKind::AllReduce, 3 * kMiB, first(8), Algorithm::Ring, Protocol::LL128, 3, 4)));
  s.push_back(models::lower(input(CollectiveKind::AllReduce, 3 * kMiB, first(8), Algorithm::Tree, Protocol::LL, 2, 4)));
  s.push_back(
      models::lower(input(CollectiveKind::AllReduce, 3 * kMiB, first(8), Algorithm::NvlsTree, Protocol::Simple, 2, 4)));
  s.push_back(
      models::lower(input(CollectiveKind::AllGather, 3 * kMiB, {0, 4}, Algorithm::Pat, Protocol::Simple, 2, 4)));
  s.push_back(
      models::lower(input(CollectiveKind::Broadcast, 3 * kMiB, first(8), Algorithm::Ring, Protocol::Simple, 2, 4)));
  s.push_back(
      models::lower(input(CollectiveKind::AllToAll, 3 * kMiB, first(8), Algorithm::Ring, Protocol::Simple, 4, 4)));
  const auto out = simulate(spec, s);
  const std::size_t k = s.size();
  EXPECT_EQ(out[k], out[k + 1]);
  EXPECT_EQ(out[k + 2], out[k + 3]);
  double wire = 0;
  for (const auto& sch : s)
    for (const auto& ch : sch.channels)
      for (const auto& st : ch) {
        const auto& p = sch.patterns[st.pattern];
        for (int r = 0; r < sch.nranks(); ++r)
          for (std::size_t i = 0; i < p.sends(r).size(); ++i)
            wire += std::floor(st.wire_bytes.bytes() * p.send_weight(r, i));
      }
  EXPECT_NEAR(out[k + 2], wire, 1e-9 * wire);
}

} // namespace
