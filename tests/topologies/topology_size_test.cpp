// topology_size counts what build_topology builds without building it (a run refuses a cluster its memory cannot hold
// before allocating it): on every kind, size and oversubscription the counts equal the built graph's, and the Al-Fares
// closed forms of a k-ary fat tree.
#include "topo_test_util.hpp"

#include <gtest/gtest.h>

using namespace railyard;
using namespace railyard::topo;

namespace {

std::string cluster(const std::string& kind, int nodes, const std::string& fabric, bool nvswitch = true)
{
  // Without an NVSwitch a node holds one GPU (intra-node routing needs the switch).
  return "cluster:\n  kind: " + kind + "\n  nodes: " + std::to_string(nodes) +
         "\n  gpus_per_node: " + (nvswitch ? "8" : "1") + "\n  node: {nvswitch: " + (nvswitch ? "true" : "false") +
         "}\n" + (fabric.empty() ? "" : "  fabric: " + fabric + "\n");
}

} // namespace

TEST(TopologySize, EqualsTheBuiltGraphOnEveryKind)
{
  const std::vector<std::string> cases = {
      cluster("single_node", 1, ""),
      cluster("single_node", 1, "", false),
      cluster("fat_tree", 4, "{leaf_downlinks: 16, oversubscription: 1}"),
      cluster("fat_tree", 33, "{leaf_downlinks: 32, oversubscription: 2}"),
      cluster("fat_tree", 64, "{tiers: 3, radix: 16, oversubscription: 1}"),
      cluster("fat_tree", 40, "{tiers: 3, radix: 16, oversubscription: 2}"),
      cluster("rail_optimized", 4, "{leaf_downlinks: 32, oversubscription: 1}"),
      cluster("rail_optimized", 70, "{leaf_downlinks: 32, oversubscription: 3}"),
      cluster("rail_only", 16, "{leaf_downlinks: 32}"),
      cluster("rail_optimized", 8, "{leaf_downlinks: 4, oversubscription: 1}", false),
      cluster("fat_tree", 9, "{leaf_downlinks: 4, oversubscription: 1}", false),
  };
  for (const auto& yaml : cases) {
    const YamlNode root = YamlNode::load_string(yaml, "t.yaml");
    const ClusterSpec spec = parse_cluster(root.at("cluster"));
    const Topology t = build_topology(spec);
    const TopologySize s = topology_size(spec);
    EXPECT_EQ(s.vertices, t.num_vertices()) << yaml;
    EXPECT_EQ(s.links, t.num_links()) << yaml;
    std::size_t switches = 0;
    for (const auto& [tier, count] : t.summary().switches_by_tier)
      switches += static_cast<std::size_t>(count);
    EXPECT_EQ(s.switches, switches) << yaml;
  }
}

TEST(TopologySize, KAryFatTreeFollowsAlFares)
{
  // Al-Fares et al. 2008: a k-ary fat tree of k^3/4 hosts has k pods of k/2 edge and k/2 aggregation switches and
  // (k/2)^2 cores; every switch has k ports, each one cable. Here k = 16 holds 1,024 hosts: nodes of one GPU without
  // an NVSwitch, so per GPU one PCIe cable and one NIC cable.
  const int k = 16, hosts = k * k * k / 4;
  const YamlNode root =
      YamlNode::load_string(cluster("fat_tree", hosts, "{tiers: 3, radix: 16, oversubscription: 1}", false), "t");
  const TopologySize s = topology_size(parse_cluster(root.at("cluster")));
  const std::size_t switches = k * k / 2 + k * k / 2 + k * k / 4;
  EXPECT_EQ(s.switches, switches);
  EXPECT_EQ(s.vertices, 2u * hosts + switches);
  // Cables: GPU-NIC and NIC-edge per host, then edge-aggregation (k pods x (k/2)^2) and aggregation-core ((k/2)^2 x k).
  const std::size_t cables = 2u * hosts + k * (k / 2) * (k / 2) + (k / 2) * (k / 2) * k;
  EXPECT_EQ(s.links, 2 * cables);
}

TEST(TopologySize, RefusesWhatBuildTopologyRefuses)
{
  // A rail-only cluster puts every node on one switch per rail: 64 nodes cannot hang off 32-port switches.
  ClusterSpec spec;
  spec.kind = ClusterKind::RailOnly;
  spec.nodes = 64;
  spec.gpus_per_node = 8;
  spec.leaf_downlinks = 32;
  EXPECT_THROW(topology_size(spec), InputError);
  EXPECT_THROW(build_topology(spec), InputError);
}
