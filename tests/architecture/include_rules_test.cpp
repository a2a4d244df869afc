// The layering rules, checked on the sources: each layer includes only the layers below it (the order of the
// top-level CMakeLists.txt and the link lists of each layer's CMakeLists.txt), and sim/ includes nothing of
// scenario/, no YAML and no file writer: it runs what it is handed (ARCHITECTURE.md). The build enforces part of this
// too (sim's target does not see scenario's headers); this test also catches an include that the include paths would
// happen to resolve, and names the file and line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

namespace fs = std::filesystem;

namespace {

const fs::path kRoot = RAILYARD_SOURCE_DIR;

// What each layer may include of railyard's own headers (itself and the layers it links, ARCHITECTURE.md).
const std::map<std::string, std::set<std::string>> kMayInclude = {
    {"common", {"common"}},
    {"topologies", {"common", "topologies"}},
    {"models", {"common", "topologies", "models"}},
    {"calibration", {"common", "models", "calibration"}},
    {"workloads", {"common", "topologies", "models", "calibration", "workloads"}},
    {"sim", {"common", "topologies", "models", "calibration", "workloads", "sim"}},
    {"scenario", {"common", "topologies", "models", "calibration", "workloads", "sim", "scenario"}},
    {"studies", {"common", "topologies", "models", "calibration", "workloads", "sim", "scenario", "studies"}},
};

struct Include {
  fs::path file;
  int line;
  std::string target; // the path between the quotes or brackets
};

std::vector<Include> includes_under(const fs::path& dir)
{
  static const std::regex re(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  std::vector<Include> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    const auto ext = e.path().extension();
    if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
    std::ifstream in(e.path());
    std::string text;
    int line = 0;
    while (std::getline(in, text)) {
      ++line;
      std::smatch m;
      if (std::regex_search(text, m, re)) out.push_back({e.path(), line, m[1]});
    }
  }
  return out;
}

std::string where(const Include& i) { return fs::relative(i.file, kRoot).string() + ":" + std::to_string(i.line); }

} // namespace

TEST(IncludeRules, EachLayerIncludesOnlyTheLayersBelowIt)
{
  static const std::regex own(R"(^railyard/([a-z_]+)/)");
  for (const auto& [layer, allowed] : kMayInclude) {
    const auto found = includes_under(kRoot / layer);
    EXPECT_FALSE(found.empty()) << layer << ": no sources found under " << (kRoot / layer);
    for (const Include& i : found) {
      std::smatch m;
      if (!std::regex_search(i.target, m, own)) continue;
      EXPECT_TRUE(allowed.count(m[1])) << where(i) << ": " << layer << "/ includes " << i.target
                                       << ", a header of " << m[1] << "/, which lies above it";
    }
  }
}

TEST(IncludeRules, SimIncludesNoScenarioNoYamlAndNoFileWriter)
{
  // yaml-cpp and Railyard's YAML reader belong to the scenario layer; output folders and files to its writers.
  const std::set<std::string> banned = {"railyard/common/yaml.hpp", "yaml-cpp/yaml.h", "railyard/common/output_dir.hpp",
                                        "railyard/common/output_file.hpp", "railyard/common/csv.hpp"};
  const auto found = includes_under(kRoot / "sim");
  ASSERT_FALSE(found.empty());
  for (const Include& i : found) {
    EXPECT_EQ(i.target.rfind("railyard/scenario/", 0), std::string::npos) << where(i) << ": sim/ includes " << i.target;
    EXPECT_FALSE(banned.count(i.target)) << where(i) << ": sim/ includes " << i.target;
  }
  // Reading (/proc/meminfo for the memory limit) is allowed; writing a file is not.
  for (const auto& e : fs::recursive_directory_iterator(kRoot / "sim")) {
    if (!e.is_regular_file()) continue;
    std::ifstream in(e.path());
    std::string text;
    int line = 0;
    while (std::getline(in, text)) {
      ++line;
      for (const char* writer : {"std::ofstream", "fopen(", "std::fstream", "::open("})
        EXPECT_EQ(text.find(writer), std::string::npos)
            << fs::relative(e.path(), kRoot).string() << ":" << line << ": sim/ writes a file (" << writer << ")";
    }
  }
}

// The rule above is only as good as its scan: a file of sim/ that includes a scenario header must be caught. The
// scan runs on a copy of sim/ with one such include added.
TEST(IncludeRules, TheScanCatchesAnIncludeOfScenarioFromSim)
{
  const fs::path copy = fs::temp_directory_path() / ("railyard_include_rules_" + std::to_string(::getpid()));
  fs::remove_all(copy);
  fs::create_directories(copy);
  {
    std::ofstream(copy / "bad.cpp") << "// a deliberate breach\n#include \"railyard/scenario/scenario.hpp\"\n";
  }
  const auto found = includes_under(copy);
  fs::remove_all(copy);
  ASSERT_EQ(found.size(), 1U);
  EXPECT_EQ(found[0].line, 2);
  EXPECT_EQ(found[0].target, "railyard/scenario/scenario.hpp");
}
