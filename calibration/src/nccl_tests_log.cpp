#include "railyard/calibration/nccl_tests_log.hpp"

#include "measured.hpp"

#include "railyard/calibration/names.hpp"
#include "railyard/common/numbers.hpp"
#include "railyard/common/units.hpp"

#include "railyard/common/error.hpp"
#include "railyard/common/text.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <utility>

namespace railyard::calibration {
namespace {

std::vector<std::string> split_ws(const std::string& s)
{
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string tok;
  while (in >> tok)
    out.push_back(tok);
  return out;
}

bool is_integer(const std::string& s)
{
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
}

// A whole token that reads as a number, however broken: signed, NaN, inf, or beyond a double (1e400).
bool is_number(const std::string& s)
{
  const LeadingNumber n = leading_number(s);
  return n.length > 0 && n.length == s.size();
}

std::optional<double> to_number(const std::string& s)
{
  try {
    return parse_finite(s);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

bool starts_with(const std::string& s, std::string_view prefix)
{
  return s.rfind(prefix, 0) == 0;
}

std::string lower(std::string s)
{
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// nccl-tests' own tolerance for the old "error" column (largest absolute deviation), from DeltaMaxValue() in
// older NVIDIA/nccl-tests src/common.cu: half 5e-2, float 1e-5, double 1e-12, integers exact. bfloat16 came later
// with the #wrong column; half's tolerance is used for it.
double old_error_tolerance(const std::string& type)
{
  const std::string t = lower(type);
  if (t == "half" || t == "float16" || t == "bfloat16") return 5e-2;
  if (t == "float" || t == "float32") return 1e-5;
  if (t == "double" || t == "float64") return 1e-12;
  return 0.0;
}

// How the measurement columns of a row are laid out, read from the column header.
struct Layout {
  size_t prefix = 0;      // size, count, type, [redop], [root]
  size_t group_width = 0; // time, algbw, busbw, #wrong [, i_min, i_max, i_p99, i_cv%]
  size_t groups = 0;      // 2: out-of-place and in-place
  size_t trailing = 0;    // a timestamp prints as two tokens (date and time)
  int redop_index = -1;
  // size and count first, then groups of equal width of at least time, algbw, busbw and #wrong (or error), then an
  // optional timestamp: what row() reads a data row by.
  bool regular = false;
};

Layout layout_from(const std::vector<std::string>& columns)
{
  Layout l;
  std::vector<size_t> time_at;
  for (size_t i = 0; i < columns.size(); ++i) {
    if (columns[i] == "time" || columns[i] == "cputime") time_at.push_back(i);
    if (columns[i] == "redop") l.redop_index = static_cast<int>(i);
  }
  if (time_at.empty()) return l;
  l.prefix = time_at.front();
  l.groups = time_at.size();
  const bool timestamp = columns.back() == "timestamp";
  l.trailing = timestamp ? 2 : 0;
  const size_t end = columns.size() - (timestamp ? 1 : 0);
  l.group_width = time_at.size() > 1 ? time_at[1] - time_at[0] : end - time_at[0];
  l.regular = l.prefix >= 2 && l.group_width >= 4 && l.prefix + l.groups * l.group_width == end;
  for (size_t k = 1; k < time_at.size(); ++k)
    l.regular = l.regular && time_at[k] == l.prefix + k * l.group_width;
  return l;
}

// nThread and nGpus count the GPUs of one nccl-tests process; their product (the rank count when a log has no Rank
// lines) must fit an int.
constexpr int kMaxHeaderGpus = 1 << 14;

class Parser {
public:
  Parser(std::string name, NcclTestsLog& log) : name_(std::move(name)), log_(log) {}

  [[noreturn]] void fail(int line, const std::string& rule, const std::string& fix) const
  {
    throw InputError({name_, line, ""}, rule, fix);
  }

  // A whole number of the header or footer (nThread, a rank, a device): refused at its line beyond an int.
  int header_int(const std::string& digits, int lineno, const char* what,
                 int max = std::numeric_limits<int>::max()) const
  {
    try {
      return static_cast<int>(parse_integer(digits, 0, max));
    } catch (const std::invalid_argument& e) {
      fail(lineno, fmt::format("{}: {}", what, e.what()), "pass the unmodified output of an nccl-tests program");
    }
  }

  // Whether `fields` tokens make a data row under the column header: every column, or the in-place half alone, or
  // the prefix with a blank redop/root.
  [[nodiscard]] bool row_shaped(size_t fields) const
  {
    if (log_.columns.empty()) return false;
    const size_t measured = layout_.groups * layout_.group_width;
    return fields == layout_.prefix + measured + layout_.trailing ||
           (layout_.groups == 2 && fields == layout_.prefix + layout_.group_width + layout_.trailing) ||
           (fields > measured + layout_.trailing && fields - measured - layout_.trailing >= 2 &&
            fields - measured - layout_.trailing < layout_.prefix);
  }

  // The first statement of the library wins; an RCCL one overrides an NCCL guess from a "NCCL version" line.
  void note_library(CollectiveLibrary l, std::string evidence)
  {
    if (log_.library == CollectiveLibrary::Rccl) return;
    if (log_.library && l == CollectiveLibrary::Nccl) return;
    log_.library = l;
    log_.library_evidence = std::move(evidence);
  }

  void scan_anywhere(const std::string& line, int lineno)
  {
    static const std::regex version_re(R"(NCCL version (\d+\.\d+\.\d+)(\S*))");
    // RCCL's banner: "RCCL version : 2.22.3-HEAD:7d8d67c" (showVersion, NCCL_DEBUG=VERSION, in recent RCCL) or
    // "NCCL INFO RCCL version 2.18.3+hip6.0 ..." in older ones.
    static const std::regex rccl_re(R"(RCCL version\s*:?\s*(\d+\.\d+\.\d+)\S*)");
    // NCCL's syntax (parseList, src/graph/tuning.cc): names, ',' '^', and per-function sections "allreduce:tree"
    // separated by ';'. The whole value is kept; calibrate resolves it for the log's collective.
    static const std::regex algo_re(R"(NCCL_ALGO(?:=| set by environment to )\s*([A-Za-z0-9_,^:;]+))");
    static const std::regex proto_re(R"(NCCL_PROTO(?:=| set by environment to )\s*([A-Za-z0-9_,^:;]+))");
    std::smatch m;
    if (std::regex_search(line, m, rccl_re)) {
      if (nccl_from_library_.empty()) {
        log_.nccl_version = m[1];
        log_.version_evidence = fmt::format("'{}' on line {}", m[0].str(), lineno);
      }
      note_library(CollectiveLibrary::Rccl, fmt::format("'{}' on line {}", m[0].str(), lineno));
    } else if (std::regex_search(line, m, version_re)) {
      if (nccl_from_library_.empty() && log_.library != CollectiveLibrary::Rccl) {
        log_.nccl_version = m[1];
        log_.version_evidence = fmt::format("'{}' on line {}", m[0].str(), lineno);
      }
      // RCCL built by hipify prints NCCL's banner with its HIP version: "NCCL version 2.13.4+hip5.4".
      if (m[2].str().find("hip") != std::string::npos)
        note_library(CollectiveLibrary::Rccl, fmt::format("'{}' on line {}", m[0].str(), lineno));
      else
        note_library(CollectiveLibrary::Nccl, fmt::format("'{}' on line {}", m[0].str(), lineno));
    }
    if (std::regex_search(line, m, algo_re) && log_.algo_env.empty()) {
      log_.algo_env = m[1];
      log_.algo_env_line = lineno;
    }
    if (std::regex_search(line, m, proto_re) && log_.proto_env.empty()) {
      log_.proto_env = m[1];
      log_.proto_env_line = lineno;
    }
  }

  void line(const std::string& raw, int lineno)
  {
    const std::string text = trim(raw);
    if (text.empty()) return;
    scan_anywhere(text, lineno);
    if (text.find("NCCL INFO") != std::string::npos || text.find("NCCL WARN") != std::string::npos) return;
    const bool hashed = text[0] == '#';
    const auto first = text.find_first_not_of('#');
    const std::string body = !hashed ? text : first == std::string::npos ? "" : trim(text.substr(first));
    if (hashed && body.empty()) return;

    // nccl-tests 2.14+: "# nccl-tests version 2.17.6 nccl-headers=22806 nccl-library=22806"; rccl-tests rebased on
    // it: "# rccl-tests version 2.17.9-develop:f220897 rccl-headers=22803 rccl-library=22803".
    if (starts_with(body, "nccl-tests version") || starts_with(body, "rccl-tests version")) {
      static const std::regex re(R"(^([nr]ccl)-tests version (\S+).*?[nr]ccl-library=(\d+))");
      std::smatch m;
      const bool rccl = body[0] == 'r';
      log_.tests_suite = rccl ? "rccl-tests" : "nccl-tests";
      if (std::regex_search(body, m, re)) {
        log_.nccl_tests_version = m[2];
        log_.nccl_version = nccl_version_from_code(header_int(m[3], lineno, rccl ? "rccl-library" : "nccl-library"));
        nccl_from_library_ = log_.nccl_version;
        log_.version_evidence = fmt::format("the {} header on line {}", log_.tests_suite, lineno);
      }
      note_library(rccl ? CollectiveLibrary::Rccl : CollectiveLibrary::Nccl,
                   fmt::format("the {} header on line {}", log_.tests_suite, lineno));
      return;
    }
    // Older rccl-tests print their git hash on an unmarked line: "rccl-tests: Version develop:a7809b3".
    if (starts_with(body, "rccl-tests: Version")) {
      log_.tests_suite = "rccl-tests";
      log_.nccl_tests_version = trim(body.substr(std::string_view("rccl-tests: Version").size()));
      note_library(CollectiveLibrary::Rccl, fmt::format("'rccl-tests: Version' on line {}", lineno));
      return;
    }
    if (starts_with(body, "Collective test starting:")) {
      const auto toks = split_ws(body.substr(std::string_view("Collective test starting:").size()));
      if (!toks.empty()) log_.program = toks[0];
      return;
    }
    if (starts_with(body, "Collective test concluded") || starts_with(body, "Using devices")) return;
    if (starts_with(body, "nThread")) {
      static const std::regex re(R"(nThread\s+(\d+)\s+nGpus\s+(\d+))");
      std::smatch m;
      if (std::regex_search(body, m, re)) {
        log_.header_nthreads = header_int(m[1], lineno, "nThread", kMaxHeaderGpus);
        log_.header_ngpus = header_int(m[2], lineno, "nGpus", kMaxHeaderGpus);
      }
      return;
    }
    if (starts_with(body, "Rank")) {
      static const std::regex re(
          R"(^Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s+(.+)$)");
      std::smatch m;
      if (std::regex_search(body, m, re)) {
        log_.ranks.push_back(
            {lineno, header_int(m[1], lineno, "Rank"), m[2], header_int(m[3], lineno, "device"), trim(m[4])});
        return;
      }
    }
    if (body.find("out-of-place") != std::string::npos) return;
    const auto toks = split_ws(body);
    if (toks.empty()) return; // only whitespace that trim() keeps (a vertical tab, a form feed)
    if (toks.size() >= 4 && toks[0] == "size" && toks[1] == "count") {
      if (!log_.rows.empty())
        fail(lineno,
             fmt::format("a second nccl-tests column header after {} data rows (the first header is on line {}): "
                         "this file holds more than one run",
                         log_.rows.size(), log_.columns_line),
             "split the file so that each run (one all_reduce_perf, all_gather_perf, ... invocation) is in a file "
             "of its own");
      log_.columns = toks;
      log_.columns_line = lineno;
      layout_ = layout_from(toks);
      if (layout_.groups == 0)
        fail(lineno, "the column header has no 'time' column", "pass the unmodified output of an nccl-tests program");
      if (!layout_.regular)
        fail(lineno,
             "the column header is not nccl-tests' layout: size, count, ..., then groups of equal width each with "
             "time, algbw, busbw and #wrong (or error), then an optional timestamp",
             "pass the unmodified output of an nccl-tests program");
      for (const auto& c : toks)
        if (c == "#wrong" || c == "error") log_.wrong_column = c;
      return;
    }
    if (toks[0] == "(B)") return;
    if (starts_with(body, "Out of bounds values")) {
      const auto colon = body.find(':');
      const auto v = split_ws(body.substr(colon + 1));
      if (!v.empty() && is_integer(v[0])) log_.out_of_bounds = header_int(v[0], lineno, "Out of bounds values");
      footer_seen_line_ = lineno;
      return;
    }
    if (starts_with(body, "Avg bus bandwidth")) {
      const auto colon = body.find(':');
      const auto v = split_ws(body.substr(colon + 1));
      if (!v.empty()) log_.avg_busbw_GBps = to_number(v[0]);
      log_.footer_line = lineno;
      return;
    }
    if (hashed) return;
    // A data row starts with two integers (size and count). Other unmarked lines (mpirun's or a scheduler's
    // messages) are not nccl-tests output and are skipped, unless they have a data row's shape and start with two
    // numbers: a row whose size is negative, NaN or 1e400 is a broken row, not someone else's message.
    if (toks.size() >= 2 && ((is_integer(toks[0]) && is_integer(toks[1])) ||
                             (is_number(toks[0]) && is_number(toks[1]) && row_shaped(toks.size()))))
      row(toks, lineno);
    else if (toks.size() == 1 && is_integer(toks[0]) && !log_.columns.empty())
      partial(toks, lineno);
  }

  void partial(const std::vector<std::string>& toks, int lineno) const
  {
    const size_t expected = layout_.prefix + layout_.groups * layout_.group_width + layout_.trailing;
    fail(lineno,
         toks.size() < expected
             ? fmt::format("incomplete data row: {} of the {} fields the column header on line {} announces (the "
                           "log looks cut short)",
                           toks.size(), expected, log_.columns_line)
             : fmt::format("data row with {} fields where the column header on line {} announces {}", toks.size(),
                           log_.columns_line, expected),
         "rerun the test to completion, or copy the whole output; if the run cannot be repeated, delete this "
         "line and everything after it and add the footer line '# Avg bus bandwidth : 0'");
  }

  void row(const std::vector<std::string>& toks, int lineno)
  {
    if (log_.columns.empty())
      fail(lineno, "a data row before nccl-tests' column header ('#  size  count  type ...')",
           "pass the unmodified output of an nccl-tests program, including its header lines");
    if (log_.footer_line > 0)
      fail(lineno,
           fmt::format("a data row after the footer on line {}: this file holds more than one run", log_.footer_line),
           "split the file so that each nccl-tests run is in a file of its own");
    const size_t measured = layout_.groups * layout_.group_width;
    const size_t total = toks.size();
    size_t groups_here = layout_.groups;
    size_t prefix_here = 0;
    if (total == layout_.prefix + measured + layout_.trailing) {
      prefix_here = layout_.prefix;
    } else if (layout_.groups == 2 && total == layout_.prefix + layout_.group_width + layout_.trailing) {
      groups_here = 1; // nccl-tests leaves the out-of-place half blank when it times only in-place
      prefix_here = layout_.prefix;
    } else if (total > measured + layout_.trailing && total - measured - layout_.trailing >= 2 &&
               total - measured - layout_.trailing < layout_.prefix) {
      prefix_here = total - measured - layout_.trailing; // an empty redop/root field prints as blanks
    } else {
      partial(toks, lineno);
    }
    NcclTestsRow r;
    r.line = lineno;
    std::string dropped;
    // Reads one measured field; a NaN, inf or negative one drops the row (the first reason is kept).
    const auto field = [&](size_t i, const std::string& what, const char* unit, double max, bool whole) {
      const auto m = detail::read_measured(toks[i], what, unit, max, whole, {name_, lineno, what});
      if (!m)
        fail(lineno, fmt::format("field '{}' is '{}', not a number", what, toks[i]),
             "pass the unmodified output of an nccl-tests program");
      if (!m->dropped.empty() && dropped.empty()) dropped = m->dropped;
      return m->value;
    };
    r.size_bytes = static_cast<std::int64_t>(field(0, "size", "B", limits::kMaxBytes, true));
    r.count = static_cast<std::int64_t>(field(1, "count", "elements", limits::kMaxBytes, true));
    if (prefix_here > 2) r.type = toks[2];
    if (layout_.redop_index >= 0 && static_cast<size_t>(layout_.redop_index) < prefix_here)
      r.redop = toks[static_cast<size_t>(layout_.redop_index)];
    size_t at = prefix_here;
    for (size_t g = 0; g < groups_here; ++g) {
      NcclTestsTiming t;
      const bool in_place = groups_here == 1 || g == 1;
      const std::string half = in_place ? "in-place " : "out-of-place ";
      constexpr double kAny = std::numeric_limits<double>::max();
      t.time_us = field(at, half + "time", "us", limits::kMaxSeconds * 1e6, false);
      t.algbw_GBps = field(at + 1, half + "algbw", "GB/s", kAny, false);
      t.busbw_GBps = field(at + 2, half + "busbw", "GB/s", kAny, false);
      if (toks[at + 3] != "N/A")
        t.wrong = field(at + 3, half + (log_.wrong_column.empty() ? "#wrong" : log_.wrong_column), "", kAny, false);
      at += layout_.group_width;
      (in_place ? r.in_place : r.out_of_place) = t;
    }
    if (!dropped.empty()) {
      log_.dropped.push_back({lineno, dropped});
      return;
    }
    log_.rows.push_back(std::move(r));
  }

  void finish(int last_line)
  {
    if (log_.rows.empty() && !log_.dropped.empty())
      fail(log_.dropped.front().line,
           fmt::format("every data row is dropped ({} rows; the first because its {})", log_.dropped.size(),
                       log_.dropped.front().reason),
           "rerun the test; nothing in this log can be fitted");
    if (log_.rows.empty()) {
      if (log_.columns.empty())
        fail(last_line,
             "no nccl-tests column header and no data rows: this is not nccl-tests output, or the run failed "
             "before its first size",
             "pass the output of an nccl-tests program (all_reduce_perf, all_gather_perf, ...) that ran to the end");
      fail(log_.columns_line, "no data rows after the column header on this line",
           "the run failed before its first size; look for the error after the header, fix it and rerun");
    }
    if (log_.footer_line == 0)
      fail(last_line,
           fmt::format("the log ends after its last data row (line {}) without nccl-tests' '# Avg bus bandwidth' "
                       "footer: the run was cut short (killed, timed out) or the copy is incomplete",
                       log_.rows.back().line),
           "rerun the test to completion, or copy the whole output including the '# Avg bus bandwidth' line");
    if (footer_seen_line_ > 0 && log_.out_of_bounds && *log_.out_of_bounds < 0)
      fail(footer_seen_line_, "negative 'Out of bounds values'", "pass the unmodified output");
  }

private:
  std::string name_;
  NcclTestsLog& log_;
  Layout layout_;
  std::string nccl_from_library_;
  int footer_seen_line_ = 0;
};

struct NamePattern {
  const char* text;
  std::optional<models::CollectiveKind> kind; // empty: a collective Railyard does not model
};

} // namespace

std::string nccl_version_from_code(long code)
{
  // NCCL_VERSION(X,Y,Z) in nccl.h: X*1000+Y*100+Z up to 2.8, X*10000+Y*100+Z from 2.9 on.
  if (code >= 10000) return fmt::format("{}.{}.{}", code / 10000, (code % 10000) / 100, code % 100);
  return fmt::format("{}.{}.{}", code / 1000, (code % 1000) / 100, code % 100);
}

std::optional<models::CollectiveKind> collective_from_file_name(const std::string& path, bool* unsupported)
{
  using K = models::CollectiveKind;
  // Longest names first: "reduce_scatter" and "all_reduce" contain "reduce", "all_gather" contains "gather".
  static const std::array<NamePattern, 19> kPatterns{{
      {"reduce_scatter", K::ReduceScatter},
      {"reducescatter", K::ReduceScatter},
      {"all_reduce", K::AllReduce},
      {"allreduce", K::AllReduce},
      {"all_gather", K::AllGather},
      {"allgather", K::AllGather},
      {"all_to_all", K::AllToAll},
      {"alltoall", K::AllToAll},
      {"send_recv", K::SendRecv},
      {"sendrecv", K::SendRecv},
      {"broadcast", K::Broadcast},
      {"hypercube", std::nullopt},
      {"alltoallv", K::AllToAll},
      {"gather", std::nullopt},
      {"scatter", std::nullopt},
      {"bcast", K::Broadcast},
      {"reduce", K::Reduce},
      {"a2a", K::AllToAll},
      {"p2p", K::SendRecv},
  }};
  std::string name = lower(std::filesystem::path(path).filename().string());
  std::replace_if(
      name.begin(), name.end(), [](char c) { return c == '-' || c == '.' || c == ' '; }, '_');
  if (unsupported) *unsupported = false;
  for (const auto& p : kPatterns)
    if (name.find(p.text) != std::string::npos) {
      if (!p.kind && unsupported) *unsupported = true;
      return p.kind;
    }
  return std::nullopt;
}

std::vector<std::string> NcclTestsLog::gpu_models() const
{
  std::vector<std::string> out;
  for (const auto& r : ranks)
    if (std::find(out.begin(), out.end(), r.gpu_model) == out.end()) out.push_back(r.gpu_model);
  return out;
}

int NcclTestsLog::hosts() const
{
  std::set<std::string> h;
  for (const auto& r : ranks)
    h.insert(r.host);
  return static_cast<int>(h.size());
}

NcclTestsLog parse_nccl_tests_text(const std::string& text, const std::string& name)
{
  NcclTestsLog log;
  log.input = describe_input(name, text);
  Parser p(name, log);
  std::istringstream in(text);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line))
    p.line(line, ++lineno);
  p.finish(std::max(lineno, 1));
  if (log.library != CollectiveLibrary::Rccl)
    for (const auto& r : log.ranks)
      if (starts_with(r.gpu_model, "AMD ")) {
        // ROCm's GPUs run the NCCL API through RCCL only; a log without RCCL's own lines still measured RCCL.
        log.library = CollectiveLibrary::Rccl;
        log.library_evidence = fmt::format("the GPU name '{}' on line {} (an AMD GPU, so RCCL)", r.gpu_model, r.line);
        break;
      }
  bool unsupported = false;
  if (!log.program.empty()) log.collective = collective_from_file_name(log.program, &unsupported);
  if (!log.collective && !unsupported) log.collective = collective_from_file_name(name, &unsupported);
  log.unsupported_collective = unsupported;
  if (log.program.empty() && (log.collective || unsupported))
    log.program = std::filesystem::path(name).filename().string();
  return log;
}

NcclTestsLog parse_nccl_tests_log(const std::string& path)
{
  return parse_nccl_tests_text(read_text_file(path), path);
}

void validate_nccl_tests_log(const NcclTestsLog& log)
{
  const std::string& file = log.input.path;
  if (log.unsupported_collective)
    throw InputError({file, 0, ""},
                     fmt::format("'{}' measures a collective Railyard does not model (gather, scatter and hypercube "
                                 "exist in nccl-tests only); supported: {}",
                                 log.program, kCollectiveNames),
                     "leave this file out of the calibration");
  if (!log.collective)
    throw InputError({file, 0, ""},
                     "cannot tell which collective this log measures: it has no '# Collective test starting: X_perf' "
                     "line and the file name names none",
                     "name the file after the program (e.g. all_reduce_perf.log) or add the line "
                     "'# Collective test starting: all_reduce_perf' at its top");
  for (const auto& r : log.rows)
    for (const auto* t : {&r.out_of_place, &r.in_place}) {
      if (!*t || !(*t)->wrong) continue;
      const double w = *(*t)->wrong;
      const bool bad = log.wrong_column == "error" ? w > old_error_tolerance(r.type) : w > 0;
      if (bad)
        throw InputError(
            {file, r.line, log.wrong_column.empty() ? "#wrong" : log.wrong_column},
            fmt::format("the {} result at size {} reports {} {} ({}): the collective returned wrong data, so its "
                        "timings cannot be trusted",
                        t == &r.out_of_place ? "out-of-place" : "in-place", r.size_bytes,
                        log.wrong_column == "error" ? "an error of" : "", w,
                        log.wrong_column == "error"
                            ? fmt::format("nccl-tests' tolerance for {} is {:g}", r.type, old_error_tolerance(r.type))
                            : "wrong elements"),
            "find out why the run produced wrong results (rerun with NCCL_DEBUG=WARN), fix the system, and "
            "calibrate from a run where every #wrong is 0");
    }
  if (log.out_of_bounds && *log.out_of_bounds > 0)
    throw InputError({file, log.footer_line, "Out of bounds values"},
                     fmt::format("nccl-tests reports {} out-of-bounds values: results were wrong", *log.out_of_bounds),
                     "calibrate from a run that reports 'Out of bounds values : 0 OK'");
  const auto models = log.gpu_models();
  if (models.size() > 1) {
    std::string detail;
    for (const auto& m : models) {
      std::vector<int> ranks;
      int first_line = 0;
      for (const auto& r : log.ranks)
        if (r.gpu_model == m) {
          ranks.push_back(r.rank);
          if (!first_line) first_line = r.line;
        }
      detail +=
          fmt::format("{}'{}' on {} rank(s) from line {}", detail.empty() ? "" : ", ", m, ranks.size(), first_line);
    }
    throw InputError({file, log.ranks.front().line, ""},
                     fmt::format("the run mixes GPU models ({}); a fit describes one GPU model", detail),
                     "calibrate each GPU model from runs on that model alone, one profile per model");
  }
}

int nccl_tests_nranks(const NcclTestsLog& log)
{
  const std::string& file = log.input.path;
  int n = 0;
  std::string from;
  if (!log.ranks.empty()) {
    n = static_cast<int>(log.ranks.size());
    from = fmt::format("{} Rank lines", n);
  } else if (log.header_nthreads > 0 && log.header_ngpus > 0) {
    n = log.header_nthreads * log.header_ngpus;
    from = fmt::format("nThread {} x nGpus {} of the header", log.header_nthreads, log.header_ngpus);
  }
  // The printed busbw/algbw ratio is nccl-tests' factor for the real rank count (doc/PERFORMANCE.md). Take the
  // row with the largest algbw, where the two-decimal rounding matters least.
  const NcclTestsRow* best = nullptr;
  const NcclTestsTiming* best_t = nullptr;
  for (const auto& r : log.rows)
    for (const auto* t : {&r.out_of_place, &r.in_place})
      if (*t && (!best_t || (*t)->algbw_GBps > best_t->algbw_GBps)) {
        best = &r;
        best_t = &**t;
      }
  const bool ratio_usable = best_t && best_t->algbw_GBps >= 1.0 && log.collective;
  if (ratio_usable) {
    const double r = best_t->busbw_GBps / best_t->algbw_GBps;
    // Rounding to 0.01 GB/s moves the ratio by at most 0.01/algbw on each side.
    const double tol = 0.02 / best_t->algbw_GBps + 0.005;
    if (n >= 2) {
      const double f = models::busbw_factor(*log.collective, n);
      if (std::fabs(r - f) > tol * std::max(1.0, f))
        throw InputError({file, best->line, "busbw"},
                         fmt::format("busbw/algbw on this row is {:.4f}, but with {} ranks ({}) nccl-tests' factor "
                                     "for {} is {:.4f}: the rank count is wrong or the log was edited",
                                     r, n, from, models::to_string(*log.collective), f),
                         "keep all '#  Rank N ...' lines of the log (with MPI, every process's lines)");
      return n;
    }
    const double f_of = r;
    int inferred = 0;
    switch (*log.collective) {
    case models::CollectiveKind::AllReduce:
      if (f_of < 2.0) inferred = static_cast<int>(std::lround(2.0 / (2.0 - f_of)));
      break;
    case models::CollectiveKind::AllGather:
    case models::CollectiveKind::ReduceScatter:
    case models::CollectiveKind::AllToAll:
      if (f_of < 1.0) inferred = static_cast<int>(std::lround(1.0 / (1.0 - f_of)));
      break;
    default:
      break;
    }
    if (inferred >= 2 && std::fabs(models::busbw_factor(*log.collective, inferred) - r) <= tol) return inferred;
  } else if (n >= 2) {
    return n;
  }
  throw InputError({file, 0, ""},
                   "cannot tell how many ranks took part: the log has no '#  Rank N ...' lines and no "
                   "'# nThread N nGpus M' header, and busbw/algbw does not determine it",
                   "keep the header lines nccl-tests prints before the results");
}

} // namespace railyard::calibration
