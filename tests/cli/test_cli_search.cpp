// railyard search and railyard run --memory-only through the binary (studies/README.md).
#include "cli_support.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <regex>

using namespace railyard::test;

namespace {

const std::string kSource = RAILYARD_SOURCE_DIR;

/// The small GPT-style step of examples/profile_links.yaml with a GPU memory limit of `limit_gib`, in dir/base.yaml.
class CliSearch : public TempDirTest {
protected:
  void base(double limit_gib)
  {
    std::string b = read_file(kSource + "/examples/profile_links.yaml");
    b = std::regex_replace(b, std::regex("profile: \\.\\./"), "profile: " + kSource + "/");
    b = std::regex_replace(b, std::regex("dtype: bf16\\}"),
                           fmt::format("dtype: bf16, memory_limit_GiB: {}}}", limit_gib));
    write("base.yaml", b);
  }
  CliResult run(const std::string& args) { return run_cli(args, "", dir_.string()); }
};

double num(const std::string& s)
{
  return s.empty() ? 0 : std::stod(s);
}

} // namespace

TEST_F(CliSearch, RanksTheLayoutsThatFitAndRunsNoneThatDoNot)
{
  base(1.8);
  write("search.yaml", "base: base.yaml\n"
                       "gpus: [16, 32]\n"
                       "space:\n"
                       "  tp: [2, 8]\n"
                       "  pp: [1, 2]\n"
                       "  micro_batch: [1, 2]\n"
                       "top: 3\n");
  const CliResult r = run("search search.yaml --out s -j 2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rows = csv_rows(dir_ / "s" / "search.csv");
  ASSERT_EQ(rows.size(), 16U);
  const auto steps = csv_rows(dir_ / "s" / "steps" / "results.csv");
  ASSERT_EQ(steps.size(), 16U);
  double last = 0;
  int ranked = 0, refused = 0;
  for (const auto& row : rows) {
    const int gpus = std::stoi(row.at("gpus")), tp = std::stoi(row.at("tp")), pp = std::stoi(row.at("pp"));
    EXPECT_EQ(row.at("dp"), std::to_string(gpus / (tp * pp))); // dp = gpus / (tp x pp)
    const auto& st = steps.at(std::stoul(row.at("point")));
    if (row.at("status") == "ok") {
      ++ranked;
      EXPECT_EQ(row.at("rank"), std::to_string(ranked));
      const double t = num(row.at("step_time_s"));
      EXPECT_GE(t, last); // fastest first
      last = t;
      EXPECT_LE(num(row.at("peak_gpu_memory_bytes")), num(row.at("gpu_memory_capacity_bytes")));
      EXPECT_EQ(st.at("status"), "ok");
      EXPECT_EQ(st.at("step_time_s"), row.at("step_time_s"));
    } else {
      // Global batch 8 is not divisible by dp x micro_batch for some (not a layout); the others do not fit.
      ASSERT_TRUE(row.at("status") == "does_not_fit" || row.at("status") == "not_a_layout") << row.at("reason");
      EXPECT_EQ(st.at("status"), "skipped"); // never simulated
      if (row.at("status") == "does_not_fit") {
        ++refused;
        EXPECT_GT(num(row.at("peak_gpu_memory_bytes")), num(row.at("gpu_memory_capacity_bytes")));
        EXPECT_NE(row.at("reason").find("weights"), std::string::npos) << row.at("reason");
        EXPECT_DOUBLE_EQ(num(row.at("gpu_memory_capacity_bytes")), 1.8 * 1024 * 1024 * 1024);
      } else {
        EXPECT_NE(8 % (gpus / (tp * pp) * std::stoi(row.at("micro_batch"))), 0) << row.at("reason");
      }
    }
  }
  EXPECT_GT(ranked, 0);
  EXPECT_GT(refused, 0);
  // The Pareto front, worked out again from the table: not beaten on both GPUs and step time.
  for (const auto& a : rows) {
    if (a.at("status") != "ok") continue;
    bool dominated = false;
    for (const auto& b : rows)
      if (b.at("status") == "ok" && &a != &b) {
        const int ga = std::stoi(a.at("gpus")), gb = std::stoi(b.at("gpus"));
        const double ta = num(a.at("step_time_s")), tb = num(b.at("step_time_s"));
        dominated = dominated || (gb <= ga && tb <= ta && (gb < ga || tb < ta));
      }
    EXPECT_EQ(a.at("pareto"), dominated ? "no" : "yes") << a.at("point");
  }
  // The top layout, written by hand and run alone: the same step time.
  const auto& top = rows.front();
  std::string alone = read_file(dir_ / "base.yaml");
  alone = std::regex_replace(alone, std::regex("nodes: 2"), "nodes: " + std::to_string(std::stoi(top.at("gpus")) / 8));
  alone = std::regex_replace(alone, std::regex("tp: 8, pp: 1, dp: 2"),
                             fmt::format("tp: {}, pp: {}, dp: {}", top.at("tp"), top.at("pp"), top.at("dp")));
  alone = std::regex_replace(alone, std::regex("micro_batch: 1"), "micro_batch: " + top.at("micro_batch"));
  write("alone.yaml", alone);
  const CliResult a = run("run alone.yaml --out alone");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  std::smatch m;
  const std::string summary = read_file(dir_ / "alone" / "summary.json");
  ASSERT_TRUE(std::regex_search(summary, m, std::regex("\"step_time_s\": ([0-9.e+-]+)")));
  EXPECT_DOUBLE_EQ(num(top.at("step_time_s")), std::stod(m[1].str()));
  // The printed table and the refusals.
  EXPECT_NE(r.out.find(fmt::format("{} simulated and ranked, {} do not fit", ranked, refused)), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("do not fit (not simulated):"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Pareto front"), std::string::npos) << r.out;
  // Again: nothing runs (both passes reuse their points), same table.
  const std::string table = read_file(dir_ / "s" / "search.csv");
  const CliResult again = run("search search.yaml --out s --progress");
  ASSERT_EQ(again.exit_code, 0) << again.output;
  // The memory pass reuses every point but the ones its generator refused (failed points always run again).
  const auto not_layouts =
      std::count_if(rows.begin(), rows.end(), [](const auto& row) { return row.at("status") == "not_a_layout"; });
  EXPECT_NE(again.output.find(fmt::format("(memory pass): 16/16 points done ({} reused)", 16 - not_layouts)),
            std::string::npos)
      << again.output;
  EXPECT_EQ(read_file(dir_ / "s" / "search.csv"), table);
}

TEST_F(CliSearch, MemoryOnlyReportsWithoutSimulatingOrRefusing)
{
  base(0.5);
  const CliResult full = run("run base.yaml --out full");
  EXPECT_EQ(full.exit_code, 2) << full.output; // the run refuses a layout that does not fit
  const CliResult mem = run("run base.yaml --out mem --memory-only");
  ASSERT_EQ(mem.exit_code, 0) << mem.output;
  EXPECT_NE(mem.out.find("DOES NOT FIT in 0.5 GiB"), std::string::npos) << mem.out;
  const std::string s = read_file(dir_ / "mem" / "summary.json");
  EXPECT_NE(s.find("\"status\": \"memory_only\""), std::string::npos);
  EXPECT_NE(s.find("\"fits\": false"), std::string::npos) << s;
  EXPECT_EQ(s.find("step_time_s"), std::string::npos); // nothing simulated
  base(80);
  const CliResult fits = run("run base.yaml --out mem2 --memory-only");
  ASSERT_EQ(fits.exit_code, 0) << fits.output;
  EXPECT_NE(read_file(dir_ / "mem2" / "summary.json").find("\"fits\": true"), std::string::npos);
  const CliResult coll = run("run " + shell_quote(kSource + "/examples/default.yaml") + " --out c --memory-only");
  EXPECT_EQ(coll.exit_code, 2) << coll.output;
  EXPECT_NE(coll.output.find("--memory-only checks a generated training step"), std::string::npos) << coll.output;
}

TEST_F(CliSearch, BadSearchFilesAreRefused)
{
  base(80);
  const auto refused = [&](const std::string& text, const std::string& says) {
    write("bad.yaml", text);
    const CliResult r = run("search bad.yaml --out b");
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir_ / "b"));
  };
  refused("base: base.yaml\nspace: {tpp: [1, 2]}\n", "did you mean 'tp'");
  refused("base: base.yaml\ngpus: [12]\nspace: {tp: [1, 2]}\n", "not a whole number of 8-GPU nodes");
  refused("base: " + kSource + "/examples/default.yaml\nspace: {tp: [1, 2]}\n", "no generated training step");
  refused("base: base.yaml\nspace: {tp: []}\n", "give a list of values");
  // A folder that is not a study's keeps what it holds.
  write("search.yaml", "base: base.yaml\nspace: {tp: [2, 8]}\n");
  fs::create_directories(dir_ / "mine");
  write("mine/search.csv", "mine");
  const CliResult mine = run("search search.yaml --out mine");
  EXPECT_EQ(mine.exit_code, 2) << mine.output;
  EXPECT_NE(mine.output.find("holds files"), std::string::npos) << mine.output;
  EXPECT_EQ(read_file(dir_ / "mine" / "search.csv"), "mine");
  EXPECT_FALSE(fs::exists(dir_ / "mine" / "memory"));
}
