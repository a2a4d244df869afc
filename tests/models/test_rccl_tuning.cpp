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
#include <map>
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
  // A network hop takes tuning model 0's NET latency (RCCL's generic table: Tree { 11.8, 18.2, 20.8 }, Ring { 9.5,
  // 19.8, 15.1 }), not model 5's, whose Ring/Simple 320 us weights RCCL's choice; the xGMI hops stay model 5's.
  constexpr double kGenericNetTreeSimple = 20.8, kGenericNetRingLL = 9.5, kGenericNetRingSimple = 15.1;
  static_assert(kNetRingSimple > 20 * kGenericNetRingSimple, "model 5's Ring/Simple NET entry is the weight");
  auto c = rccl_lowering_costs(Algorithm::Ring, Protocol::LL, 8, 1);
  expect_close(kBaseLL * 1e-6, c.launch.seconds(), "launch");
  expect_close(kNvlRingLL * 1e-6, c.intra_hop.seconds(), "intra");
  expect_close(kGenericNetRingLL * 1e-6, c.inter_hop.seconds(), "inter");
  c = rccl_lowering_costs(Algorithm::Ring, Protocol::Simple, 128, 16);
  expect_close(kBaseSimple * 1e-6, c.launch.seconds(), "launch");
  expect_close(3 * kNetOverheadAmd * 1e-6, c.intra_hop.seconds(), "intra floor");
  expect_close(kGenericNetRingSimple * 1e-6, c.inter_hop.seconds(), "inter");
  c = rccl_lowering_costs(Algorithm::Tree, Protocol::Simple, 128, 16);
  expect_close(kNvlTreeSimple * 1e-6, c.intra_hop.seconds(), "tree intra");
  expect_close(kGenericNetTreeSimple * 1e-6, c.inter_hop.seconds(), "tree inter");
  EXPECT_THROW(rccl_lowering_costs(Algorithm::Nvls, Protocol::Simple, 8, 1), std::invalid_argument);
}

TEST(RcclMi300x, DefaultKernelPathsBeforeTheModel)
{
  // src/misc/msccl/msccl_lifecycle.cc mscclEnqueueCheck: MSCCL++ only for calls captured into a HIP graph; other
  // all_reduce up to 16 MiB goes to MSCCL's allpairs files (tests/models/test_rccl_kernels.cpp has the boundaries).
  RcclCallMode captured;
  captured.graph_captured = true;
  EXPECT_EQ(rccl_default_path(mi300x(1, CollectiveKind::AllReduce, 64 * 1024)), RcclKernelPath::Msccl);
  EXPECT_EQ(rccl_default_path(mi300x(1, CollectiveKind::AllReduce, 64 * 1024), captured), RcclKernelPath::Mscclpp);
  EXPECT_EQ(rccl_default_path(mi300x(1, CollectiveKind::AllReduce, 1 << 20)), RcclKernelPath::Msccl);
  EXPECT_EQ(rccl_default_path(mi300x(1, CollectiveKind::AllReduce, 1 << 20), captured), RcclKernelPath::Mscclpp);
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

// ---------------------------------------------------------------------------------------------------------------
// Communicators that are not whole 8-GPU nodes: no rome model matches, RCCL searches (src/graph/search.cc
// ncclTopoCompute) and prices with rcclTuningModel[0] (comm->topo->tuning is only set by a rome model's "tuning=").

namespace {

// src/graph/topo.h GFX94X_XGMI_WIDTH: one xGMI link between each GPU pair; PCIe Gen5 x16 = 16 x 240 / 80 GB/s
// (src/graph/topo.cc ncclTopoAddPci); the NIC 400 Gb/s = 50 GB/s (node_spec). src/graph/search.cc speedArrayIntra /
// speedArrayInter (AMD): 48, 24, 20, ...; ncclTopoDupChannels halves channels of bwIntra >= 25.
constexpr double kLink = 48.0, kPcie = 48.0, kTopSpeed = 48.0;
// rcclTuningModel[0] = tuning_model_0 (src/graph/tuning.cc):
//   hwLat NVLINK: Tree { 0.8, 1.4, 2.5 }, Ring { 0.8, 2.2, 3.6 }; PCI: Ring { 2.2, 2.2, 5.7 };
//   NET: Tree { 11.8, 18.2, 20.8 }, Ring { 9.5, 19.8, 15.1 }
constexpr double k0NvlTreeLL = 0.8, k0NvlRingLL = 0.8, k0NvlRingSimple = 3.6, k0NvlTreeSimple = 2.5;
constexpr double k0PciRingLL = 2.2, k0PciRingSimple = 5.7;
constexpr double k0NetTreeLL = 11.8, k0NetTreeSimple = 20.8, k0NetRingLL = 9.5, k0NetRingSimple = 15.1;
//   bwRatio nNodes <= 2: Tree { 0.04, 0.22, 0.91 }, Ring { 0.04, 0.34, 1.0 }; nNodes > 2: Tree { 0.04, 0.22, 0.95 }
constexpr double k0RatioLL = 0.04, k0RatioTreeSimple2 = 0.91, k0RatioTreeSimpleN = 0.95, k0RatioRingSimple = 1.0;
constexpr double k0TreeCorrLL[27] = {0.1, 0.2, 0.1, 0.1, 0.9, 0.3, 0.4, 0.1, 0.2, 0.4, 0.2, 0.1, 0.3, 0.3,
                                     0.2, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
constexpr double k0TreeCorrSimple[27] = {0.2, 1.0, 0.1, 0.1, 0.7, 0.2, 0.4, 0.1, 0.1, 0.3, 0.4, 0.3, 0.6, 0.8,
                                         1.0, 1.0, 1.0, 1.0, 0.9, 0.8, 0.8, 0.8, 0.8, 0.8, 0.9, 0.9, 0.9};
constexpr double k0RingCorrLL[27] = {0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0.4, 0.2, 0.3, 0.5, 0.3, 0.1, 0.5, 0.5,
                                     0.3, 0.2, 0.2, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1, 0.1};
constexpr double k0RingCorrSimple[27] = {1.0, 0.8, 0.2, 1.0, 1.0, 0.3, 1.0, 0.1, 0.1, 0.2, 0.2, 0.1, 0.5, 1.0,
                                         0.8, 0.8, 1.0, 0.9, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};

NodeSpec comm_node(int nics)
{
  NodeSpec n = node_spec(NodeLayout::Mi300x);
  n.nics = nics;
  return n;
}

struct Shape {
  std::string name;
  int nnodes, ppn, nics;
  int ring_channels;
  double ring_bw;                // GB/s per channel (bwIntra = bwInter)
  double tree_intra, tree_inter; // GB/s per channel
  int comm_channels;
};

// Each line derived by hand from ncclTopoCompute (src/graph/search.cc) and ncclTopoPostset (src/graph/connect.cc):
std::vector<Shape> shapes()
{
  return {
      // TP 2: one ring 0->1->0 takes both directed links at 48; a second does not fit. 1 x 48 reaches totalBw =
      // max(PCIe 48, 1 link x 48), so pass 1 ends; ncclTopoDupChannels: 2 x 24; pass 2 cannot fit 2 at 48. The tree
      // (minChannels = maxChannels = 2 without a NIC) finds chains 0->1 and 1->0 at 48. ncclTopoPostset doubles 2 to
      // 4; src/init.cc nc = 16 for 2 ranks ("NCCL_MIN_NCHANNELS=32"): 2 x 16 = 32.
      {"TP 2 (1 x 2 MI300X)", 1, 2, 8, 2, kLink / 2, kLink, kLink, 32},
      // TP 4: at 48 at most 2 link-disjoint directed Hamiltonian 4-cycles exist (K4 has no decomposition into 3:
      // Tillson, n != 4, 6), 96 < totalBw 3 x 48 = 144; 24 / 48 = .5 > .49, so 24: the 6 directed Hamiltonian cycles
      // use each of the 12 links twice, 6 x 24 = 144 = totalBw. 24 < 25: no duplication. Tree likewise 6 x 24.
      // Postset: 12, nc = 4 for 4 ranks ("NCCL_MIN_NCHANNELS=24"): 6 x 4 = 24.
      {"TP 4 (1 x 4 MI300X)", 1, 4, 8, 6, kLink / 2, kLink / 2, kLink / 2, 24},
      // One GPU per node: each channel enters and leaves through the GPU's NIC, floor(min(NIC 50, PCIe 48) / 48) = 1
      // at 48 = totalBw (PCIe 48, no xGMI link) -> dup 2 x 24. The tree (pattern TREE for one GPU) raises bwIntra to
      // 48 in pass 2: it has no xGMI hop. comm = min(tree, ring) = 2, doubled to 4; nc 16 at 2 ranks -> 32, else 2
      // -> 4.
      {"DP 2 x 1", 2, 1, 1, 2, kPcie / 2, kTopSpeed, kPcie / 2, 32},
      {"DP 16 x 1", 16, 1, 1, 2, kPcie / 2, kTopSpeed, kPcie / 2, 4},
      {"DP 128 x 1", 128, 1, 1, 2, kPcie / 2, kTopSpeed, kPcie / 2, 4},
      // 4 GPUs per node on 4 nodes, 4 NICs (closed form): at 48 each NIC carries 1 channel and the 12 xGMI links 4
      // chains of 3 hops: 4 x 48 = 192 >= totalBw 144 -> dup 8 x 24; pass 2: 8 chains at 48 need 24 links. Postset
      // 8 -> 16; nc 2 (16 ranks).
      {"4 x 4 MI300X", 4, 4, 4, 8, kLink / 2, kLink / 2, kLink / 2, 16},
  };
}

// RCCL's all_reduce rows for a shape (tuning model 0), hand-built from ncclTopoTuneModel's AMD branch.
System all_reduce_rows(const Shape& s)
{
  const int nranks = s.nnodes * s.ppn, nnodes = s.nnodes;
  const double nsteps = 2.0 * (nranks - 1);
  const bool few = nnodes <= 2; // bwRatio row and bwIntra vs bwInter
  const double ring_bus = s.ring_channels * s.ring_bw;
  const double tree_bus = s.ring_channels * (few ? s.tree_intra : s.tree_inter);
  std::vector<Row> rows;
  if (nnodes == 1) {
    // Intra-node hops at hwLat[NVLINK]; Tree/Simple skipped on one gfx94x node; rings uncorrected.
    rows.push_back({Algorithm::Tree, Protocol::LL, kBaseLL + 2 * (s.ppn - 1) * k0NvlTreeLL, tree_bus * k0RatioLL * 0.5,
                    k0TreeCorrLL});
    rows.push_back({Algorithm::Ring, Protocol::LL, kBaseLL + nsteps * k0NvlRingLL,
                    ring_bus * k0RatioLL * nranks / nsteps, nullptr});
    rows.push_back({Algorithm::Ring, Protocol::Simple, kBaseSimple + nsteps * k0NvlRingSimple,
                    ring_bus * k0RatioRingSimple * nranks / nsteps, nullptr});
  } else {
    // RCCL counts 2 x nNodes network steps of a ring all_reduce, so nsteps - 2 nNodes intra steps (-2 with one GPU
    // per node, whose PATH_LOC graph prices them at hwLat[PCI]), each at least the AMD host's net overhead (2 us, x3
    // for Simple). Tree: 2 x (intra hops + log2i(nNodes) network hops).
    const double inter_steps = 2.0 * nnodes;
    const double intra_ll = std::max(s.ppn == 1 ? k0PciRingLL : k0NvlRingLL, kNetOverheadAmd);
    const double intra_simple = std::max(s.ppn == 1 ? k0PciRingSimple : k0NvlRingSimple, 3 * kNetOverheadAmd);
    const double levels = log2i(static_cast<std::uint64_t>(nnodes));
    const double tree_ratio_simple = few ? k0RatioTreeSimple2 : k0RatioTreeSimpleN;
    rows.push_back({Algorithm::Tree, Protocol::LL, kBaseLL + 2 * ((s.ppn - 1) * k0NvlTreeLL + levels * k0NetTreeLL),
                    tree_bus * k0RatioLL * 0.5, k0TreeCorrLL});
    rows.push_back({Algorithm::Tree, Protocol::Simple,
                    kBaseSimple + 2 * ((s.ppn - 1) * k0NvlTreeSimple + levels * k0NetTreeSimple),
                    tree_bus * tree_ratio_simple * 0.5, k0TreeCorrSimple});
    rows.push_back({Algorithm::Ring, Protocol::LL,
                    kBaseLL + (nsteps - inter_steps) * intra_ll + inter_steps * k0NetRingLL,
                    ring_bus * k0RatioLL * nranks / nsteps, k0RingCorrLL});
    rows.push_back({Algorithm::Ring, Protocol::Simple,
                    kBaseSimple + (nsteps - inter_steps) * intra_simple + inter_steps * k0NetRingSimple,
                    ring_bus * k0RatioRingSimple * nranks / nsteps, k0RingCorrSimple});
  }
  return {s.name, nnodes, nranks, s.comm_channels, rows};
}

std::string size_name(double bytes)
{
  return bytes < 1024        ? fmt::format("{} B", bytes)
         : bytes < (1 << 30) ? fmt::format("{} MiB", bytes / (1 << 20))
                             : fmt::format("{} GiB", bytes / (1 << 30));
}

} // namespace

TEST(RcclMi300xShapes, GraphsOfRcclsSearchByHand)
{
  for (const Shape& s : shapes()) {
    const auto g = rccl_communicator_graphs(comm_node(s.nics), s.nnodes, s.ppn);
    EXPECT_EQ(g.library, CollectiveLibrary::Rccl) << s.name;
    EXPECT_EQ(g.rccl.rome_model, 0) << s.name;
    EXPECT_EQ(g.rccl.tuning_model, 0) << s.name;
    EXPECT_FALSE(g.rccl.msccl_enabled) << s.name;
    EXPECT_EQ(g.ring.channels, s.ring_channels) << s.name;
    EXPECT_EQ(g.tree.channels, s.ring_channels) << s.name; // comm->nChannels: the graphs agree after src/init.cc
    expect_close(s.ring_bw * 1e9, g.ring.bw_intra.bytes_per_sec(), s.name + " ring intra");
    expect_close(s.ring_bw * 1e9, g.ring.bw_inter.bytes_per_sec(), s.name + " ring inter");
    expect_close(s.tree_intra * 1e9, g.tree.bw_intra.bytes_per_sec(), s.name + " tree intra");
    expect_close(s.tree_inter * 1e9, g.tree.bw_inter.bytes_per_sec(), s.name + " tree inter");
    EXPECT_EQ(g.comm_channels, s.comm_channels) << s.name;
    EXPECT_EQ(g.ring.type_intra, s.ppn == 1 ? NcclPath::Loc : NcclPath::Nvl) << s.name;
  }
  // The simulator's description of a one-GPU-per-node communicator (gpus = max(2, ppn) = 2, one NIC) reads as ppn 1.
  NodeSpec sim = comm_node(1);
  sim.gpus = 2;
  const auto via_sim = derive_graphs(sim, 2);
  EXPECT_EQ(via_sim.comm_channels, 32);
  EXPECT_EQ(via_sim.ring.type_intra, NcclPath::Loc);
  // TP 2 as the simulator describes it (gpus 2, nics 2, one node).
  sim.nics = 2;
  EXPECT_EQ(derive_graphs(sim, 1).comm_channels, 32);
  // 5 to 7 GPUs of a node are RCCL_TOPO_4P2H_ROME (parseRome4P2H: more than 4 GPUs with xGMI links), so the one-node
  // ring search stops at 2 channels ("limit single node max channels when searching ring graph on Rome"): two
  // link-disjoint rings at 48 fill it; no duplication beyond maxChannels. Postset 4, nc 2.
  const auto six = rccl_communicator_graphs(comm_node(8), 1, 6);
  EXPECT_EQ(six.ring.channels, 2);
  expect_close(kLink * 1e9, six.ring.bw_intra.bytes_per_sec(), "6 GPUs ring");
  EXPECT_EQ(six.comm_channels, 4);
  // NCCL_MAX_NCHANNELS=8 on TP 4: maxNchannels 8, so nc = min(8 / 6, 4) x 6 = 6; the doubled 12 are cut to 8.
  EXPECT_EQ(rccl_communicator_graphs(comm_node(8), 1, 4, {0, 8}).comm_channels, 8);
}

TEST(RcclMi300xShapes, RingOrdersOfRcclsSearch)
{
  NodeSpec tp = comm_node(8);
  tp.gpus = 2;
  EXPECT_EQ(rccl_ring_orders(tp, 1), (std::vector<std::vector<int>>{{0, 1}}));
  // TP 4: the PCI order first, then the search's first-fit over the GPUs after the current one: all 6 directed
  // Hamiltonian cycles from GPU 0, each of the 12 directed links in exactly two of them.
  tp.gpus = 4;
  const auto four = rccl_ring_orders(tp, 1);
  EXPECT_EQ(four, parse("0 1 2 3|0 1 3 2|0 2 3 1|0 2 1 3|0 3 1 2|0 3 2 1"));
  std::map<std::pair<int, int>, int> uses;
  for (const auto& o : four)
    for (std::size_t i = 0; i < o.size(); ++i)
      ++uses[{o[i], o[(i + 1) % o.size()]}];
  EXPECT_EQ(uses.size(), 12u);
  for (const auto& [pair, n] : uses)
    EXPECT_EQ(n, 2) << pair.first << "->" << pair.second;
  NodeSpec dp = comm_node(1);
  dp.gpus = 2;
  EXPECT_EQ(rccl_ring_orders(dp, 16), (std::vector<std::vector<int>>{{0}}));
  // Several GPUs per node across nodes: the closed form has no order.
  NodeSpec four_per_node = comm_node(4);
  four_per_node.gpus = 4;
  try {
    rccl_ring_orders(four_per_node, 4);
    ADD_FAILURE() << "orders for 4 x 4 given";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "node.gpus");
  }
}

TEST(RcclMi300xShapes, AllReducePicksByHand)
{
  const std::vector<double> sizes = {8, 1 << 20, 1024.0 * (1 << 20)};
  std::cout << "| shape | ring | tree | comm channels | size | pick | channels | time [us] | runner-up | time [us] |\n"
            << "|---|---|---|---|---|---|---|---|---|---|\n";
  for (const Shape& shape : shapes()) {
    const System s = all_reduce_rows(shape);
    for (double bytes : sizes) {
      std::vector<std::pair<double, const Row*>> times;
      for (const Row& row : s.rows)
        times.push_back({row_time_us(row, bytes), &row});
      std::stable_sort(times.begin(), times.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
      const Row& pick = *times[0].second;
      const auto in =
          rccl_make_input(comm_node(shape.nics), shape.nnodes, shape.ppn, CollectiveKind::AllReduce, Bytes(bytes));
      EXPECT_EQ(rccl_default_path(in), RcclKernelPath::CostModel) << s.name; // no rome model: no MSCCL
      const auto got = choose(in);
      ASSERT_TRUE(got) << s.name << " " << bytes;
      EXPECT_EQ(combo(got->algorithm, got->protocol), combo(pick.a, pick.p)) << s.name << " " << bytes;
      EXPECT_EQ(got->channels, expected_channels(s, pick, bytes)) << s.name << " " << bytes;
      expect_close(times[0].first, got->time.seconds() * 1e6, s.name + " time");
      for (const auto& [t, row] : times) {
        const auto p = predict(in, row->a, row->p);
        ASSERT_TRUE(p) << s.name << " " << combo(row->a, row->p);
        expect_close(t, p->seconds() * 1e6, s.name + " " + combo(row->a, row->p));
      }
      // Nothing else is priced: LL128 is off by default on gfx942, NVLS / CollNet / PAT absent, Tree/Simple skipped
      // on one node.
      int priced = 0;
      for (const auto& e : table(in))
        priced += e.time.has_value() ? 1 : 0;
      EXPECT_EQ(priced, static_cast<int>(s.rows.size())) << s.name;
      std::cout << fmt::format("| {} | {} x {:g} | {} x {:g}/{:g} | {} | {} | {} | {} | {:.2f} | {} | {:.2f} |\n",
                               s.name, shape.ring_channels, shape.ring_bw, shape.ring_channels, shape.tree_intra,
                               shape.tree_inter, shape.comm_channels, size_name(bytes), combo(pick.a, pick.p),
                               got->channels, times[0].first, combo(times[1].second->a, times[1].second->p),
                               times[1].first);
    }
  }
}

TEST(RcclMi300xShapes, RefusalsNameTheFieldAndWhy)
{
  auto field_of_error = [](auto&& f) {
    try {
      f();
    } catch (const InputError& e) {
      return e.where().field + " | " + e.rule();
    }
    return std::string("accepted");
  };
  // A whole node with 4 NICs across nodes matches rome_model_87, whose rings Railyard does not carry.
  auto msg = field_of_error([] { rccl_communicator_graphs(comm_node(4), 2, 8); });
  EXPECT_EQ(msg.rfind("node.nics", 0), 0u) << msg;
  EXPECT_NE(msg.find("rome_model_87"), std::string::npos) << msg;
  msg = field_of_error([] { rccl_communicator_graphs(comm_node(16), 2, 8); });
  EXPECT_NE(msg.find("rome_model_84"), std::string::npos) << msg;
  // One rank has nothing to search.
  msg = field_of_error([] { rccl_communicator_graphs(comm_node(8), 1, 1); });
  EXPECT_EQ(msg.rfind("ranks_per_node", 0), 0u) << msg;
  // Not a full xGMI mesh.
  NodeSpec partial = comm_node(8);
  partial.nvlinks_per_gpu = 2;
  msg = field_of_error([&] { rccl_communicator_graphs(partial, 1, 4); });
  EXPECT_EQ(msg.rfind("node.nvlinks_per_gpu", 0), 0u) << msg;
  EXPECT_NE(msg.find("fully connected"), std::string::npos) << msg;
  // Another GPU.
  NodeSpec mi250 = comm_node(8);
  mi250.gfx = "gfx90a";
  msg = field_of_error([&] { rccl_communicator_graphs(mi250, 1, 4); });
  EXPECT_EQ(msg.rfind("node.gfx", 0), 0u) << msg;
  // No NIC across nodes.
  msg = field_of_error([] { rccl_communicator_graphs(comm_node(0), 2, 1); });
  EXPECT_EQ(msg.rfind("node.nics", 0), 0u) << msg;
  // More than a node's GPUs.
  msg = field_of_error([] { rccl_communicator_graphs(comm_node(8), 1, 9); });
  EXPECT_EQ(msg.rfind("ranks_per_node", 0), 0u) << msg;
  // LL128 is refused on these shapes too: off by default on gfx942 although tuning model 0's bwRatio is not 0.
  const auto in = rccl_make_input(comm_node(8), 1, 4, CollectiveKind::AllReduce, Bytes(1 << 20));
  EXPECT_THROW(check_request(in, Algorithm::Ring, Protocol::LL128, {}), InputError);
  EXPECT_FALSE(predict(in, Algorithm::Ring, Protocol::LL128));
}

TEST(RcclMi300xShapes, LoweringCostsUseTuningModelZero)
{
  // TP 4 on one node: tuning model 0 (no rome model).
  auto c = rccl_lowering_costs(Algorithm::Ring, Protocol::Simple, 4, 1);
  expect_close(kBaseSimple * 1e-6, c.launch.seconds(), "launch");
  expect_close(k0NvlRingSimple * 1e-6, c.intra_hop.seconds(), "intra");
  expect_close(k0NetRingSimple * 1e-6, c.inter_hop.seconds(), "inter");
  // One GPU per node: PATH_LOC -> hwLat[PCI], floored by the net overhead (x3 for Simple).
  c = rccl_lowering_costs(Algorithm::Ring, Protocol::LL, 16, 16);
  expect_close(std::max(k0PciRingLL, kNetOverheadAmd) * 1e-6, c.intra_hop.seconds(), "ppn 1 intra");
  expect_close(k0NetRingLL * 1e-6, c.inter_hop.seconds(), "ppn 1 inter");
  // Whole nodes keep tuning model 5; the explicit form takes any index.
  c = rccl_lowering_costs(Algorithm::Ring, Protocol::LL, 8, 1);
  expect_close(kNvlRingLL * 1e-6, c.intra_hop.seconds(), "whole node");
  c = rccl_lowering_costs(Algorithm::Tree, Protocol::LL, 8, 1, 0);
  expect_close(k0NvlTreeLL * 1e-6, c.intra_hop.seconds(), "explicit 0");
  EXPECT_THROW(rccl_lowering_costs(Algorithm::Tree, Protocol::LL, 8, 1, 6), std::invalid_argument);
}
