// railyard report: one self-contained HTML page for an output folder (a run, a sweep, a search or a plan). The page
// holds its data as JSON, the chart library (Apache ECharts, bundled at build time from the npm registry:
// studies/report/) and a small script that builds the charts and tables from the data, so it opens without a network.
// Tables show the cells of the folder's CSV files as they are written there, so a number on the page is the same text
// as in the table it came from (studies/README.md, "Report page").
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <ostream>
#include <string>
#include <string_view>

namespace railyard::studies {

enum class ReportKind {
  Run,         ///< railyard run of a training step: summary.json, breakdown.csv (trace.json, links.csv, ...)
  Collectives, ///< railyard run of a scenario of collectives: summary.json, collectives.csv (links.csv, ...)
  Sweep,       ///< railyard sweep: results.csv
  Search,      ///< railyard search: search.csv
  Plan,        ///< railyard plan: plan.csv and bom.csv (plan.json)
};

std::string_view to_string(ReportKind kind);

/// What `dir` is, from the files it holds. InputError naming the folder and the files each kind has when it is none of
/// them (an empty folder, a folder of something else, a sweep whose table was never gathered).
ReportKind detect_report_kind(const std::filesystem::path& dir);

/// Everything the page shows, read from `dir`: {"kind", "title", "folder", ...} and the kind's sections. Tables are
/// {"file", "header", "rows"} with the cells as text, as the CSV has them.
nlohmann::ordered_json report_data(const std::filesystem::path& dir, ReportKind kind);

/// The page: `data` in a <script type="application/json"> block, the chart library and the page's script inlined.
/// Its first line marks it as a report (is_report_page).
void write_report_html(const nlohmann::ordered_json& data, std::ostream& out);

/// Whether `file` is a page that railyard report wrote (its first line is the marker).
bool is_report_page(const std::filesystem::path& file);

/// The report page's default name inside the folder.
inline constexpr const char* kReportFileName = "report.html";

/// The charting library inlined in every page, and its version (from the package the build installed).
std::string_view report_chart_library();

struct ReportOutcome {
  ReportKind kind = ReportKind::Run;
  std::filesystem::path file; ///< the page written
};

/// railyard report DIR [-o FILE]: reads `dir`, writes `out` (empty: DIR/report.html) whole or not at all (a temporary
/// file renamed at the end). An existing `out` that is not an earlier report page is refused (InputError naming it),
/// so a report never takes the place of a file it did not write. A page written into a `railyard run` folder is added
/// to the folder's list of Railyard's files, so a later run into that folder replaces it as its own.
ReportOutcome write_report(const std::filesystem::path& dir, const std::filesystem::path& out = {});

} // namespace railyard::studies
