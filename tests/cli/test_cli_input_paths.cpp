// Paths a scenario names that the system cannot look up at all (a name longer than NAME_MAX): `railyard run` exits 2
// naming the scenario file, the line of the path and the system's reason, and writes nothing.
#include "cli_support.hpp"

#include <gtest/gtest.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

// One path component longer than any file system here allows (NAME_MAX is 255 on Linux): lookups fail with
// ENAMETOOLONG instead of "not found".
const std::string kTooLong = std::string(NAME_MAX + 1, 'a') + ".yaml";

struct PathCase {
  const char* name;
  std::string scenario;
  int line; ///< of the path
};

void expect_refused(const PathCase& c)
{
  const fs::path dir = railyard::test::temp_dir("cli_paths_" + std::string(c.name));
  const fs::path file = dir / "s.yaml";
  std::ofstream(file) << c.scenario;
  const fs::path out = dir / "out";
  const railyard::test::CliResult r = railyard::test::run_cli("run " + file.string() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find(file.string() + ":" + std::to_string(c.line)), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("File name too long"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out)) << "an output folder was left behind";
  fs::remove_all(dir);
}

} // namespace

// Found by tests/fuzz (fuzz_scenario): std::filesystem::exists threw filesystem_error for such a `profile:` (exit 3).
TEST(InputPaths, ProfileNameTooLongExitsTwo)
{
  expect_refused({"profile",
                  "name: t\n"
                  "cluster: {kind: single_node, gpus_per_node: 8}\n"
                  "profile: " +
                      kTooLong +
                      "\n" // line 3
                      "collectives:\n"
                      "  - {op: all_reduce, size: 1 MiB}\n",
                  3});
}

// The same lookup for a Chakra prefix, whose folder is resolved apart from the files.
TEST(InputPaths, ChakraPrefixTooLongExitsTwo)
{
  expect_refused({"chakra",
                  "name: t\n"
                  "cluster: {kind: single_node, gpus_per_node: 8}\n"
                  "workload:\n"
                  "  trace: chakra\n"
                  "  path: " +
                      kTooLong + "\n", // line 5
                  5});
}
