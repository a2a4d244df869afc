// Generated mutants of the examples, run through the binary: every run ends in exit 0 with a complete output folder,
// or in exit 2 with the scenario file and a location in the message and no folder at all; never a signal, exit 3 (an
// internal error), a run past the time bound, or more than 2 GiB of memory. The mutants are the same on every run: a
// fixed seed drives a splitmix64 generator (no std:: distribution, whose results vary between standard libraries).
//
// Mutations are what a careless edit or a bad generator does to a scenario file: a value replaced by a number that is
// not finite, out of range or of the wrong unit, a line deleted, duplicated (a duplicate key), swapped or re-indented,
// an unknown key, a second YAML document, invalid UTF-8, a file cut short, a number scaled up a thousand or a million
// times (what the memory and work limits are for). Runs get --max-memory 1536MiB (the estimate under-estimated by at
// most 7% in bench_footprint: the margin keeps a run that fits it under the 2 GiB bound) and --max-transfers 2000000
// (about a minute of the simgrid backend on this machine class, at ~30 us a transfer), so a mutant too large for them
// is refused up front (exit 2) instead of growing or running for hours.
#include "cli_support.hpp"

#include "railyard/common/child_process.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace railyard::test;

namespace {

constexpr double kTimeBoundSeconds = 120;
constexpr double kMemoryBoundBytes = 2.0 * 1024 * 1024 * 1024;

struct SplitMix {
  std::uint64_t state;
  std::uint64_t next()
  {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
};

std::vector<std::string> lines_of(const std::string& text)
{
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

std::string join(const std::vector<std::string>& lines)
{
  std::string s;
  for (const auto& l : lines)
    s += l + "\n";
  return s;
}

// Lines that carry a value: "key: value" outside comments.
std::vector<std::size_t> value_lines(const std::vector<std::string>& lines)
{
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    const auto hash = l.find('#');
    const auto colon = l.find(": ");
    if (colon != std::string::npos && (hash == std::string::npos || colon < hash)) out.push_back(i);
  }
  return out;
}

// Replaces the value after the first ": " of `line` (up to a comment, a comma or a closing brace) with `v`.
std::string replace_value(const std::string& line, const std::string& v)
{
  const auto colon = line.find(": ");
  auto end = line.find_first_of(",}#", colon + 2);
  if (end == std::string::npos) end = line.size();
  return line.substr(0, colon + 2) + v + line.substr(end);
}

// The first number in the value of `line`, scaled by `k` (1000 or 1e6), keeping its unit.
std::string scale_value(const std::string& line, double k)
{
  const auto colon = line.find(": ");
  for (std::size_t i = colon + 2; i < line.size(); ++i)
    if (std::isdigit(static_cast<unsigned char>(line[i]))) {
      std::size_t j = i;
      while (j < line.size() && (std::isdigit(static_cast<unsigned char>(line[j])) || line[j] == '.'))
        ++j;
      double v = 0;
      try {
        v = std::stod(line.substr(i, j - i));
      } catch (const std::exception&) {
        return line;
      }
      std::ostringstream num;
      num << v * k;
      return line.substr(0, i) + num.str() + line.substr(j);
    }
  return line;
}

const std::vector<std::string> kBadValues = {"nan",
                                             "inf",
                                             "-inf",
                                             "nan MiB",
                                             "inf s",
                                             "-1",
                                             "0",
                                             "1e30 B",
                                             "1e308 s",
                                             "18446744073709551616",
                                             "-0",
                                             "0x10 MiB",
                                             "\"\"",
                                             "~",
                                             "[]",
                                             "{}",
                                             "caf\xff",
                                             "1e-30 s",
                                             "1 PiB",
                                             "10 us",
                                             "1",
                                             "true",
                                             "foo",
                                             "1e400",
                                             "99999999999999999999",
                                             "400 Gb/s",
                                             "-5 us",
                                             std::string(300, 'x')};

std::string mutate(const std::string& text, SplitMix& rng, std::string& what)
{
  auto lines = lines_of(text);
  const auto values = value_lines(lines);
  if (lines.empty() || values.empty()) return text;
  const std::size_t v = values[rng.below(values.size())];
  const std::size_t any = rng.below(lines.size());
  switch (rng.below(10)) {
  case 0:
  case 1: {
    const std::string bad = kBadValues[rng.below(kBadValues.size())];
    what = "line " + std::to_string(v + 1) + " value -> " + bad.substr(0, 24);
    lines[v] = replace_value(lines[v], bad);
    break;
  }
  case 2:
    what = "delete line " + std::to_string(any + 1);
    lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(any));
    break;
  case 3:
    what = "duplicate line " + std::to_string(v + 1);
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(v), lines[v]);
    break;
  case 4: {
    const std::size_t other = rng.below(lines.size());
    what = "swap lines " + std::to_string(any + 1) + " and " + std::to_string(other + 1);
    std::swap(lines[any], lines[other]);
    break;
  }
  case 5:
    what = "indent line " + std::to_string(any + 1);
    lines[any] = (rng.below(2) ? "   " : " ") + lines[any];
    break;
  case 6:
    what = "unknown key before line " + std::to_string(v + 1);
    lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(v),
                 lines[v].substr(0, lines[v].find_first_not_of(' ')) + "colour: blue");
    break;
  case 7:
    what = rng.below(2) ? "second document" : "invalid UTF-8";
    if (what == "second document")
      lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(any), "---");
    else
      lines[any] += "\xc3\x28";
    break;
  case 8: {
    const std::string t = join(lines);
    const std::size_t cut = rng.below(t.size());
    what = "cut at byte " + std::to_string(cut);
    return t.substr(0, cut);
  }
  case 9: {
    const double k = rng.below(2) ? 1e3 : 1e6;
    what = "line " + std::to_string(v + 1) + " x" + (k == 1e3 ? std::string("1000") : std::string("1e6"));
    lines[v] = scale_value(lines[v], k);
    break;
  }
  }
  return join(lines);
}

struct Base {
  std::string example;
  int mutants;
};

// How gtest and ctest name a case: the example and its count, not the struct's bytes.
[[maybe_unused]] void PrintTo(const Base& b, std::ostream* os)
{
  *os << b.example << " x" << b.mutants;
}

// Every example, with mutants in proportion to how fast it runs (the 1,024-GPU training steps take seconds each).
const std::vector<Base> kBases = {
    {"default", 30},
    {"single_node_h100", 40},
    {"nccl_groups", 30},
    {"nccl_h100_node", 30},
    {"nccl_multinode", 25},
    {"profile_links", 25},
    {"incast", 25},
    {"dcqcn_on", 15},
    {"dcqcn_off", 10},
    {"ring_ecmp_1qp", 15},
    {"ring_ecmp_4qp", 10},
    {"alltoall_rail_optimized", 15},
    {"alltoall_fat_tree_2to1", 10},
    {"gpt3_175b_1024", 8},
    {"llama3_70b_1024", 8},
};

class Mutants : public ::testing::TestWithParam<Base> {};

TEST_P(Mutants, EndCleanlyOrAreRefusedWithFileAndLocation)
{
  const Base& base = GetParam();
  const fs::path dir = temp_dir("mutants_" + base.example);
  // The examples name the profiles as ../calibration/...: the mutants sit one folder down beside a link to them.
  fs::create_directories(dir / "scenarios");
  fs::create_directory_symlink(fs::path(RAILYARD_SOURCE_DIR) / "calibration", dir / "calibration");
  const std::string text = read_file(fs::path(RAILYARD_SOURCE_DIR) / "examples" / (base.example + ".yaml"));
  ASSERT_FALSE(text.empty());
  std::uint64_t seed = 0x5241494c59415244ULL; // "RAILYARD"
  for (char c : base.example)
    seed = seed * 131 + static_cast<unsigned char>(c);
  SplitMix rng{seed};
  int refused = 0, ran = 0;
  for (int k = 0; k < base.mutants; ++k) {
    std::string what;
    const std::string mutant = mutate(text, rng, what);
    const fs::path file = dir / "scenarios" / (base.example + "_" + std::to_string(k) + ".yaml");
    std::ofstream(file, std::ios::binary) << mutant;
    const fs::path out = dir / ("out" + std::to_string(k));
    const railyard::ProgramResult o = railyard::run_program({RAILYARD_CLI, "run", file.string(), "--out", out.string(),
                                                             "--max-memory", "1536MiB", "--max-transfers", "2000000"},
                                                            (dir / "stderr.txt").string(), kTimeBoundSeconds);
    const std::string stderr_text = read_file(dir / "stderr.txt");
    const std::string id = base.example + " mutant " + std::to_string(k) + " (" + what + "): ";
    EXPECT_FALSE(o.timed_out) << id << "ran past " << kTimeBoundSeconds << " s";
    EXPECT_EQ(o.signal, 0) << id << "killed by signal " << o.signal << "\n" << stderr_text;
    EXPECT_LE(o.max_rss_bytes, kMemoryBoundBytes) << id << "peak memory " << o.max_rss_bytes / 1048576 << " MiB";
    EXPECT_TRUE(o.exit_code == 0 || o.exit_code == 2) << id << "exit " << o.exit_code << "\n" << stderr_text;
    if (o.exit_code == 0) {
      ++ran;
      EXPECT_TRUE(fs::exists(out / ".railyard-output")) << id;
      ASSERT_TRUE(fs::exists(out / "summary.json")) << id;
      const auto j = nlohmann::json::parse(read_file(out / "summary.json"), nullptr, false);
      EXPECT_FALSE(j.is_discarded()) << id << "summary.json does not parse";
      if (!j.is_discarded()) {
        EXPECT_EQ(j.value("status", ""), "complete") << id;
      }
    } else if (o.exit_code == 2) {
      ++refused;
      // "railyard: error: FILE:LINE: ..." or "FILE: field 'F': ...": the mutant's file and where in it.
      const std::string prefix = "railyard: error: " + file.string() + ":";
      EXPECT_NE(stderr_text.find(prefix), std::string::npos) << id << "\n" << stderr_text;
      const auto at = stderr_text.find(prefix);
      const bool line = at != std::string::npos && at + prefix.size() < stderr_text.size() &&
                        std::isdigit(static_cast<unsigned char>(stderr_text[at + prefix.size()]));
      const bool field = at != std::string::npos && stderr_text.compare(at + prefix.size(), 8, " field '") == 0;
      EXPECT_TRUE(line || field) << id << "no line or field after the file\n" << stderr_text;
      EXPECT_NE(stderr_text.find("Fix:"), std::string::npos) << id << "no fix\n" << stderr_text;
      EXPECT_FALSE(fs::exists(out)) << id << "a refused run left a folder";
    }
    EXPECT_FALSE(fs::exists(out.string() + ".partial")) << id << "a staging folder was left";
    fs::remove_all(out);
  }
  std::cout << base.example << ": " << base.mutants << " mutants, " << ran << " ran, " << refused << " refused\n";
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Examples, Mutants, ::testing::ValuesIn(kBases),
                         [](const auto& info) { return info.param.example; });

} // namespace
