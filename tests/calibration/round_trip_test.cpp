// Round trip: a profile fitted (`railyard calibrate`) from a simulated nccl-tests sweep (`railyard nccl-tests`)
// predicts that sweep back within 2% at every size. The expected times are read from the sweep's own table here,
// independently of the calibration layer's log parser.
#include "railyard/calibration/profile.hpp"

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace railyard;

namespace {

int run(const std::string& args, std::string* output)
{
  const std::string cmd = std::string(RAILYARD_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p)
    return -1;
  std::array<char, 4096> buf{};
  while (fgets(buf.data(), buf.size(), p))
    *output += buf.data();
  const int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct Row {
  double bytes;
  double time_us; ///< out-of-place time column
};

// nccl-tests data rows: size count type redop root time algbw busbw #wrong (then the in-place four).
std::vector<Row> table_rows(const std::string& log)
{
  std::vector<Row> rows;
  std::istringstream in(log);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#')
      continue;
    std::istringstream f(line);
    double size = 0, count = 0, root = 0, time = 0;
    std::string type, redop;
    if (f >> size >> count >> type >> redop >> root >> time)
      rows.push_back({size, time});
  }
  return rows;
}

struct Case {
  const char* name;
  const char* cluster; // the scenario's cluster section
  int nranks;
};

class RoundTrip : public ::testing::TestWithParam<Case> {};

TEST_P(RoundTrip, FittedProfilePredictsTheSimulatedSweepWithinTwoPercent)
{
  const Case& c = GetParam();
  const fs::path dir = fs::temp_directory_path() / ("railyard_roundtrip_" + std::string(c.name) + "_" +
                                                    std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path scenario = dir / "s.yaml";
  std::ofstream(scenario) << "name: rt\n" << c.cluster;
  std::string log;
  ASSERT_EQ(run("nccl-tests --scenario " + scenario.string() + " --op all_reduce -b 4K -e 1G -f 2 --algo ring "
                "--proto simple",
                &log),
            0)
      << log;
  std::ofstream(dir / "sweep.log") << log;
  const std::vector<Row> rows = table_rows(log);
  ASSERT_EQ(rows.size(), 19u) << "4 KiB to 1 GiB by 2 is 19 sizes";

  std::string out;
  ASSERT_EQ(run("calibrate --from " + (dir / "sweep.log").string() + " --out " + (dir / "p.yaml").string(), &out), 0)
      << out;
  const calibration::Profile p = calibration::read_profile((dir / "p.yaml").string());
  ASSERT_EQ(p.collectives.size(), 1u);
  const calibration::CollectiveFit& fit = p.collectives[0];
  EXPECT_EQ(fit.nranks, c.nranks);
  for (const Row& r : rows) {
    const double predicted_us = fit.time(Bytes(r.bytes), c.nranks).seconds() * 1e6;
    EXPECT_NEAR(predicted_us, r.time_us, 0.02 * r.time_us) << r.bytes << " bytes";
  }
  fs::remove_all(dir);
}

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

INSTANTIATE_TEST_SUITE_P(
    Sweeps, RoundTrip,
    ::testing::Values(Case{"h100_node",
                           "cluster: {kind: single_node, gpus_per_node: 8, node: {nvlink_bandwidth: 450 GB/s}}\n", 8},
                      Case{"rail_optimized_4x8",
                           "cluster: {kind: rail_optimized, nodes: 4, gpus_per_node: 8, nic: {bandwidth: 400 Gb/s}}\n",
                           32}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

} // namespace
