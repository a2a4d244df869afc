// sim::NcclCommunicator: what NCCL computes once per communicator (graphs, channels, p2p lanes), reused by every call.
// A communicator's call must resolve exactly as a fresh, one-call resolution does (nothing of one call leaks into the
// next), its p2p lanes follow NCCL's ncclTopoComputeP2pChannels (channels rounded up to a power of two, two per
// peer), and a communicator with unequal ranks per node has no cost-model input, as NCCL's model assumes equal ones.
#include "railyard/sim/nccl_resolve.hpp"
#include "replay_support.hpp"

#include <gtest/gtest.h>

using namespace railyard;
using models::CollectiveKind;

namespace {

using test::first_ranks;
using test::h100_nodes;

int pow2_up(int v)
{
  int p = 1;
  while (p < v)
    p <<= 1;
  return p;
}

} // namespace

TEST(NcclCommunicator, EveryCallResolvesAsAFreshResolutionDoes)
{
  const topo::Topology t = topo::build_topology(h100_nodes(4));
  sim::NcclSettings settings;
  settings.system = "dgx_h100";
  const sim::NcclCommunicator comm(first_ranks(32), t, settings);
  // Large, small, large again: the second large call must not see anything of the small one.
  const double sizes[] = {1024.0 * 1024 * 1024, 8, 64 * 1024, 1024.0 * 1024 * 1024, 4 * 1024 * 1024};
  for (CollectiveKind kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter,
                              CollectiveKind::AllToAll}) {
    for (double bytes : sizes) {
      models::CollectiveCall call;
      call.kind = kind;
      call.bytes = Bytes(bytes);
      call.ranks = first_ranks(32);
      const auto reused = comm.resolve(call, {});
      const auto fresh = sim::resolve_call(call, t, settings, {});
      EXPECT_EQ(reused.algorithm, fresh.algorithm) << models::to_string(kind) << " " << bytes;
      EXPECT_EQ(reused.protocol, fresh.protocol) << models::to_string(kind) << " " << bytes;
      EXPECT_EQ(reused.channels, fresh.channels) << models::to_string(kind) << " " << bytes;
      const auto a = comm.lowering_input(reused, Seconds(1e-6));
      const auto b = sim::lowering_input(fresh, t, settings, Seconds(1e-6));
      EXPECT_EQ(a.costs.launch.seconds(), b.costs.launch.seconds());
      EXPECT_EQ(a.costs.intra_hop.seconds(), b.costs.intra_hop.seconds());
      EXPECT_EQ(a.costs.inter_hop.seconds(), b.costs.inter_hop.seconds());
    }
  }
}

TEST(NcclCommunicator, P2pLanesAreTheChannelsRoundedUpToAPowerOfTwoOverTwo)
{
  const topo::Topology t = topo::build_topology(h100_nodes(4));
  for (int n : {8, 16, 32}) {
    const sim::NcclCommunicator comm(first_ranks(n), t, {});
    ASSERT_TRUE(comm.tuning().has_value()) << n;
    const int channels = comm.tuning()->comm_channels;
    ASSERT_GT(channels, 0);
    EXPECT_EQ(comm.p2p_lanes(), std::max(1, pow2_up(channels) / 2)) << n << " ranks, " << channels << " channels";
    EXPECT_EQ(comm.tuning()->nranks, n);
    EXPECT_EQ(comm.tuning()->nnodes, (n + 7) / 8);
    EXPECT_EQ(comm.tuning()->gpus_per_node, std::min(n, 8));
  }
}

TEST(NcclCommunicator, UnequalRanksPerNodeHaveNoCostModelInput)
{
  const topo::Topology t = topo::build_topology(h100_nodes(4));
  std::vector<int> ranks = first_ranks(8);
  ranks.push_back(8); // eight GPUs of node 0 and one of node 1
  const sim::NcclCommunicator comm(ranks, t, {});
  EXPECT_FALSE(comm.tuning().has_value());
  EXPECT_GE(comm.p2p_lanes(), 1);
  models::CollectiveCall call;
  call.kind = CollectiveKind::AllReduce;
  call.bytes = Bytes(1 << 20);
  call.ranks = ranks;
  EXPECT_THROW((void)comm.resolve(call, {}), InputError); // NCCL's model needs equal ranks per node
}
