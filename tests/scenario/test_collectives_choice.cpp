// From a scenario's call to NCCL's choice: the simulator's pick on a cluster described as a scenario describes it
// must be NCCL's own model's pick for the same system (computed by models/nccl_tuning from the DGX H100 node
// layout, whose hand calculations are in tests/models/test_nccl_tuning*.cpp); refusals name the collective, the
// algorithm and the reason; NCCL_ALGO / NCCL_PROTO and per-call choices restrict the table as in NCCL; scenario
// groups and sends parse and run.
#include "../sim/replay_support.hpp"
#include "railyard/common/child_process.hpp"
#include "railyard/models/nccl_tuning.hpp"
#include "railyard/scenario/run.hpp"
#include "railyard/sim/collective_runner.hpp"
#include "railyard/sim/nccl_resolve.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <iostream>

namespace scn = railyard::scenario;

using namespace railyard;
using models::Algorithm;
using models::CollectiveKind;
using models::Protocol;

namespace {

using test::first_ranks;
using test::h100_nodes;

constexpr double kKiB = 1024.0, kMiB = 1024.0 * 1024, kGiB = 1024.0 * 1024 * 1024;

sim::NcclSettings settings(const std::string& system)
{
  sim::NcclSettings s;
  s.system = system;
  return s;
}

models::CollectiveCall call(CollectiveKind kind, double bytes, std::vector<int> ranks)
{
  models::CollectiveCall c;
  c.kind = kind;
  c.bytes = Bytes(bytes);
  c.ranks = std::move(ranks);
  return c;
}

// The pick table of the issue: all_reduce at 8 B, 64 KiB, 1 MiB, 64 MiB and 1 GiB on one and on sixteen 8x H100
// nodes. On one node the simulated time of every combination NCCL allows is also printed, with the fastest.
TEST(NcclChoice, PickTableMatchesNcclsModelOnOneAndSixteenH100Nodes)
{
  const double sizes[] = {8, 64 * kKiB, kMiB, 64 * kMiB, kGiB};
  std::string table = "\n| system | size | simulator's pick | channels | NCCL model's pick | channels | fastest in "
                      "simulation (time) | pick's simulated time |\n|---|---|---|---|---|---|---|---|\n";
  for (int nodes : {1, 16}) {
    const topo::Topology t = topo::build_topology(h100_nodes(nodes));
    for (double size : sizes) {
      const auto got =
          sim::resolve_call(call(CollectiveKind::AllReduce, size, first_ranks(8 * nodes)), t, settings("dgx_h100"), {});
      const auto nccl = models::choose(models::make_input(models::node_spec(models::NodeLayout::DgxH100), nodes,
                                                          CollectiveKind::AllReduce, Bytes(size)));
      ASSERT_TRUE(nccl.has_value());
      EXPECT_EQ(*got.algorithm, nccl->algorithm) << nodes << " nodes, " << size << " B";
      EXPECT_EQ(*got.protocol, nccl->protocol) << nodes << " nodes, " << size << " B";
      EXPECT_EQ(*got.channels, nccl->channels) << nodes << " nodes, " << size << " B";
      std::string fastest = "-", pick_time = "-";
      if (nodes == 1) {
        // Every combination NCCL prices, simulated with NCCL's channel count for it.
        auto in = models::make_input(models::node_spec(models::NodeLayout::DgxH100), 1, CollectiveKind::AllReduce,
                                     Bytes(size));
        double best = 1e300;
        // Combinations NCCL prices within twice its pick's time (the others are far from the race and slow to
        // simulate at 1 GiB: LL moves 32 KiB chunks).
        for (const auto& entry : models::table(in)) {
          if (!entry.time || entry.time->seconds() > 2 * nccl->time.seconds()) continue;
          auto forced = call(CollectiveKind::AllReduce, size, first_ranks(8));
          forced.algorithm = entry.algorithm;
          forced.protocol = entry.protocol;
          const auto resolved = sim::resolve_call(forced, t, settings("dgx_h100"), {});
          const auto schedule = models::lower(sim::lowering_input(resolved, t, settings("dgx_h100"), Seconds(0)));
          const double us = run_in_child([&] {
                              sim::Simulation s(t, {});
                              return std::vector<double>{sim::run_schedules(s, {schedule})[0].duration().seconds()};
                            }).values.at(0) *
                            1e6;
          if (us < best) {
            best = us;
            fastest = fmt::format("{}/{} ({:.1f} us)", models::nccl_name(entry.algorithm),
                                  models::nccl_name(entry.protocol), us);
          }
          if (entry.algorithm == nccl->algorithm && entry.protocol == nccl->protocol)
            pick_time = fmt::format("{:.1f} us", us);
        }
      }
      table += fmt::format("| {} x 8 H100 | {} | {}/{} | {} | {}/{} | {} | {} | {} |\n", nodes,
                           format_bytes(Bytes(size)), models::nccl_name(*got.algorithm),
                           models::nccl_name(*got.protocol), *got.channels, models::nccl_name(nccl->algorithm),
                           models::nccl_name(nccl->protocol), nccl->channels, fastest, pick_time);
    }
  }
  std::cout << table;
}

void expect_refusal(const models::CollectiveCall& c, const topo::ClusterSpec& cluster, const sim::NcclSettings& s,
                    std::initializer_list<const char*> phrases)
{
  const topo::Topology t = topo::build_topology(cluster);
  try {
    sim::resolve_call(c, t, s, InputLocation{"job.yaml", 12, ""});
    ADD_FAILURE() << "no refusal for " << models::to_string(c.kind);
  } catch (const InputError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(e.where().file, "job.yaml");
    EXPECT_EQ(e.where().line, 12);
    for (const char* p : phrases)
      EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' missing from: " << msg;
    EXPECT_FALSE(e.fix().empty());
  }
}

TEST(NcclChoice, RefusalsNameTheCollectiveTheAlgorithmAndWhy)
{
  auto forced = [](CollectiveKind k, Algorithm a, std::vector<int> ranks, std::optional<Protocol> p = std::nullopt) {
    auto c = call(k, kMiB, std::move(ranks));
    c.algorithm = a;
    c.protocol = p;
    return c;
  };
  // DGX A100's NVSwitches have no multicast (NVLink SHARP came with the third-generation NVSwitch of H100).
  topo::ClusterSpec a100 = h100_nodes(1);
  a100.nvlink_bandwidth = units::GBps(240);
  expect_refusal(forced(CollectiveKind::AllReduce, Algorithm::Nvls, first_ranks(8)), a100, settings("dgx_a100"),
                 {"all_reduce", "NVLS", "NVSwitch with multicast"});
  // Nodes of one GPU have no NVSwitch to reduce in.
  topo::ClusterSpec singles = h100_nodes(8);
  singles.gpus_per_node = 1;
  expect_refusal(forced(CollectiveKind::AllReduce, Algorithm::Nvls, first_ranks(8)), singles, settings("dgx_h100"),
                 {"all_reduce", "NVLS", "more than 2 GPUs per node"});
  // PAT runs with one GPU per node only.
  expect_refusal(forced(CollectiveKind::AllGather, Algorithm::Pat, first_ranks(16)), h100_nodes(2),
                 settings("dgx_h100"), {"all_gather", "PAT", "one GPU per node", "8"});
  expect_refusal(forced(CollectiveKind::AllGather, Algorithm::Tree, first_ranks(8)), h100_nodes(1),
                 settings("dgx_h100"), {"all_gather", "Tree", "only for all_reduce"});
  expect_refusal(forced(CollectiveKind::AllReduce, Algorithm::CollNetDirect, first_ranks(16)), h100_nodes(2),
                 settings("dgx_h100"), {"all_reduce", "CollNet", "not model"});
  expect_refusal(forced(CollectiveKind::AllReduce, Algorithm::NvlsTree, first_ranks(8)), h100_nodes(1),
                 settings("dgx_h100"), {"all_reduce", "NVLSTree", "one"});
  expect_refusal(forced(CollectiveKind::AllReduce, Algorithm::Nvls, first_ranks(8), Protocol::LL), h100_nodes(1),
                 settings("dgx_h100"), {"all_reduce", "NVLS", "Simple"});
  expect_refusal(forced(CollectiveKind::AllToAll, Algorithm::Ring, first_ranks(8)), h100_nodes(1), settings("dgx_h100"),
                 {"alltoall", "point-to-point"});
  // NCCL_ALGO=nvls on A100 leaves NCCL nothing to run (ncclInvalidUsage in NCCL).
  sim::NcclSettings nvls_only = settings("dgx_a100");
  nvls_only.algo = "nvls";
  nvls_only.overrides = models::NcclOverrides::parse(nvls_only.algo, std::nullopt, {});
  expect_refusal(call(CollectiveKind::AllReduce, kMiB, first_ranks(8)), a100, nvls_only,
                 {"all_reduce", "no algorithm and protocol", "NCCL_ALGO=nvls"});
}

TEST(NcclChoice, OverridesRestrictTheTableAsNcclAlgoAndNcclProtoDo)
{
  const topo::Topology t = topo::build_topology(h100_nodes(1));
  // Without overrides 1 GiB goes to NVLS on an H100 node (NcclPicks in tests/models); NCCL_ALGO=ring keeps Ring.
  EXPECT_EQ(
      *sim::resolve_call(call(CollectiveKind::AllReduce, kGiB, first_ranks(8)), t, settings("dgx_h100"), {}).algorithm,
      Algorithm::Nvls);
  sim::NcclSettings ring = settings("dgx_h100");
  ring.overrides = models::NcclOverrides::parse("ring", std::nullopt, {});
  const auto r = sim::resolve_call(call(CollectiveKind::AllReduce, kGiB, first_ranks(8)), t, ring, {});
  EXPECT_EQ(*r.algorithm, Algorithm::Ring);
  EXPECT_EQ(*r.protocol, Protocol::Simple);
  // 8 B goes to LL (NcclPicks); NCCL_PROTO=^LL takes another protocol.
  sim::NcclSettings no_ll = settings("dgx_h100");
  no_ll.overrides = models::NcclOverrides::parse(std::nullopt, "^LL", {});
  EXPECT_NE(*sim::resolve_call(call(CollectiveKind::AllReduce, 8, first_ranks(8)), t, no_ll, {}).protocol,
            Protocol::LL);
  // A call's own algorithm wins over the scenario's NCCL_ALGO for that call; its channels are kept.
  auto tree = call(CollectiveKind::AllReduce, kMiB, first_ranks(8));
  tree.algorithm = Algorithm::Tree;
  tree.channels = 3;
  const auto tr = sim::resolve_call(tree, t, ring, {});
  EXPECT_EQ(*tr.algorithm, Algorithm::Tree);
  EXPECT_EQ(*tr.channels, 3);
  // alltoall and sendrecv: p2p, LL up to 16 KiB per transfer (NCCL_P2P_LL_THRESHOLD).
  EXPECT_EQ(*sim::resolve_call(call(CollectiveKind::AllToAll, 8 * 16 * kKiB, first_ranks(8)), t, {}, {}).protocol,
            Protocol::LL);
  EXPECT_EQ(*sim::resolve_call(call(CollectiveKind::SendRecv, 16 * kKiB + 4, first_ranks(8)), t, {}, {}).protocol,
            Protocol::Simple);
}

// The system defaults to the NVLink generation closest to the cluster's NVLink bandwidth.
TEST(NcclChoice, SystemFollowsTheNvlinkBandwidthWhenNotNamed)
{
  topo::ClusterSpec c = h100_nodes(1);
  c.nvlink_bandwidth = units::GBps(300);
  EXPECT_EQ(sim::nccl_node({}, c).compute_capability, 80);
  c.nvlink_bandwidth = units::GBps(450);
  EXPECT_EQ(sim::nccl_node({}, c).compute_capability, 90);
  c.nvlink_bandwidth = units::GBps(900);
  EXPECT_EQ(sim::nccl_node({}, c).compute_capability, 100);
  EXPECT_EQ(sim::nccl_node(settings("hgx_h200"), c).compute_capability, 90);
}

scn::Scenario scenario_from(const std::string& text)
{
  return scn::parse_scenario(YamlNode::load_string(text, "s.yaml"));
}

const char* kCluster = "name: g\ncluster:\n  kind: rail_optimized\n  nodes: 2\n  gpus_per_node: 8\n"
                       "  nic: {bandwidth: 400 Gb/s}\n";

TEST(ScenarioGroups, GroupsAndSendsParseAndRunTogether)
{
  const std::string header =
      std::string(kCluster) + "nccl: {system: dgx_h100, algo: \"ring,tree\", proto: \"^LL128\"}\ncollectives:\n";
  const scn::Scenario sc = scenario_from(header + "  - group:\n"
                                                  "      - {op: send, size: 16 MiB, from: 0, to: 8}\n"
                                                  "      - {op: send, size: 16 MiB, from: 1, to: 9}\n"
                                                  "    label: two sends\n"
                                                  "  - {op: send, size: 16 MiB, from: 0, to: 8}\n"
                                                  "  - {op: all_reduce, size: 1 MiB}\n");
  ASSERT_EQ(sc.collectives.size(), 3u);
  EXPECT_EQ(sc.collectives[0].sends.size(), 2u);
  EXPECT_EQ(sc.collectives[0].call.label, "two sends");
  EXPECT_TRUE(sc.collectives[1].is_group());
  EXPECT_FALSE(sc.collectives[2].is_group());
  EXPECT_FALSE(sc.nccl.overrides.algorithm_allowed(CollectiveKind::AllReduce, Algorithm::Nvls));
  EXPECT_EQ(sc.nccl.overrides.protocol_enable(CollectiveKind::AllReduce, Protocol::LL128), models::NcclEnable::Off);
  const auto run = [](const scn::Scenario& s) {
    return run_in_child([&] {
             const auto r = scn::run_scenario(s);
             std::vector<double> out;
             for (const auto& c : r.collectives)
               out.push_back(c.time().seconds());
             out.push_back(static_cast<int>(*r.collectives.back().call.algorithm));
             return out;
           })
        .values;
  };
  const auto all = run(sc);
  const auto a = static_cast<Algorithm>(static_cast<int>(all.back()));
  EXPECT_TRUE(a == Algorithm::Ring || a == Algorithm::Tree) << models::nccl_name(a);
  // Two sends on different rails (two NICs) run at once and take as long as one send, each in a scenario of its own.
  const auto group = run(scenario_from(header + "  - group:\n      - {op: send, size: 16 MiB, from: 0, to: 8}\n"
                                                "      - {op: send, size: 16 MiB, from: 1, to: 9}\n"));
  const auto single = run(scenario_from(header + "  - {op: send, size: 16 MiB, from: 0, to: 8}\n"));
  EXPECT_NEAR(group.at(0), single.at(0), 0.01 * single.at(0));
  // 16 MiB over one 400 Gb/s NIC: at least size / 50 GB/s.
  EXPECT_GT(single.at(0), 16 * kMiB / 50e9);
}

TEST(ScenarioGroups, BadEntriesNameTheirLine)
{
  struct Bad {
    std::string text;
    int line;
    const char* phrase;
  };
  const std::vector<Bad> cases = {
      {std::string(kCluster) + "collectives:\n  - {op: recv, size: 1 MiB, from: 0, to: 8}\n", 8, "send"},
      {std::string(kCluster) + "collectives:\n  - {op: send, size: 1 MiB, from: 3, to: 3}\n", 8, "itself"},
      {std::string(kCluster) + "collectives:\n  - {op: send, size: 1 MiB, from: 0, to: 99}\n", 8, "99"},
      {std::string(kCluster) + "collectives:\n  - group: []\n", 8, "empty"},
      {std::string(kCluster) + "collectives:\n  - group:\n      - {op: all_reduce, size: 1 MiB, repeat: 2}\n", 9,
       "repeat"},
      {std::string(kCluster) + "nccl: {algo: \"ring,trees\"}\ncollectives:\n  - {op: all_reduce, size: 1 MiB}\n", 7,
       "trees"},
      {std::string(kCluster) + "nccl: {system: dgx_z100}\ncollectives:\n  - {op: all_reduce, size: 1 MiB}\n", 7,
       "dgx_z100"},
  };
  for (const auto& c : cases) {
    try {
      scenario_from(c.text);
      ADD_FAILURE() << "accepted:\n" << c.text;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().line, c.line) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.phrase), std::string::npos) << e.what();
    }
  }
}

} // namespace
