// What `railyard run`, `topo describe --dot` and `calibrate --out` may replace, and what a failed write leaves
// behind, through the real binary. The rules (common/output_dir.hpp, README "Outputs"): an existing folder is
// replaced only if it is empty or an earlier Railyard output with nothing else in it, or with --force; never the
// working directory, the home folder or a folder holding an input, even with --force; a bad path is exit 2 with the
// path and the reason; a failed write is exit 4 naming the file, with no folder named DIR and no staging folder left,
// and an earlier output intact.
#include "cli_support.hpp"

#include "railyard/common/csv.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

using railyard::test::CliResult;
using railyard::test::read_file;
using railyard::test::run_cli;

const std::string kSource = RAILYARD_SOURCE_DIR;

// One all-reduce on one 8-GPU node: the smallest run that writes summary.json and collectives.csv.
const char* kTinyScenario = "name: tiny\n"
                            "cluster: {kind: single_node, gpus_per_node: 8}\n"
                            "collectives:\n"
                            "  - {op: all_reduce, size: 1 MiB, algorithm: ring, protocol: simple, channels: 2}\n";

// The same on the fluid backend, which adds flows.csv and links.csv.
const char* kFluidScenario = "name: fluid\n"
                             "cluster: {kind: single_node, gpus_per_node: 8}\n"
                             "network: {backend: fluid}\n"
                             "collectives:\n"
                             "  - {op: all_reduce, size: 1 MiB, algorithm: ring, protocol: simple, channels: 2}\n";

// A generated two-layer step on one node: breakdown.csv, trace.json and summary.json.
std::string workload_scenario()
{
  return "name: step\n"
         "cluster: {kind: single_node, gpus_per_node: 8}\n"
         "profile: " +
         kSource +
         "/calibration/profiles/dgx_h100_ib_ndr.yaml\n"
         "workload:\n"
         "  generator: megatron\n"
         "  model: {layers: 2, hidden: 512, heads: 8, seq_length: 256, vocab: 1024}\n"
         "  parallel: {tp: 8}\n"
         "  training: {global_batch: 8}\n"
         "  replay: {communication: analytical}\n";
}

/// stdout and stderr of a shell command.
std::string shell_output(const std::string& command)
{
  std::string output;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return output;
  char buf[4096];
  while (fgets(buf, sizeof buf, p))
    output += buf;
  pclose(p);
  return output;
}

/// Runs `script` as root in a private mount namespace with a 16 KiB tmpfs mounted on `mnt`; false (nothing run) where
/// the machine does not allow it (no CAP_SYS_ADMIN, no unshare).
bool can_mount_tmpfs(const fs::path& mnt)
{
  const std::string probe = "unshare -m sh -c 'mount -t tmpfs -o size=16k tmpfs " + mnt.string() + "' 2>/dev/null";
  return std::system(probe.c_str()) == 0;
}
std::string on_tiny_disk(const fs::path& mnt, const std::string& script)
{
  return shell_output("unshare -m sh -c " + railyard::test::shell_quote("mount -t tmpfs -o size=16k tmpfs " +
                                                                        mnt.string() + " && " + script));
}

class Outputs : public ::testing::Test {
protected:
  void SetUp() override
  {
    dir_ = railyard::test::temp_dir(std::string("outputs_") +
                                    ::testing::UnitTest::GetInstance()->current_test_info()->name());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text)
  {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }
  std::string scenario() { return write("tiny.yaml", kTinyScenario); }
  CliResult run(const std::string& scenario, const std::string& out, const std::string& extra = "",
                const std::string& env = "")
  {
    return run_cli("run " + scenario + " --out " + railyard::test::shell_quote(out) + " " + extra, env);
  }
  /// Every file of a folder and its bytes.
  static std::map<std::string, std::string> snapshot(const fs::path& folder)
  {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::recursive_directory_iterator(folder))
      if (e.is_regular_file()) files[fs::relative(e.path(), folder).string()] = read_file(e.path());
    return files;
  }
  static void expect_mentions(const CliResult& r, const std::vector<std::string>& parts)
  {
    for (const auto& p : parts)
      EXPECT_NE(r.output.find(p), std::string::npos) << "missing '" << p << "' in: " << r.output;
  }

  fs::path dir_;
};

// ------------------------------------------------------------------------------------------------------------------
// What an existing folder may be

TEST_F(Outputs, AFolderOfTheUsersSurvivesAndForceReplacesIt)
{
  const fs::path photos = dir_ / "photos";
  const std::string jpeg = std::string("\xff\xd8\xff\xe0 a user's photo \x00\x01", 20);
  write("photos/holiday.jpg", jpeg);
  const CliResult r = run(scenario(), photos.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_mentions(r, {photos.string(), "not an earlier Railyard output", "--force", "holiday.jpg"});
  EXPECT_EQ(read_file(photos / "holiday.jpg"), jpeg) << "the user's file must survive byte for byte";
  EXPECT_FALSE(fs::exists(photos.string() + ".partial"));

  // Asked for explicitly, the folder is replaced by a complete output.
  const CliResult forced = run(scenario(), photos.string(), "--force");
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  EXPECT_FALSE(fs::exists(photos / "holiday.jpg"));
  EXPECT_NE(read_file(photos / "summary.json").find("\"status\": \"complete\""), std::string::npos);
  EXPECT_TRUE(fs::exists(photos / ".railyard-output"));
}

TEST_F(Outputs, AnEmptyFolderOrAnEarlierOutputIsReplacedWithoutForce)
{
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  ASSERT_EQ(run(scenario(), out.string()).exit_code, 0) << "an empty folder holds nothing to lose";
  const auto first = snapshot(out);
  EXPECT_TRUE(first.count("collectives.csv"));
  // The marker says what wrote the folder and which files are Railyard's.
  const auto marker = nlohmann::json::parse(first.at(".railyard-output"));
  EXPECT_EQ(marker["command"], "run");
  EXPECT_EQ(marker["scenario_file"], scenario());
  EXPECT_EQ(marker["complete"], true);
  EXPECT_EQ(marker["files"], nlohmann::json({"collectives.csv", "summary.json"}));

  const CliResult again = run(scenario(), out.string());
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_EQ(snapshot(out), first) << "same inputs, same bytes";
  EXPECT_FALSE(fs::exists(out.string() + ".partial"));
}

TEST_F(Outputs, AnEarlierOutputWithAUsersFileInItIsNotReplacedWithoutForce)
{
  const fs::path out = dir_ / "out";
  ASSERT_EQ(run(scenario(), out.string()).exit_code, 0);
  write("out/busbw.png", "a plot the user made");
  const CliResult r = run(scenario(), out.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_mentions(r, {"busbw.png", "--force"});
  EXPECT_EQ(read_file(out / "busbw.png"), "a plot the user made");
  EXPECT_EQ(run(scenario(), out.string(), "--force").exit_code, 0);
  EXPECT_FALSE(fs::exists(out / "busbw.png"));
}

TEST_F(Outputs, ALeftoverStagingFolderIsRemovedOnlyIfItIsRailyards)
{
  const fs::path out = dir_ / "out";
  write("out.partial/notes.txt", "mine");
  const CliResult r = run(scenario(), out.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_mentions(r, {(dir_ / "out.partial").string(), "--force"});
  EXPECT_EQ(read_file(dir_ / "out.partial" / "notes.txt"), "mine");
  EXPECT_FALSE(fs::exists(out));
  // One with the marker is what a killed run leaves: cleared without a question.
  fs::remove_all(dir_ / "out.partial");
  write("out.partial/.railyard-output", "{\"railyard_output\": 1, \"complete\": false, \"files\": []}\n");
  write("out.partial/collectives.csv", "index,iter");
  ASSERT_EQ(run(scenario(), out.string()).exit_code, 0);
  EXPECT_FALSE(fs::exists(dir_ / "out.partial"));
}

TEST_F(Outputs, AFileInThePlaceOfTheFolderIsNeverReplaced)
{
  const std::string notes = write("notes.txt", "not a folder");
  for (const char* extra : {"", "--force"}) {
    const CliResult r = run(scenario(), notes, extra);
    EXPECT_EQ(r.exit_code, 2) << extra << r.output;
    expect_mentions(r, {notes, "not a folder"});
    EXPECT_EQ(read_file(notes), "not a folder");
  }
}

// ------------------------------------------------------------------------------------------------------------------
// Refused even with --force

// A scenario that passes loading and fails while it runs (PAT needs one GPU per node; the lowering finds out): a
// build that did not refuse "/" up front would stop there, before its output step could remove anything. The cases
// that could only hurt a scratch folder use the scenario that runs to the end.
const char* kFailsWhileRunning = "name: late\n"
                                 "cluster: {kind: rail_optimized, nodes: 2, gpus_per_node: 8}\n"
                                 "collectives:\n"
                                 "  - {op: all_gather, size: 1 MiB, algorithm: pat}\n";

TEST_F(Outputs, TheWorkingDirectoryAndFoldersAboveItAreRefusedEvenWithForce)
{
  const fs::path work = dir_ / "work";
  write("work/keep.txt", "keep me");
  const std::string s = write("work/tiny.yaml", kTinyScenario);
  write("work/late.yaml", kFailsWhileRunning);
  const std::string link = (dir_ / "link_to_work").string();
  fs::create_directory_symlink(work, link);
  for (const std::string& out : std::vector<std::string>{".", "./", "..", "sub/../.", "/", link, work.string()}) {
    for (const char* force : {"", " --force"}) {
      const std::string scenario = out == "/" ? "late.yaml" : "tiny.yaml";
      const CliResult r =
          run_cli("run " + scenario + " --out " + railyard::test::shell_quote(out) + force, "", work.string());
      EXPECT_EQ(r.exit_code, 2) << "--out " << out << force << ": " << r.output;
      expect_mentions(r, {"even with --force"});
      EXPECT_EQ(read_file(work / "keep.txt"), "keep me") << "--out " << out << force;
      EXPECT_EQ(read_file(s), kTinyScenario);
    }
  }
}

TEST_F(Outputs, TheHomeFolderIsRefusedEvenWithForce)
{
  const fs::path home = dir_ / "home";
  write("home/.bashrc", "# the user's");
  const std::string s = scenario();
  const CliResult r = run(s, home.string(), "--force", "HOME=" + home.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_mentions(r, {"home folder", "even with --force"});
  EXPECT_EQ(read_file(home / ".bashrc"), "# the user's");
}

TEST_F(Outputs, AFolderHoldingTheScenarioOrAnInputIsRefusedEvenWithForce)
{
  const std::string s = write("study/scenarios/tiny.yaml", kTinyScenario);
  for (const std::string& out : std::vector<std::string>{(dir_ / "study").string(), (dir_ / "study/scenarios").string(),
                                                         (dir_ / "study/other/../scenarios/").string()}) {
    for (const char* force : {"", "--force"}) {
      const CliResult r = run(s, out, force);
      EXPECT_EQ(r.exit_code, 2) << out << " " << force << r.output;
      expect_mentions(r, {"the input '" + s + "'", "even with --force"});
      EXPECT_EQ(read_file(s), kTinyScenario) << "the scenario must survive";
    }
  }
  // The profile a workload scenario names is an input too.
  const fs::path profiles = dir_ / "profiles";
  fs::create_directories(profiles);
  fs::copy_file(kSource + "/calibration/profiles/dgx_h100_ib_ndr.yaml", profiles / "h100.yaml");
  std::string step = workload_scenario();
  step.replace(step.find(kSource + "/calibration/profiles/dgx_h100_ib_ndr.yaml"),
               (kSource + "/calibration/profiles/dgx_h100_ib_ndr.yaml").size(), (profiles / "h100.yaml").string());
  const CliResult r = run(write("step.yaml", step), profiles.string(), "--force");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_mentions(r, {"h100.yaml", "even with --force"});
  EXPECT_TRUE(fs::exists(profiles / "h100.yaml"));
}

// ------------------------------------------------------------------------------------------------------------------
// Paths that cannot be written: exit 2 with the path and the reason, never exit 3

TEST_F(Outputs, ATrailingSlashNamesTheSameFolder)
{
  const fs::path out = dir_ / "out";
  for (int run_no = 0; run_no < 2; ++run_no) { // the second run replaces the first output
    const CliResult r = run(scenario(), out.string() + "/");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_NE(read_file(out / "summary.json").find("\"status\": \"complete\""), std::string::npos);
    EXPECT_FALSE(fs::exists(out / ".partial")) << "the staging folder belongs beside the folder, not in it";
    EXPECT_FALSE(fs::exists(out.string() + ".partial"));
  }
}

TEST_F(Outputs, AReadOnlyParentIsExitTwoWithThePathAndTheReason)
{
  // /sys is read-only even for root (CI runs as root, so a chmod would not stop the write).
  for (const char* out : {"/sys/railyard_test_out", "/sys/railyard_test_parent/out"}) {
    const CliResult r = run(scenario(), out);
    EXPECT_EQ(r.exit_code, 2) << out << ": " << r.output;
    expect_mentions(r, {"/sys/railyard_test_", "cannot create"});
    EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
  }
}

TEST_F(Outputs, AParentThatIsAFileIsExitTwo)
{
  const std::string file = write("plain.txt", "text");
  const CliResult r = run(scenario(), file + "/out");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_mentions(r, {file, "is a file, not a folder"});
  EXPECT_EQ(read_file(file), "text");
}

TEST_F(Outputs, NamesAndPathsTooLongAreExitTwo)
{
  // NAME_MAX is 255 bytes on Linux file systems: 300 is too long by itself, 250 only with ".partial" added.
  for (const std::size_t length : {300, 250}) {
    const CliResult r = run(scenario(), (dir_ / std::string(length, 'n')).string());
    EXPECT_EQ(r.exit_code, 2) << length << ": " << r.output;
    expect_mentions(r, {"NAME_MAX"});
  }
  // PATH_MAX (4096) over many short names.
  std::string deep = dir_.string();
  while (deep.size() < PATH_MAX + 10)
    deep += "/" + std::string(100, 'd');
  const CliResult r = run(scenario(), deep);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  expect_mentions(r, {"PATH_MAX"});
  EXPECT_EQ(r.output.find("internal error"), std::string::npos) << r.output;
}

// ------------------------------------------------------------------------------------------------------------------
// Failed writes: RAILYARD_TEST_FAIL_WRITES_AFTER_BYTES (common/output_file.hpp)

struct FailCase {
  const char* name;
  std::string scenario;
  std::vector<const char*> files; ///< in the order they are written
};

void PrintTo(const FailCase& c, std::ostream* os)
{
  *os << c.name;
}

class WriteFailure : public Outputs, public ::testing::WithParamInterface<FailCase> {};

// For every file of a run: the write fails half-way through it (a short write, then ENOSPC). The run ends with exit 4
// naming that file; no folder named DIR appears, no staging folder is left, and an earlier output at DIR is intact.
TEST_P(WriteFailure, AtEachFileExitsFourAndLeavesTheEarlierOutputIntact)
{
  const FailCase& c = GetParam();
  const std::string s = write("scenario.yaml", c.scenario);
  const fs::path fresh = dir_ / "fresh", earlier = dir_ / "earlier";
  ASSERT_EQ(run(s, earlier.string()).exit_code, 0);
  const auto before = snapshot(earlier);
  for (const char* f : c.files)
    ASSERT_TRUE(before.count(f)) << f << " is not an output of this run";
  for (const char* f : c.files) {
    const std::size_t half = before.at(f).size() / 2;
    const std::string env = "RAILYARD_TEST_FAIL_WRITES_AFTER_BYTES=" + std::string(f) + ":" + std::to_string(half);
    for (const fs::path& out : {fresh, earlier}) {
      const CliResult r = run(s, out.string(), "", env);
      EXPECT_EQ(r.exit_code, 4) << f << ": " << r.output;
      expect_mentions(r, {(out.string() + ".partial/" + f), "No space left on device", "Fix:"});
      EXPECT_FALSE(fs::exists(out.string() + ".partial")) << "the staging folder was left behind";
    }
    EXPECT_FALSE(fs::exists(fresh)) << f << ": a folder named DIR appeared";
    EXPECT_EQ(snapshot(earlier), before) << f << ": the earlier output changed";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Runs, WriteFailure,
    ::testing::Values(FailCase{"collectives", kTinyScenario, {".railyard-output", "collectives.csv", "summary.json"}},
                      FailCase{"fluid", kFluidScenario, {"collectives.csv", "flows.csv", "links.csv", "summary.json"}},
                      FailCase{"workload", workload_scenario(), {"breakdown.csv", "trace.json", "summary.json"}}),
    [](const ::testing::TestParamInfo<FailCase>& info) { return std::string(info.param.name); });

// The hook's process-wide form: the run's first N bytes go through, whichever files they are in.
TEST_F(Outputs, AFailureAfterNBytesOfTheRunIsExitFour)
{
  const std::string s = write("fluid.yaml", kFluidScenario);
  for (const char* n : {"0", "700", "5000"}) {
    const CliResult r = run(s, (dir_ / "out").string(), "", std::string("RAILYARD_TEST_FAIL_WRITES_AFTER_BYTES=") + n);
    EXPECT_EQ(r.exit_code, 4) << n << ": " << r.output;
    expect_mentions(r, {(dir_ / "out.partial/").string(), "No space left on device"});
    EXPECT_FALSE(fs::exists(dir_ / "out"));
    EXPECT_FALSE(fs::exists(dir_ / "out.partial"));
  }
}

// A real full disk where the machine allows one: a 16 KiB tmpfs in a private mount namespace (root with
// CAP_SYS_ADMIN). The fluid run writes more than 16 KiB, so some file of it cannot be written.
TEST_F(Outputs, ARealFullDiskIsExitFourWithNoCompleteLookingFolder)
{
  const fs::path mnt = dir_ / "tiny_disk";
  fs::create_directories(mnt);
  if (!can_mount_tmpfs(mnt))
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN and unshare); the injected failures "
                    "of WriteFailure cover the same paths";
  const std::string s = write("fluid.yaml", kFluidScenario);
  ASSERT_GT(snapshot([&] {
              const fs::path ref = dir_ / "reference";
              EXPECT_EQ(run(s, ref.string()).exit_code, 0);
              return ref;
            }())
                .at("flows.csv")
                .size(),
            16u * 1024)
      << "the run must write more than the disk holds for this test to mean anything";
  const std::string output =
      on_tiny_disk(mnt, railyard::test::shell_quote(railyard::test::cli_binary()) + " run " + s + " --out " +
                            mnt.string() + "/out; echo \"rc=$?\"; ls -a " + mnt.string());
  EXPECT_NE(output.find("rc=4"), std::string::npos) << output;
  EXPECT_NE(output.find("No space left on device"), std::string::npos) << output;
  EXPECT_NE(output.find(mnt.string() + "/out.partial/"), std::string::npos) << "names the file: " << output;
  // The listing of the tmpfs after the run: no "out", no "out.partial".
  EXPECT_EQ(output.find("\nout\n"), std::string::npos) << output;
  EXPECT_EQ(output.find("out.partial\n"), std::string::npos) << output;
}

// An empty mount point passes every other check, but a rename cannot cross file systems: refused before the run.
TEST_F(Outputs, AMountPointIsRefusedBeforeTheRun)
{
  const fs::path mnt = dir_ / "mnt";
  fs::create_directories(mnt);
  if (!can_mount_tmpfs(mnt)) GTEST_SKIP() << "cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN and unshare)";
  const std::string s = scenario();
  const std::string output = on_tiny_disk(mnt, railyard::test::shell_quote(railyard::test::cli_binary()) + " run " + s +
                                                   " --out " + mnt.string() + "; echo \"rc=$?\"");
  EXPECT_NE(output.find("rc=2"), std::string::npos) << output;
  EXPECT_NE(output.find("mount point"), std::string::npos) << output;
}

TEST_F(Outputs, ExitCodesAreDocumentedInHelp)
{
  const CliResult r = run_cli("--help");
  EXPECT_EQ(r.exit_code, 0);
  expect_mentions(r, {"Exit codes", "2 bad input", "3 internal error", "4 an output could not be written"});
}

// ------------------------------------------------------------------------------------------------------------------
// topo describe --dot and calibrate --out

TEST_F(Outputs, DotOntoTheScenarioIsRefusedAndTheScenarioIsUnchanged)
{
  const std::string s = scenario();
  const std::string link = (dir_ / "link.yaml").string();
  fs::create_symlink(s, link);
  for (const std::string& dot : std::vector<std::string>{s, link, (dir_ / "sub/../tiny.yaml").string()}) {
    const CliResult r = run_cli("topo describe " + s + " --dot " + dot);
    EXPECT_EQ(r.exit_code, 2) << dot << ": " << r.output;
    expect_mentions(r, {"--dot", "scenario"});
    EXPECT_EQ(read_file(s), kTinyScenario);
  }
  // Elsewhere it is written whole, with no temporary file left beside it.
  const CliResult ok = run_cli("topo describe " + s + " --dot " + (dir_ / "c.dot").string());
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(read_file(dir_ / "c.dot").rfind("graph", 0), 0u);
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".railyard-"), std::string::npos) << e.path();
}

TEST_F(Outputs, DotThatCannotBeWrittenIsExitFourAndLeavesTheOldFile)
{
  const std::string s = scenario();
  const std::string dot = write("c.dot", "the old drawing");
  const CliResult r = run_cli("topo describe " + s + " --dot " + dot, "RAILYARD_TEST_FAIL_WRITES_AFTER_BYTES=100");
  EXPECT_EQ(r.exit_code, 4) << r.output;
  expect_mentions(r, {"No space left on device"});
  EXPECT_EQ(read_file(dot), "the old drawing");
}

TEST_F(Outputs, CalibrateRefusesToWriteOverOneOfItsInputs)
{
  const std::string log = kSource + "/tests/calibration/data/nccl_tests_2.17_all_reduce_h200.log";
  ASSERT_TRUE(fs::exists(log)) << log;
  const fs::path logs = dir_ / "logs";
  fs::create_directories(logs);
  fs::copy_file(log, logs / "all_reduce.log");
  const std::string before = read_file(logs / "all_reduce.log");
  // Named as a file, or inside a folder given to --from.
  for (const std::string& from : std::vector<std::string>{(logs / "all_reduce.log").string(), logs.string()}) {
    const CliResult r = run_cli("calibrate --from " + from + " --out " + (logs / "all_reduce.log").string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    expect_mentions(r, {"--out", "input"});
    EXPECT_EQ(read_file(logs / "all_reduce.log"), before);
  }
}

// ------------------------------------------------------------------------------------------------------------------
// CSV (RFC 4180)

TEST_F(Outputs, ALabelWithACommaIsOneQuotedFieldThatPythonReadsBack)
{
  const fs::path out = dir_ / "multinode";
  const CliResult r = run_cli("run " + kSource + "/examples/nccl_multinode.yaml --out " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string text = read_file(out / "collectives.csv");
  // RFC 4180: the field is quoted and every record ends with CRLF.
  EXPECT_NE(text.find(",\"tree, LL\","), std::string::npos) << text;
  EXPECT_EQ(text.find('\n'), text.find("\r\n") + 1) << "records end with CRLF";
  const auto records = railyard::parse_csv(text, "collectives.csv");
  ASSERT_GE(records.size(), 2u);
  const auto& header = records[0].fields;
  const auto label = std::find(header.begin(), header.end(), "label") - header.begin();
  for (const auto& rec : records)
    EXPECT_EQ(rec.fields.size(), header.size()) << "line " << rec.line;
  EXPECT_EQ(records[1].fields[label], "tree, LL");

  // Python's csv module, as the notebooks read it.
  if (std::system("python3 -c 'import csv' 2>/dev/null") != 0) GTEST_SKIP() << "python3 is not installed";
  const std::string py = "python3 -c \"import csv,sys; r=list(csv.DictReader(open(sys.argv[1], newline=''))); "
                         "print('|'.join(x['label'] for x in r)); print(len(r))\" " +
                         (out / "collectives.csv").string();
  const std::string got = shell_output(py);
  EXPECT_EQ(got.substr(0, got.find('|')), "tree, LL") << got;
  EXPECT_NE(got.find("\n" + std::to_string(records.size() - 1) + "\n"), std::string::npos) << got;
}

// TFLOP/s per GPU as papers quote them, beside MFU: model FLOPs / (step x GPUs). For a GPT layer stack without
// recomputation a step's model FLOPs are 72 B s l h^2 (1 + s / (6 h)) + 6 B s h V (Narayanan et al. 2021, eq. 3, which
// counts the forward pass twice with recomputation: 96 B s l h^2 (...) there). Hardware FLOPs (the ops run, with the
// recomputed forward passes) are at least the model's, and with full recomputation at least 4/3 of its layer part.
TEST_F(Outputs, TflopsPerGpuFollowTheModelFlopsFormula)
{
  const double B = 8, s = 256, l = 2, h = 512, V = 1024, gpus = 8;
  const double model = 72 * B * s * l * h * h * (1 + s / (6 * h)) + 6 * B * s * h * V;
  for (const std::string recompute : {"none", "full"}) {
    std::string yaml = workload_scenario();
    yaml.replace(yaml.find("{global_batch: 8}"), 17, "{global_batch: 8, recompute: " + recompute + "}");
    const fs::path file = dir_ / ("tflops_" + recompute + ".yaml");
    std::ofstream(file) << yaml;
    const fs::path out = dir_ / ("tflops_" + recompute);
    const CliResult r = run_cli("run " + file.string() + " --out " + out.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(read_file(out / "summary.json"));
    const double step = j["step_time_s"].get<double>();
    ASSERT_GT(step, 0);
    const double expected = model / (step * gpus) / 1e12;
    const double got = j["model_tflops_per_gpu"].get<double>();
    EXPECT_NEAR(got, expected, 1e-9 * expected) << recompute;
    const double hw = j["hardware_tflops_per_gpu"].get<double>();
    EXPECT_GE(hw, got * (1 - 1e-12)) << recompute;
    if (recompute == "full") {
      EXPECT_GE(hw, (model + 24 * B * s * l * h * h * (1 + s / (6 * h))) / (step * gpus) / 1e12);
    }
    // And on the command's own line, beside MFU.
    char line[64];
    std::snprintf(line, sizeof line, "   %.1f model TFLOP/s per GPU, %.1f hardware", got, hw);
    EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
  }
}

} // namespace
