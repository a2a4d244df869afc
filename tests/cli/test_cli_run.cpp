// `railyard run` and `railyard topo describe` through the real binary: bad input exits 2 with file, line, field and
// fix, and leaves no output folder; good input writes complete, reproducible outputs.
#include "cli_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

using railyard::test::read_file;
using railyard::test::CliResult;
using railyard::test::run_cli;

fs::path temp_dir(const std::string& name) { return railyard::test::temp_dir("cli_" + name); }

// A valid scenario with one line replaced, so each bad case differs from a good one in exactly the field under test.
std::string scenario_with(const std::string& cluster_line_4)
{
  return "name: t\n"
         "cluster:\n"
         "  kind: rail_optimized\n" +
         cluster_line_4 +
         "\n"
         "  gpus_per_node: 8\n"
         "  nic: {bandwidth: 400 Gb/s}\n"
         "collectives:\n"
         "  - {op: all_reduce, size: 1 MiB, algorithm: ring, protocol: simple, channels: 2}\n";
}

struct BadCase {
  const char* name;
  std::string text;
  int line;              ///< 1-based line the message must name
  const char* must_have; ///< a phrase of the rule or field
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadScenario : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadScenario, ExitsTwoNamingFileLineAndFieldAndWritesNothing)
{
  const BadCase& c = GetParam();
  const fs::path dir = temp_dir(c.name);
  const fs::path file = dir / "bad.yaml";
  std::ofstream(file) << c.text;
  const fs::path out = dir / "out";
  const CliResult r = run_cli("run " + file.string() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(file.string() + ":" + std::to_string(c.line)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(c.must_have), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("Fix:"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out)) << "an output folder was left behind";
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Cluster, BadScenario,
    ::testing::Values(
        BadCase{"unknown_kind", "name: t\ncluster:\n  kind: torus\n  nodes: 2\ncollectives:\n  - {op: all_reduce, size: 1 MiB}\n",
                3, "torus"},
        BadCase{"zero_bandwidth", scenario_with("  nodes: 2").replace(scenario_with("  nodes: 2").find("400 Gb/s"), 8, "0 Gb/s"),
                6, "bandwidth"},
        BadCase{"negative_bandwidth",
                scenario_with("  nodes: 2").replace(scenario_with("  nodes: 2").find("400 Gb/s"), 8, "-5 GB/s"), 6,
                "bandwidth"},
        BadCase{"gpus_not_divisible", scenario_with("  gpus: 60"), 4, "gpus"},
        BadCase{"unknown_field", scenario_with("  nodes: 2\n  nodez: 3"), 5, "nodez"},
        BadCase{"negative_size",
                "name: t\ncluster: {kind: single_node, gpus_per_node: 8}\ncollectives:\n  - op: all_reduce\n    size: -4 MiB\n",
                5, "negative"},
        BadCase{"unknown_op", "name: t\ncluster: {kind: single_node, gpus_per_node: 8}\ncollectives:\n  - op: allreduec\n    size: 1 MiB\n",
                4, "allreduec"},
        BadCase{"malformed_yaml", "name: t\ncluster:\n  kind: [single_node\n", 4, "malformed YAML"}),
    [](const ::testing::TestParamInfo<BadCase>& info) { return std::string(info.param.name); });

TEST(RunCommand, WritesCompleteOutputsThatAreIdenticalAcrossRuns)
{
  const fs::path dir = temp_dir("good");
  const std::string scenario = std::string(RAILYARD_SOURCE_DIR) + "/examples/default.yaml";
  ASSERT_EQ(run_cli("run " + scenario + " --out " + (dir / "a").string()).exit_code, 0);
  ASSERT_EQ(run_cli("run " + scenario + " --out " + (dir / "b").string()).exit_code, 0);
  for (const char* f : {"summary.json", "collectives.csv"}) {
    const std::string a = read_file(dir / "a" / f), b = read_file(dir / "b" / f);
    EXPECT_FALSE(a.empty()) << f;
    EXPECT_EQ(a, b) << f << " differs between two runs of the same scenario and seed";
  }
  EXPECT_NE(read_file(dir / "a" / "summary.json").find("\"status\": \"complete\""), std::string::npos);
  // One header line plus one line per collective listed in examples/default.yaml (four, repeat 1).
  const std::string csv = read_file(dir / "a" / "collectives.csv");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 5);
  fs::remove_all(dir);
}

TEST(RunCommand, HelpDescribesEveryCommand)
{
  for (const char* cmd : {"--help", "run --help", "topo --help", "topo describe --help"}) {
    const CliResult r = run_cli(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.output.find("Usage"), std::string::npos) << cmd << ": " << r.output;
  }
}

TEST(TopoDescribe, BadClusterExitsTwoAndJsonParsesBack)
{
  const fs::path dir = temp_dir("topo");
  const fs::path bad = dir / "bad.yaml";
  std::ofstream(bad) << "cluster:\n  kind: rail_only\n  nodes: 64\n  gpus_per_node: 8\n  fabric: {leaf_downlinks: 32}\n";
  const CliResult r = run_cli("topo describe " + bad.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(bad.string()), std::string::npos) << r.output;

  const std::string good = std::string(RAILYARD_SOURCE_DIR) + "/examples/default.yaml";
  const CliResult j = run_cli("topo describe " + good + " --json");
  EXPECT_EQ(j.exit_code, 0) << j.output;
  // 4 nodes x 8 GPUs in the example.
  EXPECT_NE(j.output.find("\"gpus\": 32"), std::string::npos) << j.output;
  fs::remove_all(dir);
}

// Oversubscription between pods: a 3-tier k = 14 fat tree of 98 one-GPU hosts is two pods of 49. At 1:7 between
// pods each of a pod's 7 aggregation switches keeps one of its 7 core links, so the cut between the pods is 7 x 50
// GB/s = 350 GB/s, a seventh of the 49 NICs' 2,450 GB/s.
TEST(TopoDescribe, CoreOversubscriptionBetweenPods)
{
  const fs::path dir = temp_dir("topo_core");
  const fs::path file = dir / "pods.yaml";
  std::ofstream(file) << "cluster:\n  kind: fat_tree\n  nodes: 98\n  gpus_per_node: 1\n  node: {nvswitch: false}\n"
                         "  fabric: {tiers: 3, radix: 14, core_oversubscription: '7:1'}\n";
  const CliResult j = run_cli("topo describe " + file.string() + " --json");
  ASSERT_EQ(j.exit_code, 0) << j.output;
  const auto json = nlohmann::json::parse(j.out);
  EXPECT_DOUBLE_EQ(json["core_oversubscription"].get<double>(), 7.0);
  EXPECT_DOUBLE_EQ(json["bisection_bytes_per_s"].get<double>(), 7 * 50e9);
  EXPECT_DOUBLE_EQ(json["full_bisection_bytes_per_s"].get<double>(), 49 * 50e9);
  const CliResult t = run_cli("topo describe " + file.string());
  EXPECT_NE(t.out.find("core oversubscription  7:1"), std::string::npos) << t.out;
  fs::remove_all(dir);
}

} // namespace
