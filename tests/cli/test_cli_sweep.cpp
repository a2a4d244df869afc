// railyard sweep through the binary: every point a `railyard run` of its own, the table, resuming, failures listed,
// bad input refused (studies/README.md).
#include "cli_support.hpp"

#include <fmt/format.h>

#include <regex>

using namespace railyard::test;

namespace {

const std::string kSource = RAILYARD_SOURCE_DIR;

/// The example's base scenario and its profile copied into `dir` (base.yaml names the profile by a relative path, so
/// the points, written under the sweep's folder, find it only through --paths-from), and a sweep of it.
class CliSweep : public TempDirTest {
protected:
  void SetUp() override
  {
    TempDirTest::SetUp();
    std::string base = read_file(kSource + "/examples/profile_links.yaml");
    base = std::regex_replace(base, std::regex("profile: [^\n]*"), "profile: profiles/h100.yaml");
    write("base.yaml", base);
    fs::create_directories(dir_ / "profiles");
    fs::copy_file(kSource + "/calibration/profiles/dgx_h100_ib_ndr.yaml", dir_ / "profiles" / "h100.yaml");
  }
  std::string sweep(const std::string& body)
  {
    fs::create_directories(dir_ / "study");
    return write("study/sweep.yaml", "base: ../base.yaml\n" + body);
  }
  CliResult run(const std::string& args) { return run_cli(args, "", dir_.string()); }
};

const char* kLayouts = "axes:\n"
                       "  - {key: cluster.nodes, values: [2, 4]}\n"
                       "  - {key: workload.parallel.tp, values: [8, 4], name: tp}\n"
                       "derived:\n"
                       "  - {key: workload.parallel.dp, expr: 'gpus / (tp * workload.parallel.pp)'}\n";

} // namespace

TEST_F(CliSweep, EveryPointIsTheRunOfItsScenario)
{
  sweep(kLayouts);
  const CliResult r = run("sweep study/sweep.yaml --out res -j 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.out.find("4 points: 4 ran, 0 reused, 0 failed, 0 invalid"), std::string::npos) << r.output;
  const auto rows = csv_rows(dir_ / "res" / "results.csv");
  ASSERT_EQ(rows.size(), 4U);
  const int nodes[] = {2, 2, 4, 4}, tp[] = {8, 4, 8, 4};
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& row = rows[i];
    EXPECT_EQ(row.at("point"), std::to_string(i));
    EXPECT_EQ(row.at("status"), "ok") << row.at("error");
    EXPECT_EQ(row.at("cluster.nodes"), std::to_string(nodes[i]));
    EXPECT_EQ(row.at("workload.parallel.tp"), std::to_string(tp[i]));
    EXPECT_EQ(row.at("workload.parallel.dp"), std::to_string(nodes[i] * 8 / tp[i])); // gpus / (tp x pp), pp = 1
    // The same scenario written by hand and run alone gives the same step.
    std::string alone = read_file(dir_ / "base.yaml");
    alone = std::regex_replace(alone, std::regex("nodes: 2"), "nodes: " + std::to_string(nodes[i]));
    alone = std::regex_replace(alone, std::regex("tp: 8, pp: 1, dp: 2"),
                               fmt::format("tp: {}, pp: 1, dp: {}", tp[i], nodes[i] * 8 / tp[i]));
    write("alone.yaml", alone);
    fs::remove_all(dir_ / "alone");
    const CliResult a = run("run alone.yaml --out alone");
    ASSERT_EQ(a.exit_code, 0) << a.output;
    const std::string summary = read_file(dir_ / "alone" / "summary.json");
    const std::smatch m = [&] {
      std::smatch s;
      std::regex_search(summary, s, std::regex("\"step_time_s\": ([0-9.e+-]+)"));
      return s;
    }();
    ASSERT_FALSE(m.empty());
    EXPECT_DOUBLE_EQ(std::stod(row.at("step_time_s")), std::stod(m[1].str())) << i;
    EXPECT_FALSE(row.at("mfu").empty());
    EXPECT_FALSE(row.at("compute_fraction").empty());
  }
}

TEST_F(CliSweep, ParallelAndSerialTablesAreIdenticalAndFinishedPointsAreReused)
{
  sweep(kLayouts);
  ASSERT_EQ(run("sweep study/sweep.yaml --out a -j 3").exit_code, 0);
  ASSERT_EQ(run("sweep study/sweep.yaml --out b -j 1").exit_code, 0);
  EXPECT_EQ(read_file(dir_ / "a" / "results.csv"), read_file(dir_ / "b" / "results.csv"));
  // Again into a: nothing runs.
  const CliResult again = run("sweep study/sweep.yaml --out a --progress");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(again.out.find("0 ran, 4 reused"), std::string::npos) << again.output;
  EXPECT_NE(again.output.find("4/4 points done (4 reused)"), std::string::npos) << again.output;
  EXPECT_EQ(read_file(dir_ / "a" / "results.csv"), read_file(dir_ / "b" / "results.csv"));
  // A third value on an axis: only the two new points run, and the old rows keep their values.
  sweep(std::regex_replace(kLayouts, std::regex("values: \\[2, 4\\]"), "values: [2, 4, 1]"));
  const CliResult grown = run("sweep study/sweep.yaml --out a");
  ASSERT_EQ(grown.exit_code, 0) << grown.output;
  EXPECT_NE(grown.out.find("6 points: 2 ran, 4 reused"), std::string::npos) << grown.output;
  const auto before = csv_rows(dir_ / "b" / "results.csv"), after = csv_rows(dir_ / "a" / "results.csv");
  ASSERT_EQ(after.size(), 6U);
  for (std::size_t i = 0; i < 4; ++i)
    EXPECT_EQ(after[i].at("step_time_s"), before[i].at("step_time_s"));
  // A changed input file (the profile's GEMM efficiency) runs every point again.
  std::string profile = read_file(dir_ / "profiles" / "h100.yaml");
  profile += "\n# edited\n";
  write("profiles/h100.yaml", profile);
  const CliResult edited = run("sweep study/sweep.yaml --out a");
  EXPECT_NE(edited.out.find("6 ran, 0 reused"), std::string::npos) << edited.output;
}

TEST_F(CliSweep, PointsThatFailOrCannotRunAreListedNotDropped)
{
  // Point 1: pp = 0 leaves dp undefined (division by zero); point 2: 0.5 GiB of GPU memory is refused by the run.
  sweep("axes:\n"
        "  - {key: workload.training.memory_limit_GiB, values: [80, 0.5]}\n"
        "  - {key: workload.parallel.pp, values: [1, 0]}\n"
        "derived:\n"
        "  - {key: workload.parallel.dp, expr: 'gpus / (tp * pp)'}\n");
  const CliResult r = run("sweep study/sweep.yaml --out res");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.out.find("1 ran, 0 reused, 1 failed, 2 invalid"), std::string::npos) << r.output;
  EXPECT_NE(r.out.find("point 2 failed: railyard: error:"), std::string::npos) << r.output;
  const auto rows = csv_rows(dir_ / "res" / "results.csv");
  ASSERT_EQ(rows.size(), 4U);
  EXPECT_EQ(rows[0].at("status"), "ok");
  EXPECT_EQ(rows[1].at("status"), "invalid");
  EXPECT_NE(rows[1].at("error").find("gives inf"), std::string::npos) << rows[1].at("error");
  EXPECT_EQ(rows[2].at("status"), "failed");
  EXPECT_NE(rows[2].at("error").find("does not fit in GPU memory"), std::string::npos) << rows[2].at("error");
  EXPECT_NE(rows[2].at("error").find("exit code 2"), std::string::npos) << rows[2].at("error");
  EXPECT_TRUE(rows[2].at("step_time_s").empty());
  EXPECT_EQ(rows[3].at("status"), "invalid");
  // The failed point is not reused: it runs again (and fails again).
  const CliResult again = run("sweep study/sweep.yaml --out res");
  EXPECT_EQ(again.exit_code, 1) << again.output;
  EXPECT_NE(again.out.find("0 ran, 1 reused, 1 failed, 2 invalid"), std::string::npos) << again.output;
}

TEST_F(CliSweep, BadInputIsRefusedWithExitTwoAndNothingOverwritten)
{
  // A folder that is not a sweep's keeps what it holds.
  sweep(kLayouts);
  fs::create_directories(dir_ / "mine");
  write("mine/notes.txt", "keep me");
  const CliResult mine = run("sweep study/sweep.yaml --out mine");
  EXPECT_EQ(mine.exit_code, 2) << mine.output;
  EXPECT_NE(mine.output.find("not a sweep's folder"), std::string::npos) << mine.output;
  EXPECT_EQ(read_file(dir_ / "mine" / "notes.txt"), "keep me");
  EXPECT_FALSE(fs::exists(dir_ / "mine" / "points"));
  // A sweep file error names the file and line.
  sweep("axes:\n  - {key: cluster.nodes, vals: [2]}\n");
  const CliResult bad = run("sweep study/sweep.yaml --out x");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("sweep.yaml:3"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("values"), std::string::npos) << bad.output;
  // A typo in a key makes every point invalid: that is the sweep's error, not a table of failures.
  sweep("axes:\n  - {key: cluster.nodez, values: [2, 4]}\n");
  const CliResult typo = run("sweep study/sweep.yaml --out y");
  EXPECT_EQ(typo.exit_code, 2) << typo.output;
  EXPECT_NE(typo.output.find("nodez"), std::string::npos) << typo.output;
  EXPECT_FALSE(fs::exists(dir_ / "y" / "results.csv"));
}

TEST_F(CliSweep, DryRunListsThePointsAndWritesNothing)
{
  sweep(kLayouts);
  const CliResult r = run("sweep study/sweep.yaml --out dry --dry-run");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.out.find("point 3: cluster.nodes=4 workload.parallel.tp=4 workload.parallel.dp=8"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("4 points"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "dry"));
}

TEST(CliSweepExample, TheShippedExampleRuns)
{
  const fs::path out = temp_dir("sweep_example");
  const CliResult r = run_cli("sweep " + shell_quote(kSource + "/examples/sweeps/layouts.yaml") + " --out " +
                              shell_quote((out / "s").string()) + " -j 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = csv_rows(out / "s" / "results.csv");
  ASSERT_EQ(rows.size(), 4U);
  for (const auto& row : rows)
    EXPECT_EQ(row.at("status"), "ok") << row.at("error");
  fs::remove_all(out);
}

TEST_F(CliSweep, MaxMemoryReachesEveryPointsRun)
{
  sweep(kLayouts);
  const CliResult r = run("sweep study/sweep.yaml --out res --max-memory '1 KiB'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.out.find("0 ran, 0 reused, 4 failed"), std::string::npos) << r.output;
  for (const auto& row : csv_rows(dir_ / "res" / "results.csv")) {
    EXPECT_EQ(row.at("status"), "failed");
    EXPECT_NE(row.at("error").find("--max-memory"), std::string::npos) << row.at("error");
  }
}

TEST_F(CliSweep, GatherWritesTheSameTableFromWhatFinished)
{
  sweep("axes:\n  - {key: workload.training.memory_limit_GiB, values: [80, 0.5]}\n");
  ASSERT_EQ(run("sweep study/sweep.yaml --out res").exit_code, 1);
  const std::string local = read_file(dir_ / "res" / "results.csv");
  fs::remove(dir_ / "res" / "results.csv");
  const CliResult g = run("sweep study/sweep.yaml --out res --gather");
  EXPECT_EQ(g.exit_code, 1) << g.output;
  EXPECT_NE(g.out.find("2 points: 1 finished, 1 failed or not run"), std::string::npos) << g.output;
  EXPECT_EQ(read_file(dir_ / "res" / "results.csv"), local);
  // A point that never ran: listed as not run.
  sweep("axes:\n  - {key: workload.training.memory_limit_GiB, values: [80, 0.5, 60]}\n");
  const CliResult g2 = run("sweep study/sweep.yaml --out res --gather");
  EXPECT_EQ(g2.exit_code, 1) << g2.output;
  const auto rows = csv_rows(dir_ / "res" / "results.csv");
  ASSERT_EQ(rows.size(), 3U);
  EXPECT_EQ(rows[2].at("status"), "failed");
  EXPECT_NE(rows[2].at("error").find("did not run"), std::string::npos) << rows[2].at("error");
  const CliResult both = run("sweep study/sweep.yaml --out res --gather --slurm");
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("two different steps"), std::string::npos) << both.output;
}
