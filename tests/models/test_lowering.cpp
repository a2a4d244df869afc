// Collective lowering without simulation: NCCL's buffer and chunk sizes, its trees, the fixed costs taken from its
// tuning constants, the bytes every algorithm makes each rank send, the step structure, and the refusals. Every
// expected number is written out from NCCL's definitions (file and constant named beside it) or from the
// collective's own arithmetic, not from the lowering's output.
#include "railyard/models/lowering.hpp"
#include "railyard/models/nccl_tuning.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>

using namespace railyard;
using namespace railyard::models;

namespace {

constexpr double kKiB = 1024.0, kMiB = 1024.0 * 1024, kGiB = 1024.0 * 1024 * 1024;

CollectiveCall make_call(CollectiveKind kind, double bytes, std::vector<int> ranks, Algorithm a, Protocol p,
                         int channels)
{
  CollectiveCall c;
  c.kind = kind;
  c.bytes = Bytes(bytes);
  c.ranks = std::move(ranks);
  c.algorithm = a;
  c.protocol = p;
  c.channels = channels;
  return c;
}

std::vector<int> first(int n)
{
  std::vector<int> r(n);
  std::iota(r.begin(), r.end(), 0);
  return r;
}

Schedule lower_call(const CollectiveCall& c, int gpus_per_node = 8)
{
  LoweringInput in;
  in.call = c;
  in.gpus_per_node = gpus_per_node;
  return lower(in);
}

double total_sent(const Schedule& s)
{
  double t = 0;
  for (int r = 0; r < s.nranks(); ++r)
    t += s.bytes_sent_by(r).bytes();
  return t;
}

TEST(ProtocolSpec, WireEfficiencyAndBuffersFromNcclsDefinitions)
{
  // src/include/device.h: an LL line carries 8 data bytes and 8 flag bytes; an LL128 line of 128 bytes carries 120
  // (NCCL_LL128_DATAELEMS 15 of NCCL_LL128_LINEELEMS 16 eight-byte words). Buffers (src/init.cc): Simple 4 MiB; LL
  // NCCL_LL_LINES_PER_THREAD 8 x NCCL_LL_MAX_NTHREADS 512 x NCCL_STEPS 8 x 16 B; LL128 NCCL_LL128_ELEMS_PER_THREAD
  // 120 x NCCL_LL128_MAX_NTHREADS 640 x NCCL_STEPS 8 x 8 B. One step is buffer / NCCL_STEPS.
  EXPECT_DOUBLE_EQ(protocol_spec(Protocol::LL).wire_per_payload, 16.0 / 8.0);
  EXPECT_DOUBLE_EQ(protocol_spec(Protocol::LL128).wire_per_payload, 128.0 / 120.0);
  EXPECT_DOUBLE_EQ(protocol_spec(Protocol::Simple).wire_per_payload, 1.0);
  EXPECT_DOUBLE_EQ(protocol_spec(Protocol::Simple).step_wire.bytes(), 4 * kMiB / 8);
  EXPECT_DOUBLE_EQ(protocol_spec(Protocol::LL).step_wire.bytes(), 8.0 * 512 * 8 * 16 / 8);
  EXPECT_DOUBLE_EQ(protocol_spec(Protocol::LL128).step_wire.bytes(), 120.0 * 640 * 8 * 8 / 8);
}

TEST(NcclChunk, FollowsCalcCollChunking)
{
  const auto AR = CollectiveKind::AllReduce;
  // Ring Simple all_reduce: ALLREDUCE_CHUNKSTEPS = NCCL_STEPS / 2 = 4 steps of 512 KiB (src/include/collectives.h).
  EXPECT_DOUBLE_EQ(nccl_chunk(AR, Algorithm::Ring, Protocol::Simple, Bytes(kGiB), 24, 8, 1, 8).bytes(), 4 * 512 * kKiB);
  // BROADCAST_CHUNKSTEPS = 1.
  EXPECT_DOUBLE_EQ(
      nccl_chunk(CollectiveKind::Broadcast, Algorithm::Ring, Protocol::Simple, Bytes(kGiB), 24, 8, 1, 8).bytes(),
      512 * kKiB);
  // LL: one step, half of it data. LL128: one step, 15 of 16 words data.
  EXPECT_DOUBLE_EQ(nccl_chunk(AR, Algorithm::Ring, Protocol::LL, Bytes(kGiB), 24, 8, 1, 8).bytes(), 64 * kKiB / 2);
  EXPECT_DOUBLE_EQ(nccl_chunk(AR, Algorithm::Ring, Protocol::LL128, Bytes(kGiB), 24, 8, 1, 8).bytes(),
                   614400.0 / 16 * 15);
  // Tree Simple: one step, chunkSteps applies to Ring only.
  EXPECT_DOUBLE_EQ(nccl_chunk(AR, Algorithm::Tree, Protocol::Simple, Bytes(kGiB), 16, 128, 16, 8).bytes(), 512 * kKiB);
  // NVLS: NCCL_NVLS_CHUNKSIZE 128 KiB for large messages; with 16 channels x 8 heads = 128 concurrent chunks a
  // 1 MiB message is below 64 x 128 x 128 KiB (-> 64 KiB), 8 x 128 x 64 KiB (-> 32 KiB) and 2 x 128 x 32 KiB
  // (-> 16 KiB).
  EXPECT_DOUBLE_EQ(nccl_chunk(AR, Algorithm::Nvls, Protocol::Simple, Bytes(16 * kGiB), 16, 8, 1, 8).bytes(),
                   128 * kKiB);
  EXPECT_DOUBLE_EQ(nccl_chunk(AR, Algorithm::Nvls, Protocol::Simple, Bytes(kMiB), 16, 8, 1, 8).bytes(), 16 * kKiB);
  // NVLSTree from 4 nodes: NCCL_NVLSTREE_MAX_CHUNKSIZE's default caps it at 64 KiB.
  EXPECT_DOUBLE_EQ(nccl_chunk(AR, Algorithm::NvlsTree, Protocol::Simple, Bytes(16 * kGiB), 16, 128, 16, 8).bytes(),
                   64 * kKiB);
  // PAT all_gather: halve 512 KiB while chunk x channels x 32 exceeds the size, not below 64 KiB.
  EXPECT_DOUBLE_EQ(
      nccl_chunk(CollectiveKind::AllGather, Algorithm::Pat, Protocol::Simple, Bytes(4 * kMiB), 1, 8, 8, 1).bytes(),
      128 * kKiB);
  EXPECT_DOUBLE_EQ(
      nccl_chunk(CollectiveKind::AllGather, Algorithm::Pat, Protocol::Simple, Bytes(kMiB), 1, 8, 8, 1).bytes(),
      64 * kKiB);
}

TEST(RcclChunk, KeepsTheTreeAndPipelineLoopsNcclDropped)
{
  const auto AR = CollectiveKind::AllReduce;
  // ROCm/rccl 0cbce2a7 src/enqueue.cc computeCollChunkInfo, worked by hand. Tree/Simple all_reduce on 2 nodes of 8:
  // depth = 16 / 2 - 1 + log2i(2) = 8 (src/graph/connect.cc). 32 MiB on 64 channels starts at one 512 KiB step:
  //   32 MiB / (64 x 512 KiB) = 1 < 64 -> 256 KiB: 2 < 64 -> 128 KiB (the first loop stops at 131072);
  //   4 < 32 -> 64 KiB (the second stops at 65536); 8 < 8 is false: 64 KiB.
  EXPECT_DOUBLE_EQ(rccl_chunk(AR, Algorithm::Tree, Protocol::Simple, Bytes(32 * kMiB), 64, 16, 2, 1).bytes(),
                   64 * kKiB);
  // 8 MiB: 128 KiB after the first loop, 1 < 32 -> 64 KiB, then 2 < 8 -> 32 KiB, where the third loop stops.
  EXPECT_DOUBLE_EQ(rccl_chunk(AR, Algorithm::Tree, Protocol::Simple, Bytes(8 * kMiB), 64, 16, 2, 1).bytes(), 32 * kKiB);
  // 16 GiB on 64 channels: 256 MiB per channel is 512 chunks of 512 KiB, >= 64: unchanged, as NCCL's.
  EXPECT_DOUBLE_EQ(rccl_chunk(AR, Algorithm::Tree, Protocol::Simple, Bytes(16 * kGiB), 64, 16, 2, 1).bytes(),
                   512 * kKiB);
  // 16 nodes of 8: depth 7 + 4 = 11; 1 GiB on 16 channels is 128 chunks of 512 KiB per channel, not below 88.
  EXPECT_DOUBLE_EQ(rccl_chunk(AR, Algorithm::Tree, Protocol::Simple, Bytes(kGiB), 16, 128, 16, 1).bytes(), 512 * kKiB);
  // ... while 256 MiB (32 < 88 -> 256 KiB: 64 < 88 -> 128 KiB) stops at the first loop's floor: 128 < 44 is false.
  EXPECT_DOUBLE_EQ(rccl_chunk(AR, Algorithm::Tree, Protocol::Simple, Bytes(256 * kMiB), 16, 128, 16, 1).bytes(),
                   128 * kKiB);
  // Ring/Simple broadcast (ncclPatternPipelineFrom), 8 ranks, 24 channels, 64 MiB: 5 < 64 -> 256 KiB (floor of the
  // first loop); 10 < 32 -> 128 KiB; 21 < 16 is false: 128 KiB. NCCL 2.26.2 keeps one 512 KiB step.
  EXPECT_DOUBLE_EQ(
      rccl_chunk(CollectiveKind::Broadcast, Algorithm::Ring, Protocol::Simple, Bytes(64 * kMiB), 24, 8, 1, 8).bytes(),
      128 * kKiB);
  EXPECT_DOUBLE_EQ(
      nccl_chunk(CollectiveKind::Broadcast, Algorithm::Ring, Protocol::Simple, Bytes(64 * kMiB), 24, 8, 1, 8).bytes(),
      512 * kKiB);
  // Everything else is NCCL's: ring all_reduce (4 steps), Tree/LL (half a step).
  EXPECT_DOUBLE_EQ(rccl_chunk(AR, Algorithm::Ring, Protocol::Simple, Bytes(32 * kMiB), 64, 16, 2, 16).bytes(),
                   4 * 512 * kKiB);
  EXPECT_DOUBLE_EQ(rccl_chunk(AR, Algorithm::Tree, Protocol::LL, Bytes(32 * kMiB), 64, 16, 2, 1).bytes(),
                   nccl_chunk(AR, Algorithm::Tree, Protocol::LL, Bytes(32 * kMiB), 64, 16, 2, 1).bytes());
}

// The binary tree drawn in NVIDIA/nccl src/graph/trees.cc for 14 ranks:
//   0 - 8;  8 - 4, 12;  4 - 2, 6;  12 - 10, 13;  2 - 1, 3;  6 - 5, 7;  10 - 9, 11.
TEST(NcclTrees, BtreeMatchesTheDrawingInTreesCc)
{
  const std::vector<std::pair<int, std::set<int>>> drawn = {{0, {8}},    {8, {4, 12}}, {4, {2, 6}},  {12, {10, 13}},
                                                            {2, {1, 3}}, {6, {5, 7}},  {10, {9, 11}}};
  std::vector<int> parent(14, -2);
  for (const auto& [p, kids] : drawn) {
    const TreeLinks t = nccl_btree(14, p);
    EXPECT_EQ(std::set<int>(t.children.begin(), t.children.end()), kids) << "rank " << p;
    for (int k : kids)
      parent[k] = p;
  }
  parent[0] = -1;
  for (int r = 0; r < 14; ++r) {
    EXPECT_EQ(nccl_btree(14, r).parent, parent[r]) << "rank " << r;
    if (std::none_of(drawn.begin(), drawn.end(), [&](const auto& d) { return d.first == r; })) {
      EXPECT_TRUE(nccl_btree(14, r).children.empty()) << "rank " << r << " is a leaf in the drawing";
    }
  }
}

// trees.cc: the second tree mirrors the first for an even rank count (root n-1; for 12 ranks 11 - 3, 3 - 1, 7) and
// shifts it by one for an odd count (root 1), so that no rank is a leaf of both trees.
TEST(NcclTrees, DoubleTreeMirrorsOrShiftsAndSharesNoLeaf)
{
  EXPECT_EQ(nccl_dtree(12, 11, 1).parent, -1);
  EXPECT_EQ(nccl_dtree(12, 11, 1).children, std::vector<int>{3});
  const auto three = nccl_dtree(12, 3, 1).children;
  EXPECT_EQ(std::set<int>(three.begin(), three.end()), (std::set<int>{1, 7}));
  EXPECT_EQ(nccl_dtree(13, 1, 1).parent, -1);
  for (int n = 3; n <= 33; ++n) {
    for (int tree = 0; tree < 2; ++tree) {
      int roots = 0;
      for (int r = 0; r < n; ++r)
        roots += nccl_dtree(n, r, tree).parent == -1 ? 1 : 0;
      EXPECT_EQ(roots, 1) << "n=" << n << " tree " << tree;
    }
    for (int r = 0; r < n; ++r)
      EXPECT_FALSE(nccl_dtree(n, r, 0).children.empty() && nccl_dtree(n, r, 1).children.empty())
          << "rank " << r << " of " << n << " is a leaf of both trees";
  }
}

TEST(NcclLoweringCosts, AreNcclsTuningConstants)
{
  // NVIDIA/nccl src/graph/tuning.cc (2.26.2): baseLat Ring {6.6, 14.0, 8.4}, Tree {6.8, 14.0, 8.4} us; hwLat NVLINK
  // Ring {.6, 1.9, 3.4}, Tree {.6, 1.25, 4.0}; NET Ring {2.7, 4.0, 14.0}, Tree {5.0, 8.5, 14}; NVLS and NVLSTree
  // NVLINK Simple 25, NET NVLSTree 14; PAT 8 + nRanks x 2.8, interLat (Tree's NET Simple 14) / 3.5 per step.
  const double us = 1e-6;
  auto c = nccl_lowering_costs(Algorithm::Ring, Protocol::LL, 90, 8);
  EXPECT_NEAR(c.launch.seconds(), 6.6 * us, 1e-12);
  EXPECT_NEAR(c.intra_hop.seconds(), 0.6 * us, 1e-12);
  EXPECT_NEAR(c.inter_hop.seconds(), 2.7 * us, 1e-12);
  c = nccl_lowering_costs(Algorithm::Tree, Protocol::Simple, 90, 128);
  EXPECT_NEAR(c.launch.seconds(), 8.4 * us, 1e-12);
  EXPECT_NEAR(c.intra_hop.seconds(), 4.0 * us, 1e-12);
  EXPECT_NEAR(c.inter_hop.seconds(), 14.0 * us, 1e-12);
  c = nccl_lowering_costs(Algorithm::Nvls, Protocol::Simple, 90, 8);
  EXPECT_NEAR(c.launch.seconds(), 25 * us, 1e-12);
  EXPECT_EQ(c.intra_hop.seconds(), 0.0);
  c = nccl_lowering_costs(Algorithm::NvlsTree, Protocol::Simple, 90, 128);
  EXPECT_NEAR(c.launch.seconds(), 25 * us, 1e-12);
  EXPECT_NEAR(c.inter_hop.seconds(), 14 * us, 1e-12);
  c = nccl_lowering_costs(Algorithm::Pat, Protocol::Simple, 90, 16);
  EXPECT_NEAR(c.launch.seconds(), (8 + 16 * 2.8) * us, 1e-12);
  EXPECT_NEAR(c.inter_hop.seconds(), 14.0 / 3.5 * us, 1e-12);
  // One rank per node: tuning.cc's interLat is Tree's hwLat[NET] for every algorithm ("with ppn=1 latencies are fully
  // exposed"): Ring's network hop 5.0 / 8.5 / 14 us for LL / LL128 / Simple instead of 2.7 / 4.0 / 14; the NVLink
  // hop and the launch do not change.
  c = nccl_lowering_costs(Algorithm::Ring, Protocol::LL, 90, 2, true);
  EXPECT_NEAR(c.inter_hop.seconds(), 5.0 * us, 1e-12);
  EXPECT_NEAR(c.launch.seconds(), 6.6 * us, 1e-12);
  EXPECT_NEAR(c.intra_hop.seconds(), 0.6 * us, 1e-12);
  EXPECT_NEAR(nccl_lowering_costs(Algorithm::Ring, Protocol::LL128, 90, 2, true).inter_hop.seconds(), 8.5 * us, 1e-12);
  EXPECT_NEAR(nccl_lowering_costs(Algorithm::Ring, Protocol::Simple, 90, 2, true).inter_hop.seconds(), 14.0 * us,
              1e-12);
  EXPECT_NEAR(nccl_lowering_costs(Algorithm::Tree, Protocol::LL, 90, 2, true).inter_hop.seconds(), 5.0 * us, 1e-12);
  // getNetOverhead: 1 us Intel, 2 us AMD (other hosts as Intel), x3 for Simple.
  EXPECT_NEAR(ring_net_overhead(CpuVendor::Intel, Protocol::LL).seconds(), 1.0 * us, 1e-12);
  EXPECT_NEAR(ring_net_overhead(CpuVendor::Amd, Protocol::LL128).seconds(), 2.0 * us, 1e-12);
  EXPECT_NEAR(ring_net_overhead(CpuVendor::Amd, Protocol::Simple).seconds(), 6.0 * us, 1e-12);
  EXPECT_NEAR(ring_net_overhead(CpuVendor::Other, Protocol::Simple).seconds(), 3.0 * us, 1e-12);
  // nvlsEfficiency, NVIDIA/nccl src/graph/tuning.cc at commit 766bffee: Hopper 0.85, Blackwell 0.74.
  EXPECT_DOUBLE_EQ(nccl_lowering_costs(Algorithm::Nvls, Protocol::Simple, 90, 8).nvls_efficiency, 0.85);
  EXPECT_DOUBLE_EQ(nccl_lowering_costs(Algorithm::Nvls, Protocol::Simple, 100, 8).nvls_efficiency, 0.74);
  EXPECT_THROW(nccl_lowering_costs(Algorithm::CollNetDirect, Protocol::Simple, 90, 8), std::invalid_argument);
}

// What every rank sends, from each algorithm's definition.
TEST(Lowering, BytesEachRankSendsFollowTheAlgorithm)
{
  const double S = 48 * kMiB;
  const int n = 8;
  // Ring all_reduce: reduce-scatter then all-gather, (n-1) slices of S/n each: 2(n-1)/n S per rank.
  auto s = lower_call(make_call(CollectiveKind::AllReduce, S, first(n), Algorithm::Ring, Protocol::Simple, 4));
  for (int r = 0; r < n; ++r)
    EXPECT_NEAR(s.bytes_sent_by(r).bytes(), 2.0 * (n - 1) / n * S, 1e-6 * S);
  // Ring all_gather and reduce_scatter: (n-1)/n S.
  for (auto k : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    s = lower_call(make_call(k, S, first(n), Algorithm::Ring, Protocol::LL128, 2));
    for (int r = 0; r < n; ++r)
      EXPECT_NEAR(s.bytes_sent_by(r).bytes(), (n - 1.0) / n * S, 1e-6 * S);
  }
  // Broadcast and reduce: a chain of n-1 links each carrying S.
  for (auto k : {CollectiveKind::Broadcast, CollectiveKind::Reduce}) {
    auto c = make_call(k, S, first(n), Algorithm::Ring, Protocol::Simple, 3);
    c.root = 5;
    EXPECT_NEAR(total_sent(lower_call(c)), (n - 1) * S, 1e-6 * S);
  }
  // Tree all_reduce: every one of the n-1 tree links carries S up and S down.
  s = lower_call(make_call(CollectiveKind::AllReduce, S, first(32), Algorithm::Tree, Protocol::Simple, 4));
  EXPECT_NEAR(total_sent(s), 2.0 * (32 - 1) * S, 1e-6 * S);
  // NVLS all_reduce, one node: S (n+1)/n through each GPU's port (ld_reduce of every chunk, store of its own).
  s = lower_call(make_call(CollectiveKind::AllReduce, S, first(n), Algorithm::Nvls, Protocol::Simple, 16));
  for (int r = 0; r < n; ++r)
    EXPECT_NEAR(s.bytes_sent_by(r).bytes(), S * (n + 1) / n, 1e-6 * S);
  // PAT all_gather on 8 nodes x 1 GPU: a binomial tree per rank, n-1 blocks of S/n per rank.
  std::vector<int> one_per_node{0, 8, 16, 24, 32, 40, 48, 56};
  for (auto k : {CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    s = lower_call(make_call(k, S, one_per_node, Algorithm::Pat, Protocol::Simple, 2));
    for (int r = 0; r < n; ++r)
      EXPECT_NEAR(s.bytes_sent_by(r).bytes(), (n - 1.0) / n * S, 1e-6 * S);
  }
  // alltoall: S/n to each of the n-1 others. sendrecv: S to the next rank.
  s = lower_call(make_call(CollectiveKind::AllToAll, S, first(n), Algorithm::Ring, Protocol::Simple, 16));
  for (int r = 0; r < n; ++r)
    EXPECT_NEAR(s.bytes_sent_by(r).bytes(), (n - 1.0) / n * S, 1e-6 * S);
  s = lower_call(make_call(CollectiveKind::SendRecv, S, first(n), Algorithm::Ring, Protocol::Simple, 16));
  for (int r = 0; r < n; ++r)
    EXPECT_NEAR(s.bytes_sent_by(r).bytes(), S, 1e-6 * S);
  // NVLSTree on 2 nodes x 4 GPUs (efficiency 1): each GPU's NVLS legs carry (n_l + 1)/n_l S in all; across nodes the
  // leaf node's GPUs send their head chunks (S / n_l) up and the root node's send them down.
  const int local = 4;
  s = lower_call(make_call(CollectiveKind::AllReduce, S, first(8), Algorithm::NvlsTree, Protocol::Simple, 2), local);
  for (int r = 0; r < 8; ++r)
    EXPECT_NEAR(s.bytes_sent_by(r).bytes(), (local + 1.0) / local * S + S / local, 1e-6 * S) << r;
}

TEST(Lowering, StepStructureOfEachAlgorithm)
{
  const int n = 8;
  // Ring: one loop (size below channels x n x 2 MiB) has n-1 steps (all_gather) or 2(n-1) (all_reduce).
  auto s = lower_call(make_call(CollectiveKind::AllGather, 8 * kMiB, first(n), Algorithm::Ring, Protocol::Simple, 2));
  ASSERT_EQ(s.channels.size(), 2u);
  EXPECT_EQ(s.channels[0].size(), static_cast<std::size_t>(n - 1));
  s = lower_call(make_call(CollectiveKind::AllReduce, 8 * kMiB, first(n), Algorithm::Ring, Protocol::Simple, 2));
  EXPECT_EQ(s.channels[1].size(), static_cast<std::size_t>(2 * (n - 1)));
  // Broadcast: K chunks of 512 KiB per channel through a chain of n-1 links: K + n - 2 steps.
  auto c = make_call(CollectiveKind::Broadcast, 16 * 512 * kKiB, first(n), Algorithm::Ring, Protocol::Simple, 1);
  EXPECT_EQ(lower_call(c).channels[0].size(), static_cast<std::size_t>(16 + n - 2));
  // Tree on one node is the chain (height = depth = n-1); reduce up and broadcast down overlap, so K chunks take
  // K + H + D - 1 steps.
  s = lower_call(make_call(CollectiveKind::AllReduce, 16 * 512 * kKiB, first(n), Algorithm::Tree, Protocol::Simple, 1));
  EXPECT_EQ(s.channels[0].size(), static_cast<std::size_t>(16 + 2 * (n - 1) - 1));
  // NVLS: one step per loop of n heads x 128 KiB per channel.
  s = lower_call(make_call(CollectiveKind::AllReduce, kGiB, first(n), Algorithm::Nvls, Protocol::Simple, 16));
  EXPECT_EQ(s.channels[0].size(), static_cast<std::size_t>(kGiB / 16 / (n * 128 * kKiB)));
  // PAT: ceil(log2 n) steps per chunk; 16 ranks, 4 MiB blocks per channel of 512 KiB chunks -> 8 chunks.
  std::vector<int> one_per_node;
  for (int i = 0; i < 16; ++i)
    one_per_node.push_back(8 * i);
  s = lower_call(
      make_call(CollectiveKind::AllGather, 16 * 4 * kMiB, one_per_node, Algorithm::Pat, Protocol::Simple, 1));
  EXPECT_EQ(s.channels[0].size(), static_cast<std::size_t>(4 * 8));
}

TEST(Lowering, RefusesWhatNcclDoesNotImplement)
{
  EXPECT_THROW(lower_call(make_call(CollectiveKind::AllGather, kMiB, first(8), Algorithm::Tree, Protocol::Simple, 1)),
               std::invalid_argument);
  EXPECT_THROW(
      lower_call(make_call(CollectiveKind::AllReduce, kMiB, first(8), Algorithm::CollNetDirect, Protocol::Simple, 1)),
      std::invalid_argument);
  EXPECT_THROW(lower_call(make_call(CollectiveKind::AllReduce, kMiB, first(16), Algorithm::Nvls, Protocol::Simple, 1)),
               std::invalid_argument);
  EXPECT_THROW(lower_call(make_call(CollectiveKind::AllGather, kMiB, first(8), Algorithm::Pat, Protocol::Simple, 1)),
               std::invalid_argument);
  EXPECT_THROW(lower_call(make_call(CollectiveKind::Broadcast, kMiB, first(8), Algorithm::Nvls, Protocol::Simple, 1)),
               std::invalid_argument);
  EXPECT_THROW(
      lower_call(make_call(CollectiveKind::AllReduce, kMiB, {0, 1, 2, 8, 9}, Algorithm::NvlsTree, Protocol::Simple, 1)),
      std::invalid_argument);
}

// NCCL's p2p schedule: in round r rank i sends to i + r; rounds spread over the lanes, each lane in order.
TEST(P2p, RoundsSpreadOverLanes)
{
  const int n = 8;
  const double S = 8 * kMiB;
  auto s = lower_call(make_call(CollectiveKind::AllToAll, S, first(n), Algorithm::Ring, Protocol::Simple, 16));
  ASSERT_EQ(s.channels.size(), static_cast<std::size_t>(n - 1)) << "7 rounds, 16 lanes: all rounds at once";
  for (std::size_t c = 0; c < s.channels.size(); ++c) {
    ASSERT_EQ(s.channels[c].size(), 1u);
    const Pattern& p = s.patterns[s.channels[c][0].pattern];
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(p.sends(i).size(), 1u);
      EXPECT_EQ(p.sends(i)[0], static_cast<int>((i + c + 1) % n));
    }
  }
  s = lower_call(make_call(CollectiveKind::AllToAll, S, first(n), Algorithm::Ring, Protocol::Simple, 2));
  ASSERT_EQ(s.channels.size(), 2u);
  EXPECT_EQ(s.channels[0].size(), 4u); // rounds 1, 3, 5, 7
  EXPECT_EQ(s.channels[1].size(), 3u); // rounds 2, 4, 6
  // Transfers of different sizes in one round: one step sized by the largest, the others weighted.
  const auto g = lower_p2p({{0, 1, Bytes(4 * kMiB)}, {1, 2, Bytes(kMiB)}}, 4, 8, {}, Seconds(0));
  ASSERT_EQ(g.channels.size(), 1u);
  EXPECT_DOUBLE_EQ(g.bytes_sent_by(0).bytes(), 4 * kMiB);
  EXPECT_DOUBLE_EQ(g.bytes_sent_by(1).bytes(), kMiB);
  // NCCL_P2P_LL_THRESHOLD: LL up to 16 KiB.
  EXPECT_EQ(p2p_protocol(Bytes(16 * kKiB)), Protocol::LL);
  EXPECT_EQ(p2p_protocol(Bytes(16 * kKiB + 1)), Protocol::Simple);
}

TEST(MergeGroup, KeepsEveryMembersChannelsOnTheUnionOfGpus)
{
  const auto a = lower_p2p({{0, 1, Bytes(kMiB)}}, 4, 8, {}, Seconds(0));
  const auto b = lower_p2p({{2, 9, Bytes(2 * kMiB)}}, 4, 8, {}, Seconds(0));
  const Schedule m = merge_group({a, b}, 8);
  EXPECT_EQ(m.gpus, (std::vector<int>{0, 1, 2, 9}));
  EXPECT_EQ(m.channels.size(), a.channels.size() + b.channels.size());
  EXPECT_DOUBLE_EQ(m.bytes.bytes(), 3 * kMiB);
  // GPU 9 is on node 1: its receive from GPU 2 (node 0) crosses nodes, GPU 1's from GPU 0 does not.
  const Pattern& pb = m.patterns[m.channels[1][0].pattern];
  EXPECT_TRUE(pb.receives_inter_node(3));
  const Pattern& pa = m.patterns[m.channels[0][0].pattern];
  EXPECT_FALSE(pa.receives_inter_node(1));
  EXPECT_DOUBLE_EQ(m.bytes_sent_by(2).bytes(), 2 * kMiB);
}

TEST(Pattern, WeightsDefaultToOneAndMustMatchTheSends)
{
  const Pattern p("w", {{1, 2}, {}, {}}, {{0.5, 2.0}, {}, {}}, {{}, {0}, {0}});
  EXPECT_DOUBLE_EQ(p.send_weight(0, 0), 0.5);
  EXPECT_DOUBLE_EQ(p.send_weight(0, 1), 2.0);
  const Pattern q = Pattern::ring("r", {0, 1, 2});
  EXPECT_DOUBLE_EQ(q.send_weight(1, 0), 1.0);
  EXPECT_THROW(Pattern("bad", {{1}, {}}, {{1.0, 2.0}, {}}, {{}, {0}}), std::invalid_argument);
}

} // namespace
