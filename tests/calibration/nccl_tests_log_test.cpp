// The nccl-tests log reader on fixtures of several nccl-tests versions (tests/calibration/data, made by us from the
// printing code of each version; see make_fixtures.py there) and on the bad inputs a user can hand it.
#include "railyard/calibration/calibrate.hpp"
#include "railyard/calibration/digest.hpp"
#include "railyard/calibration/nccl_tests_log.hpp"
#include "railyard/common/error.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace rc = railyard::calibration;
using railyard::InputError;
using railyard::models::CollectiveKind;

namespace {

std::string data(const std::string& name)
{
  return std::string(RAILYARD_SOURCE_DIR) + "/tests/calibration/data/" + name;
}

std::vector<std::string> lines_of(const std::string& path)
{
  std::ifstream in(path);
  std::vector<std::string> out;
  std::string l;
  while (std::getline(in, l))
    out.push_back(l);
  return out;
}

// Counted without the parser: a data row is a line that starts with two whole numbers (size and count).
int count_data_rows(const std::string& path)
{
  static const std::regex row(R"(^\s*\d+\s+\d+\s)");
  int n = 0;
  for (const auto& l : lines_of(path))
    if (std::regex_search(l, row)) ++n;
  return n;
}

// The header's minBytes/maxBytes with step factor 2 give log2(max/min) + 1 sizes: a second, independent count.
int sizes_from_header(const std::string& path)
{
  static const std::regex re(R"(minBytes (\d+) maxBytes (\d+) step: 2\(factor\))");
  for (const auto& l : lines_of(path)) {
    std::smatch m;
    if (std::regex_search(l, m, re))
      return static_cast<int>(std::lround(std::log2(std::stod(m[2]) / std::stod(m[1])))) + 1;
  }
  return -1;
}

int line_number_of(const std::string& path, const std::regex& re)
{
  const auto ls = lines_of(path);
  for (size_t i = 0; i < ls.size(); ++i)
    if (std::regex_search(ls[i], re)) return static_cast<int>(i) + 1;
  return -1;
}

std::vector<std::string> tokens(const std::string& s)
{
  std::istringstream in(s);
  std::vector<std::string> out;
  std::string t;
  while (in >> t)
    out.push_back(t);
  return out;
}

} // namespace

TEST(Sha256, FipsVectors)
{
  // FIPS 180-2 appendix B examples.
  EXPECT_EQ(rc::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(rc::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(rc::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // The empty message (its digest is listed in NIST's SHA-256 example values).
  EXPECT_EQ(rc::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TEST(NcclTestsLog, VersionCodes)
{
  // nccl.h: NCCL_VERSION(X,Y,Z) is X*1000+Y*100+Z up to 2.8 and X*10000+Y*100+Z from 2.9 on.
  EXPECT_EQ(rc::nccl_version_from_code(2 * 1000 + 7 * 100 + 8), "2.7.8");
  EXPECT_EQ(rc::nccl_version_from_code(2 * 10000 + 27 * 100 + 7), "2.27.7");
  EXPECT_EQ(rc::nccl_version_from_code(2 * 10000 + 19 * 100 + 3), "2.19.3");
}

TEST(NcclTestsLog, CollectiveFromFileName)
{
  bool unsupported = false;
  EXPECT_EQ(rc::collective_from_file_name("logs/reduce_scatter_perf.log"), CollectiveKind::ReduceScatter);
  EXPECT_EQ(rc::collective_from_file_name("reduce_perf.txt"), CollectiveKind::Reduce);
  EXPECT_EQ(rc::collective_from_file_name("AllReduce-8gpu.out"), CollectiveKind::AllReduce);
  EXPECT_EQ(rc::collective_from_file_name("all_gather_perf"), CollectiveKind::AllGather);
  EXPECT_EQ(rc::collective_from_file_name("alltoall_perf.log"), CollectiveKind::AllToAll);
  EXPECT_EQ(rc::collective_from_file_name("sendrecv_perf.log"), CollectiveKind::SendRecv);
  EXPECT_EQ(rc::collective_from_file_name("broadcast_perf.log"), CollectiveKind::Broadcast);
  EXPECT_FALSE(rc::collective_from_file_name("gather_perf.log", &unsupported));
  EXPECT_TRUE(unsupported);
  EXPECT_FALSE(rc::collective_from_file_name("run1.log", &unsupported));
  EXPECT_FALSE(unsupported);
}

TEST(NcclTestsLog, OldFormatWithErrorColumn)
{
  const auto path = data("nccl_tests_2.8_all_reduce_a100.log");
  const auto log = rc::parse_nccl_tests_log(path);
  ASSERT_EQ(sizes_from_header(path), 25); // 8 B .. 128 MiB
  EXPECT_EQ(static_cast<int>(log.rows.size()), count_data_rows(path));
  EXPECT_EQ(static_cast<int>(log.rows.size()), sizes_from_header(path));
  EXPECT_EQ(log.collective, CollectiveKind::AllReduce); // from the file name: this version does not print it
  EXPECT_EQ(log.wrong_column, "error");
  EXPECT_EQ(log.nccl_version, "2.7.8"); // from NCCL's own INFO line
  ASSERT_EQ(log.ranks.size(), 8u);
  EXPECT_EQ(log.gpu_models(), std::vector<std::string>{"A100-SXM4-40GB"});
  EXPECT_EQ(log.hosts(), 1);
  EXPECT_EQ(log.rows.front().size_bytes, 8);
  EXPECT_EQ(log.rows.front().count, 2);
  EXPECT_EQ(log.rows.front().redop, "sum");
  EXPECT_EQ(log.rows.back().size_bytes, 134217728);
  ASSERT_TRUE(log.avg_busbw_GBps);
  EXPECT_NO_THROW(rc::validate_nccl_tests_log(log)); // every error is within float's 1e-5
  EXPECT_EQ(rc::nccl_tests_nranks(log), 8);
}

TEST(NcclTestsLog, OldAllGatherWithoutRedopColumn)
{
  const auto path = data("nccl_tests_2.8_all_gather_a100.log");
  const auto log = rc::parse_nccl_tests_log(path);
  EXPECT_EQ(static_cast<int>(log.rows.size()), count_data_rows(path));
  EXPECT_EQ(static_cast<int>(log.rows.size()), sizes_from_header(path));
  EXPECT_EQ(log.collective, CollectiveKind::AllGather);
  EXPECT_EQ(log.columns[3], "time");
  EXPECT_TRUE(log.rows.front().redop.empty());
  EXPECT_EQ(log.gpu_models(), std::vector<std::string>{"A100-SXM4-80GB"});
  EXPECT_NO_THROW(rc::validate_nccl_tests_log(log));
  EXPECT_EQ(rc::nccl_tests_nranks(log), 8);
}

TEST(NcclTestsLog, Version213WithNcclInfoLinesAndForcedAlgorithm)
{
  const auto path = data("nccl_tests_2.13_all_reduce_h100_ring.log");
  const auto log = rc::parse_nccl_tests_log(path);
  EXPECT_EQ(static_cast<int>(log.rows.size()), count_data_rows(path));
  EXPECT_EQ(static_cast<int>(log.rows.size()), sizes_from_header(path));
  EXPECT_EQ(log.wrong_column, "#wrong");
  EXPECT_EQ(log.algo_env, "Ring");
  EXPECT_EQ(log.nccl_version, "2.18.3");
  EXPECT_EQ(log.gpu_models(), std::vector<std::string>{"NVIDIA H100 80GB HBM3"});
  EXPECT_NO_THROW(rc::validate_nccl_tests_log(log));
}

TEST(NcclTestsLog, Version217Header)
{
  const auto path = data("nccl_tests_2.17_all_reduce_h200.log");
  const auto log = rc::parse_nccl_tests_log(path);
  EXPECT_EQ(static_cast<int>(log.rows.size()), count_data_rows(path));
  EXPECT_EQ(static_cast<int>(log.rows.size()), sizes_from_header(path)); // 8 B .. 16 GiB: 32 sizes
  EXPECT_EQ(log.program, "all_reduce_perf");
  EXPECT_EQ(log.nccl_tests_version, "2.17.6");
  EXPECT_EQ(log.nccl_version, "2.27.7"); // nccl-library=22707
  EXPECT_EQ(log.header_nthreads, 1);
  EXPECT_EQ(log.header_ngpus, 8);
  EXPECT_EQ(log.gpu_models(), std::vector<std::string>{"NVIDIA H200"});
  // Every row's times equal the raw tokens at nccl-tests' positions: 5 leading fields, then time/algbw/busbw/#wrong
  // out-of-place, then the same in-place.
  const auto ls = lines_of(path);
  for (const auto& r : log.rows) {
    const auto t = tokens(ls[static_cast<size_t>(r.line - 1)]);
    ASSERT_EQ(t.size(), 13u);
    EXPECT_DOUBLE_EQ(r.out_of_place->time_us, std::stod(t[5]));
    EXPECT_DOUBLE_EQ(r.out_of_place->busbw_GBps, std::stod(t[7]));
    EXPECT_DOUBLE_EQ(r.in_place->time_us, std::stod(t[9]));
    EXPECT_EQ(r.in_place->wrong, 0.0);
  }
}

TEST(NcclTestsLog, PerIterationColumnsAreSkipped)
{
  const auto path = data("nccl_tests_2.17_reduce_scatter_h200_per_iter.log");
  const auto log = rc::parse_nccl_tests_log(path);
  EXPECT_EQ(static_cast<int>(log.rows.size()), sizes_from_header(path));
  EXPECT_EQ(log.collective, CollectiveKind::ReduceScatter);
  const auto ls = lines_of(path);
  for (const auto& r : log.rows) {
    const auto t = tokens(ls[static_cast<size_t>(r.line - 1)]);
    ASSERT_EQ(t.size(), 5u + 2 * 8u); // time algbw busbw #wrong i_min i_max i_p99 i_cv% per half
    EXPECT_DOUBLE_EQ(r.out_of_place->time_us, std::stod(t[5]));
    EXPECT_DOUBLE_EQ(r.in_place->time_us, std::stod(t[13]));
  }
  EXPECT_EQ(rc::nccl_tests_nranks(log), 8);
}

TEST(NcclTestsLog, TwoNodeSendRecvWithoutValidation)
{
  const auto path = data("nccl_tests_2.17_sendrecv_h200_2nodes.log");
  const auto log = rc::parse_nccl_tests_log(path);
  EXPECT_EQ(static_cast<int>(log.rows.size()), sizes_from_header(path));
  EXPECT_EQ(log.collective, CollectiveKind::SendRecv);
  EXPECT_EQ(log.hosts(), 2);
  EXPECT_FALSE(log.rows.front().out_of_place->wrong); // "N/A": run with -c 0
  EXPECT_EQ(rc::nccl_tests_nranks(log), 2);
}

TEST(NcclTestsLog, HeaderMarksLostInCopyPaste)
{
  // GitHub turns '# ' lines outside code blocks into headings, so pasted logs lose their '#'. Made by us in the
  // format of NVIDIA/nccl-tests src/util.cu with two GPUs: size / (time in us * 1e3) = algbw; busbw = algbw (2 ranks:
  // all_reduce factor 2*(2-1)/2 = 1).
  const std::string text =
      " nThread 1 nGpus 2 minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 5 iters: 20\n"
      " Using devices\n"
      "  Rank  0 Group  0 Pid   1000 on      node1 device  0 [0x07] NVIDIA A100-SXM4-80GB\n"
      "  Rank  1 Group  0 Pid   1000 on      node1 device  1 [0x0f] NVIDIA A100-SXM4-80GB\n"
      "                                                             out-of-place                       in-place\n"
      "       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
      "     1048576        262144     float     sum      -1    20.97   50.00   50.00      0    20.97   50.00   50.00   "
      "   0\n"
      "     2097152        524288     float     sum      -1    41.94   50.00   50.00      0    41.94   50.00   50.00   "
      "   0\n"
      "     4194304       1048576     float     sum      -1    83.89   50.00   50.00      0    83.89   50.00   50.00   "
      "   0\n"
      " Out of bounds values : 0 OK\n"
      " Avg bus bandwidth    : 50\n";
  const auto log = rc::parse_nccl_tests_text(text, "all_reduce_perf.txt");
  EXPECT_EQ(log.rows.size(), 3u);
  EXPECT_EQ(log.ranks.size(), 2u);
  EXPECT_EQ(rc::nccl_tests_nranks(log), 2);
  ASSERT_TRUE(log.avg_busbw_GBps);
  EXPECT_DOUBLE_EQ(*log.avg_busbw_GBps, 50.0);
}

TEST(NcclTestsLog, RankCountInferredFromBusbwWhenRankLinesAreMissing)
{
  // 8 ranks: all_reduce busbw = algbw * 2*(8-1)/8 = algbw * 1.75 (doc/PERFORMANCE.md). No Rank or nThread lines.
  const std::string text = "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
                           "time   algbw   busbw #wrong\n"
                           "   134217728      33554432     float     sum      -1   1342.2  100.00  175.00      0   "
                           "1342.2  100.00  175.00      0\n"
                           "# Avg bus bandwidth    : 175\n";
  const auto log = rc::parse_nccl_tests_text(text, "all_reduce_perf.log");
  EXPECT_EQ(rc::nccl_tests_nranks(log), 8);
}

TEST(NcclTestsLog, RankLinesThatDisagreeWithBusbwAreRefused)
{
  // Two Rank lines (factor 1), but busbw = 1.75 x algbw, which is the factor of 8 ranks: the log was cut.
  const std::string text = "#  Rank  0 Group  0 Pid 1 on n device  0 [0x07] NVIDIA H200\n"
                           "#  Rank  1 Group  0 Pid 1 on n device  1 [0x0f] NVIDIA H200\n"
                           "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
                           "time   algbw   busbw #wrong\n"
                           "   134217728      33554432     float     sum      -1   1342.2  100.00  175.00      0   "
                           "1342.2  100.00  175.00      0\n"
                           "# Avg bus bandwidth    : 175\n";
  const auto log = rc::parse_nccl_tests_text(text, "all_reduce_perf.log");
  try {
    (void)rc::nccl_tests_nranks(log);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 4);
    EXPECT_NE(std::string(e.what()).find("rank count"), std::string::npos) << e.what();
  }
}

TEST(NcclTestsLog, TruncatedLogWithoutFooter)
{
  const auto path = data("bad_truncated_no_footer.log");
  try {
    (void)rc::parse_nccl_tests_log(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, path);
    EXPECT_EQ(e.where().line, static_cast<int>(lines_of(path).size()));
    EXPECT_NE(e.rule().find("Avg bus bandwidth"), std::string::npos) << e.what();
    EXPECT_FALSE(e.fix().empty());
  }
}

TEST(NcclTestsLog, PartialLastRow)
{
  const auto path = data("bad_partial_row.log");
  try {
    (void)rc::parse_nccl_tests_log(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, static_cast<int>(lines_of(path).size())); // the cut row is the last line
    EXPECT_NE(e.rule().find("incomplete data row"), std::string::npos) << e.what();
  }
}

TEST(NcclTestsLog, WrongResultsAreRefused)
{
  const auto path = data("bad_wrong_results.log");
  const auto log = rc::parse_nccl_tests_log(path); // the text itself is well formed
  try {
    rc::validate_nccl_tests_log(log);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, line_number_of(path, std::regex(R"(^\s+4096\s)")));
    EXPECT_NE(e.rule().find("wrong"), std::string::npos) << e.what();
  }
}

TEST(NcclTestsLog, OldErrorColumnAboveTolerance)
{
  // The old "error" column holds the largest deviation; nccl-tests' own tolerance for float was 1e-5.
  const std::string head = "# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20\n"
                           "#   Rank  0 Pid 1 on n device  0 [0x07] Tesla V100-SXM2-32GB\n"
                           "#   Rank  1 Pid 1 on n device  1 [0x0f] Tesla V100-SXM2-32GB\n"
                           "#       size         count    type   redop     time   algbw   busbw  error     time   "
                           "algbw   busbw  error\n";
  const auto ok = rc::parse_nccl_tests_text(
      head + "     8     2   float     sum    20.00    0.00    0.00  9e-06    20.00    0.00    0.00  0e+00\n"
             "# Avg bus bandwidth    : 0\n",
      "all_reduce_perf.log");
  EXPECT_NO_THROW(rc::validate_nccl_tests_log(ok));
  const auto bad = rc::parse_nccl_tests_text(
      head + "     8     2   float     sum    20.00    0.00    0.00  2e-03    20.00    0.00    0.00  0e+00\n"
             "# Avg bus bandwidth    : 0\n",
      "all_reduce_perf.log");
  EXPECT_THROW(rc::validate_nccl_tests_log(bad), InputError);
}

TEST(NcclTestsLog, MixedGpuModelsAreRefused)
{
  const auto path = data("bad_mixed_gpus.log");
  const auto log = rc::parse_nccl_tests_log(path);
  try {
    rc::validate_nccl_tests_log(log);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("NVIDIA H200"), std::string::npos) << what;
    EXPECT_NE(what.find("NVIDIA H100 80GB HBM3"), std::string::npos) << what;
    EXPECT_EQ(e.where().line, line_number_of(path, std::regex("Rank  0 Group")));
  }
}

TEST(NcclTestsLog, NoDataRows)
{
  const auto path = data("bad_no_rows.log");
  try {
    (void)rc::parse_nccl_tests_log(path);
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, line_number_of(path, std::regex(R"(^#\s+size\s+count)")));
    EXPECT_NE(e.rule().find("no data rows"), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)rc::parse_nccl_tests_text("hello\nworld\n", "notes.txt"), InputError);
}

TEST(NcclTestsLog, TwoRunsInOneFile)
{
  const std::string run = "#       size         count      type   redop    root     time   algbw   busbw #wrong     "
                          "time   algbw   busbw #wrong\n"
                          "     1048576        262144     float     sum      -1    20.97   50.00   50.00      0    "
                          "20.97   50.00   50.00      0\n";
  try {
    (void)rc::parse_nccl_tests_text(run + run + "# Avg bus bandwidth : 50\n", "all_reduce_perf.log");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 3);
  }
}

// NCCL_ALGO / NCCL_PROTO in NCCL's own syntax (parseList in NVIDIA/nccl src/graph/tuning.cc): the first section
// applies to every function, a later "function:list" section replaces it for that function, and '^' excludes. The
// reader keeps the whole value as NCCL printed it; calibrate resolves it for the log's collective (all_reduce): one
// algorithm left enabled for all_reduce forces it, more than one only restricts NCCL's choice (no algorithm label).
TEST(NcclTestsLog, PerFunctionAlgorithmSyntaxIsResolvedForTheLogsCollective)
{
  using railyard::models::Algorithm;
  using railyard::models::Protocol;
  namespace fs = std::filesystem;
  const std::string fixture = rc::read_text_file(data("nccl_tests_2.13_all_reduce_h100_ring.log"));
  const std::string algo_line = "NCCL_ALGO set by environment to Ring";
  const auto at = fixture.find(algo_line);
  ASSERT_NE(at, std::string::npos);
  const auto line_start = fixture.rfind('\n', at) + 1;
  const std::string info_prefix = fixture.substr(line_start, at - line_start); // "h100-a:3301:3318 [0] NCCL INFO "
  const fs::path dir = fs::temp_directory_path() / ("railyard_nccl_algo_syntax_" + std::to_string(getpid()));
  fs::create_directories(dir);

  struct Case {
    std::string algo, proto;
    std::optional<Algorithm> algorithm;
    std::optional<Protocol> protocol;
  };
  const Case cases[] = {
      // all_reduce's own section wins over the first one: Ring (the first section alone would say Tree).
      {"tree;allreduce:ring", "", Algorithm::Ring, std::nullopt},
      // Only all_reduce restricted, to Ring; the other functions keep every algorithm.
      {"allreduce:ring", "", Algorithm::Ring, std::nullopt},
      // Two algorithms left for all_reduce (Tree, NVLS): a restriction, not a forced algorithm.
      {"ring;allreduce:tree,nvls", "", std::nullopt, std::nullopt},
      // A section for another function leaves all_reduce with the first section's Tree.
      {"tree;allgather:ring", "", Algorithm::Tree, std::nullopt},
      // Protocols the same way: all_reduce's section leaves LL128 alone; "^LL" leaves two (LL128, Simple).
      {"ring", "^LL;allreduce:LL128", Algorithm::Ring, Protocol::LL128},
      {"ring", "^LL", Algorithm::Ring, std::nullopt},
  };
  for (const auto& c : cases) {
    std::string text = fixture;
    std::string env_lines = algo_line.substr(0, algo_line.size() - 4) + c.algo;
    if (!c.proto.empty()) env_lines += "\n" + info_prefix + "NCCL_PROTO set by environment to " + c.proto;
    text.replace(at, algo_line.size(), env_lines);
    const std::string path = (dir / "all_reduce_perf.log").string(); // names no algorithm or protocol
    std::ofstream(path) << text;
    SCOPED_TRACE("NCCL_ALGO=" + c.algo + " NCCL_PROTO=" + c.proto);
    const auto log = rc::parse_nccl_tests_log(path);
    EXPECT_EQ(log.algo_env, c.algo);
    EXPECT_EQ(log.proto_env, c.proto);
    const auto profile = rc::calibrate({path}, {}).profile;
    ASSERT_EQ(profile.collectives.size(), 1u);
    EXPECT_EQ(profile.collectives[0].algorithm, c.algorithm);
    EXPECT_EQ(profile.collectives[0].protocol, c.protocol);
  }

  // A name NCCL does not know is refused as NCCL refuses it, at the log's line that shows it.
  std::string bad = fixture;
  bad.replace(at, algo_line.size(), "NCCL_ALGO set by environment to allreduce:rings");
  const std::string path = (dir / "all_reduce_perf.log").string();
  std::ofstream(path) << bad;
  try {
    (void)rc::calibrate({path}, {});
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, path);
    EXPECT_EQ(e.where().line, line_number_of(path, std::regex("NCCL_ALGO set by environment")));
    EXPECT_EQ(e.where().field, "NCCL_ALGO");
    EXPECT_NE(std::string(e.what()).find("rings"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// Found by tests/fuzz (fuzz_nccl_tests_log, fuzz_calibrate): a size or count beyond the largest long long made
// std::stoll throw std::out_of_range, which left the reader as exit 3. Each such field is now refused with its line.
TEST(NcclTestsLog, WholeNumbersTooLargeForTheirFieldAreRefusedWithTheirLine)
{
  const auto path = data("nccl_tests_2.17_all_reduce_h200.log");
  const std::vector<std::string> lines = lines_of(path);
  // 2^63: one more than the largest long long, so it fits no size_bytes or count.
  const std::string too_big = std::to_string(static_cast<unsigned long long>(1) << 63);
  const int first_row = line_number_of(path, std::regex(R"(^\s*8\s+2\s)"));
  const int header = line_number_of(path, std::regex(R"(nThread \d+ nGpus)"));
  ASSERT_GT(first_row, 0);
  ASSERT_GT(header, 0);
  // (line, token index, new token, field the error must name); the line is rebuilt from its tokens.
  struct Case {
    int line;
    size_t token;
    std::string with;
    std::string field;
  };
  const std::vector<Case> cases = {
      {first_row, 0, too_big, "size"},
      {first_row, 1, too_big, "count"},
      {header, 2, "99999999999", "nThread"}, // "#", "nThread", N
      // Within an int, but nThread x nGpus (the rank count of a log without Rank lines) must be one too: each is at
      // most 2^14 GPUs of one process, so the product stays below 2^28.
      {header, 2, "70000", "nThread"},
      {header, 4, "70000", "nGpus"},
  };
  for (const Case& c : cases) {
    std::string text;
    for (size_t i = 0; i < lines.size(); ++i) {
      if (static_cast<int>(i) + 1 != c.line) {
        text += lines[i] + "\n";
        continue;
      }
      std::vector<std::string> toks = tokens(lines[i]);
      ASSERT_LT(c.token, toks.size());
      toks[c.token] = c.with;
      for (const auto& t : toks)
        text += t + " ";
      text += "\n";
    }
    try {
      (void)rc::parse_nccl_tests_text(text, "big.log");
      FAIL() << "expected an InputError for field " << c.field;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().file, "big.log");
      EXPECT_EQ(e.where().line, c.line) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.field), std::string::npos) << e.what(); // the field, by its name
    }
  }
}

// Found by tests/fuzz (fuzz_nccl_tests_log): a column header whose measurement groups are narrower than nccl-tests'
// (time, algbw, busbw, #wrong) made the row reader index past the end of a data row (an AddressSanitizer report;
// garbage or a crash without it). Such a header is now refused at its line.
TEST(NcclTestsLog, ColumnHeaderWithoutWholeMeasurementGroupsIsRefused)
{
  const std::string text = "# nThread 1 nGpus 2 minBytes 8 maxBytes 16 step: 2(factor)\n"
                           "#  size count type redop root time algbw time algbw\n" // line 2: groups of 2 columns
                           "      8     2 float sum   -1   10.0  0.00  10.0  0.00\n"
                           "     16     4 float sum   -1   10.0  0.00  10.0  0.00\n"
                           "# Avg bus bandwidth    : 0\n";
  try {
    (void)rc::parse_nccl_tests_text(text, "narrow.log");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 2) << e.what();
    EXPECT_NE(e.rule().find("column header"), std::string::npos) << e.what();
  }
}

// Found by tests/fuzz (fuzz_nccl_tests_log, fuzz_calibrate): a line of only a vertical tab or a form feed survived
// trim() but split into no tokens, and the reader looked at the first token of none (undefined behaviour). Such a
// line is blank: the log reads as without it.
TEST(NcclTestsLog, LineOfOtherWhitespaceIsBlank)
{
  const auto path = data("nccl_tests_2.17_all_reduce_h200.log");
  std::string with_blanks;
  for (const auto& l : lines_of(path))
    with_blanks += l + "\n\v\n\f\n";
  const rc::NcclTestsLog plain = rc::parse_nccl_tests_log(path);
  const rc::NcclTestsLog blanks = rc::parse_nccl_tests_text(with_blanks, "blanks.log");
  ASSERT_EQ(blanks.rows.size(), plain.rows.size());
  for (size_t i = 0; i < plain.rows.size(); ++i) {
    EXPECT_EQ(blanks.rows[i].size_bytes, plain.rows[i].size_bytes);
    EXPECT_EQ(blanks.rows[i].line, 3 * plain.rows[i].line - 2); // two blank lines after every original line
  }
}

// rccl-tests on AMD Instinct MI300X: two real logs, vendored verbatim (tests/calibration/data/README.md). The table is
// nccl-tests'; the header has rccl-tests' version line, Rank lines without Group, and (with NCCL_DEBUG=VERSION) RCCL's
// own version block.
TEST(NcclTestsLog, RcclTestsSingleNodeMi300x)
{
  const auto path = data("rccl_tests_all_reduce_mi300x_1node.log");
  const auto log = rc::parse_nccl_tests_log(path);
  EXPECT_EQ(static_cast<int>(log.rows.size()), count_data_rows(path));
  EXPECT_EQ(static_cast<int>(log.rows.size()), sizes_from_header(path)); // 8 B .. 8 GiB: 31 sizes
  EXPECT_EQ(log.collective, CollectiveKind::AllReduce);                  // from the file name
  EXPECT_EQ(log.tests_suite, "rccl-tests");
  EXPECT_EQ(log.nccl_tests_version, "develop:a7809b3");
  EXPECT_EQ(log.library, rc::CollectiveLibrary::Rccl);
  EXPECT_EQ(log.library_evidence,
            "'rccl-tests: Version' on line " +
                std::to_string(line_number_of(path, std::regex("^rccl-tests: Version develop:a7809b3$"))));
  EXPECT_TRUE(log.nccl_version.empty()); // run without NCCL_DEBUG=VERSION: RCCL did not print its version
  EXPECT_EQ(log.gpu_models(), std::vector<std::string>{"AMD Instinct MI300X"});
  EXPECT_EQ(log.ranks.size(), 8u);
  EXPECT_EQ(log.hosts(), 1);
  EXPECT_EQ(rc::nccl_tests_nranks(log), 8);
  EXPECT_NO_THROW(rc::validate_nccl_tests_log(log));
  const auto ls = lines_of(path);
  for (const auto& r : log.rows) {
    const auto t = tokens(ls[static_cast<size_t>(r.line - 1)]);
    ASSERT_EQ(t.size(), 13u);
    EXPECT_DOUBLE_EQ(r.out_of_place->time_us, std::stod(t[5]));
    EXPECT_DOUBLE_EQ(r.in_place->busbw_GBps, std::stod(t[11]));
  }
}

TEST(NcclTestsLog, RcclTestsTwoNodesMi300xWithRcclVersionBlock)
{
  const auto path = data("rccl_tests_all_reduce_mi300x_2nodes.log");
  const auto log = rc::parse_nccl_tests_log(path);
  EXPECT_EQ(static_cast<int>(log.rows.size()), count_data_rows(path));
  EXPECT_EQ(static_cast<int>(log.rows.size()), sizes_from_header(path)); // 8 B .. 16 GiB: 32 sizes
  EXPECT_EQ(log.nccl_tests_version, "develop:448c4c7");
  EXPECT_EQ(log.library, rc::CollectiveLibrary::Rccl);
  EXPECT_EQ(log.nccl_version, "2.22.3"); // "RCCL version : 2.22.3-HEAD:7d8d67c"
  EXPECT_EQ(log.version_evidence, "'RCCL version : 2.22.3-HEAD:7d8d67c' on line " +
                                      std::to_string(line_number_of(path, std::regex("^RCCL version : "))));
  EXPECT_EQ(log.ranks.size(), 16u);
  EXPECT_EQ(log.hosts(), 2);
  EXPECT_EQ(log.ranks[8].host, "gpu-56");
  EXPECT_EQ(log.ranks[8].device, 0);
  EXPECT_EQ(log.ranks[15].gpu_model, "AMD Instinct MI300X");
  EXPECT_EQ(rc::nccl_tests_nranks(log), 16); // busbw/algbw = 2 x 15/16 agrees with the 16 Rank lines
}

// The other spellings of the library in the record: rccl-tests rebased on nccl-tests 2.17 ("# rccl-tests version ...
// rccl-library=CODE", ROCm/rocm-systems pull request 3415), RCCL's INFO banner, and hipified NCCL banners.
TEST(NcclTestsLog, RcclVersionSpellings)
{
  const std::string table = "#       size         count      type   redop    root     time   algbw   busbw #wrong"
                            "     time   algbw   busbw #wrong\n"
                            "        1024           256     float     sum      -1    13.67    0.07    0.13      0"
                            "    14.87    0.07    0.12      0\n"
                            "# Avg bus bandwidth    : 0.1\n";
  const std::string rank = "#  Rank  0 Group  0 Pid 135241 on host device  0 [0000:c4:00] Radeon 8050S Graphics\n";
  const auto rebased = rc::parse_nccl_tests_text(
      "# rccl-tests version 2.17.9-develop:f220897c9b rccl-headers=22803 rccl-library=22803\n" + rank + table,
      "all_reduce.log");
  EXPECT_EQ(rebased.tests_suite, "rccl-tests");
  EXPECT_EQ(rebased.nccl_tests_version, "2.17.9-develop:f220897c9b");
  EXPECT_EQ(rebased.nccl_version, "2.28.3");
  EXPECT_EQ(rebased.library, rc::CollectiveLibrary::Rccl);

  const auto info = rc::parse_nccl_tests_text(
      "host:1:1 [0] NCCL INFO RCCL version 2.18.3+hip6.0 HEAD:2e0b8e4\n" + rank + table, "all_reduce.log");
  EXPECT_EQ(info.nccl_version, "2.18.3");
  EXPECT_EQ(info.library, rc::CollectiveLibrary::Rccl);
  EXPECT_TRUE(info.tests_suite.empty());

  const auto hipified = rc::parse_nccl_tests_text("NCCL version 2.13.4+hip5.4\n" + rank + table, "all_reduce.log");
  EXPECT_EQ(hipified.nccl_version, "2.13.4");
  EXPECT_EQ(hipified.library, rc::CollectiveLibrary::Rccl);

  // An AMD GPU name alone says RCCL; an NVIDIA log stays NCCL.
  const std::string amd_rank = "#  Rank  0 Group  0 Pid 1 on host device  0 [0x05] AMD Instinct MI300X\n";
  EXPECT_EQ(rc::parse_nccl_tests_text(amd_rank + table, "all_reduce.log").library, rc::CollectiveLibrary::Rccl);
  const auto nccl = rc::parse_nccl_tests_log(data("nccl_tests_2.17_all_reduce_h200.log"));
  EXPECT_EQ(nccl.library, rc::CollectiveLibrary::Nccl);
  EXPECT_EQ(nccl.tests_suite, "nccl-tests");
}
