// `railyard calibrate` through the real binary: a good run writes the profile and exits 0; a bad input exits 2 with
// the file and line on stderr and leaves no profile behind (not even a partial one).
#include "railyard/calibration/profile.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace fs = std::filesystem;
namespace rc = railyard::calibration;

namespace {

std::string data(const std::string& name)
{
  return std::string(RAILYARD_SOURCE_DIR) + "/tests/calibration/data/" + name;
}

struct Run {
  int code = -1;
  std::string output; // stdout and stderr together
};

Run run(const std::string& args)
{
  Run r;
  const std::string cmd = std::string(RAILYARD_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0)
    r.output.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// One folder per test and process: CTest runs the cases as parallel processes.
struct OutDir {
  fs::path path =
      fs::temp_directory_path() /
      ("railyard_calibrate_cli_" + std::string(testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
       std::to_string(getpid()));
  OutDir()
  {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~OutDir() { fs::remove_all(path); }
};

struct LogRow {
  int line = 0;
  double size_bytes = 0;
  double time_us = 0; // out-of-place
};

// The data rows of an nccl-tests / rccl-tests log, read here without the reader under test: lines whose first two
// tokens are whole numbers (size, count); the out-of-place time is the sixth token (size count type redop root time).
std::vector<LogRow> log_rows(const std::string& path)
{
  std::ifstream in(path);
  std::vector<LogRow> rows;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    std::istringstream t(line);
    std::vector<std::string> tok;
    for (std::string w; t >> w;)
      tok.push_back(w);
    const auto whole = [](const std::string& w) { return !w.empty() && w.find_first_not_of("0123456789") == w.npos; };
    if (tok.size() >= 6 && whole(tok[0]) && whole(tok[1])) rows.push_back({n, std::stod(tok[0]), std::stod(tok[5])});
  }
  return rows;
}

// The profile's fitted time at every row of the log is within the error the fit records for itself, and that error is
// reached (the worst row is off by it, to the 4 digits recorded).
void expect_fit_reproduces_rows(const rc::CollectiveFit& c, const std::vector<LogRow>& rows)
{
  ASSERT_TRUE(c.fit);
  EXPECT_EQ(c.fit->quality.points, static_cast<int>(rows.size()));
  EXPECT_EQ(c.measured_min.bytes(), rows.front().size_bytes);
  EXPECT_EQ(c.measured_max.bytes(), rows.back().size_bytes);
  double worst = 0;
  for (const auto& r : rows) {
    const double model = c.time(railyard::Bytes(r.size_bytes), c.nranks).seconds();
    const double err = std::fabs(model - r.time_us * 1e-6) / (r.time_us * 1e-6);
    EXPECT_LE(err, c.fit->quality.max_rel_error * (1 + 1e-3) + 1e-5) << "line " << r.line;
    worst = std::max(worst, err);
  }
  EXPECT_NEAR(worst, c.fit->quality.max_rel_error, c.fit->quality.max_rel_error * 2e-3 + 1e-5);
}

} // namespace

TEST(CalibrateCli, HelpDescribesTheCommand)
{
  const auto r = run("calibrate --help");
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.output.find("--from"), std::string::npos);
  EXPECT_NE(r.output.find("--out"), std::string::npos);
  EXPECT_NE(r.output.find("--system"), std::string::npos);
}

TEST(CalibrateCli, WritesAValidProfile)
{
  OutDir dir;
  const auto out = (dir.path / "h200.yaml").string();
  const auto r = run("calibrate --from " + data("nccl_tests_2.17_all_reduce_h200.log") + " " +
                     data("nccl_tests_2.17_sendrecv_h200_2nodes.log") + " --out " + out + " --system my_h200");
  ASSERT_EQ(r.code, 0) << r.output;
  const auto p = rc::read_profile(out);
  EXPECT_EQ(p.system, "my_h200");
  EXPECT_EQ(p.collectives.size(), 2u);
  EXPECT_NE(r.output.find("wrote " + out), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out + ".tmp"));
}

TEST(CalibrateCli, BadInputExitsTwoAndWritesNothing)
{
  OutDir dir;
  const auto out = (dir.path / "never.yaml").string();
  const auto bad = data("bad_wrong_results.log");
  const auto r = run("calibrate --from " + data("nccl_tests_2.17_all_reduce_h200.log") + " " + bad + " --out " + out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(bad + ":"), std::string::npos) << r.output; // FILE:LINE
  EXPECT_NE(r.output.find("Fix:"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out + ".tmp"));
}

TEST(CalibrateCli, BadOptionExitsTwo)
{
  OutDir dir;
  const auto r = run("calibrate --from " + data("nccl_tests_2.17_all_reduce_h200.log") + " --out " +
                     (dir.path / "x.yaml").string() + " --intra-node-link ethernet");
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find("--intra-node-link"), std::string::npos) << r.output;
}

// rccl-tests logs from 8x AMD Instinct MI300X (vendored verbatim, tests/calibration/data/README.md): one node over
// xGMI and two nodes over the network, calibrated together into one RCCL profile.
TEST(CalibrateCli, RcclTestsLogsMakeAnRcclProfile)
{
  OutDir dir;
  const auto out = (dir.path / "mi300x.yaml").string();
  const auto one = data("rccl_tests_all_reduce_mi300x_1node.log");
  const auto two = data("rccl_tests_all_reduce_mi300x_2nodes.log");
  const auto r = run("calibrate --from " + one + " " + two + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.output;
  const auto p = rc::read_profile(out);
  EXPECT_EQ(p.gpu_model, "AMD Instinct MI300X");
  EXPECT_EQ(p.gpus_per_node, 8);
  EXPECT_EQ(p.collective_library, rc::CollectiveLibrary::Rccl);
  EXPECT_EQ(p.nccl_version, "2.22.3"); // the two-node log's "RCCL version : 2.22.3-HEAD:7d8d67c"
  EXPECT_NE(r.output.find("AMD Instinct MI300X x8 per node, RCCL 2.22.3"), std::string::npos) << r.output;
  EXPECT_NE(p.nccl_version_source.find("RCCL version : 2.22.3-HEAD:7d8d67c"), std::string::npos)
      << p.nccl_version_source;
  ASSERT_EQ(p.collectives.size(), 2u);
  const auto* xgmi =
      p.collective(railyard::models::CollectiveKind::AllReduce, std::nullopt, std::nullopt, rc::LinkKind::Xgmi, 8);
  ASSERT_NE(xgmi, nullptr);
  EXPECT_EQ(xgmi->nranks, 8);
  EXPECT_EQ(xgmi->nodes, 1);
  expect_fit_reproduces_rows(*xgmi, log_rows(one));
  const auto* net =
      p.collective(railyard::models::CollectiveKind::AllReduce, std::nullopt, std::nullopt, rc::LinkKind::Network, 16);
  ASSERT_NE(net, nullptr);
  EXPECT_EQ(net->nodes, 2);
  expect_fit_reproduces_rows(*net, log_rows(two));
  // The last piece's busbw is what the largest sizes move per rank over the bus: 8 GiB in 47,617 us with 8 ranks is
  // busbw 2*7/8 * 2^33 / 47.617e-3 s = 315.7 GB/s, the log's own busbw column (315.69), within the fit's error.
  const auto rows = log_rows(one);
  const double busbw_last = 1.75 * rows.back().size_bytes / (rows.back().time_us * 1e-6);
  EXPECT_NEAR(xgmi->pieces.back().busbw.bytes_per_sec() / busbw_last, 1.0, 2 * xgmi->fit->quality.max_rel_error);
}

// --intra-node-link names the link kind of a single-node log outright, over what the GPU's name implies: an MI300X
// log taken as pcie, and an H100 log (NVLink by its name) taken as xgmi, each as the option says.
TEST(CalibrateCli, IntraNodeLinkOptionOverridesTheGpuName)
{
  OutDir dir;
  const std::vector<std::pair<std::string, rc::LinkKind>> cases = {
      {"rccl_tests_all_reduce_mi300x_1node.log --intra-node-link pcie", rc::LinkKind::Pcie},
      {"nccl_tests_2.13_all_reduce_h100_ring.log --intra-node-link xgmi", rc::LinkKind::Xgmi}};
  int n = 0;
  for (const auto& [args, link] : cases) {
    const auto out = (dir.path / ("link" + std::to_string(n++) + ".yaml")).string();
    const auto r = run("calibrate --from " + data(args) + " --out " + out);
    ASSERT_EQ(r.code, 0) << r.output;
    const auto p = rc::read_profile(out);
    ASSERT_EQ(p.collectives.size(), 1u);
    EXPECT_EQ(p.collectives.front().link, link) << args;
  }
}

TEST(CalibrateCli, TruncatedRcclTestsLogExitsTwoNamingTheLine)
{
  OutDir dir;
  const auto out = (dir.path / "never.yaml").string();
  // The two-node log cut in the middle of its 20th data row, as a killed job leaves it.
  std::ifstream in(data("rccl_tests_all_reduce_mi300x_2nodes.log"));
  const auto rows = log_rows(data("rccl_tests_all_reduce_mi300x_2nodes.log"));
  const int cut_line = rows.at(19).line;
  const auto cut = (dir.path / "all_reduce_perf_cut.log").string();
  {
    std::ofstream o(cut);
    std::string line;
    for (int n = 1; std::getline(in, line) && n <= cut_line; ++n)
      o << (n < cut_line ? line : line.substr(0, 60)) << "\n";
  }
  const auto r = run("calibrate --from " + cut + " --out " + out);
  EXPECT_EQ(r.code, 2) << r.output;
  EXPECT_NE(r.output.find(cut + ":" + std::to_string(cut_line) + ": incomplete data row"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("Fix:"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
}
