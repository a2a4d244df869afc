// Rail-optimized and rail-only clusters, and the single node. Rail r of every node in a scalable unit (SU) meets on
// that SU's rail-r leaf, so same-rail traffic inside an SU never climbs to a spine (NVIDIA DGX SuperPOD design);
// PXN moves cross-rail traffic onto the destination's rail over NVLink first.
#include "topo_test_util.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>

using namespace railyard;
using namespace railyard::topo;
using namespace railyard::topo::testing;

namespace {

constexpr int kNodes = 8, kGpn = 8, kSuNodes = 4; // two scalable units of four nodes

Topology rail_optimized(double over = 1.0)
{
  return build_from_yaml(fmt::format("cluster:\n  kind: rail_optimized\n  nodes: {}\n  gpus_per_node: {}\n"
                                     "  nic: {{latency: 1.25 us}}\n"
                                     "  fabric: {{leaf_downlinks: {}, oversubscription: {}, link_latency: 0.75 us}}\n",
                                     kNodes, kGpn, kSuNodes, over));
}

int gpu(int node, int local)
{
  return node * kGpn + local;
}

// The leaves a path passes through.
std::vector<const Vertex*> leaves_on(const Topology& t, const Path& p)
{
  std::vector<const Vertex*> out;
  for (LinkId id : p)
    if (t.vertex(t.link_target(id)).kind == VertexKind::Leaf) out.push_back(&t.vertex(t.link_target(id)));
  return out;
}

} // namespace

TEST(RailOptimized, OneLeafPerRailPerScalableUnit)
{
  const Topology t = rail_optimized(2.0);
  const int units = (kNodes + kSuNodes - 1) / kSuNodes;
  const int spines = static_cast<int>(std::ceil(kSuNodes / 2.0));
  EXPECT_EQ(count_vertices(t, VertexKind::Leaf), units * kGpn);
  EXPECT_EQ(count_vertices(t, VertexKind::Spine), spines);
  for (int n = 0; n < kNodes; ++n)
    for (int r = 0; r < kGpn; ++r) {
      const Path p = t.route(gpu(n, r), gpu((n + kSuNodes) % kNodes, r), 0, 0);
      const Vertex& leaf = t.vertex(t.link_target(p[1])); // GPU -> NIC -> leaf
      EXPECT_EQ(leaf.kind, VertexKind::Leaf);
      EXPECT_EQ(leaf.local, r);
      EXPECT_EQ(leaf.group, n / kSuNodes);
    }
}

TEST(RailOptimized, SameRailInsideAScalableUnitUsesOnlyThatRailsLeaf)
{
  const Topology t = rail_optimized();
  for (int r = 0; r < kGpn; ++r)
    for (int a = 0; a < kSuNodes; ++a)
      for (int b = 0; b < kSuNodes; ++b) {
        if (a == b) continue;
        const auto paths = t.all_paths(gpu(a, r), gpu(b, r));
        ASSERT_EQ(paths.size(), 1U);
        for (std::uint64_t key = 0; key < 16; ++key) {
          const Path p = t.route(gpu(a, r), gpu(b, r), key, 7);
          EXPECT_EQ(p, paths[0]);
          EXPECT_EQ(kinds_along(t, p), (std::vector{VertexKind::Gpu, VertexKind::Nic, VertexKind::Leaf, VertexKind::Nic,
                                                    VertexKind::Gpu}));
          EXPECT_EQ(leaves_on(t, p)[0]->local, r);
        }
      }
}

TEST(RailOptimized, SameRailAcrossScalableUnitsCrossesOneSpine)
{
  const Topology t = rail_optimized();
  const auto paths = t.all_paths(gpu(0, 3), gpu(kSuNodes, 3));
  EXPECT_EQ(paths.size(), static_cast<std::size_t>(kSuNodes)); // one per spine: ceil(4 / 1) spines
  for (const Path& p : paths) {
    EXPECT_EQ(count_kind(t, p, LinkKind::LeafSpine), 2);
    for (const Vertex* leaf : leaves_on(t, p))
      EXPECT_EQ(leaf->local, 3);
  }
}

TEST(RailOptimized, CrossRailWithoutPxnGoesThroughASpine)
{
  const Topology t = rail_optimized();
  const int src = gpu(0, 1), dst = gpu(1, 6); // same SU, different rails
  const auto paths = t.all_paths(src, dst, false);
  EXPECT_EQ(paths.size(), static_cast<std::size_t>(kSuNodes));
  for (const Path& p : paths) {
    EXPECT_TRUE(is_walk(t, p, src, dst));
    EXPECT_EQ(count_kind(t, p, LinkKind::NvLink), 0);
    EXPECT_EQ(count_kind(t, p, LinkKind::LeafSpine), 2);
    const auto leaves = leaves_on(t, p);
    ASSERT_EQ(leaves.size(), 2U);
    EXPECT_EQ(leaves[0]->local, 1);
    EXPECT_EQ(leaves[1]->local, 6);
    // 2 PCIe + 2 NIC-leaf + 2 leaf-spine hops.
    const ClusterSpec& s = t.spec();
    EXPECT_NEAR(t.path_latency(p).seconds(), 2 * s.pcie_latency.seconds() + 2 * 1.25e-6 + 2 * 0.75e-6, 1e-15);
  }
}

TEST(RailOptimized, CrossRailWithPxnStaysOnTheDestinationRail)
{
  const Topology t = rail_optimized();
  const int src = gpu(0, 1), dst = gpu(1, 6);
  for (std::uint64_t key = 0; key < 64; ++key) {
    const Path p = t.route(src, dst, key, 3, true);
    EXPECT_TRUE(is_walk(t, p, src, dst));
    EXPECT_EQ(kinds_along(t, p), (std::vector{VertexKind::Gpu, VertexKind::NvSwitch, VertexKind::Gpu, VertexKind::Nic,
                                              VertexKind::Leaf, VertexKind::Nic, VertexKind::Gpu}));
    EXPECT_EQ(t.link_target(p[1]), t.gpu_vertex(gpu(0, 6))); // the source node's GPU on rail 6
    EXPECT_EQ(leaves_on(t, p)[0]->local, 6);
    const ClusterSpec& s = t.spec();
    EXPECT_NEAR(t.path_latency(p).seconds(),
                2 * s.nvlink_latency.seconds() + 2 * s.pcie_latency.seconds() + 2 * 1.25e-6, 1e-15);
  }
  // Across scalable units PXN still keeps both leaves on the destination's rail.
  for (const Path& p : t.all_paths(gpu(0, 1), gpu(kSuNodes, 6), true))
    for (const Vertex* leaf : leaves_on(t, p))
      EXPECT_EQ(leaf->local, 6);
  // Same rail: PXN changes nothing.
  EXPECT_EQ(t.route(gpu(0, 2), gpu(1, 2), 5, 5, true), t.route(gpu(0, 2), gpu(1, 2), 5, 5, false));
}

TEST(RailOnly, CrossRailUsesNvLinkThenTheRailSwitch)
{
  const int nodes = 4;
  const Topology t = build_from_yaml(
      fmt::format("cluster:\n  kind: rail_only\n  nodes: {}\n  gpus_per_node: {}\n  fabric: {{leaf_downlinks: {}}}\n",
                  nodes, kGpn, nodes));
  EXPECT_EQ(count_vertices(t, VertexKind::Leaf), kGpn); // one switch per rail
  EXPECT_EQ(count_vertices(t, VertexKind::Spine), 0);
  const int src = gpu(0, 0), dst = gpu(3, 5);
  for (bool pxn : {false, true}) {
    const auto paths = t.all_paths(src, dst, pxn);
    ASSERT_EQ(paths.size(), 1U);
    const Path p = t.route(src, dst, 99, 1, pxn);
    EXPECT_EQ(p, paths[0]);
    EXPECT_EQ(kinds_along(t, p), (std::vector{VertexKind::Gpu, VertexKind::NvSwitch, VertexKind::Gpu, VertexKind::Nic,
                                              VertexKind::Leaf, VertexKind::Nic, VertexKind::Gpu}));
    EXPECT_EQ(leaves_on(t, p)[0]->local, 5);
  }
  const Path same_rail = t.route(gpu(0, 2), gpu(2, 2), 0, 0);
  EXPECT_EQ(same_rail.size(), 4U);
  EXPECT_EQ(leaves_on(t, same_rail)[0]->local, 2);
}

TEST(SingleNode, GpusOnOneNvSwitchWithNicsButNoFabric)
{
  const Topology t = build_from_yaml("cluster:\n  kind: single_node\n  gpus_per_node: 8\n");
  EXPECT_EQ(count_vertices(t, VertexKind::Gpu), 8);
  EXPECT_EQ(count_vertices(t, VertexKind::Nic), 8);
  EXPECT_EQ(count_vertices(t, VertexKind::NvSwitch), 1);
  EXPECT_EQ(count_vertices(t, VertexKind::Leaf), 0);
  EXPECT_EQ(t.num_links(), 2U * (8 + 8)); // an NVLink and a PCIe cable per GPU, two directions each
  EXPECT_EQ(t.vertex(t.nic_vertex(3)).name, "nic0.3");
  EXPECT_EQ(t.vertex(t.gpu_vertex(3)).name, "gpu0.3");
  const Path p = t.route(1, 6, 0, 0);
  EXPECT_EQ(kinds_along(t, p), (std::vector{VertexKind::Gpu, VertexKind::NvSwitch, VertexKind::Gpu}));
}
