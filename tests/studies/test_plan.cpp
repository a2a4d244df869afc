// The bill of materials of railyard plan against closed forms: switch counts per tier from the fabric's parameters,
// cables by reach class from where the NICs of a leaf sit, transceivers from the cages at each end, and the totals as
// count x unit figure; the catalogue's rules (every figure sourced and dated).
#include "railyard/studies/plan.hpp"

#include <gtest/gtest.h>

using namespace railyard;
using namespace railyard::studies;

namespace {

// Round figures, so that every expected total below is plain arithmetic.
const char* const kCatalogue = R"(version: test
currency: USD
facility: {pue: 1.5, pue_source: s, electricity_usd_per_kwh: 0.1, electricity_source: s}
parts:
  gpu8: {category: gpu, price_usd: 1000, price_source: s, power_w: 700, power_source: s}
  host8: {category: host, gpus: 8, nics: 8, nic_ports_per_transceiver: 2, price_usd: 5000, price_source: s,
          power_w: 4000, power_source: s}
  sw64: {category: switch, ports: 64, port_gbps: 400, ports_per_transceiver: 2, price_usd: 100, price_source: s,
         power_w: 10, power_source: s}
  sw16: {category: switch, ports: 16, port_gbps: 400, ports_per_transceiver: 2, price_usd: 50, price_source: s,
         power_w: 5, power_source: s}
  mm: {category: transceiver, ports: 2, reach_m: 50, price_usd: 7, price_source: s, power_w: 1, power_source: s}
  sm: {category: transceiver, ports: 2, reach_m: 500, price_usd: 9, price_source: s, power_w: 2, power_source: s}
  dac: {category: cable, medium: dac, price_usd: 3, price_source: s, power_w: 0, power_source: s}
  fiber: {category: cable, medium: fiber, price_usd: null, price_source: s, power_w: 0, power_source: s}
sources:
  s: {title: test figures, accessed: 2026-12-06}
)";

ClusterParts test_parts(const std::string& sw = "sw64")
{
  ClusterParts p;
  p.gpu = "gpu8";
  p.host = "host8";
  p.switches["*"] = sw;
  p.transceiver_short = "mm";
  p.transceiver_long = "sm";
  p.dac = "dac";
  p.fiber = "fiber";
  p.nodes_per_rack = 4;
  return p;
}

topo::ClusterSpec two_tier(topo::ClusterKind kind, int nodes, double oversubscription)
{
  topo::ClusterSpec s;
  s.kind = kind;
  s.nodes = nodes;
  s.gpus_per_node = 8;
  s.leaf_downlinks = 32;
  s.oversubscription = oversubscription;
  return s;
}

long long count_of(const Bom& b, const std::string& category)
{
  long long n = 0;
  for (const auto& l : b.lines)
    if (l.category == category) n += l.count;
  return n;
}

} // namespace

TEST(PlanBom, RailOptimized1024NonBlocking)
{
  const Catalogue c = parse_catalogue(kCatalogue, "test");
  const int nodes = 128, nics = nodes * 8, down = 32;
  const Bom b =
      bill_of_materials(topo::build_topology(two_tier(topo::ClusterKind::RailOptimized, nodes, 1)), c, test_parts());
  // One leaf per rail per scalable unit of `down` nodes; each leaf has down uplinks, one to each logical spine.
  const long long leaves = (nodes / down) * 8;
  const long long logical_spines = down; // ports used per spine: one per leaf = 32 of 64
  const long long spines = logical_spines / (64 / leaves);
  EXPECT_EQ(b.switches_by_tier.at("leaf"), leaves);  // 32
  EXPECT_EQ(b.switches_by_tier.at("spine"), spines); // 16, as a 1,024-GPU SuperPOD-style NDR fabric
  EXPECT_EQ(b.switches, leaves + spines);
  // A rail leaf gathers one NIC from each of 32 nodes: 8 racks of 4, so no NIC cable stays in a rack.
  EXPECT_EQ(b.dac_cables, 0);
  EXPECT_EQ(b.fiber_cables, nics + leaves * down); // NIC-leaf plus leaf-spine
  // Twin-port cages everywhere: 4 per node, 32 per leaf, 32 per spine.
  EXPECT_EQ(b.transceivers, nodes * 8 / 2 + leaves * 64 / 2 + spines * 64 / 2);
  EXPECT_EQ(b.transceivers, 2048);
  EXPECT_DOUBLE_EQ(b.capex_usd, nodes * 5000.0 + nics * 1000.0 + (leaves + spines) * 100.0 + 2048 * 7.0);
  EXPECT_DOUBLE_EQ(b.it_power_w, nodes * 4000.0 + nics * 700.0 + (leaves + spines) * 10.0 + 2048 * 1.0);
  ASSERT_EQ(b.unpriced.size(), 1U);
  EXPECT_EQ(b.unpriced[0], "fiber"); // counted, not priced, and said so
  EXPECT_EQ(count_of(b, "cable"), b.fiber_cables);
}

TEST(PlanBom, FatTreeTwoToOneKeepsNicCablesInTheRack)
{
  const Catalogue c = parse_catalogue(kCatalogue, "test");
  const int nodes = 128, nics = nodes * 8, down = 32;
  const Bom b =
      bill_of_materials(topo::build_topology(two_tier(topo::ClusterKind::FatTree, nodes, 2)), c, test_parts());
  const long long leaves = nics / down, uplinks = down / 2;
  // uplinks logical spines, each with one port per leaf (32 of 64): merged in pairs.
  const long long spines = uplinks / (64 / leaves);
  EXPECT_EQ(b.switches_by_tier.at("leaf"), leaves);  // 32
  EXPECT_EQ(b.switches_by_tier.at("spine"), spines); // 8
  // A leaf's 32 NICs are the 4 nodes of one rack: copper to the top-of-rack leaf.
  EXPECT_EQ(b.dac_cables, nics);
  EXPECT_EQ(b.fiber_cables, leaves * uplinks);
  EXPECT_EQ(b.transceivers, leaves * uplinks / 2 + spines * 64 / 2); // 256 + 256
  EXPECT_DOUBLE_EQ(b.capex_usd, nodes * 5000.0 + nics * 1000.0 + (leaves + spines) * 100.0 + 512 * 7.0 + nics * 3.0);
}

TEST(PlanBom, ThreeTierFatTreeUsesLongReachOpticsToTheCores)
{
  const Catalogue c = parse_catalogue(kCatalogue, "test");
  topo::ClusterSpec s;
  s.kind = topo::ClusterKind::FatTree;
  s.tiers = 3;
  s.radix = 16;
  s.nodes = 16; // 128 NICs: pods of (k/2)^2 = 64 NICs
  s.gpus_per_node = 8;
  const int k = 16, half = k / 2, pods = 128 / (half * half);
  const Bom b = bill_of_materials(topo::build_topology(s), c, test_parts("sw16"));
  EXPECT_EQ(b.switches_by_tier.at("leaf"), pods * half); // edge switches
  EXPECT_EQ(b.switches_by_tier.at("agg"), pods * half);  // each uses all 16 ports: not merged
  // (k/2)^2 logical cores, each with one port per pod (2 of 16): merged 8 to a switch.
  EXPECT_EQ(b.switches_by_tier.at("core"), half * half / (k / pods));
  const long long agg_core = pods * half * half, edge_agg = pods * half * half;
  EXPECT_EQ(b.fiber_cables, edge_agg + agg_core);
  // Edge NICs: an edge's 8 NICs are one node, so in its rack: copper.
  EXPECT_EQ(b.dac_cables, 128);
  long long long_reach = 0, short_reach = 0;
  for (const auto& l : b.lines) {
    if (l.part == "sm") long_reach = l.count;
    if (l.part == "mm") short_reach = l.count;
  }
  EXPECT_EQ(long_reach, pods * half * (half / 2) + (half * half / (k / pods)) * k / 2); // agg end + core end
  EXPECT_EQ(short_reach, 2 * edge_agg / 2);                                             // both ends, 2 per cage
}

TEST(PlanBom, RefusesASwitchWithTooFewPortsOrTooSlow)
{
  const Catalogue c = parse_catalogue(kCatalogue, "test");
  // 32 down + 32 up = 64 ports on a 16-port switch.
  try {
    (void)bill_of_materials(topo::build_topology(two_tier(topo::ClusterKind::FatTree, 8, 1)), c, test_parts("sw16"));
    FAIL() << "a 64-port leaf on a 16-port switch was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("leaf switches use 64 ports; 'sw16' has 16"), std::string::npos) << e.what();
  }
  topo::ClusterSpec fast = two_tier(topo::ClusterKind::FatTree, 8, 1);
  fast.nic_bandwidth = units::Gbps(800);
  EXPECT_THROW((void)bill_of_materials(topo::build_topology(fast), c, test_parts()), InputError);
  ClusterParts wrong = test_parts();
  wrong.gpu = "sw64";
  EXPECT_THROW((void)bill_of_materials(topo::build_topology(two_tier(topo::ClusterKind::FatTree, 8, 1)), c, wrong),
               InputError);
}

TEST(PlanCatalogue, EveryFigureNeedsASourceWithADate)
{
  EXPECT_THROW((void)parse_catalogue("parts: {g: {category: gpu, price_usd: 1}}\n", "t"), InputError);
  EXPECT_THROW((void)parse_catalogue("parts: {g: {category: gpu, price_usd: 1, price_source: x}}\n", "t"), InputError);
  EXPECT_THROW((void)parse_catalogue("parts: {g: {category: gpu, price_usd: 1, price_source: x}}\n"
                                     "sources: {x: {title: a quote}}\n",
                                     "t"),
               InputError); // no date
  EXPECT_NO_THROW((void)parse_catalogue("parts: {g: {category: gpu, price_usd: 1, price_source: x}}\n"
                                        "sources: {x: {title: a quote, accessed: 2026-12-01}}\n",
                                        "t"));
  EXPECT_THROW((void)parse_catalogue("parts: {g: {category: gpu, price_usd: -1}}\n", "t"), InputError);
  EXPECT_THROW((void)parse_catalogue("parts: {g: {category: gpus}}\n", "t"), InputError);
}

TEST(PlanCatalogue, TheBuiltInCatalogueSourcesEveryFigure)
{
  const Catalogue c = builtin_catalogue();
  EXPECT_EQ(c.currency, "USD");
  for (const auto& [id, p] : c.parts) {
    if (p.price_usd) {
      EXPECT_TRUE(c.sources.count(p.price_source)) << id;
    }
    if (p.power_w) {
      EXPECT_TRUE(c.sources.count(p.power_source)) << id;
    }
  }
  for (const auto& [id, s] : c.sources)
    EXPECT_FALSE(s.accessed.empty() && s.published.empty()) << id;
  // The H100's figures as its source states them (Hugging Face hardware page: 700W, MSRP $30k).
  EXPECT_DOUBLE_EQ(*c.parts.at("h100_sxm").power_w, 700);
  EXPECT_DOUBLE_EQ(*c.parts.at("h100_sxm").price_usd, 30000);
}
