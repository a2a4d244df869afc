// Fat trees: the 3-tier k-ary fat tree of Al-Fares, Loukissas and Vahdat, "A Scalable, Commodity Data Center Network
// Architecture" (SIGCOMM 2008): k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores, k^3/4 hosts, (k/2)^2
// equal-cost paths between pods and k/2 inside a pod. And the 2-tier leaf/spine.
#include "topo_test_util.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <set>

using namespace railyard;
using namespace railyard::topo;
using namespace railyard::topo::testing;

namespace {

// One GPU per node, so every NIC is a host of the textbook tree and every pair of hosts routes through the fabric.
Topology k_ary(int k, int hosts, const std::string& extra = "")
{
  return build_from_yaml(fmt::format("cluster:\n  kind: fat_tree\n  nodes: {}\n  gpus_per_node: 1\n"
                                     "  node: {{nvswitch: false}}\n  fabric: {{tiers: 3, radix: {}{}}}\n",
                                     hosts, k, extra));
}

int switches_at(const Topology& t, int tier)
{
  int n = 0;
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    n += t.vertex(v).tier == tier ? 1 : 0;
  return n;
}

void expect_distinct_walks(const Topology& t, const std::vector<Path>& paths, int src, int dst)
{
  std::set<Path> unique(paths.begin(), paths.end());
  EXPECT_EQ(unique.size(), paths.size());
  for (const Path& p : paths)
    EXPECT_TRUE(is_walk(t, p, src, dst));
}

class KAryFatTree : public ::testing::TestWithParam<int> {};

} // namespace

TEST_P(KAryFatTree, SwitchCountsMatchTheClosedForm)
{
  const int k = GetParam();
  const int hosts = k * k * k / 4;
  const Topology t = k_ary(k, hosts);
  EXPECT_EQ(switches_at(t, 1), k * (k / 2)); // edge: k pods x k/2
  EXPECT_EQ(switches_at(t, 2), k * (k / 2)); // aggregation: k pods x k/2
  EXPECT_EQ(switches_at(t, 3), (k / 2) * (k / 2));
  EXPECT_EQ(count_vertices(t, VertexKind::Nic), hosts);
  // Every switch uses exactly k ports: count the cables at each switch (two directed links per cable).
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    if (t.vertex(v).tier > 0) {
      EXPECT_EQ(boost::out_degree(v, t.graph()), static_cast<std::size_t>(k)) << t.vertex(v).name;
    }
}

TEST_P(KAryFatTree, EqualCostPathCounts)
{
  const int k = GetParam();
  const int half = k / 2;
  const int hosts = k * k * k / 4;
  const Topology t = k_ary(k, hosts);
  const int per_pod = half * half;
  // Host 0 sits on edge 0 of pod 0. Host 1 shares its edge; host `half` is on the next edge of pod 0; host `per_pod`
  // is in pod 1 and the last host in the last pod.
  const auto same_edge = t.all_paths(0, 1);
  ASSERT_EQ(same_edge.size(), 1U);
  EXPECT_EQ(same_edge[0].size(), 4U); // GPU-NIC-edge-NIC-GPU
  const auto same_pod = t.all_paths(0, half);
  EXPECT_EQ(same_pod.size(), static_cast<std::size_t>(half));
  expect_distinct_walks(t, same_pod, 0, half);
  for (const Path& p : same_pod)
    EXPECT_EQ(p.size(), 6U); // ... edge-agg-edge ...
  for (int dst : {per_pod, hosts - 1}) {
    const auto other_pod = t.all_paths(0, dst);
    EXPECT_EQ(other_pod.size(), static_cast<std::size_t>(half * half));
    expect_distinct_walks(t, other_pod, 0, dst);
    for (const Path& p : other_pod) {
      EXPECT_EQ(p.size(), 8U); // ... edge-agg-core-agg-edge ...
      EXPECT_EQ(count_kind(t, p, LinkKind::SpineCore), 2);
    }
  }
}

TEST_P(KAryFatTree, RoutesAreAmongTheEqualCostPaths)
{
  const int k = GetParam();
  const int hosts = k * k * k / 4;
  const Topology t = k_ary(k, hosts);
  const auto all = t.all_paths(0, hosts - 1);
  const std::set<Path> allowed(all.begin(), all.end());
  for (std::uint64_t key = 0; key < 200; ++key)
    EXPECT_TRUE(allowed.count(t.route(0, hosts - 1, key, 42)));
}

INSTANTIATE_TEST_SUITE_P(Radix, KAryFatTree, ::testing::Values(4, 8));

TEST(FatTree3, OnlyThePodsTheNicsNeedAreBuilt)
{
  const int k = 8, half = 4;
  const int hosts = 40; // needs ceil(40 / (k/2)^2) = 3 pods
  const int pods = (hosts + half * half - 1) / (half * half);
  const Topology t = k_ary(k, hosts);
  EXPECT_EQ(switches_at(t, 1), pods * half);
  EXPECT_EQ(switches_at(t, 2), pods * half);
  EXPECT_EQ(switches_at(t, 3), half * half);
  EXPECT_EQ(t.all_paths(0, hosts - 1).size(), static_cast<std::size_t>(half * half));
}

TEST(FatTree3, EdgeOversubscriptionRemovesAggregationSwitches)
{
  const int k = 8, half = 4, over = 2;
  const int up = (half + over - 1) / over; // edge uplinks = ceil((k/2) / oversubscription)
  const int hosts = k * k * k / 4;
  const Topology t = k_ary(k, hosts, fmt::format(", oversubscription: {}", over));
  EXPECT_EQ(switches_at(t, 2), k * up);
  EXPECT_EQ(switches_at(t, 3), up * half);
  EXPECT_EQ(t.all_paths(0, half).size(), static_cast<std::size_t>(up));
  EXPECT_EQ(t.all_paths(0, hosts - 1).size(), static_cast<std::size_t>(up * half));
  EXPECT_DOUBLE_EQ(t.summary().oversubscription, static_cast<double>(half) / up);
}

TEST(FatTree3, PathLatencyIsTheSumOfTierLatencies)
{
  const int k = 4, hosts = 16;
  const Topology t = k_ary(k, hosts, ", link_latency: 0.25 us");
  const ClusterSpec& s = t.spec();
  // Across pods: 2 PCIe + 2 NIC-edge + 4 switch-to-switch hops.
  const double expected = 2 * s.pcie_latency.seconds() + 2 * s.nic_latency.seconds() + 4 * 0.25e-6;
  for (const Path& p : t.all_paths(0, hosts - 1))
    EXPECT_NEAR(t.path_latency(p).seconds(), expected, 1e-15);
}

TEST(FatTree2, LeafSpineShape)
{
  // 16 nodes x 8 GPUs = 128 NICs on 32-port leaves: 4 leaves. 2:1 gives ceil(32 / 2) = 16 uplinks, so 16 spines.
  const int nodes = 16, gpn = 8, down = 32;
  const double over = 2.0;
  const Topology t = build_from_yaml(fmt::format("cluster:\n  kind: fat_tree\n  nodes: {}\n  gpus_per_node: {}\n"
                                                 "  fabric: {{leaf_downlinks: {}, oversubscription: \"2:1\"}}\n",
                                                 nodes, gpn, down));
  const int leaves = (nodes * gpn + down - 1) / down;
  const int spines = static_cast<int>(std::ceil(down / over));
  EXPECT_EQ(count_vertices(t, VertexKind::Leaf), leaves);
  EXPECT_EQ(count_vertices(t, VertexKind::Spine), spines);
  EXPECT_EQ(count_vertices(t, VertexKind::Core), 0);
  // NIC i is on leaf i / 32; GPUs on different leaves have one path per spine, on the same leaf one.
  EXPECT_EQ(t.all_paths(0, gpn).size(), 1U);                                // nic0.0 and nic1.0 share leaf 0
  EXPECT_EQ(t.all_paths(0, down).size(), static_cast<std::size_t>(spines)); // GPU 32 is on leaf 1
  const auto s = t.summary();
  EXPECT_DOUBLE_EQ(s.oversubscription, over);
  ASSERT_EQ(s.switches_by_tier.size(), 2U);
  EXPECT_EQ(s.switches_by_tier[0], std::make_pair(std::string("leaf"), leaves));
  EXPECT_EQ(s.switches_by_tier[1], std::make_pair(std::string("spine"), spines));
}

TEST(FatTree2, IntraNodeTrafficStaysOnNvLink)
{
  const Topology t = build_from_yaml("cluster:\n  kind: fat_tree\n  nodes: 2\n");
  const Path p = t.route(0, 5, 123, 1);
  ASSERT_EQ(p.size(), 2U);
  EXPECT_EQ(kinds_along(t, p), (std::vector{VertexKind::Gpu, VertexKind::NvSwitch, VertexKind::Gpu}));
  EXPECT_EQ(t.link_name(p[0]), "gpu0.0->nvsw0");
  EXPECT_EQ(t.link_name(p[1]), "nvsw0->gpu0.5");
  EXPECT_NEAR(t.path_latency(p).seconds(), 2 * t.spec().nvlink_latency.seconds(), 1e-18);
  EXPECT_EQ(t.path_bandwidth(p), t.spec().nvlink_bandwidth);
  EXPECT_TRUE(t.route(3, 3, 0, 0).empty());
}
