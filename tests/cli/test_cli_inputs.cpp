// Numbers and inputs refused where they are parsed, through the real binary: a value that is not finite, negative or
// outside its quantity's range (units.hpp: a size 0..2^53 B, a time 0..1e6 s), a seed beyond 64 bits, YAML that
// yaml-cpp would accept silently (a key given twice, a second document, a key that is a list, bytes that are not
// UTF-8), a JSON file that is not a Kineto trace, and nccl-tests sizes that overflow: each exits 2 naming the file,
// the line and the field, and writes no output. calibrate drops rows with a negative or NaN measurement and says so,
// and refuses a value it cannot represent. Every expected line number is counted in the text under test.
#include "cli_support.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;

namespace {

using railyard::test::CliResult;
using railyard::test::read_file;
using railyard::test::run_cli;

fs::path temp_dir(const std::string& name)
{
  return railyard::test::temp_dir("inputs_" + name);
}

bool has(const std::string& s, const std::string& part)
{
  return s.find(part) != std::string::npos;
}

// 1-based line of the first line holding `needle`; 0 when none does (a test bug).
int line_of(const std::string& text, const std::string& needle)
{
  const auto at = text.find(needle);
  if (at == std::string::npos) return 0;
  return 1 + static_cast<int>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
}

// A valid two-GPU scenario; each bad case changes one thing in it.
const std::string kGood = "name: t\n"
                          "seed: 1\n"
                          "cluster:\n"
                          "  kind: single_node\n"
                          "  gpus_per_node: 2\n"
                          "  node: {nvlink_bandwidth: 450 GB/s, nvlink_latency: 0.5 us}\n"
                          "collectives:\n"
                          "  - {op: all_reduce, size: 1 MiB, algorithm: ring, protocol: simple, channels: 2}\n";

std::string replaced(std::string text, const std::string& from, const std::string& to)
{
  const auto at = text.find(from);
  if (at == std::string::npos) return "(test bug: '" + from + "' not in the text)";
  return text.replace(at, from.size(), to);
}

struct BadInput {
  const char* name;
  std::string text;
  std::string line_text; ///< the message must name the line holding this text
  const char* field;     ///< the field the message must name ("" when the problem is the file's structure)
  const char* must_have; ///< a phrase of the rule: the allowed range for numbers
};

void PrintTo(const BadInput& c, std::ostream* os)
{
  *os << c.name;
}

class RefusedScenario : public ::testing::TestWithParam<BadInput> {};

TEST_P(RefusedScenario, ExitsTwoNamingFileLineFieldAndRangeAndWritesNothing)
{
  const BadInput& c = GetParam();
  const fs::path dir = temp_dir(c.name);
  const fs::path file = dir / "bad.yaml";
  std::ofstream(file, std::ios::binary) << c.text;
  const int line = line_of(c.text, c.line_text);
  ASSERT_GT(line, 0) << "test bug: '" << c.line_text << "' is not in the scenario";
  const fs::path out = dir / "out";
  const CliResult r = run_cli("run " + file.string() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_TRUE(has(r.output, file.string() + ":" + std::to_string(line) + ":")) << "line " << line << ": " << r.output;
  if (*c.field) {
    EXPECT_TRUE(has(r.output, std::string("field '") + c.field + "'")) << r.output;
  }
  EXPECT_TRUE(has(r.output, c.must_have)) << r.output;
  EXPECT_TRUE(has(r.output, "Fix:")) << r.output;
  EXPECT_FALSE(fs::exists(out)) << "an output folder was left behind";
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(
    Numbers, RefusedScenario,
    ::testing::Values(
        BadInput{"nan_size", replaced(kGood, "size: 1 MiB", "size: nan MiB"), "nan MiB", "collectives[0].size",
                 "2^53 B"},
        BadInput{"inf_latency", replaced(kGood, "nvlink_latency: 0.5 us", "nvlink_latency: inf s"), "inf s",
                 "cluster.node.nvlink_latency", "at most 1e6 s"},
        BadInput{"size_1e30", replaced(kGood, "size: 1 MiB", "size: 1e30 B"), "1e30 B", "collectives[0].size",
                 "2^53 B"},
        // 2^64 B: a 64-bit byte count wraps to 0 at this size.
        BadInput{"size_2_pow_64", replaced(kGood, "size: 1 MiB", "size: 18446744073709551616 B"),
                 "18446744073709551616 B", "collectives[0].size", "2^53 B"},
        BadInput{"latency_1e308", replaced(kGood, "nvlink_latency: 0.5 us", "nvlink_latency: 1e308 s"), "1e308 s",
                 "cluster.node.nvlink_latency", "at most 1e6 s"},
        BadInput{"hex_size", replaced(kGood, "size: 1 MiB", "size: 0x10 MiB"), "0x10 MiB", "collectives[0].size",
                 "hexadecimal"},
        BadInput{"seed_beyond_64_bits", replaced(kGood, "seed: 1", "seed: 18446744073709551616"), "seed:", "seed",
                 "0..18446744073709551615"},
        BadInput{"negative_seed", replaced(kGood, "seed: 1", "seed: -1"), "seed:", "seed", "0..18446744073709551615"},
        // Beyond int64: once reported as "not an integer"; it is a number outside the range.
        BadInput{"channels_overflow", replaced(kGood, "channels: 2", "channels: 99999999999999999999"),
                 "channels:", "collectives[0].channels", "outside the allowed range 1..64"},
        BadInput{"rank_range_beyond_int", kGood + "  - {op: all_gather, size: 1 MiB, ranks: 0-4294967297}\n",
                 "ranks: 0-4294967297", "collectives[1].ranks", "0..1"}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

INSTANTIATE_TEST_SUITE_P(
    Yaml, RefusedScenario,
    ::testing::Values(
        BadInput{"duplicate_key", kGood + "seed: 2\n", "seed: 2", "seed", "given twice (first on line 2)"},
        BadInput{"two_documents", kGood + "---\nname: u\n", "---", "", "second YAML document"},
        BadInput{"list_as_key", replaced(kGood, "seed: 1\n", "seed: 1\n? [a, b]\n: 1\n"), "? [a, b]", "",
                 "a key is a list"},
        BadInput{"map_as_key", replaced(kGood, "seed: 1\n", "seed: 1\n{a: 1}: 2\n"), "{a: 1}: 2", "", "a key is a map"},
        BadInput{"latin1_name", replaced(kGood, "name: t", "name: caf\xff"), "name: caf", "", "invalid UTF-8"}),
    [](const ::testing::TestParamInfo<BadInput>& info) { return std::string(info.param.name); });

TEST(RefusedFiles, EmptyFileFolderAndDeviceExitTwoNamingThePath)
{
  const fs::path dir = temp_dir("files");
  const fs::path empty = dir / "empty.yaml";
  std::ofstream(empty) << "# nothing here\n";
  const CliResult e = run_cli("run " + empty.string() + " --out " + (dir / "o1").string());
  EXPECT_EQ(e.exit_code, 2) << e.output;
  // "# nothing here\n" ends on line 2, where a document would have to begin.
  EXPECT_TRUE(has(e.output, empty.string() + ":2: the file holds no YAML document")) << e.output;
  const CliResult f = run_cli("run " + dir.string() + " --out " + (dir / "o2").string());
  EXPECT_EQ(f.exit_code, 2) << f.output;
  EXPECT_TRUE(has(f.output, dir.string() + ": this is a folder")) << f.output;
  // /dev/zero never ends: refused after 64 MiB instead of reading until memory runs out.
  const CliResult z = run_cli("run /dev/zero --out " + (dir / "o3").string());
  EXPECT_EQ(z.exit_code, 2) << z.output;
  EXPECT_TRUE(has(z.output, "/dev/zero: the file holds more than the 64 MiB")) << z.output;
  for (const char* o : {"o1", "o2", "o3"})
    EXPECT_FALSE(fs::exists(dir / o));
  fs::remove_all(dir);
}

TEST(SeedOption, TakesEvery64BitSeedAndRefusesTheRest)
{
  const fs::path dir = temp_dir("seed");
  const fs::path file = dir / "s.yaml";
  std::ofstream(file) << kGood;
  // CLI11 2.1 reads 99999999999999999999 as 2^64-1 and -1 as 2^64-1 without a word; both are outside 0..2^64-1.
  for (const char* seed : {"99999999999999999999", "18446744073709551616", "-1", "0x10"}) {
    const fs::path out = dir / "out";
    const CliResult r = run_cli("run " + file.string() + " --out " + out.string() + " --seed=" + seed);
    EXPECT_EQ(r.exit_code, 2) << seed << ": " << r.output;
    EXPECT_TRUE(has(r.output, "field '--seed'")) << r.output;
    EXPECT_TRUE(has(r.output, "18446744073709551615")) << r.output; // the range, in the message or the fix
    EXPECT_FALSE(fs::exists(out)) << seed;
  }
  // --max-transfers is read the same way (CLI11 took -1 as 2^64-1, no limit at all).
  const CliResult transfers =
      run_cli("run " + file.string() + " --out " + (dir / "t").string() + " --max-transfers=-1");
  EXPECT_EQ(transfers.exit_code, 2) << transfers.output;
  EXPECT_TRUE(has(transfers.output, "field '--max-transfers': '-1' is outside the allowed range")) << transfers.output;
  // The largest seed, 2^64 - 1, is a seed like any other; in the scenario too.
  const CliResult top =
      run_cli("run " + file.string() + " --out " + (dir / "top").string() + " --seed 18446744073709551615");
  EXPECT_EQ(top.exit_code, 0) << top.output;
  const fs::path top_file = dir / "top.yaml";
  std::ofstream(top_file) << replaced(kGood, "seed: 1", "seed: 18446744073709551615");
  const CliResult in_file = run_cli("run " + top_file.string() + " --out " + (dir / "top2").string());
  EXPECT_EQ(in_file.exit_code, 0) << in_file.output;
  fs::remove_all(dir);
}

TEST(NcclTestsSizes, OverflowAndGarbageExitTwoNamingTheOption)
{
  const fs::path dir = temp_dir("nccl_sizes");
  const fs::path file = dir / "s.yaml";
  std::ofstream(file) << kGood;
  struct Case {
    const char* args;
    const char* option;
    const char* phrase;
  };
  for (const Case& c : {Case{"-b 1e30 -e 1e30", "-b/--minbytes", "2^53 B"},
                        Case{"-b 8 -e 99999999999999999999G", "-e/--maxbytes", "2^53 B"},
                        Case{"-b nan -e 8", "-b/--minbytes", "not a finite number"},
                        Case{"-b 0x10 -e 64", "-b/--minbytes", "invalid size '0x10'"},
                        Case{"-b 8 -e 1e400", "-e/--maxbytes", "beyond the range of a double"},
                        Case{"-b 8 -e 64 -f 99999999999999999999", "-f/--stepfactor", "outside the allowed range"}}) {
    const CliResult r = run_cli("nccl-tests --scenario " + file.string() + " " + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.output;
    EXPECT_TRUE(has(r.output, std::string("field '") + c.option + "'")) << c.args << ": " << r.output;
    EXPECT_TRUE(has(r.output, c.phrase)) << c.args << ": " << r.output;
  }
  fs::remove_all(dir);
}

// ---------------------------------------------------------------------------------------------------------------
// Kineto traces

// One rank, one kernel of 50 us: the smallest trace the reader takes.
const std::string kEvent = R"({"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 100, "dur": 50,
                                "args": {"stream": 7}})";
const std::string kTrace = R"({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [)" + kEvent + "]}";

CliResult run_trace(const fs::path& dir, const std::string& json, const fs::path& out)
{
  std::ofstream(dir / "t.json") << json;
  std::ofstream(dir / "k.yaml") << "name: k\ncluster: {kind: single_node, gpus_per_node: 1}\n"
                                   "workload:\n  trace: kineto\n  path: t.json\n"
                                   "  replay: {communication: analytical}\n";
  return run_cli("run " + (dir / "k.yaml").string() + " --out " + out.string());
}

TEST(KinetoInputs, TheSmallestTraceRuns)
{
  const fs::path dir = temp_dir("kineto_good");
  const CliResult r = run_trace(dir, kTrace, dir / "out");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "out" / "summary.json"));
  fs::remove_all(dir);
}

TEST(KinetoInputs, WhatIsNotAKinetoTraceExitsTwoNamingTheFile)
{
  struct Case {
    const char* name;
    std::string json;
    const char* phrase;
  };
  const std::string cpu_only = R"({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": [
      {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 50}]})";
  for (const Case& c :
       {Case{"list", "[" + kEvent + "]", "is a JSON list, not a Kineto trace"},
        Case{"no_trace_events", R"({"distributedInfo": {"rank": 0}, "events": [)" + kEvent + "]}", "no traceEvents"},
        Case{"empty_events", R"({"distributedInfo": {"rank": 0}, "traceEvents": []})", "none of its 0 events"},
        Case{"no_gpu_events", cpu_only, "none of its 1 events is a GPU event"},
        Case{"dur_1e999", replaced(kTrace, "\"dur\": 50", "\"dur\": 1e999"), "1e999 is beyond the range of a double"},
        // 1e300 us is a double, but far beyond the 1e6 s = 1e12 us a simulated time may reach.
        Case{"dur_1e300", replaced(kTrace, "\"dur\": 50", "\"dur\": 1e300"), "at most 1e6 s"},
        Case{"ts_text", replaced(kTrace, "\"ts\": 100", "\"ts\": \"soon\""), "not a finite number of microseconds"}}) {
    const fs::path dir = temp_dir(std::string("kineto_") + c.name);
    const CliResult r = run_trace(dir, c.json, dir / "out");
    EXPECT_EQ(r.exit_code, 2) << c.name << ": " << r.output;
    EXPECT_TRUE(has(r.output, (dir / "t.json").string())) << c.name << ": " << r.output;
    EXPECT_TRUE(has(r.output, c.phrase)) << c.name << ": " << r.output;
    EXPECT_FALSE(fs::exists(dir / "out")) << c.name;
    fs::remove_all(dir);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// calibrate

std::string h200_log()
{
  return read_file(fs::path(RAILYARD_SOURCE_DIR) / "tests/calibration/data/nccl_tests_2.17_all_reduce_h200.log");
}

TEST(CalibrateInputs, RowsWithNegativeOrNanMeasurementsAreDroppedAndReportedWithTheirLine)
{
  const fs::path dir = temp_dir("calib_drop");
  // The 8 B row's out-of-place time made negative, the 16 B row's in-place busbw NaN.
  std::string log = replaced(h200_log(), "15.82    0.00    0.00", "-15.82    0.00    0.00");
  log = replaced(log, "16.22    0.00    0.00", "16.22    0.00     nan");
  const int negative_line = line_of(log, "-15.82");
  const int nan_line = line_of(log, "16.22    0.00     nan");
  const fs::path file = dir / "all_reduce_perf.log";
  std::ofstream(file) << log;
  const CliResult r = run_cli("calibrate --from " + file.string() + " --out " + (dir / "p.yaml").string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(has(r.output, file.string() + ":" + std::to_string(negative_line) +
                                ": row dropped: out-of-place time is -15.82 us, negative"))
      << r.output;
  EXPECT_TRUE(has(r.output, file.string() + ":" + std::to_string(nan_line) +
                                ": row dropped: in-place busbw is nan, not a finite number"))
      << r.output;
  EXPECT_TRUE(fs::exists(dir / "p.yaml"));
  fs::remove_all(dir);
}

TEST(CalibrateInputs, ASizeItCannotRepresentExitsTwoAtItsLine)
{
  const fs::path dir = temp_dir("calib_1e400");
  for (const char* size : {"1e400", "99999999999999999999"}) { // beyond a double; beyond 2^53 B
    const std::string log = replaced(h200_log(), "           8             2", std::string("    ") + size + "  2");
    const int line = line_of(log, size);
    const fs::path file = dir / "all_reduce_perf.log";
    std::ofstream(file) << log;
    const fs::path out = dir / "p.yaml";
    const CliResult r = run_cli("calibrate --from " + file.string() + " --out " + out.string());
    EXPECT_EQ(r.exit_code, 2) << size << ": " << r.output;
    EXPECT_TRUE(has(r.output, file.string() + ":" + std::to_string(line) + ": field 'size'")) << r.output;
    EXPECT_TRUE(has(r.output, "cannot be represented")) << r.output;
    EXPECT_FALSE(fs::exists(out)) << size;
  }
  fs::remove_all(dir);
}

} // namespace
