#include "railyard/calibration/calibration_csv.hpp"

#include "railyard/common/csv.hpp"
#include "railyard/common/error.hpp"
#include "railyard/common/numbers.hpp"
#include "railyard/common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

namespace railyard::calibration {
namespace {

std::vector<std::string> trimmed(std::vector<std::string> cells)
{
  for (auto& c : cells)
    c = trim(c);
  return cells;
}

// "# key: value" -> (key, value); keys are identifiers.
bool meta_pair(const std::string& body, std::string& key, std::string& value)
{
  const auto colon = body.find(':');
  if (colon == std::string::npos || colon == 0) return false;
  key = trim(body.substr(0, colon));
  for (char c : key)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  value = trim(body.substr(colon + 1));
  return true;
}

} // namespace

std::string CalibrationCsv::meta_or(const std::string& key, const std::string& fallback) const
{
  const auto it = meta.find(key);
  return it == meta.end() ? fallback : it->second;
}

bool CalibrationCsv::has_column(const std::string& name) const
{
  for (const auto& c : columns)
    if (c == name) return true;
  return false;
}

size_t CalibrationCsv::column(const std::string& name) const
{
  for (size_t i = 0; i < columns.size(); ++i)
    if (columns[i] == name) return i;
  throw InputError({input.path, header_line, name},
                   fmt::format("the {} header has no column '{}'", program.empty() ? "CSV" : program, name),
                   "pass the unmodified CSV the calibration program wrote");
}

const std::string& CalibrationCsv::text(const Row& r, const std::string& col) const
{
  return r.cells[column(col)];
}

double CalibrationCsv::number(const Row& r, const std::string& col) const
{
  const std::string& s = text(r, col);
  try {
    return parse_finite(s);
  } catch (const std::invalid_argument& e) {
    throw InputError({input.path, r.line, col}, e.what(), "pass the unmodified CSV the calibration program wrote");
  }
}

long long CalibrationCsv::integer(const Row& r, const std::string& col, long long min, long long max) const
{
  const std::string& s = text(r, col);
  try {
    return parse_integer(s, min, max);
  } catch (const std::invalid_argument& e) {
    throw InputError({input.path, r.line, col}, e.what(), "pass the unmodified CSV the calibration program wrote");
  }
}

bool is_calibration_csv(std::string_view text)
{
  std::istringstream in{std::string(text)};
  std::string line;
  while (std::getline(in, line)) {
    const std::string t = trim(line);
    if (t.empty()) continue;
    if (t[0] != '#') return false;
    std::string key, value;
    if (meta_pair(trim(t.substr(1)), key, value) && key == kCsvMagicKey) return true;
  }
  return false;
}

CalibrationCsv parse_calibration_csv(const std::string& text, const std::string& name)
{
  CalibrationCsv csv;
  csv.input = describe_input(name, text);
  // RFC 4180 records (common/csv.hpp: CRLF or LF, quoted fields), with the "# key: value" lines as comments.
  const std::vector<CsvRecord> records = parse_csv(text, name, {.comment = '#'});
  int lineno = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
  if (!text.empty() && text.back() != '\n') ++lineno;
  int magic_line = 0;
  bool complete = false;
  for (const CsvRecord& record : records) {
    if (record.comment) {
      const std::string body = trim(record.fields.front());
      std::string key, value;
      if (!meta_pair(body, key, value)) continue;
      if (key == kCsvMagicKey) {
        magic_line = record.line;
        if (value != std::to_string(kCsvVersion))
          throw InputError({name, record.line, key},
                           fmt::format("calibration CSV format version '{}' is not supported (this railyard reads "
                                       "version {})",
                                       value, kCsvVersion),
                           "rerun the calibration programs of this railyard version");
      } else if (key == "note") {
        csv.notes.push_back(value);
      } else if (key == "complete") {
        complete = value == "true";
      } else if (!csv.meta.count(key)) {
        csv.meta[key] = value;
        csv.meta_line[key] = record.line;
      }
      continue;
    }
    auto cells = trimmed(record.fields);
    if (cells.size() == 1 && cells.front().empty()) continue; // a line of blanks
    if (complete)
      throw InputError({name, record.line, ""}, "data after the '# complete: true' line: two runs in one file",
                       "keep one program run per file");
    if (csv.columns.empty()) {
      csv.columns = std::move(cells);
      csv.header_line = record.line;
      continue;
    }
    if (cells.size() != csv.columns.size())
      throw InputError({name, record.line, ""},
                       fmt::format("row has {} cells where the header on line {} has {} columns{}", cells.size(),
                                   csv.header_line, csv.columns.size(),
                                   cells.size() < csv.columns.size() ? " (the file looks cut short)" : ""),
                       "rerun the program to completion; do not edit its CSV");
    csv.rows.push_back({record.line, std::move(cells)});
  }
  if (!magic_line)
    throw InputError({name, 1, ""}, "not a railyard calibration CSV (no '# railyard_calibration_csv: 1' line)",
                     "pass a CSV written by calibration/cuda programs, or an nccl-tests log");
  csv.program = csv.meta_or("program");
  if (csv.program.empty())
    throw InputError({name, magic_line, "program"}, "the CSV does not say which program wrote it ('# program: ...')",
                     "pass the unmodified CSV the calibration program wrote");
  if (csv.columns.empty())
    throw InputError({name, lineno, ""}, "no header line and no data rows",
                     "the program failed before measuring; rerun it and read its error output");
  if (!complete)
    throw InputError({name, lineno, ""},
                     fmt::format("the file ends without the '# complete: true' line that {} writes when it finishes: "
                                 "the run was cut short",
                                 csv.program),
                     "rerun the program to completion");
  if (csv.rows.empty() && csv.program != "peer_copy")
    throw InputError({name, csv.header_line, ""}, "no data rows after the header",
                     "rerun the program and read the notes it wrote ('# note: ...') for why nothing was measured");
  return csv;
}

} // namespace railyard::calibration
