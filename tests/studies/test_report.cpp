// railyard report's library side: which kind a folder is, what the page's data holds (the CSV's cells as text, the
// sweep's axes from its file), that nothing in the data can close the page's <script> elements, and the output
// file's protections. The page in a browser is tests/report/ (ctest report.browser).
#include "railyard/studies/report.hpp"

#include "railyard/common/error.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

using namespace railyard;
using namespace railyard::studies;
namespace fs = std::filesystem;

namespace {

class Report : public ::testing::Test {
protected:
  void SetUp() override
  {
    dir_ = fs::temp_directory_path() /
           (std::string("railyard_report_") + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const fs::path& name, const std::string& text)
  {
    fs::create_directories((dir_ / name).parent_path());
    std::ofstream(dir_ / name, std::ios::binary) << text;
  }
  static std::string read(const fs::path& p)
  {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  /// The message of the InputError `f` throws ("" when it throws none).
  template <class F>
  static std::string input_error(F f)
  {
    try {
      f();
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
  fs::path dir_;
};

const char* const kResults = "point,status,cluster.nodes,workload.parallel.tp,workload.parallel.dp,step_time_s,error,"
                             "folder\r\n"
                             "0,ok,2,8,2,0.026898490059951607,,points/a\r\n"
                             "1,failed,2,3,5,,\"railyard: error: heads 32, tp 3 \"\"x\"\"\",points/b\r\n";

TEST_F(Report, EachKindIsKnownByItsFiles)
{
  write("run/summary.json", "{}");
  write("run/breakdown.csv", "rank\n");
  write("coll/summary.json", "{}");
  write("coll/collectives.csv", "op\n");
  write("sweep/results.csv", kResults);
  write("search/search.csv", "rank\n");
  write("plan/plan.csv", "cluster\n");
  write("plan/bom.csv", "cluster\n");
  EXPECT_EQ(detect_report_kind(dir_ / "run"), ReportKind::Run);
  EXPECT_EQ(detect_report_kind(dir_ / "coll"), ReportKind::Collectives);
  EXPECT_EQ(detect_report_kind(dir_ / "sweep"), ReportKind::Sweep);
  EXPECT_EQ(detect_report_kind(dir_ / "search"), ReportKind::Search);
  EXPECT_EQ(detect_report_kind(dir_ / "plan"), ReportKind::Plan);
}

TEST_F(Report, AFolderOfNoKnownKindIsRefusedNamingItAndTheFilesExpected)
{
  fs::create_directories(dir_ / "empty");
  const std::string empty = input_error([&] { detect_report_kind(dir_ / "empty"); });
  EXPECT_NE(empty.find((dir_ / "empty").string()), std::string::npos) << empty;
  EXPECT_NE(empty.find("the folder is empty"), std::string::npos) << empty;
  for (const char* f : {"search.csv", "results.csv", "plan.csv", "bom.csv", "breakdown.csv", "collectives.csv"})
    EXPECT_NE(empty.find(f), std::string::npos) << f << ": " << empty;
  write("other/notes.txt", "x");
  const std::string other = input_error([&] { detect_report_kind(dir_ / "other"); });
  EXPECT_NE(other.find("none of the files expected"), std::string::npos) << other;
  write("half_plan/plan.csv", "cluster\n");
  EXPECT_NE(input_error([&] { detect_report_kind(dir_ / "half_plan"); }).find("both plan.csv and bom.csv"),
            std::string::npos);
  EXPECT_NE(input_error([&] { detect_report_kind(dir_ / "missing"); }).find("no such folder"), std::string::npos);
}

// The table's cells reach the page as the CSV has them (quotes undone, nothing reformatted), and the sweep's axes come
// from the sweep file its marker names: tp is an axis, dp a derived key, not an axis of its own.
TEST_F(Report, ASweepsTableAndAxesAreTheFilesOwn)
{
  write("study.yaml", "base: x.yaml\naxes:\n  - {key: cluster.nodes, values: [2, 4]}\n"
                      "  - {key: workload.parallel.tp, values: [8, 3], name: tp}\n"
                      "derived:\n  - {key: workload.parallel.dp, expr: \"floor(gpus / tp)\"}\n");
  write("sweep/results.csv", kResults);
  write("sweep/.railyard-sweep", "{\"railyard_sweep\":1,\"sweep_file\":\"" + (dir_ / "study.yaml").string() + "\"}\n");
  const nlohmann::ordered_json d = report_data(dir_ / "sweep", ReportKind::Sweep);
  const auto& t = d["tables"]["results.csv"];
  ASSERT_EQ(t["rows"].size(), 2U);
  EXPECT_EQ(t["rows"][0][5], "0.026898490059951607");
  EXPECT_EQ(t["rows"][1][6], "railyard: error: heads 32, tp 3 \"x\"");
  EXPECT_EQ(d["axes"]["dimensions"], nlohmann::json::parse(R"([["cluster.nodes"], ["workload.parallel.tp"]])"));
  EXPECT_EQ(d["axes"]["derived"], nlohmann::json::parse(R"(["workload.parallel.dp"])"));
  // Without its sweep file, every dotted column is an axis (as notebooks/railyard_results.py takes them).
  fs::remove(dir_ / "study.yaml");
  const nlohmann::ordered_json lost = report_data(dir_ / "sweep", ReportKind::Sweep);
  EXPECT_EQ(lost["axes"]["dimensions"].size(), 3U);
  EXPECT_TRUE(lost.contains("axes_note"));
}

// A cell holding "</script>" or "<!--" cannot end the data block: the page has exactly its own closing tags.
TEST_F(Report, NothingInTheDataClosesThePagesScripts)
{
  write("sweep/results.csv", "point,status,error\r\n0,failed,</script><script>alert(1)</script><!--\r\n");
  std::ostringstream page;
  write_report_html(report_data(dir_ / "sweep", ReportKind::Sweep), page);
  const std::string html = page.str();
  std::size_t closes = 0;
  for (std::size_t at = html.find("</script>"); at != std::string::npos; at = html.find("</script>", at + 1))
    ++closes;
  EXPECT_EQ(closes, 3U); // the data, the chart library, the page's script
  EXPECT_EQ(html.find("alert(1)</script>"), std::string::npos);
  EXPECT_NE(html.find("\\u003c/script>\\u003cscript>alert(1)"), std::string::npos);
  EXPECT_NE(html.find("Apache ECharts"), std::string::npos); // the third-party notice
  EXPECT_NE(html.find("Apache License"), std::string::npos);
}

TEST_F(Report, AFileThatIsNotAnEarlierPageIsNeverReplaced)
{
  write("plan/plan.csv", "cluster,gpus\r\na,8\r\n");
  write("plan/bom.csv", "cluster,category,price_usd\r\na,gpu,1\r\n");
  write("plan/mine.html", "<html>my own page</html>");
  const std::string refused = input_error([&] { write_report(dir_ / "plan", dir_ / "plan" / "mine.html"); });
  EXPECT_NE(refused.find("not a page railyard report wrote"), std::string::npos) << refused;
  EXPECT_EQ(read(dir_ / "plan" / "mine.html"), "<html>my own page</html>");

  const ReportOutcome first = write_report(dir_ / "plan");
  EXPECT_EQ(first.kind, ReportKind::Plan);
  EXPECT_EQ(first.file, dir_ / "plan" / "report.html");
  EXPECT_TRUE(is_report_page(first.file));
  EXPECT_FALSE(is_report_page(dir_ / "plan" / "mine.html"));
  EXPECT_NO_THROW(write_report(dir_ / "plan")); // an earlier page is replaced
  for (const auto& e : fs::directory_iterator(dir_ / "plan"))
    EXPECT_EQ(e.path().filename().string().find(".railyard-"), std::string::npos) << "left over: " << e.path();
}

// A page written into a run's folder joins the run's list of files, so `railyard run --out` the same folder replaces
// it with the rest instead of refusing a file Railyard did not write.
TEST_F(Report, APageInARunsFolderIsListedAsOneOfTheRunsFiles)
{
  write("run/summary.json", R"({"scenario": "s", "step_time_s": 0.5, "breakdown_mean_over_ranks": {"compute_s": 0.25,
      "exposed_communication_s": {"tp": 0.125}, "bubble_s": 0, "idle_s": 0.125}})");
  write("run/breakdown.csv", "rank,compute_s\r\n0,0.25\r\n");
  write("run/.railyard-output",
        R"({"railyard_output": 1, "command": "run", "files": ["breakdown.csv", "summary.json"]})");
  write_report(dir_ / "run");
  const auto marker = nlohmann::json::parse(read(dir_ / "run" / ".railyard-output"));
  EXPECT_EQ(marker["files"], nlohmann::json::parse(R"(["breakdown.csv", "summary.json", "report.html"])"));
  const nlohmann::ordered_json d = report_data(dir_ / "run", ReportKind::Run);
  // (what, key, seconds as summary.json has them, fraction of the 0.5 s step)
  EXPECT_EQ(d["breakdown"][0], nlohmann::json::parse(R"(["compute", "breakdown_mean_over_ranks.compute_s", "0.25",
                                                         "0.5"])"));
  EXPECT_EQ(d["breakdown"][1][0], "exposed tp");
  EXPECT_EQ(d["breakdown"][1][3], "0.25");
}

} // namespace
