// Shared by the calibration programs: error checks, command-line options, timing statistics, and the CSV writer
// whose format calibration/src/calibration_csv.cpp reads ("# key: value" metadata, a header, rows, and a last
// "# complete: true" line written only when the program finished). The programs are built by nvcc alone, without
// the project's libraries, so the RFC 4180 quoting and the checked writes of common/csv.hpp and
// common/output_file.hpp are repeated here in their smallest form.
#pragma once

#include "gpu_runtime.hpp"

#include <cerrno>
#include <fcntl.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace railyard::calib {

// These are programs, not library code: a failed CUDA call ends the run with the call, the file and the line.
#define RY_CUDA(call)                                                                                                  \
  do {                                                                                                                 \
    const cudaError_t ry_err_ = (call);                                                                                \
    if (ry_err_ != cudaSuccess) {                                                                                      \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorString(ry_err_),      \
                   cudaGetErrorName(ry_err_));                                                                         \
      std::exit(1);                                                                                                    \
    }                                                                                                                  \
  } while (0)

inline std::string format(const char* fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char buf[4096];
  std::vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

/// "--name value" options and "--flag" switches; anything else is an error with the usage text.
class Options {
public:
  Options(int argc, char** argv, std::string usage) : usage_(std::move(usage))
  {
    for (int i = 1; i < argc; ++i) {
      std::string a = argv[i];
      if (a == "-h" || a == "--help") {
        std::printf("%s", usage_.c_str());
        std::exit(0);
      }
      if (a.rfind("--", 0) != 0) fail("unexpected argument '" + a + "'");
      if (i + 1 < argc && std::string(argv[i + 1]).rfind("--", 0) != 0)
        values_[a.substr(2)] = argv[++i];
      else
        values_[a.substr(2)] = "";
    }
  }
  [[noreturn]] void fail(const std::string& why) const
  {
    std::fprintf(stderr, "error: %s\n\n%s", why.c_str(), usage_.c_str());
    std::exit(2);
  }
  /// Every option given must be one of `known`.
  void allow(std::initializer_list<const char*> known) const
  {
    for (const auto& [k, v] : values_) {
      bool ok = false;
      for (const char* n : known)
        ok = ok || k == n;
      if (!ok) fail("unknown option --" + k);
    }
  }
  bool has(const std::string& k) const { return values_.count(k) > 0; }
  std::string str(const std::string& k, const std::string& fallback = "") const
  {
    const auto it = values_.find(k);
    return it == values_.end() ? fallback : it->second;
  }
  long long integer(const std::string& k, long long fallback) const
  {
    const auto it = values_.find(k);
    if (it == values_.end()) return fallback;
    return parse_size(it->second, k);
  }
  double number(const std::string& k, double fallback) const
  {
    const auto it = values_.find(k);
    if (it == values_.end()) return fallback;
    char* end = nullptr;
    const double v = std::strtod(it->second.c_str(), &end);
    if (end == it->second.c_str() || *end) fail("--" + k + " needs a number, got '" + it->second + "'");
    return v;
  }
  /// "8", "64K", "1M", "8G" (binary multiples, as nccl-tests' -b/-e take them).
  long long parse_size(const std::string& s, const std::string& k) const
  {
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str()) fail("--" + k + " needs a size such as 8, 64K, 1M or 8G, got '" + s + "'");
    double mult = 1;
    switch (*end) {
    case 0:
      break;
    case 'K':
    case 'k':
      mult = 1024.0;
      break;
    case 'M':
    case 'm':
      mult = 1024.0 * 1024.0;
      break;
    case 'G':
    case 'g':
      mult = 1024.0 * 1024.0 * 1024.0;
      break;
    default:
      fail("--" + k + ": unknown unit in '" + s + "'");
    }
    return static_cast<long long>(v * mult);
  }
  std::vector<std::string> list(const std::string& k, const std::string& fallback) const
  {
    std::vector<std::string> out;
    std::stringstream ss(str(k, fallback));
    std::string item;
    while (std::getline(ss, item, ','))
      if (!item.empty()) out.push_back(item);
    return out;
  }

private:
  std::string usage_;
  std::map<std::string, std::string> values_;
};

struct Stats {
  double mean = 0, min = 0, max = 0, stddev = 0;
  int n = 0;
};

inline Stats stats_of(const std::vector<double>& v)
{
  Stats s;
  s.n = static_cast<int>(v.size());
  if (v.empty()) return s;
  s.min = *std::min_element(v.begin(), v.end());
  s.max = *std::max_element(v.begin(), v.end());
  double sum = 0;
  for (double x : v)
    sum += x;
  s.mean = sum / s.n;
  double var = 0;
  for (double x : v)
    var += (x - s.mean) * (x - s.mean);
  s.stddev = std::sqrt(var / s.n);
  return s;
}

/// The kernel module's version ("570.86.15") from /proc, else the driver API version number (the only one under ROCm,
/// whose amdgpu module has no /proc/driver/nvidia).
inline std::string driver_version()
{
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (std::getline(in, line)) {
    std::istringstream ss(line);
    std::string tok, prev;
    while (ss >> tok) {
      if (!tok.empty() && std::isdigit(static_cast<unsigned char>(tok[0])) && tok.find('.') != std::string::npos)
        return tok;
      prev = tok;
    }
  }
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) return format("%s driver api %d", kGpuRuntime, v);
  return "unknown";
}

inline std::string utc_now()
{
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

inline std::string host_name()
{
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

/// `s` as one CSV field (RFC 4180): quoted when it holds a comma, a double quote, CR or LF; quotes doubled.
inline std::string csv_field(const std::string& s)
{
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

/// Fields joined into one record, without its line end.
inline std::string csv_record(const std::vector<std::string>& fields)
{
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i)
    out += (i ? "," : "") + csv_field(fields[i]);
  return out;
}

/// One record of a single line back into its fields (quoted fields, doubled quotes, a trailing CR).
inline std::vector<std::string> csv_split(const std::string& line)
{
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else if (c != '\r') {
      out.back() += c;
    }
  }
  return out;
}

/// printf's %.6g: the calibration CSVs' number format.
inline std::string g6(double v)
{
  return format("%.6g", v);
}

/// A file written with checked write(2) calls: short writes and EINTR are retried, and any failure (ENOSPC, EIO, a
/// failed fsync or close) ends the program with the file, the reason and exit code 4, as `railyard` does, so a
/// measurement that was not stored is never mistaken for one that was.
class CheckedFile {
public:
  explicit CheckedFile(const std::string& path) : path_(path)
  {
    fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd_ < 0) fail("cannot create");
  }
  ~CheckedFile()
  {
    if (fd_ >= 0) ::close(fd_);
  }
  CheckedFile(const CheckedFile&) = delete;
  CheckedFile& operator=(const CheckedFile&) = delete;

  /// Writes all of `s` now (unbuffered: a run cut short keeps every line written before).
  void put(const std::string& s)
  {
    const char* p = s.data();
    size_t n = s.size();
    while (n > 0) {
      const ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail("write failed");
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  /// fsync and close; any failure ends the program.
  void close()
  {
    if (::fsync(fd_) != 0 && errno != EINVAL) fail("fsync failed");
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0 && errno != EINTR) fail("close failed");
  }

private:
  [[noreturn]] void fail(const char* what)
  {
    std::fprintf(stderr, "error: %s %s: %s\n", what, path_.c_str(), std::strerror(errno ? errno : EIO));
    std::exit(4);
  }
  std::string path_;
  int fd_ = -1;
};

/// Writes a calibration CSV: records end with CRLF (RFC 4180), fields are quoted as needed. Every line is written at
/// once, so a run cut short leaves what it measured, without the final "# complete: true" that tells the reader the
/// run finished.
class CsvWriter {
public:
  CsvWriter(const std::string& path, const std::string& program) : out_(path)
  {
    out_.put("# railyard_calibration_csv: 1\r\n# program: " + one_line(program) + "\r\n");
  }
  void meta(const std::string& key, const std::string& value)
  {
    out_.put("# " + key + ": " + one_line(value) + "\r\n");
  }
  void note(const std::string& text) { out_.put("# note: " + one_line(text) + "\r\n"); }
  /// The header: column names joined by commas (none needs quoting).
  void header(const std::string& columns) { out_.put(columns + "\r\n"); }
  void row(const std::vector<std::string>& fields) { out_.put(csv_record(fields) + "\r\n"); }
  void complete()
  {
    out_.put("# complete: true\r\n");
    out_.close();
  }

private:
  // A line break inside a comment (an NCCL error string, a GPU name) would start a line the reader takes for data.
  static std::string one_line(std::string s)
  {
    for (char& c : s)
      if (c == '\r' || c == '\n') c = ' ';
    return s;
  }
  CheckedFile out_;
};

/// Metadata every program records: the GPU of `device`, how many there are, driver, CUDA runtime, date, host and
/// the command line.
inline void common_metadata(CsvWriter& w, int device, int argc, char** argv)
{
  int count = 0;
  RY_CUDA(cudaGetDeviceCount(&count));
  cudaDeviceProp p{};
  RY_CUDA(cudaGetDeviceProperties(&p, device));
  int runtime = 0;
  RY_CUDA(cudaRuntimeGetVersion(&runtime));
  w.meta("gpu_model", p.name);
  w.meta("gpu_count", std::to_string(count));
  w.meta("compute_capability", format("%d.%d", p.major, p.minor));
  w.meta("sm_count", std::to_string(p.multiProcessorCount));
  w.meta("gpu_memory_bytes", std::to_string(p.totalGlobalMem));
  w.meta("driver", driver_version());
  // HIP_VERSION is major * 10^7 + minor * 10^5 + patch; CUDART_VERSION major * 1000 + minor * 10.
  w.meta("gpu_runtime", kGpuRuntime);
#if defined(RAILYARD_GPU_HIP)
  w.meta("hip_runtime", format("%d.%d", runtime / 10000000, (runtime % 10000000) / 100000));
#else
  w.meta("cuda_runtime", format("%d.%d", runtime / 1000, (runtime % 1000) / 10));
#endif
  w.meta("date", utc_now());
  w.meta("host", host_name());
  std::string cmd;
  for (int i = 0; i < argc; ++i)
    cmd += (i ? " " : "") + std::string(argv[i]);
  w.meta("command", cmd);
}

/// Link kind between two GPUs as CUDA reports it: peer access with native atomics is NVLink (PCIe peer-to-peer
/// does not carry CUDA's native atomics), peer access without them is PCIe, no peer access means copies are staged
/// through the host over PCIe. Under HIP the same test reads "xgmi": AMD GPUs with peer atomics are xGMI peers
/// (hipExtGetLinkTypeAndHopCount would say so directly; the portable test keeps one code path).
inline std::string peer_link_kind(int a, int b, int* access = nullptr, int* atomics = nullptr)
{
  int can = 0, atom = 0;
  RY_CUDA(cudaDeviceCanAccessPeer(&can, a, b));
  if (can) RY_CUDA(cudaDeviceGetP2PAttribute(&atom, cudaDevP2PAttrNativeAtomicSupported, a, b));
  if (access) *access = can;
  if (atomics) *atomics = atom;
  return can && atom ? kPeerLinkFast : "pcie";
}

} // namespace railyard::calib
