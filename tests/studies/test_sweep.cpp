// The sweep file and its points (studies/sweep.hpp): ranges, crossing and zipping, derived keys, key paths, folder
// hashes and the metrics read from a summary. End to end through the binary: tests/cli/test_cli_sweep.cpp.
#include "railyard/studies/sweep.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using namespace railyard;
using namespace railyard::studies;

namespace {

/// A scratch folder with a base scenario (a 2-node cluster running one all-reduce) and a sweep file beside it.
class SweepFile : public ::testing::Test {
protected:
  void SetUp() override
  {
    dir_ = fs::temp_directory_path() / ("railyard_sweep_" + std::to_string(getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write("base.yaml", "name: base\n"
                       "cluster: {kind: rail_optimized, nodes: 2, gpus_per_node: 8}\n"
                       "workload:\n"
                       "  generator: megatron\n"
                       "  parallel: {tp: 8, pp: 1, dp: 2}\n"
                       "collectives:\n"
                       "  - {op: all_reduce, size: 1 MiB}\n"
                       "  - {op: all_gather, size: 2 MiB}\n");
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text)
  {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  SweepSpec sweep(const std::string& body) { return load_sweep(write("sweep.yaml", "base: base.yaml\n" + body)); }
  fs::path dir_;
};

std::string point_text(const SweepPoint& p)
{
  return p.yaml;
}

} // namespace

TEST(SweepHash, FnvOneAMatchesThePublishedVectors)
{
  // Fowler/Noll/Vo test vectors (the FNV reference page, 64-bit FNV-1a): "" and "a", "foobar".
  EXPECT_EQ(fnv1a(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(fnv1a("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(fnv1a("foobar"), 0x85944171f73967e8ULL);
}

TEST_F(SweepFile, RangesByStepAndFactorIncludeBothEnds)
{
  const SweepSpec s = sweep("axes:\n"
                            "  - {key: cluster.nodes, range: {from: 2, to: 16, factor: 2}}\n"
                            "  - {key: seed, range: {from: 0.5, to: 1.5, step: 0.25}}\n");
  ASSERT_EQ(s.axes.size(), 2U);
  std::vector<std::string> nodes, seeds;
  for (const auto& v : s.axes[0].values[0])
    nodes.push_back(v.Scalar());
  for (const auto& v : s.axes[1].values[0])
    seeds.push_back(v.Scalar());
  EXPECT_EQ(nodes, (std::vector<std::string>{"2", "4", "8", "16"}));
  EXPECT_EQ(seeds, (std::vector<std::string>{"0.5", "0.75", "1", "1.25", "1.5"}));
  EXPECT_EQ(s.points(), 20U);
}

TEST_F(SweepFile, TheFirstAxisIsOutermostAndZippedKeysMoveTogether)
{
  const SweepSpec s = sweep("axes:\n"
                            "  - {key: cluster.nodes, values: [2, 4]}\n"
                            "  - zip:\n"
                            "      - {key: collectives.0.size, values: [1 KiB, 1 MiB, 1 GiB]}\n"
                            "      - {key: collectives.0.op, values: [all_gather, reduce_scatter, all_reduce]}\n");
  const auto pts = expand_sweep(s);
  ASSERT_EQ(pts.size(), 6U);
  EXPECT_EQ(s.columns(), (std::vector<std::string>{"cluster.nodes", "collectives.0.size", "collectives.0.op"}));
  EXPECT_EQ(pts[0].values, (std::vector<std::string>{"2", "1 KiB", "all_gather"}));
  EXPECT_EQ(pts[2].values, (std::vector<std::string>{"2", "1 GiB", "all_reduce"}));
  EXPECT_EQ(pts[3].values, (std::vector<std::string>{"4", "1 KiB", "all_gather"}));
  const YAML::Node p5 = YAML::Load(pts[5].yaml);
  EXPECT_EQ(p5["cluster"]["nodes"].as<int>(), 4);
  EXPECT_EQ(p5["collectives"][0]["size"].as<std::string>(), "1 GiB");
  EXPECT_EQ(p5["collectives"][0]["op"].as<std::string>(), "all_reduce");
  EXPECT_EQ(p5["collectives"][1]["op"].as<std::string>(), "all_gather"); // untouched
  EXPECT_EQ(p5["cluster"]["kind"].as<std::string>(), "rail_optimized");
}

TEST_F(SweepFile, DerivedKeysFollowTheirFormula)
{
  // dp = gpus / (tp x pp), gpus = nodes x gpus_per_node: 2 x 8 / (8 x 1) = 2, 4 x 8 / (4 x 1) = 8, ...
  const SweepSpec s = sweep("axes:\n"
                            "  - {key: cluster.nodes, values: [2, 4]}\n"
                            "  - {key: workload.parallel.tp, values: [8, 4], name: t}\n"
                            "derived:\n"
                            "  - {key: workload.parallel.dp, expr: 'gpus / (t * pp)'}\n"
                            "  - {key: workload.training.global_batch, expr: 'workload.parallel.dp * 16'}\n");
  const auto pts = expand_sweep(s);
  ASSERT_EQ(pts.size(), 4U);
  const int nodes[] = {2, 2, 4, 4}, tp[] = {8, 4, 8, 4};
  for (std::size_t i = 0; i < 4; ++i) {
    const int dp = nodes[i] * 8 / tp[i];
    EXPECT_TRUE(pts[i].invalid.empty()) << pts[i].invalid;
    EXPECT_EQ(pts[i].values[2], std::to_string(dp)) << i;
    EXPECT_EQ(pts[i].values[3], std::to_string(dp * 16)) << i;
    const YAML::Node n = YAML::Load(point_text(pts[i]));
    EXPECT_EQ(n["workload"]["parallel"]["dp"].as<int>(), dp);
    EXPECT_EQ(n["workload"]["training"]["global_batch"].as<int>(), dp * 16); // a section created on the way
  }
}

TEST_F(SweepFile, ADerivedKeyThatCannotBeWorkedOutMakesItsPointInvalidNotTheSweep)
{
  const SweepSpec s = sweep("axes:\n"
                            "  - {key: workload.parallel.pp, values: [1, 0]}\n"
                            "derived:\n"
                            "  - {key: workload.parallel.dp, expr: 'gpus / (tp * pp)'}\n");
  const auto pts = expand_sweep(s);
  ASSERT_EQ(pts.size(), 2U);
  EXPECT_TRUE(pts[0].invalid.empty());
  EXPECT_NE(pts[1].invalid.find("workload.parallel.dp"), std::string::npos) << pts[1].invalid;
  EXPECT_NE(pts[1].invalid.find("inf"), std::string::npos) << pts[1].invalid;
  // A name that is not in the point: the message names the key and what muparser did not know.
  const SweepSpec u = sweep("axes:\n  - {key: seed, values: [1]}\nderived:\n  - {key: x.y, expr: 'nosuch * 2'}\n");
  const auto q = expand_sweep(u);
  EXPECT_NE(q[0].invalid.find("nosuch"), std::string::npos) << q[0].invalid;
}

TEST_F(SweepFile, BadSweepFilesNameTheFieldAndTheFix)
{
  const auto fails = [&](const std::string& body, const std::string& says) {
    try {
      sweep(body);
      ADD_FAILURE() << "accepted: " << body;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("sweep.yaml"), std::string::npos) << e.what();
    }
  };
  fails("axes: []\n", "at least one axis");
  fails("axes:\n  - {key: seed, values: [1], range: {from: 1, to: 2, step: 1}}\n", "exactly one of values and range");
  fails("axes:\n  - {key: seed, range: {from: 1, to: 2, step: 0}}\n", "step must be above zero");
  fails("axes:\n  - {key: seed, range: {from: 3, to: 2, step: 1}}\n", "range is empty");
  fails("axes:\n  - {key: seed, range: {from: 1, to: 8, factor: 1}}\n", "factor must be above 1");
  fails("axes:\n  - {key: seed, values: [1]}\n  - {key: seed, values: [2]}\n", "swept twice");
  fails("axes:\n  - zip:\n      - {key: a.b, values: [1, 2]}\n      - {key: c.d, values: [1]}\n", "zipped keys");
  fails("axes:\n  - {key: cluster..nodes, values: [1]}\n", "not a dotted path");
  fails("axes:\n  - {key: seed, values: [1]}\nderived:\n  - {key: z, expr: '2 * (3'}\n", "does not parse");
  fails("axes:\n  - {key: seed, values: [1]}\naxis: []\n", "axis");
  fails("axes:\n  - {key: seed, range: {from: 1, to: 1e9, step: 1}}\n", "more than 100000 values");
  EXPECT_THROW(load_sweep(write("nobase.yaml", "base: nothere.yaml\naxes: [{key: seed, values: [1]}]\n")), InputError);
}

TEST_F(SweepFile, AKeyThroughAValueOrPastAListIsRefused)
{
  const SweepSpec a = sweep("axes:\n  - {key: cluster.kind.deeper, values: [1]}\n");
  EXPECT_THROW(expand_sweep(a), InputError);
  const SweepSpec b = sweep("axes:\n  - {key: collectives.5.size, values: [1 MiB]}\n");
  try {
    expand_sweep(b);
    ADD_FAILURE() << "a list index past the end was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("from 0 to 1"), std::string::npos) << e.what();
  }
}

TEST(SweepMetrics, ReadsAStepSummaryAndACollectiveSummary)
{
  const auto step = summary_metrics(R"({"step_time_s": 1.5, "mfu": 0.25,
      "breakdown_mean_over_ranks": {"fractions_of_step": {"compute": 0.75}, "exposed_communication_s": {"dp": 0.125}},
      "congestion": {"by_group": {"dp": {"factor": 1.75}}},
      "network": {"hottest_links": [{"name": "leaf0->spine1", "utilisation": 0.5}], "pause_time_s": 0.001}})");
  const std::vector<std::pair<std::string, std::string>> want = {{"step_time_s", "1.5"},
                                                                 {"mfu", "0.25"},
                                                                 {"compute_fraction", "0.75"},
                                                                 {"exposed_dp_s", "0.125"},
                                                                 {"congestion_factor_dp", "1.75"},
                                                                 {"hottest_link", "leaf0->spine1"},
                                                                 {"hottest_link_utilisation", "0.5"},
                                                                 {"pause_time_s", "0.001"}};
  EXPECT_EQ(step, want);
  const auto coll = summary_metrics(R"({"simulated_time_s": 0.002, "collectives": [
      {"op": "all_reduce", "time_s": 0.001, "busbw_GBps": 300, "algorithm": "Ring", "protocol": "Simple"},
      {"op": "all_gather", "time_s": 0.0005, "busbw_GBps": 350.5, "algorithm": "NVLS", "protocol": "Simple"}]})");
  const std::vector<std::pair<std::string, std::string>> want2 = {
      {"simulated_time_s", "0.002"},   {"c0_time_s", "0.001"},  {"c0_busbw_GBps", "300"},
      {"c0_algorithm", "Ring/Simple"}, {"c1_time_s", "0.0005"}, {"c1_busbw_GBps", "350.5"},
      {"c1_algorithm", "NVLS/Simple"}};
  EXPECT_EQ(coll, want2);
  EXPECT_TRUE(summary_metrics("not json").empty());
}
