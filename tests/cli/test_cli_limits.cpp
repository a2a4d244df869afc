// Limits instead of aborts, through the binary: a run whose estimated memory exceeds --max-memory is refused before it
// is built (exit 2, the estimate part by part with the knob that shrinks each, no output folder) and runs once the
// knob is turned; a SimGrid run with more actors than the kernel lets SimGrid map is refused before SimGrid aborts;
// the documented bounds of time_step, sample_interval and the number of calls are enforced; --progress reports the
// transfers the lowered schedules hold, which the network then counts one by one.
#include "cli_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <regex>

using namespace railyard::test;

namespace {

std::string cluster(const std::string& kind, int nodes)
{
  return "cluster:\n  kind: " + kind + "\n  nodes: " + std::to_string(nodes) +
         "\n  gpus_per_node: 8\n"
         "  node: {nvlink_bandwidth: 370.8 GB/s, nvlink_latency: 0.5 us, pcie_bandwidth: 64 GB/s}\n"
         "  nic: {bandwidth: 400 Gb/s, latency: 1 us}\n"
         "  fabric: {leaf_downlinks: 32, oversubscription: 1, link_bandwidth: 400 Gb/s, link_latency: 0.6 us}\n";
}

class Limits : public ::testing::Test {
protected:
  void SetUp() override
  {
    dir_ = temp_dir("limits_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path scenario(const std::string& text)
  {
    const fs::path p = dir_ / ("s" + std::to_string(++n_) + ".yaml");
    std::ofstream(p) << "name: limits\nseed: 1\n" << text;
    return p;
  }
  CliResult run(const fs::path& s, const std::string& args = "")
  {
    return run_cli("run " + s.string() + " --out " + (dir_ / "out").string() + " " + args);
  }

  fs::path dir_;
  int n_ = 0;
};

TEST_F(Limits, AMemoryEstimateOverTheLimitIsRefusedWithItsPartsAndTheirKnobs)
{
  // A 64-node ring all-reduce on the fluid backend recording every flow: one flows.csv record per transfer.
  const std::string net = "network: {backend: fluid, outputs: {flows: FLOWS, links: false}}\n";
  const std::string calls =
      "collectives:\n  - {op: all_reduce, size: 512 MiB, algorithm: ring, protocol: simple, channels: 4}\n";
  std::string with_flows = cluster("rail_optimized", 64) + net + calls;
  with_flows.replace(with_flows.find("FLOWS"), 5, "true");
  std::string without = cluster("rail_optimized", 64) + net + calls;
  without.replace(without.find("FLOWS"), 5, "false");

  // Reference: what the run estimates for itself when it fits (summary.json's memory_estimate).
  const CliResult ok = run(scenario(with_flows), "--max-memory '64 GiB'");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  const auto est = nlohmann::json::parse(read_file(dir_ / "out" / "summary.json"))["memory_estimate"];
  double records = 0;
  for (const auto& p : est["parts"])
    if (p["what"].get<std::string>().find("flow records") != std::string::npos) records = p["bytes"].get<double>();
  // One record per transfer: the count the network reports, times a record of more than 64 bytes.
  const auto summary = nlohmann::json::parse(read_file(dir_ / "out" / "summary.json"));
  ASSERT_GT(records, 64.0 * summary["flows"]["sent"].get<double>());
  const double total = est["total_bytes"].get<double>();
  fs::remove_all(dir_ / "out");

  // A limit between the run without records and the run with them: refused, naming the records and their knob.
  const double limit_mib = (total - records / 2) / (1024.0 * 1024);
  const std::string limit = "--max-memory '" + std::to_string(static_cast<long>(limit_mib)) + " MiB'";
  const CliResult refused = run(scenario(with_flows), limit);
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("flow records"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("outputs: {flows: false}"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("--max-memory"), std::string::npos) << refused.output;
  EXPECT_FALSE(fs::exists(dir_ / "out")) << "a refused run leaves no output folder";
  EXPECT_FALSE(fs::exists(dir_ / "out.partial"));

  // Turning the knob makes it fit under the same limit.
  const CliResult fits = run(scenario(without), limit);
  EXPECT_EQ(fits.exit_code, 0) << fits.output;
}

TEST_F(Limits, ATinyLimitRefusesBeforeTheTopologyIsBuilt)
{
  // 1 MiB cannot hold the process itself: the first estimate, before anything is built, refuses it.
  const CliResult r = run(scenario(cluster("rail_optimized", 4) + "collectives:\n  - {op: all_reduce, size: 1 MiB}\n"),
                          "--max-memory '1 MiB'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("topology"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  for (const std::string bad : {"'nan GiB'", "'-1 GiB'", "'0 B'", "'lots'"}) {
    const CliResult b =
        run(scenario(cluster("rail_optimized", 4) + "collectives:\n  - {op: all_reduce, size: 1 MiB}\n"),
            "--max-memory " + bad);
    EXPECT_EQ(b.exit_code, 2) << bad << "\n" << b.output;
    EXPECT_NE(b.output.find("--max-memory"), std::string::npos) << b.output;
  }
}

TEST_F(Limits, ACallTooLargeToLowerIsRefusedBeforeItsStepsAreAllocated)
{
  // A 1,024 TiB (2^50 B) ring all-reduce on 8 GPUs, one channel, Simple: 2^50 / (8 x 2 MiB) = 67,108,864 loops of 14
  // steps, 939,524,096 steps of 48 bytes or more (about 42 GiB): more than a 1 GiB limit holds. Refused at its entry.
  const std::string text = cluster("rail_optimized", 1) +
                           "collectives:\n  - {op: all_reduce, size: 1024 TiB, algorithm: ring, protocol: simple, "
                           "channels: 1}\n";
  const CliResult r = run(scenario(text), "--max-memory '1 GiB'");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("collectives[0]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("9.4e+08 steps"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));

  // A generated step of 10^8 micro-batches: refused before the generator builds it.
  const std::string step = cluster("rail_optimized", 1) + "profile: " + std::string(RAILYARD_SOURCE_DIR) +
                           "/calibration/profiles/dgx_h100_ib_ndr.yaml\n"
                           "workload:\n  generator: megatron\n"
                           "  model: {layers: 4, hidden: 1024, heads: 16, seq_length: 512, vocab: 8192}\n"
                           "  parallel: {tp: 8, pp: 1, dp: 1}\n"
                           "  training: {micro_batch: 1, global_batch: 100000000, dtype: bf16}\n";
  const CliResult g = run(scenario(step), "--max-memory '4 GiB'");
  EXPECT_EQ(g.exit_code, 2) << g.output;
  EXPECT_NE(g.output.find("op graphs"), std::string::npos) << g.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(Limits, MaxTransfersBoundsTheWork)
{
  // A ring all-reduce of n ranks, c channels and L loops starts n x 2(n-1) x c x L transfers: on one 8-GPU node with
  // one channel and one 2 MiB-chunk loop (8 x 2 MiB = 16 MiB), 8 x 14 = 112.
  const std::string text = cluster("rail_optimized", 1) +
                           "collectives:\n  - {op: all_reduce, size: 16 MiB, algorithm: ring, protocol: simple, "
                           "channels: 1}\n";
  const CliResult over = run(scenario(text), "--max-transfers 111");
  EXPECT_EQ(over.exit_code, 2) << over.output;
  EXPECT_NE(over.output.find("--max-transfers"), std::string::npos) << over.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
  const CliResult fits = run(scenario(text), "--max-transfers 112");
  ASSERT_EQ(fits.exit_code, 0) << fits.output;
  EXPECT_EQ(nlohmann::json::parse(read_file(dir_ / "out" / "summary.json"))["flows"]["sent"], 112);
}

TEST_F(Limits, SimGridActorsBeyondTheKernelsMapLimitAreRefusedBeforeSimGridAborts)
{
  // SimGrid maps a stack and a guard page per actor; past vm.max_map_count it aborts ("Failed to protect stack").
  // One actor per GPU: a cluster with more GPUs than half the map limit cannot run on SimGrid.
  std::ifstream in("/proc/sys/vm/max_map_count");
  long max_maps = 0;
  if (!(in >> max_maps) || max_maps <= 0) GTEST_SKIP() << "no /proc/sys/vm/max_map_count here";
  const long gpus = max_maps / 2 + 64;
  const int nodes = static_cast<int>((gpus + 7) / 8);
  const CliResult r = run(scenario(cluster("rail_optimized", (nodes + 31) / 32 * 32) +
                                   "collectives:\n  - {op: all_reduce, size: 1 MiB, algorithm: ring, protocol: simple, "
                                   "channels: 1}\n"));
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("vm.max_map_count"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("backend: fluid"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out"));
}

TEST_F(Limits, DocumentedBoundsAreEnforcedWithTheField)
{
  const std::string base = cluster("rail_optimized", 4);
  const std::string call = "collectives:\n  - {op: all_reduce, size: 1 MiB}\n";
  struct Case {
    std::string text, field;
  };
  const std::vector<Case> cases = {
      {base + "network: {backend: fluid, cc: dcqcn, time_step: 1 ns}\n" + call, "network.time_step"},
      {base + "network: {backend: fluid, cc: dcqcn, time_step: 1 ms}\n" + call, "network.time_step"},
      {base + "network: {backend: fluid, outputs: {sample_interval: 10 ns}}\n" + call,
       "network.outputs.sample_interval"},
      {base + "network: {backend: fluid, outputs: {sample_interval: 2 s}}\n" + call, "network.outputs.sample_interval"},
      {base + "collectives:\n  - {op: all_reduce, size: 1 MiB, repeat: 600000}\n"
              "  - {op: all_reduce, size: 1 MiB, repeat: 600000}\n",
       "collectives[1]"},
  };
  for (const auto& c : cases) {
    const CliResult r = run(scenario(c.text));
    EXPECT_EQ(r.exit_code, 2) << c.field << "\n" << r.output;
    EXPECT_NE(r.output.find(c.field), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir_ / "out"));
  }
}

TEST_F(Limits, ProgressCountsTheTransfersTheNetworkThenDelivers)
{
  const fs::path s = scenario(cluster("rail_optimized", 4) +
                              "collectives:\n  - {op: all_reduce, size: 64 MiB, algorithm: ring, protocol: simple}\n");
  const CliResult r = run(s, "--progress --progress-interval 0.01");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto summary = nlohmann::json::parse(read_file(dir_ / "out" / "summary.json"));
  const auto sent = summary["flows"]["sent"].get<std::uint64_t>();
  // The last line: every transfer of the lowered schedules (counted before the run) delivered (counted by it).
  const std::regex last("railyard: progress: finished: simulated [0-9.]+ [mu]?s, ([0-9]+) transfers of ([0-9]+) "
                        "\\(100\\.0%\\)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, last)) << r.output;
  EXPECT_EQ(std::stoull(m[1]), sent);
  EXPECT_EQ(std::stoull(m[2]), sent);

  // Without --progress and without a terminal: nothing on stderr, and the same outputs byte for byte.
  const std::string with = read_file(dir_ / "out" / "collectives.csv");
  fs::remove_all(dir_ / "out");
  const CliResult quiet = run(s);
  ASSERT_EQ(quiet.exit_code, 0);
  EXPECT_EQ(quiet.output.find("progress"), std::string::npos) << quiet.output;
  EXPECT_EQ(read_file(dir_ / "out" / "collectives.csv"), with);
}

} // namespace
