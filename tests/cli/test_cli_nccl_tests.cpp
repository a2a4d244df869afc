// `railyard nccl-tests` through the real binary: its table is nccl-tests' own (parsed back with the calibration
// layer's reader of real nccl-tests logs), busbw follows doc/PERFORMANCE.md, every op nccl-tests has runs, and bad
// scenarios or options exit 2 with a message naming what is wrong.
#include "cli_support.hpp"
#include "railyard/calibration/nccl_tests_log.hpp"
#include "railyard/models/collective.hpp"
#include "railyard/models/lowering.hpp"
#include "railyard/topologies/topology.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace fs = std::filesystem;
using namespace railyard;

namespace {

using railyard::test::CliResult;
using railyard::test::run_cli;

const std::string kScenario = std::string(RAILYARD_SOURCE_DIR) + "/examples/nccl_h100_node.yaml";

// nccl-tests prints algbw and busbw with two decimals (%6.2f) and the time with 2, 1 or 0 (timeStr).
double time_tolerance_us(double us)
{
  return us >= 10000 ? 0.5 : us >= 100 ? 0.05 : 0.005;
}

TEST(NcclTestsCli, AllReduceTableParsesBackWithNcclTestsColumnsAndBusbw)
{
  const CliResult r = run_cli("nccl-tests --scenario " + kScenario + " --op all_reduce -b 8 -e 128M -f 4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto log = calibration::parse_nccl_tests_text(r.out, "all_reduce_perf.log");
  EXPECT_EQ(log.columns, (std::vector<std::string>{"size", "count", "type", "redop", "root", "time", "algbw", "busbw",
                                                   "#wrong", "time", "algbw", "busbw", "#wrong"}));
  EXPECT_EQ(log.collective, models::CollectiveKind::AllReduce);
  EXPECT_EQ(calibration::nccl_tests_nranks(log), 8);
  EXPECT_EQ(log.gpu_models(), std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
  EXPECT_EQ(log.nccl_version, "2.26.2");
  // 8, 32, 128, ..., 128 MiB: the sizes nccl-tests' -b 8 -e 128M -f 4 walks through.
  ASSERT_EQ(log.rows.size(), 13u);
  std::int64_t size = 8;
  double bus_sum = 0;
  for (const auto& row : log.rows) {
    EXPECT_EQ(row.size_bytes, size);
    EXPECT_EQ(row.count, size / 4); // float
    EXPECT_EQ(row.type, "float");
    EXPECT_EQ(row.redop, "sum");
    for (const auto& half : {row.out_of_place, row.in_place}) {
      ASSERT_TRUE(half.has_value());
      // algbw = size / time (GB/s = bytes / us / 1e3); busbw = algbw x 2(n-1)/n (doc/PERFORMANCE.md, n = 8).
      const double algbw = size / (half->time_us * 1e3);
      const double rel_time = time_tolerance_us(half->time_us) / half->time_us;
      EXPECT_NEAR(half->algbw_GBps, algbw, 0.005 + algbw * rel_time) << size;
      // Both printed with two decimals: each off by up to 0.005.
      EXPECT_NEAR(half->busbw_GBps, half->algbw_GBps * 2 * 7 / 8, 0.005 * (1 + 2.0 * 7 / 8) + 1e-9) << size;
      ASSERT_TRUE(half->wrong.has_value());
      EXPECT_EQ(*half->wrong, 0);
      bus_sum += half->busbw_GBps;
    }
    size *= 4;
  }
  ASSERT_TRUE(log.avg_busbw_GBps.has_value());
  EXPECT_NEAR(*log.avg_busbw_GBps, bus_sum / (2 * log.rows.size()), 0.01);
  EXPECT_NO_THROW(calibration::validate_nccl_tests_log(log));
}

// Each op with nccl-tests' byte counts (getCollByteCount of its program) and busbw factor (doc/PERFORMANCE.md).
TEST(NcclTestsCli, EveryNcclTestsOpRuns)
{
  struct Op {
    const char* name;
    double factor;      ///< busbw / algbw for 8 ranks
    std::int64_t count; ///< "count" column at -b 1M (float elements)
    const char* redop;
    int root;
  };
  const int n = 8;
  const std::int64_t elems = 1024 * 1024 / 4;
  const Op ops[] = {{"all_gather", (n - 1.0) / n, elems / n, "none", -1},
                    {"reduce_scatter", (n - 1.0) / n, elems / n, "sum", -1},
                    {"broadcast", 1.0, elems, "none", 0},
                    {"reduce", 1.0, elems, "sum", 0},
                    {"alltoall", (n - 1.0) / n, elems / n, "none", -1},
                    {"sendrecv", 1.0, elems, "none", -1}};
  for (const auto& op : ops) {
    const CliResult r = run_cli("nccl-tests --scenario " + kScenario + " --op " + op.name + " -b 1M -e 4M -f 2");
    ASSERT_EQ(r.exit_code, 0) << op.name << ": " << r.output;
    const auto log = calibration::parse_nccl_tests_text(r.out, std::string(op.name) + "_perf.log");
    ASSERT_EQ(log.rows.size(), 3u) << op.name;
    const auto& row = log.rows.front();
    EXPECT_EQ(row.size_bytes, 1024 * 1024) << op.name;
    EXPECT_EQ(row.count, op.count) << op.name;
    EXPECT_EQ(row.redop, op.redop) << op.name;
    EXPECT_NEAR(row.out_of_place->busbw_GBps, row.out_of_place->algbw_GBps * op.factor, 0.005 * (1 + op.factor) + 1e-9)
        << op.name;
    // The root column, fifth of the first data row (the reader does not keep it).
    std::istringstream lines(r.out);
    std::string line;
    while (std::getline(lines, line) && (line.empty() || line[0] == '#'))
      ;
    std::istringstream first_row(line);
    std::string tok;
    for (int i = 0; i < 5; ++i)
      first_row >> tok;
    EXPECT_EQ(tok, std::to_string(op.root)) << op.name;
  }
}

TEST(NcclTestsCli, RanksAlgoAndProtoOptions)
{
  // -g 4: GPUs 0-3 only. --algo ring --proto simple: NCCL_ALGO / NCCL_PROTO for the run.
  const CliResult r =
      run_cli("nccl-tests --scenario " + kScenario + " --op all_reduce -b 64M -e 64M -g 4 --algo ring --proto simple");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto log = calibration::parse_nccl_tests_text(r.out, "all_reduce_perf.log");
  EXPECT_EQ(calibration::nccl_tests_nranks(log), 4);
  EXPECT_NE(r.out.find("Ring/Simple"), std::string::npos) << r.out;
  EXPECT_NEAR(log.rows.at(0).out_of_place->busbw_GBps, log.rows.at(0).out_of_place->algbw_GBps * 2 * 3 / 4,
              0.005 * (1 + 2.0 * 3 / 4) + 1e-9);
}

// The "#  Rank N ... on HOST device D" lines name one host per node and the GPU's index inside its node, as
// nccl-tests prints them (src/common.cu: hostname, cudaDev); NCCL_ALGO / NCCL_PROTO show up as NCCL's own
// "NCCL INFO NCCL_ALGO set by environment to ..." lines (src/graph/tuning.cc), once per rank.
TEST(NcclTestsCli, RankLinesNameNodesAndDevicesAndForcedAlgorithmsAreAcknowledged)
{
  const std::string multinode = std::string(RAILYARD_SOURCE_DIR) + "/examples/nccl_multinode.yaml";
  // Ranks 4..11 of 8-GPU nodes: GPUs 4-7 of node0, then GPUs 0-3 of node1.
  const CliResult r = run_cli("nccl-tests --scenario " + multinode +
                              " --op all_reduce -b 1M -e 1M --ranks 4-11 --algo ring --proto LL128");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto log = calibration::parse_nccl_tests_text(r.out, "all_reduce_perf.log");
  ASSERT_EQ(log.ranks.size(), 8u);
  for (int i = 0; i < 8; ++i) {
    const auto& rank = log.ranks[static_cast<std::size_t>(i)];
    EXPECT_EQ(rank.rank, i);
    EXPECT_EQ(rank.host, i < 4 ? "node0" : "node1") << i;
    EXPECT_EQ(rank.device, i < 4 ? 4 + i : i - 4) << i;
  }
  EXPECT_EQ(log.hosts(), 2);
  EXPECT_EQ(log.header_ngpus, 4); // one process per node, driving its 4 ranks
  EXPECT_EQ(log.algo_env, "ring");
  EXPECT_EQ(log.proto_env, "LL128");
  // Every rank acknowledges both variables, with NCCL's "host:pid:tid [device] NCCL INFO " prefix.
  std::size_t acks = 0;
  for (std::size_t at = r.out.find("NCCL INFO NCCL_ALGO set by environment to ring\n"); at != std::string::npos;
       at = r.out.find("NCCL INFO NCCL_ALGO set by environment to ring\n", at + 1))
    ++acks;
  EXPECT_EQ(acks, 8u);
  EXPECT_NE(r.out.find("node1:0:0 [3] NCCL INFO NCCL_PROTO set by environment to LL128\n"), std::string::npos) << r.out;

  // Without --algo / --proto (and none in the scenario) NCCL prints no such line.
  const CliResult plain = run_cli("nccl-tests --scenario " + kScenario + " --op all_reduce -b 1M -e 1M");
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  EXPECT_EQ(plain.out.find("set by environment"), std::string::npos);
}

// A one-node sweep with a forced algorithm and protocol, through `railyard calibrate`: the profile's fit is for one
// node, eight ranks, on NVLink, labelled with the forced Ring/Simple (not "auto").
TEST(NcclTestsCli, ForcedOneNodeSweepCalibratesAsOneNodeRingSimple)
{
  const fs::path dir = fs::temp_directory_path() / ("railyard_nccl_tests_cal_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const CliResult r =
      run_cli("nccl-tests --scenario " + kScenario + " --op all_reduce -b 1M -e 1G -f 4 --algo Ring --proto Simple");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const fs::path log = dir / "all_reduce_perf.log";
  std::ofstream(log) << r.out;
  const fs::path profile = dir / "profile.yaml";
  const CliResult cal = run_cli("calibrate --from " + log.string() + " --out " + profile.string());
  ASSERT_EQ(cal.exit_code, 0) << cal.output;
  ASSERT_TRUE(fs::exists(profile));
  // The summary row: collective, algorithm, protocol, link, ranks, nodes, ...
  std::istringstream lines(cal.out);
  std::string line;
  bool found = false;
  while (std::getline(lines, line)) {
    std::istringstream cols(line);
    std::string coll, algo, proto, link;
    int ranks = 0, nodes = 0;
    if (!(cols >> coll >> algo >> proto >> link >> ranks >> nodes) || coll != "all_reduce") continue;
    found = true;
    EXPECT_EQ(algo, "Ring") << line; // models::to_string(Algorithm::Ring)
    EXPECT_EQ(proto, "Simple") << line;
    EXPECT_EQ(link, "nvlink") << line;
    EXPECT_EQ(ranks, 8) << line;
    EXPECT_EQ(nodes, 1) << line;
  }
  EXPECT_TRUE(found) << cal.out;
  fs::remove_all(dir);
}

TEST(NcclTestsCli, BadInputExitsTwoNamingWhatIsWrong)
{
  const fs::path dir = fs::temp_directory_path() / ("railyard_nccl_tests_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path bad = dir / "bad.yaml";
  std::ofstream(bad) << "name: b\ncluster:\n  kind: single_node\n  gpus_per_node: 8\n  nvlink: 450 GB/s\n";
  const fs::path a100 = dir / "a100.yaml";
  std::ofstream(a100) << "name: a\ncluster:\n  kind: single_node\n  gpus_per_node: 8\n"
                         "  node: {nvlink_bandwidth: 240 GB/s}\nnccl: {system: dgx_a100}\n";
  const fs::path broken = dir / "broken.yaml";
  std::ofstream(broken) << "name: b\ncluster:\n  kind: [single_node\n";
  struct Case {
    std::string args;
    std::vector<std::string> phrases;
  };
  const std::vector<Case> cases = {
      {"nccl-tests --scenario " + bad.string() + " --op all_reduce", {bad.string() + ":5", "nvlink", "Fix:"}},
      {"nccl-tests --scenario " + broken.string(), {broken.string() + ":4", "malformed YAML"}},
      {"nccl-tests --scenario " + kScenario + " --op allreduec", {"--op", "allreduec"}},
      {"nccl-tests --scenario " + kScenario + " -b 1X", {"-b", "1X"}},
      {"nccl-tests --scenario " + kScenario + " -g 9", {"-g", "9"}},
      {"nccl-tests --scenario " + kScenario + " --algo ring,trees", {"NCCL_ALGO", "trees"}},
      // NVLS on a DGX A100: the collective, the algorithm and why.
      {"nccl-tests --scenario " + a100.string() + " --op all_reduce -b 1M -e 1M --algo nvls",
       {"all_reduce", "NCCL_ALGO=nvls", "NVLS", "NVSwitch with multicast"}},
      // PAT with 8 GPUs per node.
      {"nccl-tests --scenario " + kScenario + " --op all_gather -b 1M -e 1M --algo pat",
       {"all_gather", "NCCL_ALGO=pat", "PAT", "one GPU per node"}},
  };
  for (const auto& c : cases) {
    const CliResult r = run_cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    for (const auto& p : c.phrases)
      EXPECT_NE(r.output.find(p), std::string::npos) << "'" << p << "' missing for " << c.args << ":\n" << r.output;
  }
  fs::remove_all(dir);
}

// The same refusals through `railyard run`: the entry's file and line, the collective, the algorithm and why.
TEST(RunRefusals, ImpossibleAlgorithmsExitTwoAtTheirEntry)
{
  const fs::path dir = fs::temp_directory_path() / ("railyard_run_refusal_" + std::to_string(getpid()));
  fs::create_directories(dir);
  const fs::path f = dir / "a100.yaml";
  std::ofstream(f) << "name: a\ncluster:\n  kind: single_node\n  gpus_per_node: 8\n"
                      "  node: {nvlink_bandwidth: 240 GB/s}\nnccl: {system: dgx_a100}\ncollectives:\n"
                      "  - {op: all_reduce, size: 1 MiB}\n"
                      "  - {op: all_reduce, size: 1 GiB, algorithm: nvls}\n";
  CliResult r = run_cli("run " + f.string() + " --out " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const std::string& p : {f.string() + ":9", std::string("all_reduce"), std::string("NVLS"),
                               std::string("NVSwitch with multicast"), std::string("Fix:")})
    EXPECT_NE(r.output.find(p), std::string::npos) << p << " missing:\n" << r.output;
  EXPECT_FALSE(fs::exists(dir / "out"));
  std::ofstream(f) << "name: p\ncluster:\n  kind: rail_optimized\n  nodes: 2\n  gpus_per_node: 8\n"
                      "  nic: {bandwidth: 400 Gb/s}\ncollectives:\n"
                      "  - {op: all_gather, size: 1 MiB, algorithm: pat}\n";
  r = run_cli("run " + f.string() + " --out " + (dir / "out").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const std::string& p :
       {f.string() + ":8", std::string("all_gather"), std::string("PAT"), std::string("one GPU per node")})
    EXPECT_NE(r.output.find(p), std::string::npos) << p << " missing:\n" << r.output;
  fs::remove_all(dir);
}

TEST(NcclTestsCli, HelpNamesTheOptions)
{
  const CliResult r = run_cli("nccl-tests --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* opt :
       {"--op", "--minbytes", "--maxbytes", "--stepfactor", "--scenario", "--ngpus", "--ranks", "--algo", "--proto"})
    EXPECT_NE(r.out.find(opt), std::string::npos) << opt;
}

} // namespace

// --communication coupled runs each channel as one fluid flow: on one NVSwitch node a ring's transfers all move at one
// rate, so its table equals the per-step flows' to the printed digit; auto picks coupled from 512 ranks on and says
// so; a misspelt value exits 2 naming the option.
TEST(NcclTestsCli, CoupledCommunication)
{
  auto times = [](const CliResult& r) {
    std::vector<double> t;
    for (const auto& row : calibration::parse_nccl_tests_text(r.out, "all_reduce_perf.log").rows)
      t.push_back(row.out_of_place->time_us);
    return t;
  };
  const std::string base = "nccl-tests --scenario " + kScenario + " --op all_reduce -b 1M -e 256M -f 16 --algo ring";
  const CliResult flows = run_cli(base + " --communication flows");
  const CliResult coupled = run_cli(base + " --communication coupled");
  ASSERT_EQ(flows.exit_code, 0) << flows.output;
  ASSERT_EQ(coupled.exit_code, 0) << coupled.output;
  EXPECT_NE(coupled.out.find("communication coupled"), std::string::npos);
  EXPECT_NE(flows.out.find("communication flows"), std::string::npos);
  const auto f = times(flows), c = times(coupled);
  ASSERT_EQ(f.size(), 3u);
  ASSERT_EQ(c.size(), f.size());
  for (std::size_t i = 0; i < f.size(); ++i)
    EXPECT_NEAR(c[i], f[i], time_tolerance_us(f[i])) << "row " << i;

  // 64 DGX H100 nodes: 512 ranks, coupled by default.
  const fs::path dir = fs::temp_directory_path() / ("railyard_nccl_coupled_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path big = dir / "nodes64.yaml";
  std::ofstream(big) << "name: nodes64\ncluster:\n  kind: rail_optimized\n  nodes: 64\n  gpus_per_node: 8\n"
                        "  fabric: {leaf_downlinks: 32}\nnccl: {system: dgx_h100}\n";
  const CliResult at512 = run_cli("nccl-tests --scenario " + big.string() + " -b 64M -e 64M");
  ASSERT_EQ(at512.exit_code, 0) << at512.output;
  EXPECT_NE(at512.out.find("communication coupled"), std::string::npos) << at512.out;
  EXPECT_EQ(calibration::nccl_tests_nranks(calibration::parse_nccl_tests_text(at512.out, "all_reduce_perf.log")), 512);
  const CliResult at64 = run_cli("nccl-tests --scenario " + big.string() + " -g 64 -b 64M -e 64M");
  ASSERT_EQ(at64.exit_code, 0) << at64.output;
  EXPECT_NE(at64.out.find("communication flows"), std::string::npos) << at64.out;

  // DCQCN and PFC on coupled flows. Eight DGX H100 nodes on a rail-optimized fabric: every ring edge has its NIC's
  // rail links, no switch port is offered more than its capacity, so the times are the max-min times to the printed
  // digit. On a 2:1 fat tree the uplinks queue, and the call takes at least as long as on the full-bisection fabric.
  auto nodes8 = [&](const std::string& name, const std::string& fabric, const std::string& network) {
    const fs::path file = dir / (name + ".yaml");
    std::ofstream(file) << "name: " << name << "\ncluster:\n  kind: " << fabric
                        << "\n  nodes: 8\n  gpus_per_node: 8\n  fabric: {leaf_downlinks: "
                        << (fabric == "fat_tree" ? "16, oversubscription: 2" : "32") << "}\nnetwork: " << network
                        << "\nnccl: {system: dgx_h100}\n";
    const CliResult r =
        run_cli("nccl-tests --scenario " + file.string() + " -b 1M -e 256M -f 16 --communication coupled");
    EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.output;
    EXPECT_NE(r.out.find("communication coupled"), std::string::npos) << r.out;
    return times(r);
  };
  const std::string cc = "{backend: fluid, cc: dcqcn, pfc: {enabled: true}}";
  const auto rail = nodes8("rail", "rail_optimized", "{backend: fluid}");
  const auto rail_cc = nodes8("rail_cc", "rail_optimized", cc);
  const auto fat_cc = nodes8("fat_cc", "fat_tree", cc);
  ASSERT_EQ(rail.size(), 3u);
  ASSERT_EQ(rail_cc.size(), rail.size());
  ASSERT_EQ(fat_cc.size(), rail.size());
  for (std::size_t i = 0; i < rail.size(); ++i) {
    EXPECT_EQ(rail_cc[i], rail[i]) << "row " << i;
    EXPECT_GE(fat_cc[i], rail_cc[i]) << "row " << i;
  }
  fs::remove_all(dir);

  const CliResult bad = run_cli(base + " --communication fluid");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--communication"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("unknown communication 'fluid'"), std::string::npos) << bad.output;
}

namespace {

// A rail-optimized cluster of `nodes` H100 nodes (the scenario file's numbers; the fluid backend).
std::string rail_scenario(int nodes)
{
  return "name: ring_latency\nseed: 1\ncluster:\n  kind: rail_optimized\n  nodes: " + std::to_string(nodes) +
         "\n  gpus_per_node: 8\n  node: {nvlink_bandwidth: 370.8 GB/s, nvlink_latency: 0.5 us, pcie_bandwidth: 64 "
         "GB/s, "
         "pcie_latency: 0.5 us}\n  nic: {bandwidth: 400 Gb/s, latency: 1 us}\n  fabric: {leaf_downlinks: 32, "
         "oversubscription: 1, link_bandwidth: 400 Gb/s, link_latency: 0.6 us}\nnetwork: {backend: fluid}\n"
         "nccl: {system: dgx_h100}\n";
}

} // namespace

// A forced ring all_reduce of 1 MiB over many nodes is a chain of latencies: NCCL keeps NCCL_STEPS = 8 slots in flight
// per connection (Ring/LL: one step each), so a rank forwards a step once it has it, and the last rank is done after
// 2(n-1) consecutive hops of the ring, each its latency and its slice on the wire. A hop's latency is NCCL's hwLat
// (0.6 us for an NVLink hop, 2.7 us for a network hop, Ring/LL, src/graph/tuning.cc), which holds the wire, or the
// path's own latency where that is longer; NCCL's base latency 6.6 us comes once. 2(n-1) consecutive edges of an
// n-rank ring are every edge twice but two (two NVLink edges of a node), so T = 6.6 us + 2 sum over the ring's edges
// of (latency + slice / bandwidth) - 2 x one NVLink edge's, for the slowest of the call's channels. With one step of
// buffering per connection every step waited for its slowest edge's latency (12.8 ms at 1,024 GPUs with the
// llama3_70b_1024 example's cluster, 3.1 ms now). Per-step flows at 128 GPUs, coupled flows at 128 and 1,024 GPUs.
TEST(NcclTestsCli, ManyNodeRingIsAChainOfHopLatencies)
{
  const fs::path dir = railyard::test::temp_dir("ring_latency");
  for (const auto& [nodes, comm] :
       std::vector<std::pair<int, std::string>>{{16, "flows"}, {16, "coupled"}, {128, "coupled"}}) {
    const fs::path file = dir / ("ring_" + std::to_string(nodes) + ".yaml");
    std::ofstream(file) << rail_scenario(nodes);
    const CliResult r = run_cli("nccl-tests --scenario " + file.string() +
                                " --op all_reduce -b 1M -e 1M --algo ring --proto LL --communication " + comm);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto log = calibration::parse_nccl_tests_text(r.out, "all_reduce_perf.log");
    ASSERT_EQ(log.rows.size(), 1u) << r.out;
    // NCCL's channel count for the call (each channel a ring entering every node at another GPU, so another rail).
    const std::size_t at = r.out.find("Ring/LL  ");
    ASSERT_NE(at, std::string::npos) << r.out;
    const int channels = std::stoi(r.out.substr(at + 9));
    ASSERT_GE(channels, 1);

    // The same cluster as a topology: the ring's edges and their paths (PXN: a rail between nodes).
    topo::ClusterSpec spec;
    spec.kind = topo::ClusterKind::RailOptimized;
    spec.nodes = nodes;
    spec.gpus_per_node = 8;
    spec.nvlink_bandwidth = units::GBps(370.8);
    spec.nvlink_latency = units::us(0.5);
    spec.pcie_bandwidth = units::GBps(64);
    spec.pcie_latency = units::us(0.5);
    spec.nic_bandwidth = units::Gbps(400);
    spec.nic_latency = units::us(1);
    spec.leaf_downlinks = 32;
    spec.fabric_bandwidth = units::Gbps(400);
    spec.fabric_latency = units::us(0.6);
    const topo::Topology t = topo::build_topology(spec);
    const int n = 8 * nodes;
    std::vector<int> gpus(static_cast<std::size_t>(n));
    for (int g = 0; g < n; ++g)
      gpus[static_cast<std::size_t>(g)] = g;
    const double wire = 2.0 * 1048576.0 / (n * channels); // LL: 8 data bytes per 16 on the wire
    // Per channel: the chain's latency, its bytes at each hop's own bandwidth, and at the ring's slowest link's.
    double flows_low = 0, flows_high = 0, coupled = 0;
    for (int c = 0; c < channels; ++c) {
      // The channels' rings leave a node on different rails and share no network link.
      const std::vector<int> order = models::ring_order(gpus, 8, c);
      double latency = 0, own = 0, nvlink_own = 0, slowest_bw = 1e300, nvlink_latency = 0, nvlink_bw = 0;
      for (int i = 0; i < n; ++i) {
        const int a = order[static_cast<std::size_t>(i)], b = order[static_cast<std::size_t>((i + 1) % n)];
        const topo::Path p = t.route(a, b, 0, 1, true);
        const bool inter = a / 8 != b / 8;
        // NCCL's hwLat is a hop's whole latency; where the path's own latency is longer, that is what the hop takes.
        const double lat = std::max(t.path_latency(p).seconds(), inter ? 2.7e-6 : 0.6e-6);
        const double bw = t.path_bandwidth(p).bytes_per_sec();
        latency += 2 * lat;
        own += 2 * wire / bw;
        slowest_bw = std::min(slowest_bw, bw);
        if (!inter) { // every NVLink edge alike
          nvlink_latency = lat;
          nvlink_bw = bw;
          nvlink_own += 2 * wire / bw;
        }
      }
      // The two NVLink edges the chain leaves out.
      latency -= 2 * nvlink_latency;
      own -= 2 * wire / nvlink_bw;
      flows_low = std::max(flows_low, latency + own);
      // At most every channel's slice on a GPU's NVLink port at once.
      flows_high = std::max(flows_high, latency + own + (channels - 1) * nvlink_own);
      // Coupled: a channel is one flow, every hop at its rate (the ring's slowest link: a NIC).
      coupled = std::max(coupled, latency + 2.0 * (n - 1) * wire / slowest_bw);
    }
    const double base = 6.6e-6;
    const double got = log.rows[0].out_of_place->time_us * 1e-6;
    const double printed = 0.05e-6; // nccl-tests prints at most one decimal here
    if (comm == "flows") {
      EXPECT_GE(got, base + flows_low - printed) << nodes << " nodes";
      EXPECT_LE(got, base + flows_high + printed) << nodes << " nodes";
    } else {
      EXPECT_NEAR(got, base + coupled, 0.5e-6 + 1e-4 * (base + coupled)) << nodes << " nodes, coupled";
    }
  }
}

// nccl.max_channels / nccl.min_channels are NCCL_MAX_NCHANNELS / NCCL_MIN_NCHANNELS: NCCL cuts the communicator's
// channels to the maximum, then copies them up to the minimum (src/graph/connect.cc, end of ncclTopoPostset), and a
// large call runs every channel the communicator has. NCCL 2.26.2 then copies them up to the NVLS channel count where
// NVLS runs (connect.cc: "if (comm->nChannels < comm->nvlsChannels)"), 16 on Hopper. Out of 1..64 is exit 2 naming
// the key.
TEST(NcclTestsCli, ChannelLimitsAreNcclMinAndMaxNchannels)
{
  const fs::path dir = railyard::test::temp_dir("channel_limits");
  auto channels_for = [&](const std::string& limits, const std::string& system = "dgx_a100") {
    const fs::path file = dir / "node.yaml";
    std::ofstream(file) << "name: node\ncluster: {kind: single_node, gpus_per_node: 8}\nnccl: {system: " + system +
                               limits + "}\n";
    const CliResult r = run_cli("nccl-tests --scenario " + file.string() +
                                " --op all_reduce -b 256M -e 256M --algo ring --proto simple");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const std::size_t at = r.out.find("Ring/Simple  ");
    return at == std::string::npos ? -1 : std::stoi(r.out.substr(at + 13));
  };
  const int own = channels_for("");
  ASSERT_GT(own, 4);
  ASSERT_LT(own, 32);
  EXPECT_EQ(channels_for(", max_channels: 4"), 4);
  EXPECT_EQ(channels_for(", min_channels: 32"), 32);
  EXPECT_EQ(channels_for(", max_channels: 2, min_channels: 6"), 6); // the first 2, copied up to 6
  EXPECT_EQ(channels_for(", max_channels: 64"), own);
  EXPECT_EQ(channels_for(", max_channels: 4", "dgx_h100"), 16); // NVLS's 16 channels

  const fs::path bad = dir / "bad.yaml";
  std::ofstream(bad) << "name: bad\ncluster: {kind: single_node, gpus_per_node: 8}\nnccl: {max_channels: 0}\n";
  const CliResult r = run_cli("nccl-tests --scenario " + bad.string() + " --op all_reduce -b 1M -e 1M");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("max_channels"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("bad.yaml:3:"), std::string::npos) << r.output;
}

namespace {

// The first data row of nccl-tests' table: (time us, channels from Railyard's choice line, device us, thread us).
struct HostRow {
  double time = -1, device = -1, thread = -1;
  int channels = -1;
  bool host_bound = false;
};
HostRow host_row(const std::string& out)
{
  HostRow h;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (h.time < 0 && !line.empty() && line[0] != '#') {
      std::istringstream f(line);
      std::string size, count, type, redop, root, time;
      f >> size >> count >> type >> redop >> root >> time;
      h.time = std::stod(time);
    }
    if (const auto at = line.find(" channels  device "); at != std::string::npos) {
      const auto slash = line.rfind(' ', at - 1);
      h.channels = std::stoi(line.substr(slash + 1, at - slash - 1));
      std::sscanf(line.c_str() + at, " channels  device %lf us, thread %lf us", &h.device, &h.thread);
      h.host_bound = line.find("host-bound") != std::string::npos;
    }
  }
  return h;
}

} // namespace

// nccl-tests' process shapes: `-g 8` in one process is one thread issuing eight calls per iteration; `-t 2` gives
// each of two threads four; one process per GPU gives each thread one. With a host cost per call c and per channel
// k, a thread of G GPUs needs G (c + k x channels) per iteration (models/host_issue.hpp), and back-to-back
// iterations take the longer of that and the GPUs.
TEST(NcclTestsCli, TheIssuingThreadOfMinusGAndMinusTShapesSmallSizes)
{
  const fs::path dir = railyard::test::temp_dir("host_issue");
  const fs::path file = dir / "a100.yaml";
  std::ofstream(file) << "name: a100\ncluster: {kind: single_node, gpus_per_node: 8}\nnccl: {system: dgx_a100}\n";
  const double c = 5.0, k = 0.5; // us
  auto run = [&](const std::string& shape, const std::string& size) {
    const CliResult r = run_cli("nccl-tests --scenario " + file.string() + " --op all_reduce -b " + size + " -e " +
                                size + " --host-cost '5 us, 0.5 us' " + shape);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return std::make_pair(host_row(r.out), r.out);
  };
  for (const auto& [shape, per_thread] :
       std::vector<std::pair<std::string, int>>{{"", 8}, {"-t 2", 4}, {"-t 8", 1}, {"--process-per-gpu", 1}}) {
    const auto [h, out] = run(shape, "256K");
    ASSERT_GT(h.channels, 0) << out;
    EXPECT_NEAR(h.thread, per_thread * (c + k * h.channels), 0.01) << shape << "\n" << out;
    EXPECT_NEAR(h.time, std::max(h.device, h.thread), 0.01 * std::max(h.device, h.thread) + 0.01) << shape;
    EXPECT_EQ(h.host_bound, h.thread > h.device) << shape;
    EXPECT_NE(out.find(fmt::format("# nThread {} nGpus {}",
                                   shape == "-t 2"   ? 2
                                   : shape == "-t 8" ? 8
                                                     : 1,
                                   per_thread)),
              std::string::npos)
        << out;
  }
  // Eight calls of a 256 KiB all-reduce cost the thread more than the GPUs: the time is the thread's.
  EXPECT_TRUE(run("", "256K").first.host_bound);
  // At 1 GiB the GPUs set it.
  const auto big = run("", "1G").first;
  EXPECT_FALSE(big.host_bound);
  EXPECT_NEAR(big.time, big.device, 0.01 * big.device);

  // Bad shapes and costs: exit 2 naming the option.
  CliResult r = run_cli("nccl-tests --scenario " + file.string() + " -b 1M -e 1M -t 3");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("-t/--nthreads"), std::string::npos) << r.output;
  r = run_cli("nccl-tests --scenario " + file.string() + " -b 1M -e 1M --host-cost 'five us'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--host-cost"), std::string::npos) << r.output;
}

// Nodes with fewer NICs than GPUs (nic.per_node): two nodes of 8 H100s, a ring all-reduce of 1 GiB forced. Across
// nodes every byte crosses the node's NICs, so busbw can reach at most NICs x 50 GB/s, and halving the NICs halves
// it (the GPUs that share a NIC share its 400 Gb/s).
TEST(NcclTestsCli, GpusSharingANicShareItsBandwidth)
{
  const fs::path dir = railyard::test::temp_dir("nics_per_node");
  auto busbw = [&](int nics) {
    const fs::path file = dir / "two.yaml";
    std::ofstream(file) << "name: two\ncluster:\n  kind: rail_optimized\n  nodes: 2\n  gpus_per_node: 8\n"
                           "  nic: {bandwidth: 400 Gb/s, per_node: " +
                               std::to_string(nics) + "}\n  fabric: {leaf_downlinks: 32}\nnccl: {system: dgx_h100}\n";
    const CliResult r = run_cli("nccl-tests --scenario " + file.string() + " -b 1G -e 1G --algo ring");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::istringstream in(r.out);
    std::string line;
    while (std::getline(in, line))
      if (line.find(" float ") != std::string::npos && line[0] != '#') { // the table's data row
        std::istringstream f(line);
        std::string size, count, type, redop, root, time, algbw, bus;
        f >> size >> count >> type >> redop >> root >> time >> algbw >> bus;
        return std::stod(bus);
      }
    return -1.0;
  };
  const double eight = busbw(8), four = busbw(4), two = busbw(2);
  EXPECT_LE(eight, 8 * 50.0);
  EXPECT_GT(eight, 0.9 * 8 * 50.0);
  EXPECT_NEAR(four / eight, 0.5, 0.01);
  EXPECT_NEAR(two / eight, 0.25, 0.01);
  // 3 NICs cannot serve 8 GPUs evenly: refused naming the key.
  const fs::path bad = dir / "bad.yaml";
  std::ofstream(bad) << "name: bad\ncluster:\n  kind: rail_optimized\n  nodes: 2\n  gpus_per_node: 8\n"
                        "  nic: {per_node: 3}\n";
  const CliResult r = run_cli("nccl-tests --scenario " + bad.string() + " -b 1M -e 1M");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nic.per_node"), std::string::npos) << r.output;
}

// nccl.net_latency replaces NCCL's hwLat[NET] (InfiniBand's) as the latency of a network step, for one protocol or per
// protocol. A forced ring all_reduce of 8 B over 4 nodes of 8 GPUs is a chain of 2(n - 1) hops of which the 2 x 4
// edges between nodes are network steps (ManyNodeRingIsAChainOfHopLatencies above): raising the network step from
// 20 us to 30 us, both above the path's own latency, adds 8 x 10 us, and the NVLink hops do not move. Each protocol
// takes its own entry of a map. Bad values exit 2 naming the key.
TEST(NcclTestsCli, NetLatencyIsTheNetworkStepOfEveryRingHopBetweenNodes)
{
  const fs::path dir = railyard::test::temp_dir("net_latency");
  // rail_scenario(4) with `extra` added to its nccl section, written to dir/name.
  auto write_with = [&](const std::string& extra, const std::string& name) {
    const fs::path file = dir / name;
    std::string text = rail_scenario(4);
    const std::string from = "nccl: {system: dgx_h100}";
    text.replace(text.find(from), from.size(), "nccl: {system: dgx_h100" + extra + "}");
    std::ofstream(file) << text;
    return file;
  };
  auto time_us = [&](const std::string& nccl_extra, const std::string& proto, const std::string& op = "all_reduce") {
    const fs::path file = write_with(nccl_extra, "ring.yaml");
    const CliResult r = run_cli("nccl-tests --scenario " + file.string() +
                                (op == "all_reduce" ? " --op all_reduce -b 8 -e 8 --algo ring --proto " + proto
                                                    : " --op sendrecv -b 8 -e 8 --ranks '[0, 8]'"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto log = calibration::parse_nccl_tests_text(r.out, "all_reduce_perf.log");
    EXPECT_EQ(log.rows.size(), 1u) << r.out;
    return log.rows.empty() ? 0.0 : log.rows[0].out_of_place->time_us;
  };
  const double ib = time_us("", "LL");
  const double t20 = time_us(", net_latency: 20 us", "LL");
  const double t30 = time_us(", net_latency: 30 us", "LL");
  const double printed = 0.1; // nccl-tests prints two decimals below 100 us, one above; both ends rounded
  EXPECT_NEAR(t30 - t20, 8 * 10.0, printed);
  // Without the key a network step takes NCCL's 2.7 us (Ring/LL, NET) or its path's own latency where that is longer:
  // here 3.0 us (PCIe 0.5 us, NIC cable 1 us, the leaf, NIC cable 1 us, PCIe 0.5 us: the two GPUs share a rail).
  EXPECT_NEAR(t20 - ib, 8 * (20.0 - 3.0), printed);
  // Per protocol: LL takes its own entry, Simple its own.
  const std::string map = ", net_latency: {LL: 20 us, LL128: 20 us, Simple: 40 us}";
  EXPECT_NEAR(time_us(map, "LL"), t20, printed);
  const double s20 = time_us(", net_latency: 20 us", "Simple");
  const double s40 = time_us(", net_latency: 40 us", "Simple");
  EXPECT_GT(s40, s20 + 8 * 20.0 - printed); // at least the chain's 8 network steps, each 20 us longer
  EXPECT_NEAR(time_us(map, "Simple"), s40, printed);
  // A send between two nodes is one network step.
  EXPECT_NEAR(time_us(", net_latency: 30 us", "", "sendrecv") - time_us(", net_latency: 20 us", "", "sendrecv"), 10.0,
              printed);

  struct Case {
    std::string extra;
    std::vector<std::string> phrases;
  };
  for (const Case& c : std::vector<Case>{{", net_latency: -1 us", {"nccl.net_latency", "negative", "Fix:"}},
                                         {", net_latency: 2 ms", {"net_latency", "0 to 1 ms", "Fix:"}},
                                         {", net_latency: {LL: 20 us}", {"net_latency", "LL128", "all three"}},
                                         {", net_latency: 20 us, latencies: false", {"net_latency", "latencies"}}}) {
    const fs::path file = write_with(c.extra, "bad.yaml");
    const CliResult r = run_cli("nccl-tests --scenario " + file.string() + " --op all_reduce -b 8 -e 8");
    EXPECT_EQ(r.exit_code, 2) << c.extra << "\n" << r.output;
    EXPECT_NE(r.output.find(file.string() + ":"), std::string::npos) << r.output;
    for (const auto& p : c.phrases)
      EXPECT_NE(r.output.find(p), std::string::npos) << "'" << p << "' missing for " << c.extra << ":\n" << r.output;
  }
}

// A communicator of one GPU on each node: NCCL's model prices a ring's network step with Tree's hwLat[NET] ("with
// ppn=1 latencies are fully exposed", src/graph/tuning.cc), so the simulation does. A forced ring all_gather of 8 B
// over GPU 0 of two nodes is NCCL's launch (baseLat Ring: 6.6 us LL, 14.0 us LL128) and one network step: Tree's 5.0 us
// (LL) or 8.5 us (LL128), above the path's own 3.0 us (PCIe 0.5, NIC cable 1, the leaf, NIC cable 1, PCIe 0.5 us);
// with Ring's 2.7 / 4.0 us it would be 9.6 / 18.0 us. Two GPUs per node keep Ring's: GPUs 0, 1, 8, 9 make the ring
// 0 -> 1 -> 8 -> 9 -> 0, whose network edges cross rails (PXN: an NVLink hop of 1.0 us, two 0.5 us links, then the
// rail's 3.0 us), and all_gather's slowest chain of n - 1 = 3 hops is 1 -> 8 -> 9 -> 0: 4.0 + 1.0 + 4.0 us (Tree's
// 5.0 us would make it 11.0).
TEST(NcclTestsCli, OneRankPerNodeRingTakesTreesNetworkStep)
{
  const fs::path dir = railyard::test::temp_dir("ppn1");
  const fs::path file = dir / "two_nodes.yaml";
  std::ofstream(file) << rail_scenario(2);
  auto time_us = [&](const std::string& ranks, const std::string& size, const std::string& proto) {
    const CliResult r = run_cli("nccl-tests --scenario " + file.string() + " --op all_gather --algo ring --ranks '" +
                                ranks + "' -b " + size + " -e " + size + " --proto " + proto);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto log = calibration::parse_nccl_tests_text(r.out, "all_gather_perf.log");
    EXPECT_EQ(log.rows.size(), 1u) << r.out;
    return log.rows.empty() ? 0.0 : log.rows[0].out_of_place->time_us;
  };
  const double printed = 0.011; // two decimals below 100 us, and the few bytes on the wire
  EXPECT_NEAR(time_us("[0, 8]", "8", "LL"), 6.6 + 5.0, printed);
  EXPECT_NEAR(time_us("[0, 8]", "8", "LL128"), 14.0 + 8.5, printed);
  EXPECT_NEAR(time_us("[0, 1, 8, 9]", "32", "LL"), 6.6 + 4.0 + 1.0 + 4.0, printed);
}

// A ring that spans nodes pays each intra-node step at least the host's network overhead, as NCCL's model charges it
// (src/graph/tuning.cc getNetOverhead: 1 us on Intel hosts, 2 us on AMD, x3 for Simple; intraLat = max(hwLat,
// netOverhead)). DGX A100 has AMD CPUs: the ring 0 -> 1 -> 8 -> 9 -> 0 of OneRankPerNodeRingTakesTreesNetworkStep's
// cluster, with A100 nodes, takes 6.6 us + 4.0 (network, PXN) + 2.0 (NVLink step: the overhead, above NCCL's 0.6 and
// the path's 1.0) + 4.0 us for all_gather's slowest chain of 3 hops at Ring/LL. On Intel (DGX H100) the NVLink step
// stays the path's 1.0 us (15.6 us there).
TEST(NcclTestsCli, RingAcrossNodesPaysTheHostsNetOverheadPerIntraNodeStep)
{
  const fs::path dir = railyard::test::temp_dir("net_overhead");
  const fs::path file = dir / "a100.yaml";
  std::string text = rail_scenario(2);
  for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
           {"nccl: {system: dgx_h100}", "nccl: {system: dgx_a100}"}, {"370.8 GB/s", "240 GB/s"}})
    text.replace(text.find(from), from.size(), to);
  std::ofstream(file) << text;
  const CliResult r = run_cli("nccl-tests --scenario " + file.string() +
                              " --op all_gather --algo ring --proto LL --ranks '[0, 1, 8, 9]' -b 32 -e 32");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto log = calibration::parse_nccl_tests_text(r.out, "all_gather_perf.log");
  ASSERT_EQ(log.rows.size(), 1u) << r.out;
  EXPECT_NEAR(log.rows[0].out_of_place->time_us, 6.6 + 4.0 + 2.0 + 4.0, 0.011);
}

// nccl.nthreads / nccl.ll128_nthreads are NCCL_NTHREADS / NCCL_LL128_NTHREADS: comm->maxThreads, from which NCCL's
// getAlgoInfo trims a call's channels while nBytes < nChannels x nThreads x threshold (src/enqueue.cc, thresholds
// NCCL_LL_THREAD_THRESHOLD 8 x nRanks for Ring/LL, NCCL_LL128_THREAD_THRESHOLD 8, NCCL_SIMPLE_THREAD_THRESHOLD 64), so
// fewer threads keep more channels on mid-size calls. Expected counts from that rule on one 8-GPU H100 node, whose
// communicator has 24 channels (NCCL's defaults: 512 threads for LL and Simple there, 640 for LL128). Values NCCL's
// getNthreads would clamp, and the keys on an RCCL node, exit 2 naming the key.
TEST(NcclTestsCli, NthreadsAreNcclNthreadsAndTrimChannelsAsNcclDoes)
{
  const fs::path dir = railyard::test::temp_dir("nthreads");
  int files = 0;
  auto scenario = [&](const std::string& extra) {
    const fs::path file = dir / ("node" + std::to_string(++files) + ".yaml");
    std::ofstream(file) << "name: n\ncluster: {kind: single_node, nodes: 1, gpus_per_node: 8, node: "
                           "{nvlink_bandwidth: 370.8 GB/s, nvlink_latency: 0.5 us}}\nnccl: {system: dgx_h100"
                        << extra << "}\n";
    return file.string();
  };
  auto channels = [&](const std::string& extra, const std::string& size, const std::string& proto) {
    const CliResult r = run_cli("nccl-tests --scenario " + scenario(extra) + " --op all_reduce -b " + size + " -e " +
                                size + " --algo ring --proto " + proto);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const std::size_t at = r.out.find(" channels\n"); // the choice line: "  65536 B  Ring/LL  2 channels"
    if (at == std::string::npos) {
      ADD_FAILURE() << r.out;
      return 0;
    }
    const std::size_t start = r.out.rfind(' ', at - 1);
    return std::stoi(r.out.substr(start, at - start));
  };
  // The largest count c <= 24 with c x threads x threshold <= bytes (at least 1).
  auto expected = [](double bytes, double threads, double threshold) {
    return std::max(1, std::min(24, static_cast<int>(bytes / (threads * threshold))));
  };
  EXPECT_EQ(channels("", "64K", "LL"), expected(65536, 512, 8 * 8));
  EXPECT_EQ(channels(", nthreads: 128", "64K", "LL"), expected(65536, 128, 8 * 8));
  EXPECT_EQ(channels("", "256K", "Simple"), expected(262144, 512, 64));
  EXPECT_EQ(channels(", nthreads: 128", "256K", "Simple"), expected(262144, 128, 64));
  EXPECT_EQ(channels("", "32K", "LL128"), expected(32768, 640, 8));
  EXPECT_EQ(channels(", ll128_nthreads: 160", "32K", "LL128"), expected(32768, 160, 8));
  // NCCL_NTHREADS does not touch LL128, nor NCCL_LL128_NTHREADS LL.
  EXPECT_EQ(channels(", nthreads: 128", "32K", "LL128"), expected(32768, 640, 8));
  EXPECT_EQ(channels(", ll128_nthreads: 160", "64K", "LL"), expected(65536, 512, 8 * 8));

  const std::string rccl = (dir / "mi300x.yaml").string();
  std::ofstream(rccl) << "name: m\ncluster: {kind: single_node, gpus_per_node: 8, node: {kind: fully_connected, "
                         "xgmi_bandwidth: 48 GB/s, xgmi_latency: 0.7 us}}\nnccl: {nthreads: 256}\n";
  for (const auto& [file, phrases] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {scenario(", nthreads: 100"), {"nccl.nthreads", "multiple of the warp size", "Fix:"}},
           {scenario(", nthreads: 1024"), {"nccl.nthreads", "NCCL_NTHREADS"}},
           {scenario(", ll128_nthreads: 64"), {"nccl.ll128_nthreads", "NCCL_LL128_NTHREADS"}},
           {rccl, {"nccl.nthreads", "RCCL", "Fix:"}}}) {
    const std::string text = railyard::test::read_file(file);
    const CliResult r = run_cli("nccl-tests --scenario " + file + " --op all_reduce -b 8 -e 8");
    EXPECT_EQ(r.exit_code, 2) << text << "\n" << r.output;
    for (const auto& p : phrases)
      EXPECT_NE(r.output.find(p), std::string::npos) << "'" << p << "' missing for " << text << ":\n" << r.output;
  }
}
