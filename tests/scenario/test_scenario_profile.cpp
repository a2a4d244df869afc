// A scenario that names a calibration profile: link numbers the cluster: section leaves out come from the profile
// (and the scenario's own values win), a ring all-reduce on those links matches its closed form, the profile's fitted
// collective costs time the analytical replay where the profile covers a call, and bad input names the profile file,
// the missing entry and the fix. Expected numbers are read from the shipped profile YAML with yaml-cpp directly, not
// through calibration::read_profile.
#include "railyard/common/child_process.hpp"

#include "railyard/models/lowering.hpp"
#include "railyard/scenario/scenario.hpp"
#include "railyard/sim/collective_runner.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/sim/replay.hpp"
#include "railyard/topologies/topology.hpp"
#include "railyard/workloads/op_graph.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

namespace scn = railyard::scenario;

using namespace railyard;
namespace fs = std::filesystem;

namespace {

const std::string kH100 = std::string(RAILYARD_SOURCE_DIR) + "/calibration/profiles/dgx_h100_ib_ndr.yaml";
const std::string kH200 = std::string(RAILYARD_SOURCE_DIR) + "/calibration/profiles/hgx_h200_ib_ndr.yaml";

// One `links:` entry as the profile file states it, read with yaml-cpp alone.
struct YamlLink {
  double latency_s = 0, bandwidth_Bps = 0;
  int line = 0; // 1-based, of the entry's first key
};

YamlLink yaml_link(const std::string& profile_path, const std::string& kind)
{
  const YAML::Node root = YAML::LoadFile(profile_path);
  for (const auto& l : root["links"])
    if (l["kind"].as<std::string>() == kind)
      return {l["latency_us"].as<double>() * 1e-6, l["bandwidth_GBps"].as<double>() * 1e9, l.Mark().line + 1};
  ADD_FAILURE() << profile_path << " has no link " << kind;
  return {};
}

// A scenario file in its own temporary folder.
class ProfileScenario : public ::testing::Test {
protected:
  void SetUp() override
  {
    dir_ = fs::temp_directory_path() / ("railyard_profile_links_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) const
  {
    const fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  scn::Scenario load(const std::string& text) const { return scn::load_scenario(write("scenario.yaml", text)); }

  fs::path dir_;
};

std::string shape_only(const std::string& kind, int nodes, int gpus_per_node, const std::string& profile,
                       const std::string& extra_cluster = "")
{
  return "name: t\ncluster:\n  kind: " + kind + "\n  nodes: " + std::to_string(nodes) +
         "\n  gpus_per_node: " + std::to_string(gpus_per_node) + "\n" + extra_cluster + "profile: " + profile +
         "\ncollectives:\n  - {op: all_reduce, size: 1 MiB}\n";
}

} // namespace

// Shape only: every link of the built topology carries the profile's numbers, converted from the profile's
// GPU-to-GPU paths to the topology's links so that those paths keep the profile's numbers:
//   NVLink link: bandwidth B_nvlink, latency L_nvlink / 2 (GPU -> NVSwitch -> GPU is two links);
//   PCIe link (GPU -> NIC): B_pcie, L_pcie;
//   NIC link: B_net, (L_net - 2 L_pcie) / 2, so GPU -> PCIe -> NIC -> leaf -> NIC -> PCIe -> GPU takes L_net;
//   switch-to-switch link: B_net.
TEST_F(ProfileScenario, ShapeOnlyTakesEveryLinkFromTheProfile)
{
  const YamlLink nv = yaml_link(kH100, "nvlink"), pc = yaml_link(kH100, "pcie"), net = yaml_link(kH100, "network");
  // 4 nodes on leaves of 2 ports: two leaves per rail, so some paths cross a spine.
  const auto sc = load(shape_only("rail_optimized", 4, 8, kH100, "  fabric: {leaf_downlinks: 2}\n"));
  const topo::Topology t = topo::build_topology(sc.cluster);
  std::array<int, 5> seen{};
  for (std::size_t id = 0; id < t.num_links(); ++id) {
    const auto& l = t.link(id);
    ++seen[static_cast<int>(l.kind)];
    switch (l.kind) {
    case topo::LinkKind::NvLink:
      EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_sec(), nv.bandwidth_Bps);
      EXPECT_DOUBLE_EQ(l.latency.seconds(), nv.latency_s / 2);
      break;
    case topo::LinkKind::Pcie:
      EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_sec(), pc.bandwidth_Bps);
      EXPECT_DOUBLE_EQ(l.latency.seconds(), pc.latency_s);
      break;
    case topo::LinkKind::NicLeaf:
      EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_sec(), net.bandwidth_Bps);
      EXPECT_NEAR(l.latency.seconds(), (net.latency_s - 2 * pc.latency_s) / 2, 1e-18);
      break;
    case topo::LinkKind::LeafSpine:
    case topo::LinkKind::SpineCore:
      EXPECT_DOUBLE_EQ(l.bandwidth.bytes_per_sec(), net.bandwidth_Bps);
      break;
    }
  }
  EXPECT_GT(seen[static_cast<int>(topo::LinkKind::NvLink)], 0);
  EXPECT_GT(seen[static_cast<int>(topo::LinkKind::Pcie)], 0);
  EXPECT_GT(seen[static_cast<int>(topo::LinkKind::NicLeaf)], 0);
  EXPECT_GT(seen[static_cast<int>(topo::LinkKind::LeafSpine)], 0);

  // The paths the profile measured: two GPUs of a node, and the same rail of two nodes under one leaf.
  const auto intra = t.route(0, 1, 0, 1);
  EXPECT_NEAR(t.path_latency(intra).seconds(), nv.latency_s, 1e-15);
  EXPECT_DOUBLE_EQ(t.path_bandwidth(intra).bytes_per_sec(), nv.bandwidth_Bps);
  const auto inter = t.route(0, 8, 0, 1);
  EXPECT_NEAR(t.path_latency(inter).seconds(), net.latency_s, 1e-15);
  EXPECT_DOUBLE_EQ(t.path_bandwidth(inter).bytes_per_sec(), std::min(net.bandwidth_Bps, pc.bandwidth_Bps));
  // Across the spine (node 0 and node 2 sit under different leaves of rail 0) the bandwidth is still the network's.
  const auto far = t.route(0, 16, 0, 1);
  EXPECT_DOUBLE_EQ(t.path_bandwidth(far).bytes_per_sec(), std::min(net.bandwidth_Bps, pc.bandwidth_Bps));
  EXPECT_GT(t.path_latency(far).seconds(), net.latency_s); // plus the switch-to-switch links' latency
}

// summary.json's "links" names, for each number, the profile file, the line of its entry (found here by yaml-cpp) and
// the entry's source; a value the scenario writes names the scenario's line instead.
TEST_F(ProfileScenario, ScenarioValuesOverrideTheProfileAndTheSummarySaysWhereEachCameFrom)
{
  const YamlLink nv = yaml_link(kH100, "nvlink"), pc = yaml_link(kH100, "pcie"), net = yaml_link(kH100, "network");
  const std::string cluster = "name: t\n"                              // line 1
                              "cluster:\n"                             // 2
                              "  kind: rail_optimized\n"               // 3
                              "  nodes: 2\n"                           // 4
                              "  gpus_per_node: 8\n"                   // 5
                              "  node: {nvlink_bandwidth: 123 GB/s}\n" // 6
                              "  nic:\n"                               // 7
                              "    latency: 3 us\n";                   // 8
  const std::string text = cluster + "profile: " + kH100 + "\ncollectives:\n  - {op: all_reduce, size: 1 MiB}\n";
  const auto sc = load(text);
  EXPECT_DOUBLE_EQ(sc.cluster.nvlink_bandwidth.bytes_per_sec(), 123e9);
  EXPECT_DOUBLE_EQ(sc.cluster.nic_latency.seconds(), 3e-6);
  EXPECT_DOUBLE_EQ(sc.cluster.nvlink_latency.seconds(), nv.latency_s / 2);
  EXPECT_DOUBLE_EQ(sc.cluster.nic_bandwidth.bytes_per_sec(), net.bandwidth_Bps);
  EXPECT_DOUBLE_EQ(sc.cluster.pcie_bandwidth.bytes_per_sec(), pc.bandwidth_Bps);

  const auto j = scn::cluster_links_json(sc);
  EXPECT_EQ(j["nvlink"]["bandwidth_Bps"].get<double>(), 123e9);
  EXPECT_EQ(j["nvlink"]["bandwidth_from"]["from"], "scenario");
  EXPECT_EQ(j["nvlink"]["bandwidth_from"]["line"], 6);
  EXPECT_EQ(j["nvlink"]["bandwidth_from"]["field"], "cluster.node.nvlink_bandwidth");
  EXPECT_EQ(j["nic"]["latency_from"]["from"], "scenario");
  EXPECT_EQ(j["nic"]["latency_from"]["line"], 8);

  const YAML::Node root = YAML::LoadFile(kH100);
  auto source_of = [&](const std::string& kind, const std::string& number) {
    for (const auto& l : root["links"])
      if (l["kind"].as<std::string>() == kind) return l["source"][number].as<std::string>();
    return std::string();
  };
  const auto& lat = j["nvlink"]["latency_from"];
  EXPECT_EQ(lat["from"], "profile");
  EXPECT_EQ(lat["file"], kH100);
  EXPECT_EQ(lat["line"], nv.line);
  EXPECT_EQ(lat["entry"], "links[nvlink].latency_us");
  EXPECT_EQ(lat["source"], source_of("nvlink", "latency_us"));
  EXPECT_EQ(j["nvlink"]["latency_s"].get<double>(), nv.latency_s / 2);
  const auto& nic_bw = j["nic"]["bandwidth_from"];
  EXPECT_EQ(nic_bw["from"], "profile");
  EXPECT_EQ(nic_bw["line"], net.line);
  EXPECT_EQ(nic_bw["source"], source_of("network", "bandwidth_GBps"));
  EXPECT_EQ(j["pcie"]["latency_from"]["line"], pc.line);
  // The profile has no per-switch latency: the fabric's stays the built-in default, and the summary says so.
  EXPECT_EQ(j["fabric"]["latency_from"]["from"], "default");
  EXPECT_EQ(j["fabric"]["bandwidth_from"]["from"], "profile");
}

// Without a profile nothing changes: omitted fields keep topo::ClusterSpec's defaults, and the summary says so.
TEST_F(ProfileScenario, WithoutAProfileOmittedFieldsAreTheBuiltInDefaults)
{
  const auto sc = load("name: t\ncluster: {kind: single_node, nodes: 1, gpus_per_node: 8}\n"
                       "collectives:\n  - {op: all_reduce, size: 1 MiB}\n");
  const topo::ClusterSpec defaults;
  EXPECT_EQ(sc.cluster.nvlink_bandwidth.bytes_per_sec(), defaults.nvlink_bandwidth.bytes_per_sec());
  EXPECT_EQ(sc.cluster.nic_latency.seconds(), defaults.nic_latency.seconds());
  const auto j = scn::cluster_links_json(sc);
  EXPECT_EQ(j["nvlink"]["bandwidth_from"]["from"], "default");
  EXPECT_NE(j["nvlink"]["bandwidth_from"]["note"].get<std::string>().find("nor names a profile"), std::string::npos);
}

// NCCL's cost model keys its node layout on the GPU generation. A profile's NVLink number is a measured rate
// (HGX H200: 367.2 GB/s busbw), which by ratio is nearer A100's 300 GB/s line rate than H100's 450, so the system
// comes from the profile's GPU model; the scenario's nccl.system still wins.
TEST_F(ProfileScenario, NcclSystemComesFromTheProfilesGpuModel)
{
  EXPECT_GT(std::abs(std::log(450.0 / 367.2)), std::abs(std::log(367.2 / 300.0))); // why the bandwidth would mislead
  const auto h200 = load(shape_only("single_node", 1, 8, kH200));
  EXPECT_EQ(h200.nccl.system, "hgx_h200");
  EXPECT_EQ(scn::nccl_system_json(h200)["from"].get<std::string>().rfind("profile " + kH200, 0), 0u);
  const std::string a100 = std::string(RAILYARD_SOURCE_DIR) + "/calibration/profiles/dgx_a100_ib_hdr.yaml";
  EXPECT_EQ(load(shape_only("single_node", 1, 8, a100)).nccl.system, "dgx_a100");
  EXPECT_EQ(load(shape_only("single_node", 1, 8, kH100)).nccl.system, "dgx_h100");
  const auto own = load("name: t\ncluster: {kind: single_node, nodes: 1, gpus_per_node: 8}\nnccl: {system: dgx_h100}\n"
                        "profile: " +
                        kH200 + "\ncollectives:\n  - {op: all_reduce, size: 1 MiB}\n");
  EXPECT_EQ(own.nccl.system, "dgx_h100");
  EXPECT_EQ(own.nccl.system_from, "scenario");
}

namespace {

// NCCL's Simple protocol: a 4 MiB buffer per connection in NCCL_STEPS = 8 steps; ring all-reduce moves
// ALLREDUCE_CHUNKSTEPS = 4 steps per chunk (NCCL src/include/collectives.h): chunk = 2 MiB.
constexpr double kSimpleChunk = 4.0 * 1024 * 1024 / 8 * 4;

double simulate_ring(const topo::ClusterSpec& spec, double size, int channels)
{
  return run_in_child([&] {
           const topo::Topology t = topo::build_topology(spec);
           models::CollectiveCall call;
           call.kind = models::CollectiveKind::AllReduce;
           call.bytes = Bytes(size);
           call.ranks.resize(t.num_gpus());
           std::iota(call.ranks.begin(), call.ranks.end(), 0);
           call.algorithm = models::Algorithm::Ring;
           call.protocol = models::Protocol::Simple;
           call.channels = channels;
           sim::Simulation s(t, {});
           const auto timings = sim::run_schedules(s, {models::lower({call, t.gpus_per_node(), Seconds(0)})});
           return std::vector<double>{timings.at(0).duration().seconds()};
         })
      .values.at(0);
}

} // namespace

// A ring all-reduce of S bytes over n GPUs on the profile's links: 2(n-1) steps per chunk loop, each paying the
// GPU-to-GPU path latency a once per loop and moving S/n bytes per rank through a port of bandwidth B:
//   T = 2(n-1) (loops a + S / (n B)) = 2(n-1)/n S/B + 2(n-1) loops a,   loops = ceil(S / (C n chunk)).
// One node: a and B are the profile's nvlink latency and bandwidth. Two nodes of one GPU: every step crosses the
// network, a and B are the profile's network latency and bandwidth (PCIe is faster than the NIC here).
TEST_F(ProfileScenario, RingAllReduceOnProfileLinksMatchesTheClosedForm)
{
  struct Case {
    int nodes, gpus_per_node;
    const char* kind;
    const char* link;
    double size;
    int channels;
  };
  const YamlLink pc = yaml_link(kH100, "pcie");
  for (const Case c : {Case{1, 8, "single_node", "nvlink", 256.0 * 1024 * 1024, 4},
                       Case{1, 4, "single_node", "nvlink", 1024.0 * 1024 * 1024, 8},
                       Case{2, 1, "rail_optimized", "network", 64.0 * 1024 * 1024, 2}}) {
    const YamlLink l = yaml_link(kH100, c.link);
    if (std::string(c.link) == "network") {
      ASSERT_LT(l.bandwidth_Bps, pc.bandwidth_Bps); // else PCIe would be the B
    }
    const auto sc = load(shape_only(c.kind, c.nodes, c.gpus_per_node, kH100));
    const int n = c.nodes * c.gpus_per_node;
    const double loops = std::ceil(c.size / (c.channels * n * kSimpleChunk));
    const double expected = 2.0 * (n - 1) / n * c.size / l.bandwidth_Bps + 2.0 * (n - 1) * loops * l.latency_s;
    const double got = simulate_ring(sc.cluster, c.size, c.channels);
    EXPECT_NEAR(got, expected, 0.01 * expected) << c.link << " n=" << n;
  }
}

namespace {

// A collectives: entry as the profile file states it, read with yaml-cpp alone: the piece a size falls in.
struct YamlPiece {
  double latency_s = 0, busbw_Bps = 0;
  int entry_line = 0;
};

YamlPiece yaml_piece(const std::string& profile_path, const std::string& collective, const std::string& algorithm,
                     const std::string& protocol, int nranks, double size)
{
  const YAML::Node root = YAML::LoadFile(profile_path);
  for (const auto& c : root["collectives"]) {
    if (c["collective"].as<std::string>() != collective || c["algorithm"].as<std::string>() != algorithm ||
        c["protocol"].as<std::string>() != protocol || c["nranks"].as<int>() != nranks ||
        c["link"].as<std::string>() != "nvlink")
      continue;
    YamlPiece out;
    out.entry_line = c.Mark().line + 1;
    for (const auto& p : c["pieces"])
      if (p["from_bytes"].as<double>() <= size) {
        out.latency_s = p["latency_us"].as<double>() * 1e-6;
        const std::string bw = p["busbw_GBps"].as<std::string>();
        out.busbw_Bps = bw == ".inf" ? INFINITY : std::stod(bw) * 1e9;
      }
    return out;
  }
  ADD_FAILURE() << "no entry " << collective << " " << algorithm << "/" << protocol << " in " << profile_path;
  return {};
}

models::CollectiveCall call_on_one_node(models::CollectiveKind kind, double size, int n, models::Algorithm a,
                                        models::Protocol p)
{
  models::CollectiveCall call;
  call.kind = kind;
  call.bytes = Bytes(size);
  call.ranks.resize(n);
  std::iota(call.ranks.begin(), call.ranks.end(), 0);
  call.algorithm = a;
  call.protocol = p;
  return call;
}

} // namespace

// The fitted time is the entry's alpha + S x f / busbw (nccl-tests' bus bandwidth, doc/PERFORMANCE.md: f = 2(n-1)/n
// for all_reduce, (n-1)/n for all_gather), alpha and busbw of the piece S falls in.
TEST_F(ProfileScenario, ProfileFitTimeIsAlphaPlusSizeOverBeta)
{
  const auto sc = load(shape_only("single_node", 1, 8, kH200));
  const topo::Topology t = topo::build_topology(sc.cluster);
  const int n = 8;
  const double all_reduce_f = 2.0 * (n - 1) / n, all_gather_f = (n - 1.0) / n;
  using models::Algorithm, models::Protocol, models::CollectiveKind;

  // An entry for exactly the algorithm and protocol asked.
  {
    const double s = 4.0 * 1024 * 1024 * 1024;
    const YamlPiece e = yaml_piece(kH200, "all_reduce", "NVLS", "Simple", n, s);
    const auto cost = sim::profile_collective_cost(
        *sc.profile_data, call_on_one_node(CollectiveKind::AllReduce, s, n, Algorithm::Nvls, Protocol::Simple), t);
    ASSERT_NE(cost.fit, nullptr) << cost.reason;
    EXPECT_EQ(cost.fit->line, e.entry_line);
    EXPECT_NEAR(cost.time.seconds(), e.latency_s + s * all_reduce_f / e.busbw_Bps, 1e-15);
    EXPECT_TRUE(cost.extrapolated); // measured at 16 GiB only
  }
  {
    const double s = 1.0 * 1024 * 1024 * 1024;
    const YamlPiece e = yaml_piece(kH200, "all_gather", "Ring", "Simple", n, s);
    const auto cost = sim::profile_collective_cost(
        *sc.profile_data, call_on_one_node(CollectiveKind::AllGather, s, n, Algorithm::Ring, Protocol::Simple), t);
    ASSERT_NE(cost.fit, nullptr) << cost.reason;
    EXPECT_NEAR(cost.time.seconds(), e.latency_s + s * all_gather_f / e.busbw_Bps, 1e-15);
  }
  // No Ring/LL entry: the "auto" entry (NCCL's own choice as measured) in its piece for 4 MiB, and for 64 KiB the
  // latency-bound piece (busbw .inf: time = alpha).
  for (const double s : {4.0 * 1024 * 1024, 64.0 * 1024}) {
    const YamlPiece e = yaml_piece(kH200, "all_reduce", "auto", "auto", n, s);
    const auto cost = sim::profile_collective_cost(
        *sc.profile_data, call_on_one_node(CollectiveKind::AllReduce, s, n, Algorithm::Ring, Protocol::LL), t);
    ASSERT_NE(cost.fit, nullptr) << cost.reason;
    EXPECT_EQ(cost.fit->line, e.entry_line);
    const double expected = std::isinf(e.busbw_Bps) ? e.latency_s : e.latency_s + s * all_reduce_f / e.busbw_Bps;
    EXPECT_NEAR(cost.time.seconds(), expected, 1e-15) << s;
    EXPECT_FALSE(cost.extrapolated);
    EXPECT_NE(cost.reason.find("NCCL's own choice"), std::string::npos) << cost.reason;
  }
  // Not covered: 4 ranks (the profile measured 8), a broadcast (no entry), and the reason says what it has.
  const auto four = sim::profile_collective_cost(
      *sc.profile_data, call_on_one_node(CollectiveKind::AllReduce, 1e9, 4, Algorithm::Ring, Protocol::Simple), t);
  EXPECT_EQ(four.fit, nullptr);
  EXPECT_NE(four.reason.find("4 ranks"), std::string::npos) << four.reason;
  EXPECT_NE(four.reason.find("with 8 ranks"), std::string::npos) << four.reason;
  const auto bcast = sim::profile_collective_cost(
      *sc.profile_data, call_on_one_node(CollectiveKind::Broadcast, 1e9, 8, Algorithm::Ring, Protocol::Simple), t);
  EXPECT_EQ(bcast.fit, nullptr);
}

// The analytical replay takes a collective's time from ReplayOptions::collective_time when it gives one: a step of
// one 8-rank all_reduce of 3 GiB timed by the profile's NVLS/Simple entry lasts exactly alpha + S x 2(n-1)/n / busbw,
// on Railyard's event loop and on SimGrid actors alike; without the hook it lasts its lowered schedule's time.
TEST_F(ProfileScenario, AnalyticalReplayUsesTheGivenCollectiveTime)
{
  const int n = 8;
  const double s = 3.0 * 1024 * 1024 * 1024;
  const YamlPiece e = yaml_piece(kH200, "all_reduce", "NVLS", "Simple", n, s);
  const double expected = e.latency_s + s * 2.0 * (n - 1) / n / e.busbw_Bps;
  const auto sc = load(shape_only("single_node", 1, n, kH200));
  workloads::Workload w;
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  const int comm = w.add_communicator("tp", workloads::GroupKind::TP, all);
  for (int r = 0; r < n; ++r) {
    workloads::RankGraphBuilder b;
    b.add(workloads::Op::make_collective(models::CollectiveKind::AllReduce, Bytes(s), comm, -1, 0), "collective");
    w.add_rank(b.finish());
  }
  // One child per replay: SimGrid keeps one engine per process.
  std::vector<double> steps;
  for (const bool hook : {true, false})
    for (const bool events : {true, false})
      steps.push_back(run_in_child([&] {
                        const topo::Topology t = topo::build_topology(sc.cluster);
                        sim::ReplayOptions o;
                        o.comm = sim::CommModel::Analytical;
                        o.discrete_events = events;
                        o.trace_ranks = std::vector<int>{};
                        o.lower = sim::nccl_lowering(t, sc.nccl, sc.step_overhead);
                        if (hook)
                          o.collective_time = [&](const models::CollectiveCall& call, const InputLocation& where) {
                            models::CollectiveCall forced = call;
                            forced.algorithm = models::Algorithm::Nvls;
                            forced.protocol = models::Protocol::Simple;
                            const auto resolved = sim::resolve_call(forced, t, sc.nccl, where);
                            const auto cost = sim::profile_collective_cost(*sc.profile_data, resolved, t);
                            return cost.fit ? std::optional<Seconds>(cost.time) : std::nullopt;
                          };
                        return std::vector<double>{
                            sim::replay_workload(w, t, sc.sim, sc.profile_data.get(), o).step_time.seconds()};
                      }).values.at(0));
  EXPECT_NEAR(steps[0], expected, 1e-15);
  EXPECT_NEAR(steps[1], expected, 1e-15);
  EXPECT_NEAR(steps[2], steps[3], 1e-12);
  EXPECT_GT(std::abs(steps[2] - expected), 1e-9); // the schedule is a different model, so a different time
}

// ---- bad input ----

namespace {

// A valid profile with only the link entries given (the rest of a profile is optional).
std::string profile_with_links(const std::string& links)
{
  return "railyard_profile: 1\nsystem: partial\n"
         "gpu: {model: NVIDIA H100 80GB HBM3, per_node: 8, source: {model: test, per_node: test}}\n"
         "links:\n" +
         links;
}

const std::string kNvlinkEntry =
    "  - {kind: nvlink, latency_us: 0.6, bandwidth_GBps: 370, source: {latency_us: t, bandwidth_GBps: t}}\n";

} // namespace

TEST_F(ProfileScenario, ProfileWithoutTheNetworkEntryAMultiNodeClusterNeedsIsRefused)
{
  const std::string prof =
      write("partial.yaml", profile_with_links(kNvlinkEntry + "  - {kind: pcie, latency_us: 1, bandwidth_GBps: "
                                                              "64, source: {latency_us: t, bandwidth_GBps: t}}\n"));
  try {
    load(shape_only("rail_optimized", 2, 8, prof));
    FAIL() << "a 2-node cluster took its NIC numbers from a profile without a network entry";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, prof);
    EXPECT_EQ(e.where().field, "links[network]");
    EXPECT_NE(e.rule().find("no 'network' entry"), std::string::npos) << e.rule();
    EXPECT_NE(e.fix().find("cluster.nic.bandwidth"), std::string::npos) << e.fix();
    EXPECT_NE(e.fix().find("kind: network"), std::string::npos) << e.fix();
  }
  // The same profile serves a single node, and a multi-node cluster that writes its NIC and fabric numbers.
  EXPECT_NO_THROW(load(shape_only("single_node", 1, 8, prof)));
  EXPECT_NO_THROW(
      load(shape_only("rail_optimized", 2, 8, prof,
                      "  nic: {bandwidth: 400 Gb/s, latency: 1 us}\n  fabric: {link_bandwidth: 400 Gb/s}\n")));
}

TEST_F(ProfileScenario, ProfileWithoutNvlinkIsRefusedForANodeOfSeveralGpus)
{
  const std::string prof = write("nonv.yaml", profile_with_links("  - {kind: network, latency_us: 2.7, bandwidth_GBps: "
                                                                 "48, source: {latency_us: t, bandwidth_GBps: t}}\n"));
  try {
    load(shape_only("single_node", 1, 8, prof));
    FAIL() << "an 8-GPU node took its NVLink numbers from a profile without an nvlink entry";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, prof);
    EXPECT_EQ(e.where().field, "links[nvlink]");
    EXPECT_NE(e.fix().find("cluster.node.nvlink_bandwidth"), std::string::npos) << e.fix();
  }
}

// The NIC latency is what the network path has left after its two PCIe links; a network latency below that is
// refused at the profile's network entry.
TEST_F(ProfileScenario, NetworkLatencyShorterThanItsPcieLinksIsRefused)
{
  const std::string prof = write(
      "short.yaml", profile_with_links(kNvlinkEntry + "  - {kind: pcie, latency_us: 2, bandwidth_GBps: 64, source: "
                                                      "{latency_us: t, bandwidth_GBps: t}}\n"
                                                      "  - {kind: network, latency_us: 3, bandwidth_GBps: 48, source: "
                                                      "{latency_us: t, bandwidth_GBps: t}}\n"));
  try {
    load(shape_only("rail_optimized", 2, 8, prof));
    FAIL() << "a negative NIC latency was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, prof);
    EXPECT_EQ(e.where().line, 7); // the network entry
    EXPECT_NE(e.fix().find("cluster.nic.latency"), std::string::npos) << e.fix();
  }
}

TEST_F(ProfileScenario, CollectiveModelProfileNeedsAProfileAndAnalyticalCommunication)
{
  const std::string workload = "workload:\n  generator: megatron\n"
                               "  model: {layers: 2, hidden: 512, heads: 8, seq_length: 256, vocab: 1024}\n"
                               "  parallel: {tp: 8}\n  training: {global_batch: 8}\n";
  const std::string cluster = "name: t\ncluster: {kind: single_node, nodes: 1, gpus_per_node: 8}\n";
  try {
    load(cluster + workload + "  replay: {communication: analytical, collective_model: profile}\n");
    FAIL() << "collective_model: profile without a profile";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "workload.replay.collective_model");
    EXPECT_NE(e.fix().find("profile:"), std::string::npos) << e.fix();
  }
  try {
    load(cluster + "profile: " + kH100 + "\n" + workload +
         "  replay: {communication: flows, collective_model: profile}\n");
    FAIL() << "collective_model: profile with flows";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "workload.replay.collective_model");
    EXPECT_NE(e.fix().find("communication: analytical"), std::string::npos) << e.fix();
  }
  EXPECT_NO_THROW(load(cluster + "profile: " + kH100 + "\n" + workload +
                       "  replay: {communication: analytical, collective_model: profile}\n"));
}

// ---- through the binary: examples/profile_links.yaml ----

namespace {

int run_cli(const std::string& args, std::string& output)
{
  const std::string cmd = std::string(RAILYARD_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p))
    output += buf.data();
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace

// The example runs; every call the summary says was timed by a fit has the time alpha + S f / busbw of the profile
// entry on the line it names (read here with yaml-cpp), the tensor-parallel all-reduces inside a node are among
// them, and the data-parallel ones across the two nodes fell back to their schedule with a reason.
TEST_F(ProfileScenario, ExampleTimesCoveredCollectivesByTheFitAndSaysWhy)
{
  const std::string example = std::string(RAILYARD_SOURCE_DIR) + "/examples/profile_links.yaml";
  const fs::path out = dir_ / "out";
  std::string log;
  ASSERT_EQ(run_cli("run " + example + " --out " + out.string(), log), 0) << log;
  nlohmann::json j;
  std::ifstream(out / "summary.json") >> j;
  const auto& cm = j["collective_model"];
  ASSERT_EQ(cm["model"], "profile");

  const std::string prof = j["profile_file"].get<std::string>();
  const YAML::Node root = YAML::LoadFile(prof);
  int fitted_intra = 0, schedule_inter = 0;
  for (const auto& c : cm["calls"]) {
    const std::string op = c["op"].get<std::string>();
    const int n = c["nranks"].get<int>();
    const double s = c["size_bytes"].get<double>();
    if (c["timed_by"] == "profile_fit") {
      const int line = c["profile_line"].get<int>();
      YAML::Node entry;
      for (const auto& e : root["collectives"])
        if (e.Mark().line + 1 == line) entry.reset(e);
      ASSERT_TRUE(entry) << "no profile entry on line " << line;
      EXPECT_EQ(entry["collective"].as<std::string>(), op);
      EXPECT_EQ(entry["nranks"].as<int>(), n);
      double alpha = 0, busbw = 0;
      for (const auto& p : entry["pieces"])
        if (p["from_bytes"].as<double>() <= s) {
          alpha = p["latency_us"].as<double>() * 1e-6;
          busbw = p["busbw_GBps"].as<double>() * 1e9;
        }
      ASSERT_EQ(op, "all_reduce"); // the example's only collective inside a node
      const double expected = alpha + s * 2.0 * (n - 1) / n / busbw;
      EXPECT_NEAR(c["time_s"].get<double>(), expected, 1e-15) << c;
      if (c["nodes"] == 1) ++fitted_intra;
    } else {
      EXPECT_EQ(c["time_s"], c["schedule_time_s"]) << c;
      EXPECT_NE(c["reason"].get<std::string>().find("no entry"), std::string::npos) << c;
      if (c["nodes"].get<int>() > 1) ++schedule_inter;
    }
  }
  EXPECT_GT(fitted_intra, 0) << cm;
  EXPECT_GT(schedule_inter, 0) << cm;
  EXPECT_EQ(cm["timed_by_profile_fit"].get<int>() + cm["timed_by_schedule"].get<int>(), cm["calls"].size());
  // And the links: the shape-only cluster took the profile's NVLink bandwidth.
  EXPECT_EQ(j["links"]["nvlink"]["bandwidth_Bps"].get<double>(), yaml_link(prof, "nvlink").bandwidth_Bps);
  EXPECT_EQ(j["links"]["nvlink"]["bandwidth_from"]["from"], "profile");
}
