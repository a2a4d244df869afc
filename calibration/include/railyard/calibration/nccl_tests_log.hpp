// Reader of the text that nccl-tests' programs (all_reduce_perf, all_gather_perf, ...) print, in the versions
// users have: the header (nThread/nGpus line, "Using devices" and one "Rank" line per GPU with its model name,
// optionally "nccl-tests version ... nccl-library=CODE" and "Collective test starting: X_perf"), the column header
// (with or without the redop/root columns; "#wrong" or the older "error"; optional per-iteration and timestamp
// columns), one row per size with out-of-place and in-place time/algbw/busbw, and the footer ("Out of bounds
// values", "Avg bus bandwidth"). NCCL's own INFO/WARN lines may be interleaved and are skipped.
//
// rccl-tests (ROCm/rccl-tests, AMD's fork for RCCL) prints the same table; its header differs: an unmarked
// "rccl-tests: Version develop:HASH" line (or, in the releases rebased on nccl-tests 2.17, "# rccl-tests version ...
// rccl-library=CODE"), Rank lines without "Group" and with the full PCI bus id, and, with NCCL_DEBUG=VERSION, RCCL's
// unmarked "RCCL version : 2.22.3-HEAD:HASH" / "HIP version" / "ROCm version" / "Hostname" / "Librccl path" block.
// calibration/README.md ("rccl-tests logs") shows both side by side.
//
// Format sources: NVIDIA/nccl-tests src/common.cu (older versions, with per-test print_header) and src/util.cu
// (writeDeviceReport, writeResultHeader, writeBenchmarkLinePreamble/Body, writeResultFooter); ROCm/rccl-tests
// src/common.cu; busbw as defined in doc/PERFORMANCE.md.
#pragma once

#include "railyard/calibration/digest.hpp"
#include "railyard/calibration/names.hpp"
#include "railyard/models/collective.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace railyard::calibration {

/// One half of a row: nccl-tests times every size out-of-place and in-place.
struct NcclTestsTiming {
  double time_us = 0;    ///< average time of one operation, microseconds ("time" or "cputime" column)
  double algbw_GBps = 0; ///< size / time, GB/s (1e9 B/s)
  double busbw_GBps = 0; ///< algbw x the collective's factor (doc/PERFORMANCE.md)
  /// "#wrong": number of wrong elements; older versions print "error", the largest absolute deviation instead.
  /// Empty when the log says N/A (run with -c 0).
  std::optional<double> wrong;
};

struct NcclTestsRow {
  int line = 0;                                ///< 1-based line in the log
  std::int64_t size_bytes = 0;                 ///< nccl-tests' "size" column
  std::int64_t count = 0;                      ///< elements
  std::string type;                            ///< "float", "half", ...
  std::string redop;                           ///< "sum", "none", or empty in versions without the column
  std::optional<NcclTestsTiming> out_of_place; ///< empty when only in-place was timed
  std::optional<NcclTestsTiming> in_place;
};

struct NcclTestsRank {
  int line = 0;
  int rank = 0;
  std::string host;
  int device = 0;
  std::string gpu_model; ///< e.g. "NVIDIA H100 80GB HBM3", as cudaGetDeviceProperties names it
};

/// A data row left out: a size, time, bandwidth or #wrong that is NaN, inf or negative (a failed measurement).
struct NcclTestsDroppedRow {
  int line = 0;
  std::string reason; ///< "out-of-place time is -3.1 us, negative"
};

struct NcclTestsLog {
  InputFile input;
  std::string program; ///< "all_reduce_perf" when the log or the file name says it
  std::optional<models::CollectiveKind> collective;
  bool unsupported_collective = false; ///< gather/scatter/hypercube: nccl-tests has them, Railyard not
  std::string nccl_version;            ///< "2.21.5" (NCCL's or RCCL's), empty when the log does not say
  std::string nccl_tests_version;      ///< "2.17.6" (rccl-tests: "develop:a7809b3"), newer logs only
  std::string tests_suite;             ///< "nccl-tests" or "rccl-tests" when the header says which
  /// RCCL when the log says so (an rccl-tests header, RCCL's version line, a "+hip" NCCL version) or its GPUs are
  /// AMD's (RCCL is the NCCL API on ROCm); NCCL when it names an NCCL version or nccl-tests; empty when neither.
  std::optional<CollectiveLibrary> library;
  std::string library_evidence; ///< what said so: "'rccl-tests: Version' on line 3"
  std::string version_evidence; ///< where nccl_version came from: "'RCCL version : 2.22.3-HEAD:7d8d67c' on line 22"
  int header_nthreads = 0, header_ngpus = 0; ///< from "# nThread 1 nGpus 8 ..."; 0 when absent
  std::vector<NcclTestsRank> ranks;          ///< "Rank" lines, in order
  std::string wrong_column;                  ///< "#wrong" or "error"
  std::vector<std::string> columns;          ///< column header names as printed
  int columns_line = 0;
  std::vector<NcclTestsRow> rows;
  std::vector<NcclTestsDroppedRow> dropped; ///< rows left out of `rows`, in order; calibrate reports each
  std::optional<double> avg_busbw_GBps;     ///< footer
  int footer_line = 0;
  std::optional<int> out_of_bounds; ///< footer "Out of bounds values : N"
  /// NCCL_ALGO / NCCL_PROTO as the log states them ("NCCL_ALGO=Ring", "NCCL_ALGO set by environment to Ring"),
  /// empty when it does not.
  std::string algo_env, proto_env;
  int algo_env_line = 0, proto_env_line = 0;

  /// Distinct GPU model names in the Rank lines, in order of first appearance.
  [[nodiscard]] std::vector<std::string> gpu_models() const;
  /// Distinct hosts in the Rank lines.
  [[nodiscard]] int hosts() const;
};

/// Parses a log file; structural problems are InputError naming the file, the line, the rule and the fix:
/// no data rows, a row with missing or non-numeric fields (a truncated log), a log that ends without the
/// "Avg bus bandwidth" footer, a second column header (two runs in one file). Semantic checks (#wrong, mixed GPU
/// models, rank count) are done by validate_nccl_tests_log so the raw parse stays usable.
NcclTestsLog parse_nccl_tests_log(const std::string& path);
NcclTestsLog parse_nccl_tests_text(const std::string& text, const std::string& name);

/// Rules a log must meet before it is fitted: every #wrong is 0 (or the old "error" within nccl-tests' own
/// tolerance for the type), "Out of bounds values" is 0, one GPU model, a collective Railyard models.
void validate_nccl_tests_log(const NcclTestsLog& log);

/// Number of ranks: the Rank lines when there are any, else nThread x nGpus of the header, else inferred from
/// busbw/algbw. Throws InputError when neither is possible or they disagree with the printed busbw/algbw.
int nccl_tests_nranks(const NcclTestsLog& log);

/// NCCL_VERSION_CODE -> "2.28.9" (codes below 2.9 are major*1000+minor*100+patch, later ones major*10000+...).
std::string nccl_version_from_code(long code);

/// Which collective a file name names ("all_reduce_perf.log", "allgather-8gpu.txt"); longest name first, so
/// "reduce_scatter" is not taken for "reduce".
std::optional<models::CollectiveKind> collective_from_file_name(const std::string& path, bool* unsupported = nullptr);

} // namespace railyard::calibration
