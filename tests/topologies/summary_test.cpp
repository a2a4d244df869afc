// summary(): counts, cables, optics and the bisection max flow against closed forms; write_dot() determinism.
#include "topo_test_util.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

using namespace railyard;
using namespace railyard::topo;
using namespace railyard::topo::testing;

namespace {

Topology leaf_spine(int nodes, double over, const std::string& fabric_bw = "400 Gb/s")
{
  return build_from_yaml(fmt::format("cluster:\n  kind: fat_tree\n  nodes: {}\n  gpus_per_node: 8\n"
                                     "  nic: {{bandwidth: 400 Gb/s}}\n"
                                     "  fabric: {{leaf_downlinks: 32, oversubscription: {}, link_bandwidth: {}}}\n",
                                     nodes, over, fabric_bw));
}

constexpr double kNic = 400e9 / 8; // 400 Gb/s in bytes per second

} // namespace

TEST(Bisection, TwoToOneIsHalfOfNonBlocking)
{
  // 16 nodes x 8 GPUs = 128 NICs on four 32-port leaves. The first half of the nodes (64 NICs) fills leaves 0 and 1,
  // so every byte across the cut leaves them through their uplinks: bisection = min(64 NICs x NIC bandwidth,
  // 2 leaves x uplinks x link bandwidth), uplinks = ceil(32 / oversubscription).
  const int nodes = 16, nics_a = nodes / 2 * 8, leaves_a = nics_a / 32;
  auto formula = [&](double over, double link) {
    const int uplinks = static_cast<int>(std::ceil(32 / over));
    return std::min(nics_a * kNic, leaves_a * uplinks * link);
  };
  const auto full = leaf_spine(nodes, 1).summary();
  const auto half = leaf_spine(nodes, 2).summary();
  EXPECT_DOUBLE_EQ(full.full_bisection.bytes_per_sec(), (nodes * 8 / 2) * kNic); // (gpus / 2) x NIC bandwidth
  EXPECT_DOUBLE_EQ(full.bisection.bytes_per_sec(), formula(1, kNic));
  EXPECT_DOUBLE_EQ(full.bisection.bytes_per_sec(), full.full_bisection.bytes_per_sec());
  EXPECT_DOUBLE_EQ(half.bisection.bytes_per_sec(), formula(2, kNic));
  EXPECT_DOUBLE_EQ(half.bisection.bytes_per_sec(), full.bisection.bytes_per_sec() / 2);
  EXPECT_DOUBLE_EQ(half.oversubscription, 2.0);
  // Twice-as-fast spine links make up for half as many: the NICs are the limit again.
  const auto fast = leaf_spine(nodes, 2, "800 Gb/s").summary();
  EXPECT_DOUBLE_EQ(fast.bisection.bytes_per_sec(), formula(2, 2 * kNic));
  EXPECT_DOUBLE_EQ(fast.bisection.bytes_per_sec(), fast.full_bisection.bytes_per_sec());
  EXPECT_DOUBLE_EQ(fast.oversubscription, 1.0);
}

TEST(Bisection, ThreeTierOversubscribedAtTheEdge)
{
  // k = 4, 16 one-GPU hosts. The first 8 hosts are pods 0 and 1. With 2:1 at the edge each pod keeps
  // ceil((k/2) / 2) = 1 aggregation switch with k/2 core links: the cut is 2 pods x 1 x (k/2) links.
  const int k = 4, hosts = 16;
  auto build = [&](int over) {
    return build_from_yaml(fmt::format("cluster:\n  kind: fat_tree\n  nodes: {}\n  gpus_per_node: 1\n"
                                       "  node: {{nvswitch: false}}\n  fabric: {{tiers: 3, radix: {}, "
                                       "oversubscription: {}}}\n",
                                       hosts, k, over));
  };
  const auto nonblocking = build(1).summary();
  const auto over = build(2).summary();
  EXPECT_DOUBLE_EQ(nonblocking.bisection.bytes_per_sec(), hosts / 2 * kNic);
  EXPECT_DOUBLE_EQ(over.bisection.bytes_per_sec(), 2 * 1 * (k / 2) * kNic);
  EXPECT_DOUBLE_EQ(over.bisection.bytes_per_sec(), nonblocking.bisection.bytes_per_sec() / 2);
  ASSERT_EQ(over.switches_by_tier.size(), 3U);
  EXPECT_EQ(over.switches_by_tier[0], std::make_pair(std::string("leaf"), k * k / 2));
  EXPECT_EQ(over.switches_by_tier[1], std::make_pair(std::string("agg"), k * 1));
  EXPECT_EQ(over.switches_by_tier[2], std::make_pair(std::string("core"), 1 * k / 2));
}

TEST(Bisection, RailOptimizedAcrossScalableUnits)
{
  // 8 nodes in two SUs of 4: the first half of the nodes is SU 0, whose 8 rail leaves each have ceil(4 / o) spine
  // uplinks. Non-blocking: 32 NICs x 50 GB/s either way.
  auto build = [](int over) {
    return build_from_yaml(fmt::format("cluster:\n  kind: rail_optimized\n  nodes: 8\n  gpus_per_node: 8\n"
                                       "  fabric: {{leaf_downlinks: 4, oversubscription: {}}}\n",
                                       over));
  };
  const auto one = build(1).summary();
  const auto two = build(2).summary();
  EXPECT_DOUBLE_EQ(one.bisection.bytes_per_sec(), 32 * kNic);
  EXPECT_DOUBLE_EQ(one.bisection.bytes_per_sec(), one.full_bisection.bytes_per_sec());
  EXPECT_DOUBLE_EQ(two.bisection.bytes_per_sec(), 8 * 2 * kNic);
}

TEST(Bisection, RailOnlyIsNonBlockingAcrossTheCut)
{
  // Every rail switch joins all nodes, so each first-half NIC has its own path to a second-half NIC on its rail.
  const auto s = build_from_yaml("cluster:\n  kind: rail_only\n  nodes: 4\n  fabric: {leaf_downlinks: 8}\n").summary();
  EXPECT_DOUBLE_EQ(s.bisection.bytes_per_sec(), 4 * 8 / 2 * kNic);
  EXPECT_DOUBLE_EQ(s.full_bisection.bytes_per_sec(), s.bisection.bytes_per_sec());
}

TEST(Bisection, OddNodeCountUsesTheSmallerHalf)
{
  const auto s = leaf_spine(3, 1).summary();
  EXPECT_DOUBLE_EQ(s.full_bisection.bytes_per_sec(), 1 * 8 * kNic); // halves of 1 and 2 nodes
  EXPECT_DOUBLE_EQ(s.bisection.bytes_per_sec(), 1 * 8 * kNic);      // all 24 NICs share leaf 0: non-blocking
}

TEST(Summary, CountsCablesAndOptics)
{
  // rail_optimized, 8 nodes x 8 GPUs, SUs of 4, 2:1: 16 leaves, 2 spines.
  const Topology t = build_from_yaml("cluster:\n  kind: rail_optimized\n  nodes: 8\n  gpus_per_node: 8\n"
                                     "  fabric: {leaf_downlinks: 4, oversubscription: 2}\n");
  const int gpus = 64, leaves = 2 * 8, spines = 2;
  const auto s = t.summary();
  EXPECT_EQ(s.gpus, gpus);
  EXPECT_EQ(s.nics, gpus);
  EXPECT_EQ(s.nvswitches, 8);
  EXPECT_EQ(s.nodes, 8);
  const std::size_t cables = gpus /* NIC-leaf */ + leaves * spines /* leaf-spine */;
  EXPECT_EQ(s.cables, cables);
  EXPECT_EQ(s.optics, 2 * cables);
  EXPECT_EQ(s.links, 2 * (2 * gpus /* NVLink + PCIe per GPU */ + cables));
  ASSERT_EQ(s.switches_by_tier.size(), 2U);
  EXPECT_EQ(s.switches_by_tier[0], std::make_pair(std::string("leaf"), leaves));
  EXPECT_EQ(s.switches_by_tier[1], std::make_pair(std::string("spine"), spines));
}

TEST(Summary, SingleNodeHasNoFabric)
{
  const auto s = build_from_yaml("cluster:\n  kind: single_node\n").summary();
  EXPECT_EQ(s.cables, 0U);
  EXPECT_EQ(s.optics, 0U);
  EXPECT_TRUE(s.switches_by_tier.empty());
  EXPECT_EQ(s.bisection.bytes_per_sec(), 0.0);
  EXPECT_EQ(s.full_bisection.bytes_per_sec(), 0.0);
}

TEST(Dot, DeterministicWithOneEdgePerCable)
{
  const std::string yaml = "cluster:\n  kind: rail_optimized\n  nodes: 4\n  fabric: {leaf_downlinks: 2}\n";
  const Topology t = build_from_yaml(yaml);
  std::ostringstream a, b;
  t.write_dot(a);
  build_from_yaml(yaml).write_dot(b);
  EXPECT_EQ(a.str(), b.str());
  const std::string dot = a.str();
  EXPECT_EQ(dot.rfind("graph railyard {", 0), 0U);
  std::size_t edges = 0;
  for (std::size_t pos = dot.find(" -- "); pos != std::string::npos; pos = dot.find(" -- ", pos + 1))
    ++edges;
  EXPECT_EQ(edges, t.num_links() / 2);
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    EXPECT_NE(dot.find("\"" + t.vertex(v).name + "\" ["), std::string::npos) << t.vertex(v).name;
}

TEST(Bisection, ThreeTierOversubscribedBetweenPods)
{
  // k = 8, 128 one-GPU hosts: 8 pods of 4 edge and 4 aggregation switches. 1:r between pods: each aggregation
  // switch keeps (k/2) / r of its k/2 core links and only the cores they reach remain, (k/2) x (k/2) / r of them. The
  // cut between pods 0-3 and 4-7 is 4 pods x 4 aggregation switches x (k/2) / r links.
  const int k = 8, hosts = 128;
  auto build = [&](const std::string& core) {
    return build_from_yaml(fmt::format("cluster:\n  kind: fat_tree\n  nodes: {}\n  gpus_per_node: 1\n"
                                       "  node: {{nvswitch: false}}\n  fabric: {{tiers: 3, radix: {}, "
                                       "core_oversubscription: {}}}\n",
                                       hosts, k, core));
  };
  for (const auto& [text, r] : std::vector<std::pair<std::string, int>>{{"1", 1}, {"2", 2}, {"'4:1'", 4}}) {
    const Topology t = build(text);
    const auto s = t.summary();
    const int kept = (k / 2) / r;
    EXPECT_DOUBLE_EQ(s.bisection.bytes_per_sec(), 4.0 * 4 * kept * kNic) << r;
    EXPECT_DOUBLE_EQ(s.core_oversubscription, r);
    EXPECT_DOUBLE_EQ(s.oversubscription, 1.0); // the edge is untouched
    ASSERT_EQ(s.switches_by_tier.size(), 3U);
    EXPECT_EQ(s.switches_by_tier[2], std::make_pair(std::string("core"), (k / 2) * kept)) << r;
    // topology_size counts what build_topology builds.
    const auto size = topology_size(t.spec(), {});
    EXPECT_EQ(size.links, t.num_links()) << r;
    EXPECT_EQ(size.switches, static_cast<std::size_t>(k * (k / 2) * 2 + (k / 2) * kept)) << r;
  }
}

TEST(Bisection, NodesWithFewerNicsThanGpus)
{
  // 4 nodes x 8 GPUs with 4 NICs per node (GPUs 2k and 2k+1 share NIC k), rail-optimized: 4 rails, so 4 leaves per
  // scalable unit; each NIC cabled to its rail's leaf, each GPU by PCIe to its NIC. The cut between nodes 0-1 and 2-3
  // is their 8 NICs x 50 GB/s, which is also the full bisection (NICs, not GPUs, at line rate).
  const Topology t = build_from_yaml("cluster:\n  kind: rail_optimized\n  nodes: 4\n  gpus_per_node: 8\n"
                                     "  nic: {per_node: 4}\n  fabric: {leaf_downlinks: 32}\n");
  const auto s = t.summary();
  EXPECT_EQ(s.gpus, 32);
  EXPECT_EQ(s.nics, 16);
  ASSERT_FALSE(s.switches_by_tier.empty());
  EXPECT_EQ(s.switches_by_tier[0], std::make_pair(std::string("leaf"), 4));
  EXPECT_DOUBLE_EQ(s.bisection.bytes_per_sec(), 8 * kNic);
  EXPECT_DOUBLE_EQ(s.full_bisection.bytes_per_sec(), 8 * kNic);
  // GPUs 2k and 2k+1 of a node reach the fabric through the same NIC vertex; 2k and 2k+2 through different ones.
  for (int node = 0; node < 4; ++node)
    for (int k = 0; k < 4; ++k) {
      const int g = node * 8 + 2 * k;
      EXPECT_EQ(t.nic_vertex(g), t.nic_vertex(g + 1));
      if (k < 3) {
        EXPECT_NE(t.nic_vertex(g), t.nic_vertex(g + 2));
      }
    }
  const auto size = topology_size(t.spec(), {});
  EXPECT_EQ(size.links, t.num_links());
  EXPECT_EQ(size.vertices, t.num_vertices());
}
