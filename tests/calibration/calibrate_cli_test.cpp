// `railyard calibrate` through the real binary: a good run writes the profile and exits 0; a bad input exits 2 with
// the file and line on stderr and leaves no profile behind (not even a partial one).
#include "railyard/calibration/profile.hpp"

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

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
