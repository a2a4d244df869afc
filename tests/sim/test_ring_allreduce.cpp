// Ring all-reduce against its closed form, and the rail-optimized multi-node case against the single node.
#include "railyard/common/child_process.hpp"

#include "railyard/models/lowering.hpp"
#include "railyard/sim/collective_runner.hpp"
#include "railyard/topologies/topology.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

using namespace railyard;

namespace {

// NCCL's Simple protocol: a 4 MiB buffer per connection in NCCL_STEPS = 8 steps, ring all-reduce moves
// ALLREDUCE_CHUNKSTEPS = 4 steps per chunk (NCCL src/include/collectives.h): chunk = 4 MiB / 8 * 4 = 2 MiB.
constexpr double kSimpleChunk = 4.0 * 1024 * 1024 / 8 * 4;

topo::ClusterSpec single_node(int gpus, BytesPerSec nvlink, Seconds hop_latency)
{
  topo::ClusterSpec s;
  s.kind = topo::ClusterKind::SingleNode;
  s.nodes = 1;
  s.gpus_per_node = gpus;
  s.nvlink_bandwidth = nvlink;
  s.nvlink_latency = hop_latency;
  return s;
}

models::Schedule ring_allreduce(const topo::Topology& t, Bytes size, int channels,
                                models::CollectiveKind kind = models::CollectiveKind::AllReduce)
{
  models::CollectiveCall call;
  call.kind = kind;
  call.bytes = size;
  call.ranks.resize(t.num_gpus());
  std::iota(call.ranks.begin(), call.ranks.end(), 0);
  call.algorithm = models::Algorithm::Ring;
  call.protocol = models::Protocol::Simple;
  call.channels = channels;
  return models::lower({call, t.gpus_per_node(), Seconds(0)});
}

double simulate(const topo::ClusterSpec& spec, Bytes size, int channels,
                models::CollectiveKind kind = models::CollectiveKind::AllReduce)
{
  const auto out = railyard::run_in_child([&] {
    const topo::Topology t = topo::build_topology(spec);
    sim::Simulation s(t, {});
    const auto timings = sim::run_schedules(s, {ring_allreduce(t, size, channels, kind)});
    return std::vector<double>{timings.at(0).duration().seconds()};
  }).values;
  return out.at(0);
}

struct RingCase {
  int n;
  double size_bytes;
  int channels;
};

void PrintTo(const RingCase& c, std::ostream* os)
{
  *os << "n=" << c.n << " bytes=" << c.size_bytes << " channels=" << c.channels;
}

class RingClosedForm : public ::testing::TestWithParam<RingCase> {};

// T = 2(n-1) (L a + S / (n B)): every one of the 2(n-1) steps of each of the L chunk loops pays the path latency a
// (GPU -> NVSwitch -> GPU: two NVLink hops), and each rank pushes S/n bytes per pass through its NVLink port of
// bandwidth B, which the channels share equally. L = ceil(S / (C n chunk)).
TEST_P(RingClosedForm, MatchesTwoNMinusOneSteps)
{
  const auto [n, size, channels] = GetParam();
  const double B = 100e9;
  const double hop = 0.5e-6;
  const double a = 2 * hop;
  const double loops = std::ceil(size / (channels * n * kSimpleChunk));
  const double expected = 2.0 * (n - 1) * (loops * a + size / (n * B));
  const double got = simulate(single_node(n, BytesPerSec(B), Seconds(hop)), Bytes(size), channels);
  EXPECT_NEAR(got, expected, 0.01 * expected) << "n=" << n << " S=" << size << " C=" << channels;
}

INSTANTIATE_TEST_SUITE_P(Sizes, RingClosedForm,
                         ::testing::Values(RingCase{8, 64.0 * 1024 * 1024, 1}, RingCase{8, 64.0 * 1024 * 1024, 4},
                                           RingCase{4, 1024.0 * 1024 * 1024, 8}, RingCase{8, 1024.0 * 1024, 2},
                                           RingCase{2, 256.0 * 1024 * 1024, 1}),
                         [](const ::testing::TestParamInfo<RingCase>& info) {
                           return "n" + std::to_string(info.param.n) + "_bytes" +
                                  std::to_string(static_cast<long long>(info.param.size_bytes)) + "_ch" +
                                  std::to_string(info.param.channels);
                         });

// All-gather moves the same slices in n-1 steps instead of 2(n-1).
TEST(RingAllGather, TakesNMinusOneSteps)
{
  const int n = 8, channels = 2;
  const double size = 128.0 * 1024 * 1024, B = 100e9, hop = 0.5e-6;
  const double loops = std::ceil(size / (channels * n * kSimpleChunk));
  const double expected = (n - 1) * (loops * 2 * hop + size / (n * B));
  const double got = simulate(single_node(n, BytesPerSec(B), Seconds(hop)), Bytes(size), channels,
                              models::CollectiveKind::AllGather);
  EXPECT_NEAR(got, expected, 0.01 * expected);
}

// 8 nodes x 8 GPUs on a rail-optimized fabric. Channel c enters every node on rail c mod 8 and leaves through that
// rail's NIC (PXN), so each NIC carries C/8 channels while each GPU's NVLink port carries C. A channel's rate is
// min(B_nvlink / C, B_nic * 8 / C), so busbw(64 GPUs) / busbw(8 GPUs) = min(B_nvlink, 8 B_nic) / B_nvlink: the
// single node scaled by the slower of the two per-GPU paths. Latencies are set to 1 ns so bandwidth dominates.
TEST(RingRailOptimized, MultiNodeBusbwIsSingleNodeScaledBySlowerLink)
{
  const double nvlink = 450e9, nic = 50e9; // H100 NVLink4 per direction; ConnectX-7 400 Gb/s
  const int channels = 16;
  const double size = 1024.0 * 1024 * 1024;
  topo::ClusterSpec one = single_node(8, BytesPerSec(nvlink), units::ns(1));
  one.pcie_latency = units::ns(1);
  one.nic_latency = units::ns(1);
  topo::ClusterSpec multi = one;
  multi.kind = topo::ClusterKind::RailOptimized;
  multi.nodes = 8;
  multi.nic_bandwidth = BytesPerSec(nic);
  multi.fabric_bandwidth = BytesPerSec(nic);
  multi.fabric_latency = units::ns(1);
  multi.leaf_downlinks = 8;

  const double t1 = simulate(one, Bytes(size), channels);
  const double t64 = simulate(multi, Bytes(size), channels);
  const double busbw1 = size / t1 * 2.0 * 7 / 8;
  const double busbw64 = size / t64 * 2.0 * 63 / 64;
  const double expected = busbw1 * std::min(nvlink, 8 * nic) / nvlink;
  EXPECT_NEAR(busbw64, expected, 0.01 * expected) << "busbw 8 GPUs " << busbw1 / 1e9 << " GB/s, 64 GPUs "
                                                  << busbw64 / 1e9 << " GB/s";
}

// Every cross-node edge of every channel's ring stays on the rail it enters the next node on: with PXN its route
// touches exactly one leaf, the one of that rail.
TEST(RingRailOptimized, CrossNodeEdgesStayOnOneRailLeaf)
{
  topo::ClusterSpec spec;
  spec.kind = topo::ClusterKind::RailOptimized;
  spec.nodes = 4;
  spec.gpus_per_node = 8;
  spec.leaf_downlinks = 4;
  const topo::Topology t = topo::build_topology(spec);
  const auto schedule = ring_allreduce(t, Bytes(64e6), 8);
  for (int c = 0; c < 8; ++c) {
    const auto& p = schedule.patterns[c];
    for (int r = 0; r < t.num_gpus(); ++r) {
      const int dst = p.sends(r)[0];
      if (t.node_of(r) == t.node_of(dst))
        continue;
      const auto path = t.route(r, dst, 0, 1, true);
      int leaves = 0;
      for (auto id : path) {
        const auto& v = t.vertex(t.link_target(id));
        if (v.kind == topo::VertexKind::Leaf) {
          ++leaves;
          EXPECT_EQ(v.local, t.local_of(dst)) << "channel " << c << " edge " << r << "->" << dst;
        }
        EXPECT_NE(v.kind, topo::VertexKind::Spine) << "channel " << c << " edge " << r << "->" << dst;
      }
      EXPECT_EQ(leaves, 1);
    }
  }
}

// Every byte sent is received, and the total matches the schedule: each rank sends 2(n-1)/n of S per all-reduce.
TEST(RingAllReduce, BytesSentEqualBytesReceived)
{
  const auto spec = single_node(8, units::GBps(100), units::us(0.5));
  const double size = 48.0 * 1024 * 1024;
  const auto out = railyard::run_in_child([&] {
    const topo::Topology t = topo::build_topology(spec);
    sim::Simulation s(t, {});
    sim::run_schedules(s, {ring_allreduce(t, Bytes(size), 3)});
    const auto& tot = s.network().totals();
    return std::vector<double>{double(tot.flows_sent), double(tot.flows_received), tot.bytes_sent, tot.bytes_received};
  }).values;
  EXPECT_EQ(out[0], out[1]);
  EXPECT_EQ(out[2], out[3]);
  EXPECT_NEAR(out[2], 8 * 2.0 * 7 / 8 * size, 8 * 2.0 * 7 * 3); // rounding up to whole bytes per step at most
}

} // namespace
