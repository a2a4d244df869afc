// Fully connected nodes (node.kind: fully_connected, AMD MI300X's xGMI mesh): one cable per GPU pair, routes inside a
// node of exactly one direct link, PXN relays over one such link, and the refusals of keys that belong to the other
// kind of node. Expected counts come from the mesh's definition: n GPUs have n(n-1)/2 pairs.
#include "topo_test_util.hpp"

#include <gtest/gtest.h>

#include <set>
#include <sstream>

using namespace railyard;
using namespace railyard::topo;
using railyard::topo::testing::build_from_yaml;
using railyard::topo::testing::error_of;
using railyard::topo::testing::line_of;

namespace {

const char* kOneNode = "cluster:\n  kind: single_node\n  gpus_per_node: 8\n"
                       "  node: {kind: fully_connected, xgmi_bandwidth: 64 GB/s, xgmi_latency: 0.7 us}\n";
const char* kRail = "cluster:\n  kind: rail_optimized\n  nodes: 4\n  gpus_per_node: 8\n"
                    "  node: {kind: fully_connected, xgmi_bandwidth: 64 GB/s, xgmi_latency: 0.7 us}\n"
                    "  fabric: {leaf_downlinks: 4}\n";

void expect_error_at(const std::string& yaml, const std::string& field, const std::string& line_text,
                     const std::string& rule_word)
{
  const InputError e = error_of(yaml);
  const int line = line_of(yaml, line_text);
  ASSERT_GT(line, 0) << "test bug: '" << line_text << "' not in the YAML";
  EXPECT_EQ(e.where().field, field) << e.what();
  EXPECT_EQ(e.where().line, line) << e.what();
  EXPECT_NE(std::string(e.what()).find(rule_word), std::string::npos) << e.what();
  EXPECT_FALSE(e.fix().empty()) << e.what();
}

} // namespace

TEST(MeshNode, OneCablePerGpuPairAndNoNvSwitch)
{
  const Topology t = build_from_yaml(kOneNode);
  const TopologySummary s = t.summary();
  EXPECT_EQ(s.nvswitches, 0);
  EXPECT_EQ(s.gpu_links, 8u * 7 / 2);
  // Directed links: 28 xGMI cables and 8 GPU-NIC PCIe cables, two directions each.
  EXPECT_EQ(s.links, 2u * (28 + 8));
  EXPECT_EQ(s.cables, 0u); // nothing outside the node
  int xgmi = 0;
  for (LinkId id = 0; id < t.num_links(); ++id)
    if (t.link(id).kind == LinkKind::Xgmi) {
      ++xgmi;
      EXPECT_DOUBLE_EQ(t.link(id).bandwidth.bytes_per_sec(), 64e9);
      EXPECT_DOUBLE_EQ(t.link(id).latency.seconds(), 0.7e-6);
    }
  EXPECT_EQ(xgmi, 56);
}

TEST(MeshNode, EveryOrderedPairHasItsOwnDirectLink)
{
  const Topology t = build_from_yaml(kOneNode);
  std::set<LinkId> used;
  for (int a = 0; a < 8; ++a)
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const Path p = t.route(a, b, 0, 0);
      ASSERT_EQ(p.size(), 1u);
      EXPECT_EQ(t.link(p[0]).kind, LinkKind::Xgmi);
      EXPECT_EQ(t.link_source(p[0]), t.gpu_vertex(a));
      EXPECT_EQ(t.link_target(p[0]), t.gpu_vertex(b));
      EXPECT_DOUBLE_EQ(t.path_latency(p).seconds(), 0.7e-6);
      used.insert(p[0]);
      EXPECT_EQ(t.all_paths(a, b).size(), 1u);
    }
  EXPECT_EQ(used.size(), 56u); // 8 x 7 ordered pairs, no link shared
}

TEST(MeshNode, RoutesBetweenNodesLeaveThroughTheNicAndRelayOverOneLink)
{
  const Topology t = build_from_yaml(kRail);
  EXPECT_EQ(t.summary().gpu_links, 4u * 28);
  // GPU 1 of node 0 to GPU 1 of node 2: same rail, GPU -> NIC -> leaf -> NIC -> GPU.
  const Path same_rail = t.route(1, 17, 0, 0);
  ASSERT_EQ(same_rail.size(), 4u);
  EXPECT_EQ(t.link(same_rail[0]).kind, LinkKind::Pcie);
  // GPU 1 of node 0 to GPU 5 of node 2 with PXN: one xGMI hop to GPU 5 of node 0, then its rail.
  const Path pxn = t.route(1, 21, 0, 0, true);
  ASSERT_GE(pxn.size(), 5u);
  EXPECT_EQ(t.link(pxn[0]).kind, LinkKind::Xgmi);
  EXPECT_EQ(t.link_target(pxn[0]), t.gpu_vertex(5));
  EXPECT_EQ(t.link(pxn[1]).kind, LinkKind::Pcie);
  EXPECT_EQ(t.link_source(pxn[1]), t.gpu_vertex(5));
}

TEST(MeshNode, DotAndJsonNameTheMesh)
{
  const Topology t = build_from_yaml(kOneNode);
  std::ostringstream dot;
  t.write_dot(dot);
  EXPECT_NE(dot.str().find("\"gpu0.0\" -- \"gpu0.7\" [label=\"xgmi"), std::string::npos) << dot.str();
  const auto j = summary_json(t.spec(), t.summary());
  EXPECT_EQ(j.at("node_kind"), "fully_connected");
  EXPECT_EQ(j.at("gpu_links"), 28);
}

TEST(MeshNode, KeysOfTheOtherNodeKindAreRefused)
{
  expect_error_at("cluster:\n  kind: single_node\n  node:\n    kind: fully_connected\n    nvlink_bandwidth: 300 GB/s\n",
                  "cluster.node.nvlink_bandwidth", "nvlink_bandwidth", "fully_connected");
  expect_error_at("cluster:\n  kind: single_node\n  node:\n    xgmi_bandwidth: 64 GB/s\n",
                  "cluster.node.xgmi_bandwidth", "xgmi_bandwidth", "NVSwitch node");
  expect_error_at("cluster:\n  kind: single_node\n  node:\n    kind: fully_connected\n    nvswitch: true\n",
                  "cluster.node.nvswitch", "nvswitch: true", "no NVSwitch");
  expect_error_at("cluster:\n  kind: single_node\n  node:\n    kind: torus\n", "cluster.node.kind", "kind: torus",
                  "not a node kind");
  expect_error_at("cluster:\n  kind: single_node\n  gpus_per_node: 32\n  node: {kind: fully_connected}\n",
                  "cluster.gpus_per_node", "gpus_per_node: 32", "16 GPUs per node");
  expect_error_at("cluster:\n  kind: single_node\n  node:\n    kind: fully_connected\n    xgmi_bandwidth: 0 GB/s\n",
                  "cluster.node.xgmi_bandwidth", "xgmi_bandwidth", "");
}

TEST(MeshNode, AnXgmiCableCannotBeFailed)
{
  const std::string yaml = std::string(kRail) + "  failures: {cables: [gpu0.0-gpu0.1]}\n";
  const InputError e = error_of(yaml);
  EXPECT_NE(std::string(e.what()).find("inside a node"), std::string::npos) << e.what();
}
