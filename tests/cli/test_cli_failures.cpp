// cluster.failures through the binary: cables and switches down, cables at a fraction of their rate, and what each
// does to a transfer whose time the per-link load gives (topologies/README.md, "Failures").
#include "cli_support.hpp"

#include <fmt/format.h>

#include <regex>

using namespace railyard::test;

namespace {

const std::string kSource = RAILYARD_SOURCE_DIR;

// Four nodes of 8 GPUs, one per leaf (8 downlinks each), 2:1 oversubscribed: 4 spines, one cable from each leaf to
// each. GPUs 0-7 (leaf0) each send 64 MiB to GPUs 8-15 (leaf1) at once, sprayed evenly over every up*/down* path.
// With p paths left between leaf0 and leaf1, each of their p uplinks carries 8/p of the flows' rate r: r = 50 GB/s x
// p / 8 while that is below the NIC's 50 GB/s, so the transfer takes 64 MiB x 8 / (50 GB/s x p) (latencies aside).
const char* kScenario = R"(name: failures
seed: 1
cluster:
  kind: fat_tree
  nodes: 4
  gpus_per_node: 8
  nic: {bandwidth: 400 Gb/s}
  fabric: {leaf_downlinks: 8, oversubscription: 2, link_bandwidth: 400 Gb/s}
%FAILURES%network: {backend: fluid, ecmp: spray}
collectives:
  - group:
      - {op: send, size: 64 MiB, from: 0, to: 8}
      - {op: send, size: 64 MiB, from: 1, to: 9}
      - {op: send, size: 64 MiB, from: 2, to: 10}
      - {op: send, size: 64 MiB, from: 3, to: 11}
      - {op: send, size: 64 MiB, from: 4, to: 12}
      - {op: send, size: 64 MiB, from: 5, to: 13}
      - {op: send, size: 64 MiB, from: 6, to: 14}
      - {op: send, size: 64 MiB, from: 7, to: 15}
)";

class CliFailures : public TempDirTest {
protected:
  /// Runs the scenario with `failures` (YAML lines under cluster:, indented two spaces) and returns the transfer's
  /// time in seconds (-1 when the run fails; `last` keeps its result).
  double time_with(const std::string& failures)
  {
    const std::string text = std::regex_replace(std::string(kScenario), std::regex("%FAILURES%"), failures);
    write("s.yaml", text);
    fs::remove_all(dir_ / "o");
    last = run_cli("run s.yaml --out o", "", dir_.string());
    if (last.exit_code != 0) return -1;
    const auto rows = csv_rows(dir_ / "o" / "collectives.csv");
    return rows.empty() ? -1 : std::stod(rows.front().at("time_s"));
  }
  CliResult last;
};

/// 64 MiB x 8 flows over p paths of 50 GB/s, against the same with 4 paths: 4 / p.
double expected_ratio(int paths)
{
  return 4.0 / paths;
}

} // namespace

TEST_F(CliFailures, SpineUplinksDownSlowTheTransferAsThePathsLeftSay)
{
  const double t0 = time_with("");
  ASSERT_GT(t0, 0) << last.output;
  // Bandwidth-bound: 64 MiB x 8 / (50 GB/s x 4) = 2.684 ms; what is left is the latency (protocol, hops, NCCL's
  // per-step costs), which no failure here changes.
  const double b0 = 64.0 * 1024 * 1024 * 8 / (50e9 * 4);
  const double latency = t0 - b0;
  ASSERT_GT(latency, 0);
  ASSERT_LT(latency, 0.02 * t0);
  const auto expected = [&](int paths) { return latency + b0 * expected_ratio(paths); };
  // leaf_spine_down N takes leaf i - spine i down for i < N: leaf0 -> leaf1 keeps the spines joined to both.
  const int paths[] = {4, 3, 2, 2}; // N = 0, 1, 2 (spines 2, 3), 4 (spines 2, 3)
  const int counts[] = {0, 1, 2, 4};
  for (int i = 1; i < 4; ++i) {
    const double t = time_with(fmt::format("  failures: {{leaf_spine_down: {}}}\n", counts[i]));
    ASSERT_GT(t, 0) << last.output;
    EXPECT_NEAR(t, expected(paths[i]), 0.002 * t) << counts[i] << " cables down";
  }
  // The same cable named, and spine0 down altogether: 3 paths.
  EXPECT_NEAR(time_with("  failures: {cables: [spine0-leaf0]}\n"), expected(3), 0.002 * t0);
  EXPECT_NEAR(time_with("  failures: {cables: ['leaf0->spine0']}\n"), expected(3), 0.002 * t0);
  EXPECT_NEAR(time_with("  failures: {switches: [spine0]}\n"), expected(3), 0.002 * t0);
  const std::string summary = read_file(dir_ / "o" / "summary.json");
  EXPECT_NE(summary.find("\"switches_down\": [\n        \"spine0\""), std::string::npos) << summary;
  // A cable elsewhere (leaf2 - spine0) leaves leaf0 -> leaf1 its 4 paths.
  EXPECT_NEAR(time_with("  failures: {cables: [leaf2-spine0]}\n"), t0, 0.002 * t0);
}

TEST_F(CliFailures, ADegradedCableOrSlowNicHoldsBackWhatCrossesIt)
{
  const double t0 = time_with("");
  ASSERT_GT(t0, 0) << last.output;
  const double b0 = 64.0 * 1024 * 1024 * 8 / (50e9 * 4), latency = t0 - b0;
  // Half the rate on one of the 4 uplinks: each flow sends a quarter of its rate through it, 8 x r / 4 <= 25 GB/s,
  // r = 12.5 GB/s against 25: twice the bandwidth term.
  EXPECT_NEAR(time_with("  failures: {degraded: [{cable: leaf0-spine2, fraction: 0.5}]}\n"), latency + 2 * b0,
              0.002 * t0);
  // GPU 0's NIC at a quarter of 50 GB/s: its flow at 12.5 GB/s instead of 25, the group ends with it.
  EXPECT_NEAR(time_with("  failures: {degraded: [{cable: nic0.0-leaf0, fraction: 0.25}]}\n"), latency + 2 * b0,
              0.002 * t0);
}

TEST_F(CliFailures, FailuresThatDisconnectOrNameNothingAreRefused)
{
  const auto refused = [&](const std::string& failures, const std::string& says) {
    EXPECT_LT(time_with(failures), 0) << failures;
    EXPECT_EQ(last.exit_code, 2) << last.output;
    EXPECT_NE(last.output.find(says), std::string::npos) << last.output;
    EXPECT_NE(last.output.find("s.yaml:"), std::string::npos) << last.output;
  };
  refused("  failures: {cables: [nic0.3-leaf0]}\n", "nic0.3 has no cable to a leaf");
  refused("  failures: {switches: [leaf1]}\n", "disconnect");
  refused("  failures: {cables: [leaf0-spine0, leaf0-spine1, leaf0-spine2, leaf0-spine3]}\n",
          "no up*/down* path is left from leaf0");
  refused("  failures: {cables: [leaf0-spine9]}\n", "this cluster has no cable leaf0-spine9");
  refused("  failures: {cables: [leaf0]}\n", "is not a cable name");
  refused("  failures: {switches: [spine7]}\n", "no fabric switch spine7");
  refused("  failures: {cables: [gpu0.0-nic0.0]}\n", "inside a node");
  refused("  failures: {leaf_spine_down: 5}\n", "this fabric has 4 leaves and 4 spines");
  refused("  failures: {degraded: [{cable: leaf0-spine0, fraction: 0}]}\n", "not a fraction");
  refused("  failures: {cable: [leaf0-spine0]}\n", "did you mean 'cables'");
}

TEST_F(CliFailures, AStragglerGpuHoldsBackEveryCollectiveItJoins)
{
  // One node, tp 8, no pipeline, communication ideal (collectives take no time but still wait for every member): each
  // tensor-parallel collective waits for the slowest GPU, so one GPU whose kernels take 1.5 times as long puts
  // 0.5 x its compute time on the step: T' = T + (1.5 - 1) x C, C the compute time per rank of the healthy step.
  const std::string base = std::regex_replace(read_file(kSource + "/examples/profile_links.yaml"),
                                              std::regex("profile: \\.\\./"), "profile: " + kSource + "/");
  std::string one = std::regex_replace(base, std::regex("nodes: 2"), "nodes: 1");
  one = std::regex_replace(one, std::regex("dp: 2"), "dp: 1");
  one = std::regex_replace(one, std::regex("communication: analytical, collective_model: profile"),
                           "communication: ideal");
  const auto step = [&](const std::string& text, double* compute) {
    write("w.yaml", text);
    fs::remove_all(dir_ / "w");
    last = run_cli("run w.yaml --out w", "", dir_.string());
    EXPECT_EQ(last.exit_code, 0) << last.output;
    const std::string s = read_file(dir_ / "w" / "summary.json");
    std::smatch m;
    EXPECT_TRUE(std::regex_search(s, m, std::regex("\"step_time_s\": ([0-9.e+-]+)")));
    if (compute) {
      std::smatch c;
      EXPECT_TRUE(std::regex_search(s, c, std::regex("\"compute_s\": ([0-9.e+-]+)")));
      *compute = std::stod(c[1].str());
    }
    return std::stod(m[1].str());
  };
  double c = 0;
  const double t = step(one, &c);
  ASSERT_GT(c, 0.5 * t); // compute-bound
  const std::string slow = std::regex_replace(
      one, std::regex("gpus_per_node: 8\n"), "gpus_per_node: 8\n  failures: {stragglers: [{gpu: 3, slowdown: 1.5}]}\n");
  ASSERT_NE(slow, one);
  const double t2 = step(slow, nullptr);
  EXPECT_NEAR(t2, t + 0.5 * c, 0.01 * t);
  EXPECT_NE(read_file(dir_ / "w" / "summary.json").find("\"stragglers\""), std::string::npos);
  // A GPU the cluster does not have, or a "straggler" faster than the others: refused.
  for (const char* bad : {"[{gpu: 8, slowdown: 1.5}]", "[{gpu: 3, slowdown: 0.5}]"}) {
    write("bad.yaml", std::regex_replace(one, std::regex("gpus_per_node: 8\n"),
                                         std::string("gpus_per_node: 8\n  failures: {stragglers: ") + bad + "}\n"));
    const CliResult r = run_cli("run bad.yaml --out bad", "", dir_.string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("stragglers"), std::string::npos) << r.output;
  }
}

TEST_F(CliFailures, ANodeDownIsCutOffAndOnlyCommunicatorsWithItAreRefused)
{
  const double base = time_with("");
  ASSERT_GT(base, 0) << last.output;
  // Node 3 takes no part in the transfer between nodes 0 and 1: the same paths, the same time.
  const double without3 = time_with("  failures: {nodes: [3]}\n");
  ASSERT_GT(without3, 0) << last.output;
  EXPECT_NEAR(without3, base, 1e-9 * base);
  EXPECT_NE(read_file(dir_ / "o" / "summary.json").find("\"nodes_down\": [\n        3"), std::string::npos)
      << read_file(dir_ / "o" / "summary.json");
  // Node 1 receives it: refused, naming the node, two GPUs of the communicator and what to leave out.
  EXPECT_LT(time_with("  failures: {nodes: [1]}\n"), 0);
  EXPECT_EQ(last.exit_code, 2) << last.output;
  EXPECT_NE(last.output.find("node 1 is down"), std::string::npos) << last.output;
  EXPECT_NE(last.output.find("gpu1.0"), std::string::npos) << last.output;
  EXPECT_NE(last.output.find("GPUs (8..15)"), std::string::npos) << last.output;
  // The same on the analytical network (no network: section), and a node the cluster does not have.
  std::string analytical = std::regex_replace(std::string(kScenario), std::regex("%FAILURES%network: \\{[^}]*\\}\n"),
                                              "  failures: {nodes: [1]}\n");
  ASSERT_EQ(analytical.find("fluid"), std::string::npos);
  write("a.yaml", analytical);
  CliResult r = run_cli("run a.yaml --out a", "", dir_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("node 1 is down"), std::string::npos) << r.output;
  EXPECT_LT(time_with("  failures: {nodes: [4]}\n"), 0);
  EXPECT_EQ(last.exit_code, 2) << last.output;
  EXPECT_NE(last.output.find("failures.nodes"), std::string::npos) << last.output;
}
