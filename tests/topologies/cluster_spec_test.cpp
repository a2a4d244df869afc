// parse_cluster: defaults, every field read with its unit, and errors that name file, line, field, rule and fix.
#include "topo_test_util.hpp"

#include <gtest/gtest.h>

using namespace railyard;
using namespace railyard::topo;
using railyard::topo::testing::error_of;
using railyard::topo::testing::line_of;

namespace {

ClusterSpec parse(const std::string& yaml)
{
  return parse_cluster(YamlNode::load_string(yaml, "t.yaml").at("cluster"));
}

// The error must point at the field and the line it sits on, with the rule and a fix in the message.
void expect_error_at(const std::string& yaml, const std::string& field, const std::string& line_text,
                     const std::string& rule_word)
{
  const InputError e = error_of(yaml);
  const int line = line_of(yaml, line_text);
  ASSERT_GT(line, 0) << "test bug: '" << line_text << "' not in the YAML";
  EXPECT_EQ(e.where().file, "bad.yaml");
  EXPECT_EQ(e.where().field, field) << e.what();
  EXPECT_EQ(e.where().line, line) << e.what();
  const std::string msg = e.what();
  EXPECT_NE(msg.find("bad.yaml:" + std::to_string(line)), std::string::npos) << msg;
  EXPECT_NE(msg.find("field '" + field + "'"), std::string::npos) << msg;
  EXPECT_NE(msg.find(rule_word), std::string::npos) << msg;
  EXPECT_FALSE(e.fix().empty()) << msg;
}

} // namespace

TEST(ClusterSpec, DefaultsComeFromClusterSpec)
{
  const ClusterSpec s = parse("cluster:\n  kind: fat_tree\n  nodes: 4\n");
  const ClusterSpec d;
  EXPECT_EQ(s.kind, ClusterKind::FatTree);
  EXPECT_EQ(s.nodes, 4);
  EXPECT_EQ(s.gpus_per_node, d.gpus_per_node);
  EXPECT_EQ(s.nic_bandwidth, d.nic_bandwidth);
  EXPECT_EQ(s.fabric_latency, d.fabric_latency);
  EXPECT_EQ(s.tiers, d.tiers);
  EXPECT_EQ(s.oversubscription, d.oversubscription);
}

TEST(ClusterSpec, ReadsEveryFieldWithItsUnit)
{
  const ClusterSpec s = parse(R"(
cluster:
  kind: rail_optimized
  gpus: 64
  gpus_per_node: 4
  node: {nvswitch: true, nvlink_bandwidth: 300 GB/s, nvlink_latency: 0.7 us, pcie_bandwidth: 32 GB/s, pcie_latency: 2 us}
  nic: {bandwidth: 200 Gb/s, latency: 1.5 us}
  fabric: {tiers: 2, leaf_downlinks: 16, radix: 64, oversubscription: "3:2", link_bandwidth: 800 Gb/s, link_latency: 300 ns}
)");
  EXPECT_EQ(s.kind, ClusterKind::RailOptimized);
  EXPECT_EQ(s.gpus_per_node, 4);
  EXPECT_EQ(s.nodes, 64 / 4);
  EXPECT_DOUBLE_EQ(s.nvlink_bandwidth.bytes_per_sec(), 300e9);
  EXPECT_DOUBLE_EQ(s.nvlink_latency.seconds(), 0.7e-6);
  EXPECT_DOUBLE_EQ(s.pcie_bandwidth.bytes_per_sec(), 32e9);
  EXPECT_DOUBLE_EQ(s.pcie_latency.seconds(), 2e-6);
  EXPECT_DOUBLE_EQ(s.nic_bandwidth.bytes_per_sec(), 200e9 / 8); // bits to bytes
  EXPECT_DOUBLE_EQ(s.nic_latency.seconds(), 1.5e-6);
  EXPECT_EQ(s.leaf_downlinks, 16);
  EXPECT_EQ(s.radix, 64);
  EXPECT_DOUBLE_EQ(s.oversubscription, 3.0 / 2.0);
  EXPECT_DOUBLE_EQ(s.fabric_bandwidth.bytes_per_sec(), 800e9 / 8);
  EXPECT_DOUBLE_EQ(s.fabric_latency.seconds(), 300e-9);
}

TEST(ClusterSpec, OversubscriptionAsNumberOrRatio)
{
  const std::string head = "cluster:\n  kind: fat_tree\n  nodes: 2\n  fabric:\n    oversubscription: ";
  EXPECT_DOUBLE_EQ(parse(head + "2\n").oversubscription, 2.0);
  EXPECT_DOUBLE_EQ(parse(head + "2:1\n").oversubscription, 2.0); // unquoted: YAML keeps "2:1" as a string
  EXPECT_DOUBLE_EQ(parse(head + "\"4:3\"\n").oversubscription, 4.0 / 3.0);
  EXPECT_DOUBLE_EQ(parse(head + "1.5\n").oversubscription, 1.5);
}

TEST(ClusterSpec, SingleNodeNeedsNoSize)
{
  const ClusterSpec s = parse("cluster:\n  kind: single_node\n  gpus_per_node: 4\n");
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.gpus(), 4);
}

TEST(ClusterSpecErrors, UnknownKindListsTheKinds)
{
  const std::string yaml = "cluster:\n  kind: fat_three\n  nodes: 2\n";
  expect_error_at(yaml, "cluster.kind", "kind:", "unknown cluster kind");
  const std::string msg = error_of(yaml).what();
  for (const char* k : {"single_node", "fat_tree", "rail_optimized", "rail_only"})
    EXPECT_NE(msg.find(k), std::string::npos) << msg;
  EXPECT_NE(error_of(yaml).fix().find("fat_tree"), std::string::npos); // the closest spelling
}

TEST(ClusterSpecErrors, ZeroOrNegativeBandwidth)
{
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  nic:\n    bandwidth: 0 Gb/s\n", "cluster.nic.bandwidth",
                  "bandwidth: 0", "greater than zero");
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  fabric:\n    link_bandwidth: -5 GB/s\n",
                  "cluster.fabric.link_bandwidth", "link_bandwidth", "greater than zero");
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  node: {nvlink_bandwidth: 0 GB/s}\n",
                  "cluster.node.nvlink_bandwidth", "node:", "greater than zero");
}

TEST(ClusterSpecErrors, NegativeLatency)
{
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  nic:\n    latency: -1 us\n", "cluster.nic.latency",
                  "latency: -1", "zero or more");
}

TEST(ClusterSpecErrors, BandwidthWithoutUnit)
{
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  nic:\n    bandwidth: 400\n", "cluster.nic.bandwidth",
                  "bandwidth: 400", "unit");
}

TEST(ClusterSpecErrors, GpusNotAMultipleOfGpusPerNode)
{
  expect_error_at("cluster:\n  kind: fat_tree\n  gpus_per_node: 8\n  gpus: 60\n", "cluster.gpus", "gpus: 60",
                  "multiple of gpus_per_node");
}

TEST(ClusterSpecErrors, NonPositiveCounts)
{
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 0\n", "cluster.nodes", "nodes: 0", "greater than zero");
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  gpus_per_node: -8\n", "cluster.gpus_per_node",
                  "gpus_per_node", "greater than zero");
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  fabric:\n    leaf_downlinks: 0\n",
                  "cluster.fabric.leaf_downlinks", "leaf_downlinks", "greater than zero");
}

TEST(ClusterSpecErrors, UnknownFieldSuggestsTheClosestSpelling)
{
  const std::string yaml = "cluster:\n  kind: fat_tree\n  nodes: 2\n  fabric:\n    tiers: 3\n    radx: 8\n";
  expect_error_at(yaml, "cluster.fabric.radx", "radx", "unknown field");
  EXPECT_NE(error_of(yaml).fix().find("did you mean 'radix'"), std::string::npos) << error_of(yaml).what();
  expect_error_at("cluster:\n  kind: fat_tree\n  node: 2\n  nodes: 2\n", "cluster.node", "node: 2", "expected a map");
  expect_error_at("cluster:\n  kind: fat_tree\n  nodez: 2\n", "cluster.nodez", "nodez", "unknown field");
}

TEST(ClusterSpecErrors, OversubscriptionBelowOne)
{
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  fabric:\n    oversubscription: \"1:2\"\n",
                  "cluster.fabric.oversubscription", "oversubscription", "at least 1");
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  fabric:\n    oversubscription: 2:x\n",
                  "cluster.fabric.oversubscription", "oversubscription", "not a ratio");
}

TEST(ClusterSpecErrors, TiersMustBeTwoOrThree)
{
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  fabric:\n    tiers: 4\n", "cluster.fabric.tiers",
                  "tiers: 4", "2 (leaf/spine) or 3");
  expect_error_at("cluster:\n  kind: rail_optimized\n  nodes: 2\n  fabric:\n    tiers: 3\n", "cluster.fabric.tiers",
                  "tiers: 3", "only to kind fat_tree");
}

TEST(ClusterSpecErrors, ThreeTierNeedsAnEvenRadixOfAtLeastFour)
{
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  fabric:\n    tiers: 3\n    radix: 7\n",
                  "cluster.fabric.radix", "radix: 7", "even switch radix");
  // No radix at all: the error points at the fabric section, where it belongs.
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  fabric:\n    tiers: 3\n", "cluster.fabric.radix",
                  "tiers: 3", "even switch radix");
}

TEST(ClusterSpecErrors, ThreeTierTooSmallNamesARadixThatFits)
{
  // k = 4 gives k^3/4 = 16 host ports; 17 one-GPU nodes need a fifth pod. The smallest even k with k^3/4 >= 17:
  int fits = 4;
  while (fits * fits * fits / 4 < 17)
    fits += 2;
  const std::string yaml = "cluster:\n  kind: fat_tree\n  nodes: 17\n  gpus_per_node: 1\n  node: {nvswitch: false}\n"
                           "  fabric:\n    tiers: 3\n    radix: 4\n";
  expect_error_at(yaml, "cluster.fabric.radix", "radix: 4", "pods");
  EXPECT_NE(error_of(yaml).fix().find("radix " + std::to_string(fits)), std::string::npos) << error_of(yaml).what();
}

TEST(ClusterSpecErrors, RailOnlyWithMoreNodesThanSwitchPorts)
{
  const std::string yaml = "cluster:\n  kind: rail_only\n  nodes: 5\n  fabric: {leaf_downlinks: 4}\n";
  expect_error_at(yaml, "cluster.nodes", "nodes: 5", "rail_only");
  EXPECT_NE(error_of(yaml).fix().find("leaf_downlinks"), std::string::npos);
  // Sized in GPUs, the error points at `gpus`, which is what the user wrote.
  expect_error_at("cluster:\n  kind: rail_only\n  gpus: 40\n  fabric: {leaf_downlinks: 4}\n", "cluster.gpus",
                  "gpus: 40", "rail_only");
}

TEST(ClusterSpecErrors, NoNvSwitchWithSeveralGpus)
{
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  node:\n    nvswitch: false\n", "cluster.node.nvswitch",
                  "nvswitch: false", "neither an NVSwitch nor direct links");
}

TEST(ClusterSpecErrors, SizeMissingAmbiguousOrWrongForSingleNode)
{
  expect_error_at("cluster:\n  kind: fat_tree\n", "cluster", "kind:", "missing the cluster size");
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  gpus: 16\n", "cluster.gpus", "gpus: 16",
                  "either nodes or gpus");
  expect_error_at("cluster:\n  kind: single_node\n  nodes: 2\n", "cluster.nodes", "nodes: 2", "exactly one node");
  expect_error_at("cluster:\n  nodes: 2\n", "cluster", "nodes: 2", "missing required field 'kind'");
}

TEST(ClusterSpecErrors, BuildTopologyChecksSpecsMadeInCode)
{
  ClusterSpec s;
  s.kind = ClusterKind::RailOnly;
  s.nodes = 3;
  s.leaf_downlinks = 2;
  try {
    (void)build_topology(s, {"scenario.yaml", 7, "cluster"});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "scenario.yaml");
    EXPECT_EQ(e.where().line, 7);
    EXPECT_EQ(e.where().field, "cluster.nodes");
  }
}

TEST(ClusterSpec, CoreOversubscriptionNeedsACoreTier)
{
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  fabric:\n    core_oversubscription: 2\n",
                  "cluster.fabric.core_oversubscription", "core_oversubscription: 2", "no core tier");
  expect_error_at("cluster:\n  kind: fat_tree\n  nodes: 2\n  fabric:\n    tiers: 3\n    radix: 8\n"
                  "    core_oversubscription: 0.5\n",
                  "cluster.fabric.core_oversubscription", "core_oversubscription: 0.5", "at least 1");
}

TEST(ClusterSpec, NicsPerNodeDivideTheGpus)
{
  expect_error_at("cluster:\n  kind: rail_optimized\n  nodes: 2\n  gpus_per_node: 8\n  nic:\n    per_node: 3\n",
                  "cluster.nic.per_node", "per_node: 3", "do not divide");
}
