// The CSV files the programs in calibration/cuda/ write: comment lines "# key: value" with metadata (the first
// names the format, "# railyard_calibration_csv: 1"; then program, gpu_model, driver, cuda_runtime, nccl_version,
// date, host, ...), one header line of column names, one line per measurement, and a last comment line
// "# complete: true" that a program writes only when it finished, so a cut-short file is recognised.
#pragma once

#include "railyard/calibration/digest.hpp"

#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace railyard::calibration {

inline constexpr const char* kCsvMagicKey = "railyard_calibration_csv";
inline constexpr int kCsvVersion = 1;

struct CalibrationCsv {
  struct Row {
    int line = 0;
    std::vector<std::string> cells;
  };

  InputFile input;
  std::string program;                     ///< metadata "program": nccl_sweep, peer_copy, gemm_bench, mem_bench
  std::map<std::string, std::string> meta; ///< every "# key: value" line (the first occurrence of a key)
  std::map<std::string, int> meta_line;
  std::vector<std::string> notes; ///< "# note: ..." lines, e.g. algorithm/protocol pairs NCCL refused
  std::vector<std::string> columns;
  int header_line = 0;
  std::vector<Row> rows;

  [[nodiscard]] std::string meta_or(const std::string& key, const std::string& fallback = "") const;
  /// Index of a column; InputError naming the file, the header line and the missing column when absent.
  [[nodiscard]] size_t column(const std::string& name) const;
  [[nodiscard]] bool has_column(const std::string& name) const;
  /// Typed cells; InputError naming file, line and column when the cell is not what the column holds.
  [[nodiscard]] const std::string& text(const Row& r, const std::string& col) const;
  [[nodiscard]] double number(const Row& r, const std::string& col) const; ///< finite
  /// A whole number in [min, max] (default: any long long); out of range, the message names the range.
  [[nodiscard]] long long integer(const Row& r, const std::string& col,
                                  long long min = std::numeric_limits<long long>::min(),
                                  long long max = std::numeric_limits<long long>::max()) const;
};

/// True when the leading comment lines of `text` carry "# railyard_calibration_csv: N".
bool is_calibration_csv(std::string_view text);

/// Parses one file. InputError (file, line, rule, fix) for: an unknown format version, no header, a row whose cell
/// count differs from the header's, a file without the final "# complete: true" (the program did not finish), no
/// data rows.
CalibrationCsv parse_calibration_csv(const std::string& text, const std::string& name);

} // namespace railyard::calibration
