// RCCL cost model on AMD MI300X: every expected number is computed here from RCCL 2.21.5's formulas (ROCm/rccl commit
// 0cbce2a7571c907554199fad7e905f16ec0a565c: src/graph/tuning.cc ncclTopoTuneModel / ncclTopoGetAlgoTime, src/enqueue.cc
// topoGetAlgoInfo / getChannnelThreadInfo, src/graph/rome_models.cc, src/graph/connect.cc ncclTopoPostset), with the
// constants written out below and the array they come from named beside them. The pick table is printed so that
// models/README.md can quote it.
#include "railyard/models/rccl_tuning.hpp"

#include "railyard/models/lowering.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace railyard;
using namespace railyard::models;

namespace {

constexpr double kRel = 1e-9;

// src/graph/tuning.cc baseLat[Tree or Ring] = { 12.0, 12.0, 17.0 } (LL, LL128, Simple), microseconds.
constexpr double kBaseLL = 12.0, kBaseSimple = 17.0;
// rcclTuningModel[5] = tuning_model_5 (rome_model_79 and rome_model_81: "tuning=5"):
//   hwLat NVLINK: Tree { 0.9, 0.0, 2.3 }, Ring { 0.8, 0.0, 2.1 }; NET: Tree { 10.5, 0.0, 25.0 }, Ring { 9.5, 0.0, 320.0
//   }
constexpr double kNvlTreeLL = 0.9, kNvlTreeSimple = 2.3, kNvlRingLL = 0.8, kNvlRingSimple = 2.1;
constexpr double kNetTreeLL = 10.5, kNetTreeSimple = 25.0, kNetRingLL = 9.5, kNetRingSimple = 320.0;
//   bwRatio "2 nodes" (nNodes <= 2): Tree { 0.06, 0.00, 0.11 }, Ring { 0.08, 0.00, 1.00 };
//   "more than 2 nodes": Tree { 0.06, 0.00, 0.59 }, Ring { 0.08, 0.00, 1.00 }
constexpr double kRatioTreeLL = 0.06, kRatioTreeSimpleN4 = 0.59, kRatioRingLL = 0.08, kRatioRingSimple = 1.0;
//   treeCorrectionFactor and ringCorrectionFactor rows LL and Simple, by log2i(nBytes >> 6), 0..26
constexpr double kTreeCorrLL[27] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 1.0, 1.0, 1.0, 1.0, 0.6, 1.0, 0.9,
                                    1.0, 1.0, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
constexpr double kTreeCorrSimple[27] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1,
                                        0.1, 0.7, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.8};
constexpr double kRingCorrLL[27] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 1.0, 0.2, 1.0,
                                    0.4, 0.4, 0.1, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
constexpr double kRingCorrSimple[27] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1,
                                        0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.8, 1.0, 1.0, 1.0};
// src/graph/tuning.cc getNetOverhead: AMD x86 host 2.0 us, x3 for Simple.
constexpr double kNetOverheadAmd = 2.0;
// src/graph/topo.h GFX94X_XGMI_WIDTH 48.0 GB/s per xGMI link; 7 links per MI300X. parseGraph gives each channel
// totalBw / nChannels: rome_model_79 has 28 rings (one node), rome_model_81 64 (several nodes).
constexpr double kXgmiTotal = 7 * 48.0;
// src/include/device.h NCCL_MAX_NTHREADS 256 (all protocols); src/include/comm.h thresholds LL 8 (x nRanks for
// Ring), Simple 64.
constexpr int kThreads = 256;

void expect_close(double expected, double actual, const std::string& what)
{
  EXPECT_NEAR(actual, expected, std::abs(expected) * kRel + 1e-12) << what;
}

// src/include/utils.h log2i: 0 for 0 and 1.
int log2i(std::uint64_t n)
{
  int l = 0;
  while (n >>= 1)
    ++l;
  return l;
}

NcclTuningInput mi300x(int nnodes, CollectiveKind kind, double bytes)
{
  return make_input(node_spec(NodeLayout::Mi300x), nnodes, kind, Bytes(bytes));
}

// One row of RCCL's all_reduce table: latency (us), algorithm bandwidth (GB/s), its correction row.
struct Row {
  Algorithm a;
  Protocol p;
  double lat_us;
  double bw_gbps;
  const double* correction; // nullptr: not corrected (a ring on one node)
};

struct System {
  std::string name;
  int nnodes, nranks, comm_channels;
  std::vector<Row> rows;
};

// One node: ring and tree 28 channels x 12 GB/s (bus 336 GB/s), comm channels 28 x nc 2 = 56, nsteps 14. Tree/Simple
// is skipped on one gfx94x node; LL128 has bwRatio 0.
System one_node()
{
  const double bus = kXgmiTotal;
  return {"1 x 8 MI300X",
          1,
          8,
          56,
          {{Algorithm::Tree, Protocol::LL, kBaseLL + 2 * (7 * kNvlTreeLL), bus * kRatioTreeLL * 0.5, kTreeCorrLL},
           {Algorithm::Ring, Protocol::LL, kBaseLL + 14 * kNvlRingLL, bus * kRatioRingLL * 8 / 14.0, nullptr},
           {Algorithm::Ring, Protocol::Simple, kBaseSimple + 14 * kNvlRingSimple, bus * kRatioRingSimple * 8 / 14.0,
            nullptr}}};
}

// Sixteen nodes: 64 channels x 5.25 GB/s (bus 336 GB/s), comm channels 64, nsteps 254 of which RCCL counts 2 x 16 =
// 32 as network steps; intra-node ring hops cost at least the AMD host's net overhead. log2i(16) = 4 tree levels.
System sixteen_nodes()
{
  const double bus = kXgmiTotal;
  const double r = 128.0 / 254.0;
  return {"16 x 8 MI300X",
          16,
          128,
          64,
          {{Algorithm::Tree, Protocol::LL, kBaseLL + 2 * (7 * kNvlTreeLL + 4 * kNetTreeLL), bus * kRatioTreeLL * 0.5,
            kTreeCorrLL},
           {Algorithm::Tree, Protocol::Simple, kBaseSimple + 2 * (7 * kNvlTreeSimple + 4 * kNetTreeSimple),
            bus * kRatioTreeSimpleN4 * 0.5, kTreeCorrSimple},
           {Algorithm::Ring, Protocol::LL, kBaseLL + 222 * std::max(kNvlRingLL, kNetOverheadAmd) + 32 * kNetRingLL,
            bus * kRatioRingLL * r, kRingCorrLL},
           {Algorithm::Ring, Protocol::Simple,
            kBaseSimple + 222 * std::max(kNvlRingSimple, 3 * kNetOverheadAmd) + 32 * kNetRingSimple,
            bus * kRatioRingSimple * r, kRingCorrSimple}}};
}

double row_time_us(const Row& row, double bytes)
{
  double bw = row.bw_gbps;
  if (row.correction != nullptr) bw *= row.correction[std::min(log2i(static_cast<std::uint64_t>(bytes) >> 6), 26)];
  return row.lat_us + bytes / (1000 * bw);
}

int expected_channels(const System& s, const Row& row, double bytes)
{
  const double threshold = row.p == Protocol::LL ? 8.0 * (row.a == Algorithm::Ring ? s.nranks : 1) : 64.0;
  int nc = s.comm_channels;
  while (bytes < nc * kThreads * threshold && nc >= 2)
    --nc;
  return nc;
}

std::string combo(Algorithm a, Protocol p)
{
  return nccl_name(a) + "/" + nccl_name(p);
}

// The rings of rome_model_79 (src/graph/rome_models.cc, .ringBase): 28 rings, the second 14 a copy of the first.
const char* kRomeModel79 = "0 1 2 3 4 5 6 7|0 1 2 3 4 5 7 6|0 2 4 1 3 6 5 7|0 2 4 6 1 7 3 5|0 3 1 5 2 7 4 6|"
                           "0 3 5 1 6 2 7 4|0 4 1 7 3 6 2 5|7 6 5 4 3 2 1 0|6 7 5 4 3 2 1 0|7 5 6 3 1 4 2 0|"
                           "5 3 7 1 6 4 2 0|6 4 7 2 5 1 3 0|4 7 2 6 1 5 3 0|5 2 6 3 7 1 4 0";
// rome_model_81 .ringBase: 8 blocks of 8 rings; block b lists these 8 rings starting at ring b (mod 8).
const char* kRomeModel81Rings = "0 1 2 3 4 5 6 7|1 0 2 4 3 5 7 6|2 5 0 3 6 1 7 4|3 7 0 4 2 1 6 5|"
                                "4 6 2 7 3 0 5 1|5 4 7 1 3 2 6 0|6 3 1 4 0 7 5 2|7 2 0 6 4 1 5 3";

std::vector<std::vector<int>> parse(const char* text)
{
  std::vector<std::vector<int>> out;
  std::stringstream all(text);
  std::string ring;
  while (std::getline(all, ring, '|')) {
    std::stringstream ss(ring);
    std::vector<int> r;
    int g = 0;
    while (ss >> g)
      r.push_back(g);
    out.push_back(r);
  }
  return out;
}

std::set<std::pair<int, int>> directed_pairs(const std::vector<std::vector<int>>& orders, bool cyclic)
{
  std::set<std::pair<int, int>> pairs;
  for (const auto& o : orders)
    for (std::size_t i = 0; i + (cyclic ? 0 : 1) < o.size(); ++i)
      pairs.insert({o[i], o[(i + 1) % o.size()]});
  return pairs;
}

} // namespace

TEST(RcclMi300x, NodeSpecIsAnXgmiMeshOfEightGpus)
{
  const NodeSpec n = node_spec(NodeLayout::Mi300x);
  EXPECT_EQ(n.gpus, 8);
  EXPECT_EQ(n.gfx, "gfx942");
  EXPECT_EQ(n.nvlinks_per_gpu, 7); // one xGMI link to each of the 7 other GPUs
  EXPECT_DOUBLE_EQ(n.xgmi_link_bw.bytes_per_sec(), 48e9);
  EXPECT_EQ(n.nics, 8);
  EXPECT_EQ(n.cpu, CpuVendor::Amd);
  EXPECT_FALSE(n.nvswitch_multicast);
  EXPECT_FALSE(n.source.empty());
}

TEST(RcclMi300x, GraphsFollowTheRomeModels)
{
  const NodeSpec n = node_spec(NodeLayout::Mi300x);
  // One node: rome_model_79, 28 rings of 336 / 28 GB/s; ncclTopoPostset doubles them (28 <= MAXCHANNELS 128 / 2).
  const auto one = derive_graphs(n, 1);
  EXPECT_EQ(one.library, CollectiveLibrary::Rccl);
  EXPECT_EQ(one.rccl.rome_model, 79);
  EXPECT_EQ(one.rccl.tuning_model, 5);
  EXPECT_TRUE(one.rccl.msccl_enabled);
  EXPECT_EQ(one.ring.channels, 28);
  EXPECT_EQ(one.tree.channels, 28);
  expect_close(kXgmiTotal / 28 * 1e9, one.ring.bw_intra.bytes_per_sec(), "ring bw");
  EXPECT_EQ(one.comm_channels, 56);
  EXPECT_EQ(one.nvls.channels, 0);
  // Sixteen nodes: rome_model_81, 64 rings of 336 / 64 GB/s; at most 64 channels across nodes, so no doubling.
  const auto many = derive_graphs(n, 16);
  EXPECT_EQ(many.rccl.rome_model, 81);
  EXPECT_FALSE(many.rccl.msccl_enabled);
  EXPECT_EQ(many.ring.channels, 64);
  expect_close(kXgmiTotal / 64 * 1e9, many.ring.bw_inter.bytes_per_sec(), "ring bw");
  EXPECT_EQ(many.comm_channels, 64);
  // NCCL_MAX_NCHANNELS=16 on one node: cut to 16; the minimum is raised to what RCCL's 8-rank MSCCL algorithms within
  // 16 channels need (8, tools/msccl-algorithms/allreduce-allpairs-8n-*), below 16, so 16 stay.
  EXPECT_EQ(derive_graphs(n, 1, {0, 16}).comm_channels, 16);
  NodeSpec four_nics = n;
  four_nics.nics = 4;
  EXPECT_THROW(derive_graphs(four_nics, 2), InputError);
}

TEST(RcclMi300x, AlgoCostByHand)
{
  const double bus = kXgmiTotal;
  // One node, all_reduce: Ring/LL = baseLat + 14 hops of hwLat, bus x bwRatio x 8 / 14.
  auto in = mi300x(1, CollectiveKind::AllReduce, 1 << 20);
  auto c = algo_cost(in, Algorithm::Ring, Protocol::LL);
  ASSERT_TRUE(c);
  expect_close(kBaseLL + 14 * kNvlRingLL, c->latency.seconds() * 1e6, "Ring/LL lat");
  expect_close(bus * kRatioRingLL * 8 / 14.0, c->bandwidth.bytes_per_sec() / 1e9, "Ring/LL bw");
  c = algo_cost(in, Algorithm::Tree, Protocol::LL);
  ASSERT_TRUE(c);
  expect_close(kBaseLL + 2 * 7 * kNvlTreeLL, c->latency.seconds() * 1e6, "Tree/LL lat");
  expect_close(bus * kRatioTreeLL * 0.5, c->bandwidth.bytes_per_sec() / 1e9, "Tree/LL bw");
  EXPECT_FALSE(algo_cost(in, Algorithm::Tree, Protocol::Simple)); // skipped on one gfx94x node
  EXPECT_FALSE(algo_cost(in, Algorithm::Ring, Protocol::LL128));  // bwRatio 0
  EXPECT_FALSE(algo_cost(in, Algorithm::Nvls, Protocol::Simple));
  EXPECT_FALSE(algo_cost(in, Algorithm::Pat, Protocol::Simple));

  // Broadcast on one gfx94x node: Ring/LL x 1.65, nsteps = nRanks (ratio 1), sameChannels: one hop of latency.
  in.collective = CollectiveKind::Broadcast;
  c = algo_cost(in, Algorithm::Ring, Protocol::LL);
  ASSERT_TRUE(c);
  expect_close(kBaseLL + kNvlRingLL, c->latency.seconds() * 1e6, "bcast lat");
  expect_close(bus * kRatioRingLL * 1.65, c->bandwidth.bytes_per_sec() / 1e9, "bcast bw");

  // All_gather, Ring/Simple: 7 steps, bus x 8 / 7.
  in.collective = CollectiveKind::AllGather;
  c = algo_cost(in, Algorithm::Ring, Protocol::Simple);
  ASSERT_TRUE(c);
  expect_close(kBaseSimple + 7 * kNvlRingSimple, c->latency.seconds() * 1e6, "ag lat");
  expect_close(bus * 8 / 7.0, c->bandwidth.bytes_per_sec() / 1e9, "ag bw");

  // Sixteen nodes, all_reduce Ring/Simple: 222 intra steps at max(2.1, 3 x 2.0) + 32 network steps at 320 us.
  auto far = mi300x(16, CollectiveKind::AllReduce, 1 << 20);
  c = algo_cost(far, Algorithm::Ring, Protocol::Simple);
  ASSERT_TRUE(c);
  expect_close(17.0 + 222 * 6.0 + 32 * 320.0, c->latency.seconds() * 1e6, "16n Ring/Simple lat");
  expect_close(bus * 128 / 254.0, c->bandwidth.bytes_per_sec() / 1e9, "16n Ring/Simple bw");
  c = algo_cost(far, Algorithm::Tree, Protocol::Simple);
  ASSERT_TRUE(c);
  expect_close(17.0 + 2 * (7 * 2.3 + 4 * 25.0), c->latency.seconds() * 1e6, "16n Tree/Simple lat");
  expect_close(bus * 0.59 * 0.5, c->bandwidth.bytes_per_sec() / 1e9, "16n Tree/Simple bw");
  // Prediction: Tree/Simple at 64 MiB, log2i(2^26 >> 6) = 20, treeCorrectionFactor[Simple][20] = 1.0.
  far.bytes = Bytes(64.0 * (1 << 20));
  const auto t = predict(far, Algorithm::Tree, Protocol::Simple);
  ASSERT_TRUE(t);
  expect_close(17.0 + 2 * (7 * 2.3 + 4 * 25.0) + 64.0 * (1 << 20) / (1000 * bus * 0.59 * 0.5 * 1.0), t->seconds() * 1e6,
               "16n Tree/Simple 64 MiB");
}

TEST(RcclMi300x, AllReducePickTableOnOneAndSixteenNodes)
{
  const std::vector<double> sizes = {8, 64 * 1024, 1 << 20, 64.0 * (1 << 20), 1024.0 * (1 << 20)};
  std::cout << "| system | size | pick | channels | time [us] | runner-up | time [us] | RCCL's default kernels |\n"
            << "|---|---|---|---|---|---|---|---|\n";
  for (const System& s : {one_node(), sixteen_nodes()}) {
    for (double bytes : sizes) {
      std::vector<std::pair<double, const Row*>> times;
      for (const Row& row : s.rows)
        times.push_back({row_time_us(row, bytes), &row});
      std::stable_sort(times.begin(), times.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      const Row& pick = *times[0].second;
      const auto in = mi300x(s.nnodes, CollectiveKind::AllReduce, bytes);
      const auto got = choose(in);
      ASSERT_TRUE(got) << s.name << " " << bytes;
      EXPECT_EQ(combo(got->algorithm, got->protocol), combo(pick.a, pick.p)) << s.name << " " << bytes;
      EXPECT_EQ(got->channels, expected_channels(s, pick, bytes)) << s.name << " " << bytes;
      EXPECT_EQ(got->threads, kThreads);
      expect_close(times[0].first, got->time.seconds() * 1e6, s.name + " time");
      // Every row the table prices agrees with the hand calculation.
      for (const auto& [t, row] : times) {
        const auto p = predict(in, row->a, row->p);
        ASSERT_TRUE(p) << combo(row->a, row->p);
        expect_close(t, p->seconds() * 1e6, s.name + " " + combo(row->a, row->p));
      }
      std::cout << fmt::format("| {} | {} | {} | {} | {:.2f} | {} | {:.2f} | {} |\n", s.name,
                               bytes < 1024        ? fmt::format("{} B", bytes)
                               : bytes < (1 << 20) ? fmt::format("{} KiB", bytes / 1024)
                                                   : (bytes < (1 << 30) ? fmt::format("{} MiB", bytes / (1 << 20))
                                                                        : fmt::format("{} GiB", bytes / (1 << 30))),
                               combo(pick.a, pick.p), got->channels, times[0].first,
                               combo(times[1].second->a, times[1].second->p), times[1].first,
                               to_string(rccl_default_path(in)));
    }
  }
}

TEST(RcclMi300x, RefusesWhatRcclCannotRun)
{
  auto in = mi300x(1, CollectiveKind::AllReduce, 1 << 20);
  const InputLocation where{"scenario.yaml", 3, ""};
  for (Algorithm a : {Algorithm::Nvls, Algorithm::NvlsTree, Algorithm::Pat, Algorithm::CollNetDirect}) {
    try {
      check_request(in, a, std::nullopt, where);
      ADD_FAILURE() << nccl_name(a) << " accepted";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("RCCL cannot run all_reduce with algorithm " + nccl_name(a)), std::string::npos) << msg;
      EXPECT_EQ(e.where().field, "algorithm");
    }
  }
  EXPECT_THROW(check_request(in, Algorithm::Ring, Protocol::LL128, where), InputError);
  EXPECT_THROW(check_request(in, Algorithm::Tree, Protocol::Simple, where), InputError); // one gfx94x node
  EXPECT_NO_THROW(check_request(in, Algorithm::Tree, Protocol::LL, where));
  EXPECT_NO_THROW(check_request(in, Algorithm::Ring, Protocol::Simple, where));
  auto far = mi300x(2, CollectiveKind::AllReduce, 1 << 20);
  EXPECT_NO_THROW(check_request(far, Algorithm::Tree, Protocol::Simple, where));
  in.collective = CollectiveKind::AllGather;
  EXPECT_THROW(check_request(in, Algorithm::Tree, std::nullopt, where), InputError);
}

TEST(RcclMi300x, OverridesFollowRcclsParseListAndRingFallback)
{
  auto in = mi300x(1, CollectiveKind::AllReduce, 1 << 20);
  // NCCL_PROTO=LL128 leaves nothing with bandwidth (bwRatio LL128 is 0), so RCCL restores the ring's bandwidths of
  // every protocol ("at least set ring algo available"): Ring/Simple, 17 + 14 x 2.1 us + 1 MiB at 336 x 8 / 14 GB/s.
  in.overrides = NcclOverrides::parse(std::nullopt, "LL128", {});
  validate(in, {});
  const auto got = choose(in);
  ASSERT_TRUE(got);
  EXPECT_EQ(combo(got->algorithm, got->protocol), "Ring/Simple");
  expect_close(17.0 + 14 * 2.1 + (1 << 20) / (1000 * kXgmiTotal * 8 / 14.0), got->time.seconds() * 1e6, "fallback");
  // NCCL_ALGO=tree: Tree/LL (Tree/Simple is skipped on one node).
  in.overrides = NcclOverrides::parse("tree", std::nullopt, {});
  EXPECT_EQ(combo(choose(in)->algorithm, choose(in)->protocol), "Tree/LL");
  // Per-function sections are later NCCL syntax.
  in.overrides = NcclOverrides::parse("ring;allreduce:tree", std::nullopt, {});
  try {
    validate(in, {});
    ADD_FAILURE() << "sections accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "overrides");
  }
  in.overrides = {};
  in.rccl.tuning_model = 6;
  try {
    validate(in, {});
    ADD_FAILURE() << "tuning model 6 accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "rccl.tuning_model");
  }
}

TEST(RcclMi300x, RingOrdersComeFromTheRomeModels)
{
  const NodeSpec n = node_spec(NodeLayout::Mi300x);
  // One node: channel c runs rome_model_79's ring c mod 28, and rings 14..27 repeat 0..13, so 14 orders serve the 56
  // channels. Each directed GPU pair of the mesh (8 x 7 = 56) is used by two of them: the channels spread over all
  // xGMI links in both directions.
  const auto one = rccl_ring_orders(n, 1);
  EXPECT_EQ(one, parse(kRomeModel79));
  const auto pairs = directed_pairs(one, true);
  EXPECT_EQ(pairs.size(), 56u);
  EXPECT_EQ(one.size() * 8, 2 * pairs.size());
  // Sixteen nodes: rome_model_81's 64 rings, block b = rings b, b+1, ... (mod 8); odd hosts run them reversed.
  const auto base = parse(kRomeModel81Rings);
  const auto host0 = rccl_ring_orders(n, 16, 0);
  ASSERT_EQ(host0.size(), 64u);
  for (int c = 0; c < 64; ++c)
    EXPECT_EQ(host0[c], base[(c / 8 + c % 8) % 8]) << "channel " << c;
  const auto host1 = rccl_ring_orders(n, 16, 1);
  for (int c = 0; c < 64; ++c) {
    auto rev = host0[c];
    std::reverse(rev.begin(), rev.end());
    EXPECT_EQ(host1[c], rev) << "channel " << c;
  }
  // Inside a node each channel is a chain (it leaves through a NIC): the 64 chains use all 56 directed pairs.
  EXPECT_EQ(directed_pairs(host0, false).size(), 56u);
}

TEST(RcclMi300x, LoweringCostsAreRcclsLatencies)
{
  auto c = rccl_lowering_costs(Algorithm::Ring, Protocol::LL, 8, 1);
  expect_close(kBaseLL * 1e-6, c.launch.seconds(), "launch");
  expect_close(kNvlRingLL * 1e-6, c.intra_hop.seconds(), "intra");
  expect_close(kNetRingLL * 1e-6, c.inter_hop.seconds(), "inter");
  c = rccl_lowering_costs(Algorithm::Ring, Protocol::Simple, 128, 16);
  expect_close(kBaseSimple * 1e-6, c.launch.seconds(), "launch");
  expect_close(3 * kNetOverheadAmd * 1e-6, c.intra_hop.seconds(), "intra floor");
  expect_close(kNetRingSimple * 1e-6, c.inter_hop.seconds(), "inter");
  c = rccl_lowering_costs(Algorithm::Tree, Protocol::Simple, 128, 16);
  expect_close(kNvlTreeSimple * 1e-6, c.intra_hop.seconds(), "tree intra");
  expect_close(kNetTreeSimple * 1e-6, c.inter_hop.seconds(), "tree inter");
  EXPECT_THROW(rccl_lowering_costs(Algorithm::Nvls, Protocol::Simple, 8, 1), std::invalid_argument);
}

TEST(RcclMi300x, DefaultKernelPathsBeforeTheModel)
{
  EXPECT_EQ(rccl_default_path(mi300x(1, CollectiveKind::AllReduce, 64 * 1024)), RcclKernelPath::Mscclpp);
  EXPECT_EQ(rccl_default_path(mi300x(1, CollectiveKind::AllReduce, 1 << 20)), RcclKernelPath::Mscclpp);
  EXPECT_EQ(rccl_default_path(mi300x(1, CollectiveKind::AllReduce, 4 << 20)), RcclKernelPath::Msccl);
  EXPECT_EQ(rccl_default_path(mi300x(1, CollectiveKind::AllReduce, 64 << 20)), RcclKernelPath::CostModel);
  EXPECT_EQ(rccl_default_path(mi300x(16, CollectiveKind::AllReduce, 8)), RcclKernelPath::CostModel);
}

TEST(RcclMi300x, NcclInputsAreUnchanged)
{
  // A NCCL input never reads the RCCL fields, and the library defaults to NCCL.
  const auto in = make_input(node_spec(NodeLayout::DgxH100), 1, CollectiveKind::AllReduce, Bytes(1 << 20));
  EXPECT_EQ(in.library, CollectiveLibrary::Nccl);
  auto other = in;
  other.rccl.tuning_model = 0;
  other.rccl.rome_model = 81;
  other.rccl.gfx = "gfx90a";
  const auto a = choose(in), b = choose(other);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->algorithm, b->algorithm);
  EXPECT_EQ(a->protocol, b->protocol);
  EXPECT_EQ(a->channels, b->channels);
  EXPECT_EQ(a->time.seconds(), b->time.seconds());
  for (Algorithm alg : {Algorithm::Ring, Algorithm::Tree, Algorithm::Nvls})
    for (Protocol p : {Protocol::LL, Protocol::LL128, Protocol::Simple})
      EXPECT_EQ(predict(in, alg, p).has_value(), predict(other, alg, p).has_value());
  // NVLS is available to NCCL on this H100 node and refused only on the RCCL side.
  EXPECT_NO_THROW(check_request(in, Algorithm::Nvls, Protocol::Simple, {}));
  EXPECT_EQ(derive_graphs(node_spec(NodeLayout::DgxH100), 1).library, CollectiveLibrary::Nccl);
}
