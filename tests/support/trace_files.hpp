// Reading the vendored trace files in tests, independently of Railyard's readers: gzip files, members of tar
// archives, and a temporary folder for crafted traces. Header-only; the tests that include it link zlib and
// libarchive through the workloads layer.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <nlohmann/json.hpp>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace railyard::test {

/// The decompressed bytes of a gzip file (empty when it cannot be opened).
inline std::string gunzip(const std::string& path)
{
  gzFile f = gzopen(path.c_str(), "rb");
  std::string out;
  if (!f) return out;
  std::array<char, 1 << 16> buf{};
  int n;
  while ((n = gzread(f, buf.data(), static_cast<unsigned>(buf.size()))) > 0)
    out.append(buf.data(), static_cast<std::size_t>(n));
  gzclose(f);
  return out;
}

/// The members of a tar archive (any compression libarchive reads) whose path `keep` accepts, by path, regular files
/// only and macOS `._` forks skipped.
template <class Keep>
std::map<std::string, std::string> archive_members(const std::string& path, Keep&& keep)
{
  std::map<std::string, std::string> out;
  archive* a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_all(a);
  if (archive_read_open_filename(a, path.c_str(), 1 << 16) == ARCHIVE_OK) {
    archive_entry* e = nullptr;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
      const std::string name = archive_entry_pathname(e);
      if (archive_entry_filetype(e) != AE_IFREG ||
          std::filesystem::path(name).filename().string().rfind("._", 0) == 0 || !keep(name))
        continue;
      std::string data;
      std::array<char, 1 << 16> buf{};
      la_ssize_t n;
      while ((n = archive_read_data(a, buf.data(), buf.size())) > 0)
        data.append(buf.data(), static_cast<std::size_t>(n));
      out[name] = std::move(data);
    }
  }
  archive_read_free(a);
  return out;
}

/// Every `*.json` member of a tar archive, by its path in the archive.
inline std::map<std::string, std::string> json_members_by_name(const std::string& path)
{
  return archive_members(
      path, [](const std::string& name) { return name.size() >= 5 && name.compare(name.size() - 5, 5, ".json") == 0; });
}

/// The same members' bytes, in name order.
inline std::vector<std::string> json_members_of_tar(const std::string& path)
{
  std::vector<std::string> out;
  for (auto& [name, data] : json_members_by_name(path))
    out.push_back(std::move(data));
  return out;
}

/// The bytes of one member of a tar archive; empty when it is not there.
inline std::string archive_member(const std::string& path, const std::string& member)
{
  auto m = archive_members(path, [&](const std::string& name) { return name == member; });
  return m.empty() ? std::string() : std::move(m.begin()->second);
}

/// First start and last end, in microseconds on the trace's own clock, of the GPU activity (ph X events of cat
/// kernel, gpu_memcpy, gpu_memset) of one Kineto trace.
inline std::pair<double, double> gpu_span_us(const std::string& text)
{
  const auto j = nlohmann::json::parse(text);
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& e : j.at("traceEvents")) {
    if (!e.is_object() || e.value("ph", "") != "X") continue;
    const std::string cat = e.value("cat", "");
    if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
    const double ts = e.at("ts").get<double>(), dur = e.value("dur", 0.0);
    lo = std::min(lo, ts);
    hi = std::max(hi, ts + dur);
  }
  return {lo, hi};
}

/// A temporary folder for crafted traces (named after the test and the process), removed with everything in it.
struct TempDir {
  std::filesystem::path dir;
  explicit TempDir(const std::string& name)
  {
    dir = std::filesystem::temp_directory_path() / ("railyard_" + name + "_" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~TempDir() { std::filesystem::remove_all(dir); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// Writes `text` to `name` in the folder; returns its path.
  std::string write(const std::string& name, const std::string& text) const
  {
    std::ofstream(dir / name, std::ios::binary) << text;
    return (dir / name).string();
  }
};

} // namespace railyard::test
