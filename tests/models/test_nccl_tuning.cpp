// NCCL cost model: every expected number below is computed in the test from NCCL 2.26.2's formulas
// (NVIDIA/nccl f44ac759, src/graph/tuning.cc ncclTopoTuneModel / ncclTopoGetAlgoTime, src/enqueue.cc
// topoGetAlgoInfo), with the constants written out and the array they come from named beside them.
#include "railyard/models/nccl_tuning.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

using namespace railyard;
using namespace railyard::models;

namespace {

constexpr double kRel = 1e-9;

// Time in microseconds, NCCL's formula: lat + bytes / (1000 * bw[GB/s]).
double time_us(double lat_us, double bw_gbps, double bytes)
{
  return lat_us + bytes / (1000.0 * bw_gbps);
}

void expect_close(double expected, double actual, const std::string& what)
{
  EXPECT_NEAR(actual, expected, std::abs(expected) * kRel + 1e-12) << what;
}

void expect_time(const NcclTuningInput& in, Algorithm a, Protocol p, double expected_us)
{
  const auto t = predict(in, a, p);
  ASSERT_TRUE(t.has_value()) << nccl_name(a) << "/" << nccl_name(p);
  expect_close(expected_us, t->seconds() * 1e6, nccl_name(a) + "/" + nccl_name(p));
}

NcclGraph graph(int channels, double intra_gbps, double inter_gbps)
{
  NcclGraph g;
  g.channels = channels;
  g.bw_intra = units::GBps(intra_gbps);
  g.bw_inter = units::GBps(inter_gbps);
  return g;
}

// One DGX H100 node with the graphs NCCL 2.19.4 printed for such a node in NVIDIA/nccl issue 1197:
// "Pattern 4, nChannels 12, bw 30/30" (ring), "Pattern 1, nChannels 12, bw 30/30" (tree),
// "Pattern 5, nChannels 8, bw 40/60" (NVLS). comm channels 24 = 2 x 12 (connect.cc ncclTopoPostset).
NcclTuningInput h100_one_node(CollectiveKind kind, double bytes)
{
  NcclTuningInput in;
  in.collective = kind;
  in.bytes = Bytes(bytes);
  in.nranks = 8;
  in.nnodes = 1;
  in.gpus_per_node = 8;
  in.compute_capability = 90;
  in.cpu = CpuVendor::Intel;
  in.nvls_supported = true;
  in.ring = graph(12, 30, 30);
  in.tree = graph(12, 30, 30);
  in.nvls = graph(8, 40, 60);
  in.comm_channels = 24;
  in.nvls_channels = 16; // src/transport/nvls.cc NVLS_NCHANNELS_SM90
  return in;
}

// 16 DGX H100 nodes (8 x 400 Gb/s NICs each): ring and tree 8 channels x 48 GB/s, the tree on the simple TREE
// pattern, NVLS 8 heads at 40 GB/s inside and 48 GB/s to the NICs; comm channels 2 x 8 = 16.
NcclTuningInput h100_16_nodes(CollectiveKind kind, double bytes)
{
  NcclTuningInput in = h100_one_node(kind, bytes);
  in.nranks = 128;
  in.nnodes = 16;
  in.ring = graph(8, 48, 48);
  in.ring.same_channels = false;
  in.tree = graph(8, 48, 48);
  in.tree.same_channels = false;
  in.tree.simple_tree = true;
  in.nvls = graph(8, 40, 48);
  in.comm_channels = 16;
  return in;
}

} // namespace

// ---------------------------------------------------------------------------------------------------------------
// (a) Hand calculations, one node of 8 H100 (compute-capability row Hopper, node column N1)

TEST(NcclTuning, OneNodeAllReduceEveryAlgorithmAndProtocol)
{
  const double bytes = 1 << 30; // 1 GiB: log2(bytes/64) = 24 is past the Tree correction table (23 entries)
  const auto in = h100_one_node(CollectiveKind::AllReduce, bytes);
  const double nsteps = 2 * (8 - 1);    // ring all_reduce steps
  const double ring_ratio = 8 / nsteps; // bus -> algorithm bandwidth for Ring

  // Ring/LL: baseLat[Ring][LL] 6.6 + 14 steps x hwLat[NVLink][Ring][LL] 0.6; bw = min(llMaxBws[Hopper][N1] 141,
  // 12 x 30 x 0.5) x 8/14.
  expect_time(in, Algorithm::Ring, Protocol::LL,
              time_us(6.6 + 14 * 0.6, std::min(141.0, 360 * 0.5) * ring_ratio, bytes));
  // Ring/LL128: 14.0 + 14 x 1.9; bw = min(360 x 0.92, 12 x perChMaxRingLL128Bws[Hopper][N1] 36.7) x 8/14.
  expect_time(in, Algorithm::Ring, Protocol::LL128,
              time_us(14.0 + 14 * 1.9, std::min(360 * 0.92, 12 * 36.7) * ring_ratio, bytes));
  // Ring/Simple: 8.4 + 14 x 3.4; bw = 360 x 8/14.
  expect_time(in, Algorithm::Ring, Protocol::Simple, time_us(8.4 + 14 * 3.4, 360 * ring_ratio, bytes));
  // Tree: bus bw min(360 x 0.92, 12 x perChMaxTreeBws[Hopper][N1] 38.7) = 331.2, algorithm bw x 0.5.
  // Tree latency: base + 2 x (8/1 - 1) x hwLat[NVLink][Tree][p] + 2 x log2(1) x net.
  const double tree_bus = std::min(360 * 0.92, 12 * 38.7);
  expect_time(in, Algorithm::Tree, Protocol::LL,
              time_us(6.8 + 2 * 7 * 0.6, std::min(tree_bus / 3.8, 141.0) * 0.5, bytes));
  expect_time(in, Algorithm::Tree, Protocol::LL128,
              time_us(14.0 + 2 * 7 * 1.25, std::min(tree_bus * 7.0 / 9.0, 12 * 36.7) * 0.5, bytes));
  expect_time(in, Algorithm::Tree, Protocol::Simple, time_us(8.4 + 2 * 7 * 4.0, tree_bus * 0.5, bytes));
  // NVLS: latency = hwLat[NVLink][NVLS][Simple] 25; bw = min(bwIntra 40, bwInter 60) x 8 channels x 5/6.
  expect_time(in, Algorithm::Nvls, Protocol::Simple, time_us(25, std::min(40.0, 60.0) * 8 * 5.0 / 6.0, bytes));

  // What NCCL leaves out: NVLS only with Simple, NVLSTree needs several nodes, CollNet needs its plugin,
  // PAT does not do all_reduce.
  EXPECT_FALSE(predict(in, Algorithm::Nvls, Protocol::LL));
  EXPECT_FALSE(predict(in, Algorithm::Nvls, Protocol::LL128));
  EXPECT_FALSE(predict(in, Algorithm::NvlsTree, Protocol::Simple));
  EXPECT_FALSE(predict(in, Algorithm::CollNetDirect, Protocol::Simple));
  EXPECT_FALSE(predict(in, Algorithm::CollNetChain, Protocol::Simple));
  EXPECT_FALSE(predict(in, Algorithm::Pat, Protocol::Simple));
}

TEST(NcclTuning, TreeCorrectionFactorAppliesBetween64BAnd256MiB)
{
  // 64 KiB: log2(65536 / 64) = 10; treeCorrectionFactor[LL][10] = .6, [LL128][10] = .6, [Simple][10] = .6.
  const auto in = h100_one_node(CollectiveKind::AllReduce, 65536);
  const double tree_bus = std::min(360 * 0.92, 12 * 38.7);
  expect_time(in, Algorithm::Tree, Protocol::LL,
              time_us(6.8 + 2 * 7 * 0.6, std::min(tree_bus / 3.8, 141.0) * 0.5 * 0.6, 65536));
  expect_time(in, Algorithm::Tree, Protocol::Simple, time_us(8.4 + 2 * 7 * 4.0, tree_bus * 0.5 * 0.6, 65536));
  // 1 MiB: log2(16384) = 14. Row LL is {1,1,1,1,.9,.8,.7,.7,.7,.7,.6,.5,.4,.4,.5,...}: index 14 is .5;
  // row LL128 {1,1,1,1,1,.9,.8,.8,.8,.7,.6,.6,.6,.6,.6,...}: index 14 is .6.
  const auto mib = h100_one_node(CollectiveKind::AllReduce, 1 << 20);
  expect_time(mib, Algorithm::Tree, Protocol::LL,
              time_us(6.8 + 2 * 7 * 0.6, std::min(tree_bus / 3.8, 141.0) * 0.5 * 0.5, 1 << 20));
  expect_time(mib, Algorithm::Tree, Protocol::LL128,
              time_us(14.0 + 2 * 7 * 1.25, std::min(tree_bus * 7.0 / 9.0, 12 * 36.7) * 0.5 * 0.6, 1 << 20));
  // 8 B: 8 >> 6 = 0, log2i(0) = -1, no correction.
  const auto tiny = h100_one_node(CollectiveKind::AllReduce, 8);
  expect_time(tiny, Algorithm::Tree, Protocol::LL,
              time_us(6.8 + 2 * 7 * 0.6, std::min(tree_bus / 3.8, 141.0) * 0.5, 8));
}

TEST(NcclTuning, SixteenNodesAllReduceEveryAlgorithmAndProtocol)
{
  // nRanks 128, nNodes 16: node column N4 (index 2), LL cap row Intel (0) for several nodes; bandwidth per channel
  // is bwInter because nNodes > 2. Ring: nsteps 254 of which 2 x (16 - 1) = 30 cross the network; the others cost
  // max(hwLat[NVLink][Ring][p], netOverhead) with netOverhead 1 us on Intel, x3 for Simple.
  const double bytes = 1 << 30;
  const auto in = h100_16_nodes(CollectiveKind::AllReduce, bytes);
  const double ring_ratio = 128.0 / 254.0;
  const double ring_bus = 8 * 48.0;

  // Ring/Simple: 8.4 + 224 x max(3.4, 3.0) + 30 x hwLat[NET][Ring][Simple] 14; the plateau x1.4 applies as
  // bytes / (16 comm channels x 128 ranks) >= 64.
  expect_time(in, Algorithm::Ring, Protocol::Simple,
              time_us((8.4 + 224 * 3.4 + 30 * 14.0) * 1.4, ring_bus * ring_ratio, bytes));
  // Ring/LL: 6.6 + 224 x max(0.6, 1.0) + 30 x 2.7; bw = min(llMaxBws[Intel][N4] 20.4, 384 x .5) x 128/254.
  expect_time(in, Algorithm::Ring, Protocol::LL,
              time_us(6.6 + 224 * 1.0 + 30 * 2.7, std::min(20.4, 384 * 0.5) * ring_ratio, bytes));
  // Ring/LL128: 14 + 224 x 1.9 + 30 x 4.0; bw = min(384 x .92, 8 x perChMaxRingLL128Bws[Hopper][N4] 36.7).
  expect_time(in, Algorithm::Ring, Protocol::LL128,
              time_us(14.0 + 224 * 1.9 + 30 * 4.0, std::min(384 * 0.92, 8 * 36.7) * ring_ratio, bytes));
  // Tree: bus min(384 x .92, 8 x perChMaxTreeBws[Hopper][N4] 36.0) = 288, x .85 for the simple TREE pattern, x .5.
  // Latency base + 2 x ((128/16 - 1) x hwLat[NVLink][Tree][p] + log2(16) x hwLat[NET][Tree][p]).
  const double tree_bus = std::min(384 * 0.92, 8 * 36.0);
  expect_time(in, Algorithm::Tree, Protocol::Simple,
              time_us(8.4 + 2 * (7 * 4.0 + 4 * 14.0), tree_bus * 0.85 * 0.5, bytes));
  expect_time(in, Algorithm::Tree, Protocol::LL,
              time_us(6.8 + 2 * (7 * 0.6 + 4 * 5.0), std::min(tree_bus / 3.8, 20.4) * 0.85 * 0.5, bytes));
  // Tree/LL128 across nodes: x 120/128, capped by 8 x perChMaxTreeLL128Bws[Hopper][N4] 29.0.
  expect_time(
      in, Algorithm::Tree, Protocol::LL128,
      time_us(14.0 + 2 * (7 * 1.25 + 4 * 8.5), std::min(tree_bus * 120.0 / 128.0, 8 * 29.0) * 0.85 * 0.5, bytes));
  // NVLSTree: hwLat[NVLink][NVLSTree] 25 + 2 x log2(16) x hwLat[NET][NVLSTree] 14; bw min(40, 48 / 2) x 8 x 5/6.
  expect_time(in, Algorithm::NvlsTree, Protocol::Simple,
              time_us(25 + 2 * 4 * 14.0, std::min(40.0, 24.0) * 8 * 5.0 / 6.0, bytes));
  // NVLS spans one node without CollNet.
  EXPECT_FALSE(predict(in, Algorithm::Nvls, Protocol::Simple));
}

TEST(NcclTuning, RingPlateauNeedsSixtyFourBytesPerRankAndChannel)
{
  // 128 KiB over 16 channels x 128 ranks = 64 B: plateau on. 128 KiB - 64 B: 63 B (integer division), off.
  const double on = 131072, off = 131072 - 64;
  const double ring_bw = 8 * 48.0 * 128.0 / 254.0;
  const double lat = 8.4 + 224 * 3.4 + 30 * 14.0;
  expect_time(h100_16_nodes(CollectiveKind::AllReduce, on), Algorithm::Ring, Protocol::Simple,
              time_us(lat * 1.4, ring_bw, on));
  expect_time(h100_16_nodes(CollectiveKind::AllReduce, off), Algorithm::Ring, Protocol::Simple,
              time_us(lat, ring_bw, off));
}

TEST(NcclTuning, AmdHostsPayTwiceTheNetworkOverheadAndAnotherLlCap)
{
  // 4 DGX A100 (AMD EPYC): getNetOverhead 2 us (x3 = 6 for Simple), llMaxBws row AMD (1), column N4: 19.0.
  NcclTuningInput in;
  in.collective = CollectiveKind::AllReduce;
  in.bytes = Bytes(1 << 20);
  in.nranks = 32;
  in.nnodes = 4;
  in.gpus_per_node = 8;
  in.compute_capability = 80;
  in.cpu = CpuVendor::Amd;
  in.ring = graph(8, 24, 24);
  in.tree = graph(8, 24, 24);
  in.comm_channels = 16;
  const double nsteps = 62, inter_steps = 6, ratio = 32.0 / 62.0;
  // 1 MiB / (16 x 32) = 2048 >= 64: plateau x1.4 (sm80 is not below 80).
  expect_time(in, Algorithm::Ring, Protocol::Simple,
              time_us((8.4 + (nsteps - inter_steps) * 6.0 + inter_steps * 14.0) * 1.4, 8 * 24.0 * ratio, 1 << 20));
  expect_time(
      in, Algorithm::Ring, Protocol::LL,
      time_us(6.6 + (nsteps - inter_steps) * 2.0 + inter_steps * 2.7, std::min(19.0, 8 * 24 * 0.5) * ratio, 1 << 20));
  // Ampere LL128 caps: 8 x perChMaxRingLL128Bws[Ampere][N4] 20.0.
  expect_time(in, Algorithm::Ring, Protocol::LL128,
              time_us(14.0 + (nsteps - inter_steps) * 2.0 + inter_steps * 4.0, std::min(192 * 0.92, 8 * 20.0) * ratio,
                      1 << 20));
  // No NVLS below sm90.
  EXPECT_FALSE(predict(in, Algorithm::NvlsTree, Protocol::Simple));
}

TEST(NcclTuning, AllGatherRingNvlsAndPat)
{
  // Ring all_gather on one node: nsteps 7, bw x 8/7, latency 8.4 + 7 x 3.4.
  const double bytes = 1 << 28;
  const auto one = h100_one_node(CollectiveKind::AllGather, bytes);
  expect_time(one, Algorithm::Ring, Protocol::Simple, time_us(8.4 + 7 * 3.4, 360 * 8.0 / 7.0, bytes));
  // NVLS all_gather: no bus->algorithm conversion for non-ring all_gather; bw min(40, 60) x 8.
  expect_time(one, Algorithm::Nvls, Protocol::Simple, time_us(25, 320, bytes));
  EXPECT_FALSE(predict(one, Algorithm::Tree, Protocol::Simple));
  EXPECT_FALSE(predict(one, Algorithm::Pat, Protocol::Simple)); // 8 GPUs per node

  // 16 nodes x 1 GPU: PAT on. Latency 8 + log2(16) x interLat / 3.5 + 16 x 2.8 where interLat is
  // hwLat[NET][Tree][Simple] 14 (one rank per node); bw = 8 x 48 (bwInter, > 2 nodes) x .75, no conversion.
  NcclTuningInput pat = h100_16_nodes(CollectiveKind::AllGather, bytes);
  pat.nranks = 16;
  pat.gpus_per_node = 1;
  pat.nvls_supported = false;
  expect_time(pat, Algorithm::Pat, Protocol::Simple, time_us(8 + 4 * 14.0 / 3.5 + 16 * 2.8, 8 * 48 * 0.75, bytes));
  EXPECT_FALSE(predict(pat, Algorithm::Pat, Protocol::LL));
  // Ring with one rank per node prices every network hop at Tree's NET latency: LL 5.0 instead of 2.7.
  // nsteps = 15, all 15 inter-node; bw = min(llMaxBws[Intel][N4] 20.4, 384 x .5) x 16/15.
  expect_time(pat, Algorithm::Ring, Protocol::LL, time_us(6.6 + 15 * 5.0, 20.4 * 16.0 / 15.0, bytes));
}

TEST(NcclTuning, BroadcastRingLatencyDependsOnSameChannels)
{
  // Broadcast: nsteps = nRanks = 8, ratio 8/8. sameChannels: one hop of hwLat[NVLink][Ring][p]; otherwise nsteps
  // hops, priced at Tree's latency for Simple.
  auto in = h100_one_node(CollectiveKind::Broadcast, 1 << 20);
  expect_time(in, Algorithm::Ring, Protocol::Simple, time_us(8.4 + 3.4, 360, 1 << 20));
  expect_time(in, Algorithm::Ring, Protocol::LL, time_us(6.6 + 0.6, std::min(141.0, 180.0), 1 << 20));
  in.ring.same_channels = false;
  expect_time(in, Algorithm::Ring, Protocol::Simple, time_us(8.4 + 8 * 4.0, 360, 1 << 20));
  expect_time(in, Algorithm::Ring, Protocol::LL, time_us(6.6 + 8 * 0.6, 141.0, 1 << 20));
  EXPECT_FALSE(predict(in, Algorithm::Tree, Protocol::Simple));
  EXPECT_FALSE(predict(in, Algorithm::Nvls, Protocol::Simple));
}

TEST(NcclTuning, Ll128FollowsNcclsDefaultRule)
{
  auto in = h100_one_node(CollectiveKind::AllReduce, 1 << 20);
  in.ring.type_inter = NcclPath::Pxn; // sm90 allows up to PXN
  EXPECT_TRUE(predict(in, Algorithm::Ring, Protocol::LL128));
  in.ring.type_inter = NcclPath::Phb; // beyond PXN: off
  EXPECT_FALSE(predict(in, Algorithm::Ring, Protocol::LL128));
  EXPECT_TRUE(predict(in, Algorithm::Ring, Protocol::LL));
  in.ring.type_inter = NcclPath::Pxn;
  in.compute_capability = 80; // sm80 allows only up to PXB
  EXPECT_FALSE(predict(in, Algorithm::Ring, Protocol::LL128));
  in.ring.type_inter = NcclPath::Pix;
  in.ring.type_intra = NcclPath::Sys; // no NVLink inside the node
  EXPECT_FALSE(predict(in, Algorithm::Ring, Protocol::LL128));
}

TEST(NcclTuning, PointToPointCollectivesAreOutsideTheModel)
{
  auto in = h100_one_node(CollectiveKind::AllToAll, 1 << 20);
  for (const auto& e : table(in))
    EXPECT_FALSE(e.time.has_value()) << nccl_name(e.algorithm) << "/" << nccl_name(e.protocol);
  EXPECT_FALSE(choose(in).has_value());
  EXPECT_EQ(table(in).size(), 21u);
}

// ---------------------------------------------------------------------------------------------------------------
// choose(): channel and thread trimming of topoGetAlgoInfo

TEST(NcclTuning, ChooseTrimsChannelsAndThreadsForSmallMessages)
{
  // Ring/LL: nt = NCCL_LL_MAX_NTHREADS 512, threshold NCCL_LL_THREAD_THRESHOLD 8 x nRanks 8 = 64 bytes/thread.
  // nc drops from 24 while bytes < nc x 512 x 64 = nc x 32768.
  const auto small = choose(h100_one_node(CollectiveKind::AllReduce, 8));
  ASSERT_TRUE(small);
  EXPECT_EQ(small->algorithm, Algorithm::Ring);
  EXPECT_EQ(small->protocol, Protocol::LL);
  EXPECT_EQ(small->channels, 1); // 8 < 32768 even for one channel
  // nt halves while a multiple of 128 and bytes < 1 x nt x 64: 512 -> 256 -> 128 -> 64, then 64 < 3 warps -> 96.
  EXPECT_EQ(small->threads, 96);

  const auto mid = choose(h100_one_node(CollectiveKind::AllReduce, 65536));
  ASSERT_TRUE(mid);
  EXPECT_EQ(mid->algorithm, Algorithm::Ring);
  EXPECT_EQ(mid->protocol, Protocol::LL);
  EXPECT_EQ(mid->channels, 2); // 65536 < 2 x 32768 is false
  EXPECT_EQ(mid->threads, 512);

  // NVLS launches comm->nvlsChannels (16 on sm90) whatever the size.
  const auto big = choose(h100_one_node(CollectiveKind::AllReduce, 1 << 30));
  ASSERT_TRUE(big);
  EXPECT_EQ(big->algorithm, Algorithm::Nvls);
  EXPECT_EQ(big->channels, 16);
  EXPECT_EQ(big->threads, 640); // NCCL_MAX_NTHREADS for NVLS/Simple
}

// ---------------------------------------------------------------------------------------------------------------
// (c) Overrides in NCCL's syntax

TEST(NcclOverrides, RingForcesRing)
{
  const auto o = NcclOverrides::parse("ring", std::nullopt, {});
  for (double bytes : {8.0, 65536.0, 1048576.0, 67108864.0, 1073741824.0}) {
    for (auto make : {h100_one_node, h100_16_nodes}) {
      auto in = make(CollectiveKind::AllReduce, bytes);
      in.overrides = o;
      const auto c = choose(in);
      ASSERT_TRUE(c);
      EXPECT_EQ(c->algorithm, Algorithm::Ring) << bytes;
    }
  }
}

TEST(NcclOverrides, CaretLl128ExcludesLl128)
{
  // Default pick for 1 MiB all_reduce on 16 nodes is Tree/LL128: 99.5 + 2^20 / (1000 x 98.6 x .6) = 117.2 us.
  // Without LL128 the cheapest is NVLSTree: 137 + 2^20 / (1000 x 160) = 143.6 us (Tree/Simple: 176.4 + 2^20 /
  // (1000 x 122.4 x .5) = 193.5 us; Tree/LL 55.2 + 2^20 / (1000 x 8.67 x .5) = 297.1 us).
  auto in = h100_16_nodes(CollectiveKind::AllReduce, 1 << 20);
  auto c = choose(in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->algorithm, Algorithm::Tree);
  EXPECT_EQ(c->protocol, Protocol::LL128);
  in.overrides = NcclOverrides::parse(std::nullopt, "^LL128", {});
  for (const auto& e : table(in)) {
    if (e.protocol == Protocol::LL128) {
      EXPECT_FALSE(e.time.has_value());
    }
  }
  c = choose(in);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->algorithm, Algorithm::NvlsTree);
  EXPECT_EQ(c->protocol, Protocol::Simple);
  expect_close(137 + 1048576 / (1000 * 160.0), c->time.seconds() * 1e6, "NVLSTree 1 MiB");
}

TEST(NcclOverrides, PerFunctionSectionsAndNcclsQuirks)
{
  // "ring;allreduce:tree": ring everywhere, then all_reduce only tree.
  auto o = NcclOverrides::parse("ring;allreduce:tree", std::nullopt, {});
  EXPECT_TRUE(o.algorithm_allowed(CollectiveKind::AllGather, Algorithm::Ring));
  EXPECT_FALSE(o.algorithm_allowed(CollectiveKind::AllGather, Algorithm::Tree));
  EXPECT_TRUE(o.algorithm_allowed(CollectiveKind::AllReduce, Algorithm::Tree));
  EXPECT_FALSE(o.algorithm_allowed(CollectiveKind::AllReduce, Algorithm::Ring));
  // Case-insensitive, NCCL's own spellings.
  o = NcclOverrides::parse("NVLSTree,nvls", std::nullopt, {});
  EXPECT_TRUE(o.algorithm_allowed(CollectiveKind::AllReduce, Algorithm::NvlsTree));
  EXPECT_FALSE(o.algorithm_allowed(CollectiveKind::AllReduce, Algorithm::Ring));
  // "^LL" rewrites every protocol of the section: LL off, Simple on and LL128 *forced* on (not NCCL's default rule),
  // so LL128 appears even where NCCL would not enable it by default.
  o = NcclOverrides::parse(std::nullopt, "^LL", {});
  EXPECT_EQ(o.protocol_enable(CollectiveKind::AllReduce, Protocol::LL), NcclEnable::Off);
  EXPECT_EQ(o.protocol_enable(CollectiveKind::AllReduce, Protocol::LL128), NcclEnable::On);
  auto in = h100_one_node(CollectiveKind::AllReduce, 1 << 20);
  in.ring.type_inter = NcclPath::Sys;
  EXPECT_FALSE(predict(in, Algorithm::Ring, Protocol::LL128));
  in.overrides = o;
  EXPECT_TRUE(predict(in, Algorithm::Ring, Protocol::LL128));
  // Absent variables keep the defaults: LL128 on NCCL's rule.
  EXPECT_EQ(NcclOverrides().protocol_enable(CollectiveKind::AllReduce, Protocol::LL128), NcclEnable::Auto);
}

TEST(NcclOverrides, OverridesThatLeaveNothingGiveNoChoice)
{
  auto in = h100_one_node(CollectiveKind::Broadcast, 1 << 20);
  in.overrides = NcclOverrides::parse("tree", std::nullopt, {}); // broadcast has only Ring
  EXPECT_FALSE(choose(in).has_value());
}

TEST(NcclOverrides, BadSyntaxIsAnInputErrorNamingTheVariable)
{
  const InputLocation where{"scenario.yaml", 12, "nccl.algo"};
  try {
    (void)NcclOverrides::parse("ring,trees", std::nullopt, where);
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("NCCL_ALGO"), std::string::npos) << msg;
    EXPECT_NE(msg.find("trees"), std::string::npos) << msg;
    EXPECT_NE(msg.find("NVLSTree"), std::string::npos) << msg; // the accepted names are listed
    EXPECT_EQ(e.where().line, 12);
  }
  EXPECT_THROW((void)NcclOverrides::parse(std::nullopt, "simple;gather:LL", where), InputError);
  EXPECT_THROW((void)NcclOverrides::parse("ring;tree", std::nullopt, where), InputError);  // second section unprefixed
  EXPECT_THROW((void)NcclOverrides::parse("ring, tree", std::nullopt, where), InputError); // NCCL does not trim
}

// ---------------------------------------------------------------------------------------------------------------
// (d) Refusals

namespace {

std::string refusal(const NcclTuningInput& in, Algorithm a, std::optional<Protocol> p = std::nullopt)
{
  try {
    check_request(in, a, p, InputLocation{"job.yaml", 7, "collectives[2].algorithm"});
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "collectives[2].algorithm");
    return e.what();
  }
  return "";
}

void expect_refusal(const NcclTuningInput& in, Algorithm a, std::optional<Protocol> p,
                    std::initializer_list<const char*> mentions)
{
  const std::string msg = refusal(in, a, p);
  ASSERT_FALSE(msg.empty()) << nccl_name(a);
  for (const char* m : mentions)
    EXPECT_NE(msg.find(m), std::string::npos) << "'" << m << "' missing from: " << msg;
}

} // namespace

TEST(NcclRefusals, NvlsNeedsNvswitchMulticastAndHopper)
{
  auto in = h100_one_node(CollectiveKind::AllReduce, 1 << 20);
  in.nvls_supported = false;
  expect_refusal(in, Algorithm::Nvls, std::nullopt, {"all_reduce", "NVLS", "multicast"});
  auto a100 = h100_one_node(CollectiveKind::AllReduce, 1 << 20);
  a100.compute_capability = 80;
  expect_refusal(a100, Algorithm::Nvls, std::nullopt, {"NVLS", "sm90", "80"});
  auto multi = h100_16_nodes(CollectiveKind::AllReduce, 1 << 20);
  expect_refusal(multi, Algorithm::Nvls, std::nullopt, {"NVLS", "CollNet", "16 nodes"});
  EXPECT_EQ(refusal(multi, Algorithm::NvlsTree), "");
  expect_refusal(h100_one_node(CollectiveKind::AllReduce, 1), Algorithm::NvlsTree, std::nullopt, {"NVLSTree", "one"});
  expect_refusal(h100_one_node(CollectiveKind::AllReduce, 1), Algorithm::Nvls, Protocol::LL, {"NVLS", "Simple"});
}

TEST(NcclRefusals, PatNeedsOneGpuPerNode)
{
  expect_refusal(h100_16_nodes(CollectiveKind::AllGather, 1 << 20), Algorithm::Pat, std::nullopt,
                 {"all_gather", "PAT", "one GPU per node", "8"});
  expect_refusal(h100_16_nodes(CollectiveKind::AllReduce, 1 << 20), Algorithm::Pat, std::nullopt,
                 {"all_reduce", "PAT", "all_gather and reduce_scatter"});
}

TEST(NcclRefusals, TreeOnlyForAllReduceAndNothingForAllToAll)
{
  expect_refusal(h100_one_node(CollectiveKind::AllToAll, 1 << 20), Algorithm::Tree, std::nullopt,
                 {"alltoall", "Tree", "point-to-point"});
  expect_refusal(h100_one_node(CollectiveKind::AllGather, 1 << 20), Algorithm::Tree, std::nullopt,
                 {"all_gather", "Tree", "only for all_reduce"});
  expect_refusal(h100_one_node(CollectiveKind::AllReduce, 1 << 20), Algorithm::CollNetDirect, std::nullopt,
                 {"CollNetDirect", "plugin"});
  EXPECT_EQ(refusal(h100_one_node(CollectiveKind::AllReduce, 1 << 20), Algorithm::Tree, Protocol::LL128), "");
  EXPECT_EQ(refusal(h100_one_node(CollectiveKind::Broadcast, 1 << 20), Algorithm::Ring, Protocol::LL), "");
}

TEST(NcclRefusals, Ll128WhereNcclDisablesIt)
{
  auto in = h100_one_node(CollectiveKind::AllReduce, 1 << 20);
  in.ring.type_inter = NcclPath::Sys;
  expect_refusal(in, Algorithm::Ring, Protocol::LL128, {"LL128", "Ring"});
  in.overrides = NcclOverrides::parse(std::nullopt, "LL128,Simple", {}); // the user forces it, as NCCL allows
  EXPECT_EQ(refusal(in, Algorithm::Ring, Protocol::LL128), "");
}

TEST(NcclRefusals, ValidateNamesTheField)
{
  auto in = h100_one_node(CollectiveKind::AllReduce, 1 << 20);
  in.nranks = 12;
  try {
    validate(in, InputLocation{"job.yaml", 3, "nccl"});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "nccl.nnodes");
    EXPECT_NE(std::string(e.what()).find("12"), std::string::npos);
  }
  EXPECT_NO_THROW(validate(h100_16_nodes(CollectiveKind::AllReduce, 1), {}));
}

// ---------------------------------------------------------------------------------------------------------------
// Channel graphs of standard nodes

TEST(NcclGraphs, OneH100NodeMatchesNcclsLog)
{
  // NVIDIA/nccl issue 1197 (NCCL 2.19.4, one 8x H100 node) printed: ring "nChannels 12, bw 30/30", tree
  // "nChannels 12, bw 30/30", NVLS "nChannels 8, bw 40/60". That NCCL counted 18 x 20.0 GB/s of NVLink per GPU,
  // 2.26.2 counts 18 x 20.6 = 370.8 (SM90_NVLINK_BW); the search lands on the same graphs: 6 rings at 60 GB/s
  // (6 x 60 = 360 <= 370.8, 7 x 60 > 370.8) beat 7 x 50, 9 x 40 and 12 x 30; 60 >= 25 so ncclTopoDupChannels
  // makes 12 x 30.
  const auto g = derive_graphs(node_spec(NodeLayout::DgxH100), 1);
  EXPECT_EQ(g.ring.channels, 12);
  EXPECT_DOUBLE_EQ(g.ring.bw_intra.bytes_per_sec(), 30e9);
  EXPECT_EQ(g.tree.channels, 12);
  EXPECT_DOUBLE_EQ(g.tree.bw_intra.bytes_per_sec(), 30e9);
  EXPECT_FALSE(g.tree.simple_tree);
  EXPECT_EQ(g.nvls.channels, 8);
  EXPECT_DOUBLE_EQ(g.nvls.bw_intra.bytes_per_sec(), 40e9);
  EXPECT_DOUBLE_EQ(g.nvls.bw_inter.bytes_per_sec(), 60e9);
  EXPECT_EQ(g.comm_channels, 2 * 12); // ncclTopoPostset doubles; 24 >= NVLS's 16
  EXPECT_EQ(g.nvls_channels, 16);
}

TEST(NcclGraphs, SixteenH100NodesAndA100Nodes)
{
  // Several H100 nodes: start at min(NIC 50, PCIe 48) = 48 GB/s, 8 NICs x floor(48/48) = 8 channels; NVLink hops
  // take 8 x 48 x 7/8 = 336 <= 370.8; 8 x 48 = 384 >= 370.8 ends the search; no duplication on sm90 below
  // 50 GB/s with more than 4 channels. One GPU per NIC switch: the tree falls back to the simple TREE pattern.
  const auto h = derive_graphs(node_spec(NodeLayout::DgxH100), 16);
  EXPECT_EQ(h.ring.channels, 8);
  EXPECT_DOUBLE_EQ(h.ring.bw_inter.bytes_per_sec(), 48e9);
  EXPECT_EQ(h.tree.channels, 8);
  EXPECT_TRUE(h.tree.simple_tree);
  EXPECT_EQ(h.comm_channels, 16);
  // One A100 node: 12 links x 20 = 240 GB/s; 40 GB/s x floor(240/40) = 6 rings = 240 ends the search; sm80 always
  // duplicates at >= 25 GB/s: 12 x 20.
  const auto a = derive_graphs(node_spec(NodeLayout::DgxA100), 1);
  EXPECT_EQ(a.ring.channels, 12);
  EXPECT_DOUBLE_EQ(a.ring.bw_intra.bytes_per_sec(), 20e9);
  EXPECT_EQ(a.nvls.channels, 0);
  EXPECT_EQ(a.nvls_channels, 0);
}
