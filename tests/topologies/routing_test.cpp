// ECMP behaviour of route(): deterministic for equal arguments, sensitive to the seed, and spreading flow keys evenly.
// The even-spread checks use the binomial distribution: with n keys and u equally likely choices, each choice's
// count has mean n/u and standard deviation sqrt(n (1/u)(1 - 1/u)); a fair hash stays within 5 sigma (a false
// alarm has probability below 1e-6 per count).
#include "topo_test_util.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

using namespace railyard;
using namespace railyard::topo;
using namespace railyard::topo::testing;

namespace {

const char* kLeafSpine = "cluster:\n  kind: fat_tree\n  nodes: 16\n  gpus_per_node: 8\n"
                         "  fabric: {leaf_downlinks: 32, oversubscription: 2}\n";

void expect_binomial_spread(const std::map<Path, int>& counts, int n, int choices)
{
  EXPECT_EQ(static_cast<int>(counts.size()), choices);
  const double p = 1.0 / choices;
  const double mean = n * p;
  const double sigma = std::sqrt(n * p * (1 - p));
  int total = 0;
  for (const auto& [path, c] : counts) {
    EXPECT_LE(std::abs(c - mean), 5 * sigma) << "count " << c << " vs mean " << mean;
    total += c;
  }
  EXPECT_EQ(total, n);
}

} // namespace

TEST(Routing, SameArgumentsSamePathAcrossInstances)
{
  const Topology a = build_from_yaml(kLeafSpine);
  const Topology b = build_from_yaml(kLeafSpine);
  for (std::uint64_t key = 0; key < 500; ++key) {
    const Path p = a.route(0, 100, key, 17);
    EXPECT_EQ(p, a.route(0, 100, key, 17));
    EXPECT_EQ(p, b.route(0, 100, key, 17));
  }
}

TEST(Routing, SeedChangesTheChoice)
{
  const Topology t = build_from_yaml(kLeafSpine);
  int differ = 0;
  for (std::uint64_t key = 0; key < 500; ++key)
    differ += t.route(0, 100, key, 1) != t.route(0, 100, key, 2) ? 1 : 0;
  // 16 spines: an unrelated seed keeps the same spine for about 1/16 of the keys.
  EXPECT_GT(differ, 500 / 2);
}

TEST(Routing, FlowKeysSpreadOverAllUplinks)
{
  const Topology t = build_from_yaml(kLeafSpine);
  const int uplinks = static_cast<int>(std::ceil(32 / 2.0));
  const int n = 10000;
  std::map<Path, int> counts;
  for (int key = 0; key < n; ++key)
    ++counts[t.route(0, 100, static_cast<std::uint64_t>(key), 12345)];
  expect_binomial_spread(counts, n, uplinks);
}

TEST(Routing, HashesAtSuccessiveTiersAreIndependent)
{
  // k = 4 fat tree, hosts in different pods: (k/2) choices at the edge times (k/2) at the aggregation switch. If the
  // two switches hashed alike, only k/2 of the (k/2)^2 paths would ever be used.
  const int k = 4, hosts = k * k * k / 4;
  const Topology t = build_from_yaml(fmt::format("cluster:\n  kind: fat_tree\n  nodes: {}\n  gpus_per_node: 1\n"
                                                 "  node: {{nvswitch: false}}\n  fabric: {{tiers: 3, radix: {}}}\n",
                                                 hosts, k));
  const int n = 10000;
  std::map<Path, int> counts;
  for (int key = 0; key < n; ++key)
    ++counts[t.route(0, hosts - 1, static_cast<std::uint64_t>(key), 9)];
  expect_binomial_spread(counts, n, (k / 2) * (k / 2));
}

TEST(Routing, ConsecutiveKeysDoNotAlias)
{
  // Flow keys are often small consecutive integers (channel numbers): key and key + u must not land together.
  const Topology t = build_from_yaml(kLeafSpine);
  const int uplinks = 16;
  int same = 0;
  const int n = 4000;
  for (int key = 0; key < n; ++key)
    same += t.route(0, 100, key, 0) == t.route(0, 100, key + uplinks, 0) ? 1 : 0;
  // Independent choices coincide with probability 1/u: mean n/u, binomial 5-sigma band.
  const double p = 1.0 / uplinks;
  EXPECT_LE(std::abs(same - n * p), 5 * std::sqrt(n * p * (1 - p)));
}

TEST(Routing, LatencyAndBandwidthOfAPath)
{
  const Topology t =
      build_from_yaml("cluster:\n  kind: fat_tree\n  nodes: 16\n  nic: {bandwidth: 400 Gb/s, latency: 2 us}"
                      "\n  fabric: {leaf_downlinks: 32, link_bandwidth: 100 Gb/s, link_latency: 0.5 us}\n");
  const Path p = t.route(0, 127, 0, 0); // leaf 0 to leaf 3 through a spine
  ASSERT_EQ(count_kind(t, p, LinkKind::LeafSpine), 2);
  const ClusterSpec& s = t.spec();
  EXPECT_NEAR(t.path_latency(p).seconds(), 2 * s.pcie_latency.seconds() + 2 * 2e-6 + 2 * 0.5e-6, 1e-15);
  EXPECT_DOUBLE_EQ(t.path_bandwidth(p).bytes_per_sec(), 100e9 / 8); // the slowest hop: 100 Gb/s spine links
  EXPECT_DOUBLE_EQ(t.path_bandwidth(t.route(0, 8, 0, 0)).bytes_per_sec(), 400e9 / 8); // same leaf: the NIC
}

// A topology's link table points into its graph's edge storage: a copy or a move must keep every link's own
// bandwidth and latency (a moved topology once read freed storage, and a replay on it saw paths of no bandwidth).
TEST(Routing, CopiedAndMovedTopologiesKeepTheirLinks)
{
  const std::string yaml = "cluster:\n  kind: fat_tree\n  nodes: 16\n  nic: {bandwidth: 400 Gb/s, latency: 2 us}"
                           "\n  fabric: {leaf_downlinks: 32, link_bandwidth: 100 Gb/s, link_latency: 0.5 us}\n";
  Topology original = build_from_yaml(yaml);
  const Topology copied(original);
  const auto moved = std::make_unique<const Topology>(std::move(original));
  const Topology fresh = build_from_yaml(yaml);
  for (const Topology* t : {&copied, moved.get()}) {
    ASSERT_EQ(t->num_links(), fresh.num_links());
    for (LinkId l = 0; l < fresh.num_links(); ++l) {
      EXPECT_EQ(t->link_name(l), fresh.link_name(l));
      EXPECT_EQ(t->link(l).bandwidth, fresh.link(l).bandwidth) << fresh.link_name(l);
    }
    // The numbers of LatencyAndBandwidthOfAPath above: 100 Gb/s spine links across leaves, the NIC within one.
    EXPECT_DOUBLE_EQ(t->path_bandwidth(t->route(0, 127, 0, 0)).bytes_per_sec(), 100e9 / 8);
    EXPECT_DOUBLE_EQ(t->path_bandwidth(t->route(0, 8, 0, 0)).bytes_per_sec(), 400e9 / 8);
  }
}

TEST(Routing, LinkIdsAndNamesAreDenseAndPaired)
{
  const Topology t = build_from_yaml(kLeafSpine);
  std::map<std::size_t, int> per_cable;
  for (LinkId id = 0; id < t.num_links(); ++id) {
    EXPECT_EQ(t.link(id).id, id);
    ++per_cable[t.link(id).cable];
    const std::string name = t.link_name(id);
    EXPECT_EQ(name, t.vertex(t.link_source(id)).name + "->" + t.vertex(t.link_target(id)).name);
  }
  for (const auto& [cable, n] : per_cable)
    EXPECT_EQ(n, 2) << "cable " << cable;
  EXPECT_EQ(per_cable.size() * 2, t.num_links());
  std::set<std::string> names;
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    EXPECT_TRUE(names.insert(t.vertex(v).name).second) << t.vertex(v).name;
}

TEST(Routing, GpuIndicesOutsideTheClusterAreRejected)
{
  const Topology t = build_from_yaml(kLeafSpine);
  EXPECT_THROW((void)t.route(0, 128, 0, 0), std::out_of_range);
  EXPECT_THROW((void)t.route(-1, 3, 0, 0), std::out_of_range);
  EXPECT_THROW((void)t.gpu_vertex(128), std::out_of_range);
}

TEST(Routing, SeveralDownCandidatesAreHashedToo)
{
  // A hand-made graph where the way down is not unique: leaf0 climbs through agg2 to core0, which can descend to
  // leaf1 through agg0 or agg1. Up*/down* must offer both and the hash must use both.
  ClusterSpec spec;
  spec.kind = ClusterKind::FatTree;
  spec.nodes = 2;
  spec.gpus_per_node = 1;
  spec.nvswitch = false;
  Graph g;
  auto vertex = [&](VertexKind k, int tier, int node, const char* name) {
    return boost::add_vertex(Vertex{k, tier, node, node >= 0 ? 0 : -1, -1, name}, g);
  };
  const auto gpu0 = vertex(VertexKind::Gpu, 0, 0, "gpu0.0"), nic0 = vertex(VertexKind::Nic, 0, 0, "nic0.0");
  const auto gpu1 = vertex(VertexKind::Gpu, 0, 1, "gpu1.0"), nic1 = vertex(VertexKind::Nic, 0, 1, "nic1.0");
  const auto leaf0 = vertex(VertexKind::Leaf, 1, -1, "leaf0"), leaf1 = vertex(VertexKind::Leaf, 1, -1, "leaf1");
  const auto agg0 = vertex(VertexKind::Spine, 2, -1, "agg0"), agg1 = vertex(VertexKind::Spine, 2, -1, "agg1");
  const auto agg2 = vertex(VertexKind::Spine, 2, -1, "agg2"), core0 = vertex(VertexKind::Core, 3, -1, "core0");
  std::size_t cable = 0;
  auto connect = [&](VertexId a, VertexId b, LinkKind k) {
    boost::add_edge(a, b, Link{k, units::GBps(50), units::us(1), 2 * cable, cable}, g);
    boost::add_edge(b, a, Link{k, units::GBps(50), units::us(1), 2 * cable + 1, cable}, g);
    ++cable;
  };
  connect(gpu0, nic0, LinkKind::Pcie);
  connect(gpu1, nic1, LinkKind::Pcie);
  connect(nic0, leaf0, LinkKind::NicLeaf);
  connect(nic1, leaf1, LinkKind::NicLeaf);
  connect(leaf0, agg2, LinkKind::LeafSpine);
  connect(leaf1, agg0, LinkKind::LeafSpine);
  connect(leaf1, agg1, LinkKind::LeafSpine);
  connect(agg0, core0, LinkKind::SpineCore);
  connect(agg1, core0, LinkKind::SpineCore);
  connect(agg2, core0, LinkKind::SpineCore);
  const Topology t(spec, std::move(g));

  const auto paths = t.all_paths(0, 1);
  ASSERT_EQ(paths.size(), 2U);
  for (const Path& p : paths) {
    EXPECT_TRUE(is_walk(t, p, 0, 1));
    EXPECT_EQ(p.size(), 8U); // GPU NIC leaf0 agg2 core0 agg0|agg1 leaf1 NIC GPU
  }
  const int n = 10000;
  std::map<Path, int> counts;
  for (int key = 0; key < n; ++key)
    ++counts[t.route(0, 1, static_cast<std::uint64_t>(key), 5)];
  expect_binomial_spread(counts, n, 2);
}
