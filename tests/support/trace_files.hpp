// Reading the vendored trace files in tests, independently of Railyard's readers: gzip files, members of tar
// archives, and a temporary folder for crafted traces. Header-only; the tests that include it link zlib and
// libarchive through the workloads layer.
#pragma once

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>
#include <zlib.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
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

/// Every `*.json` member of a tar archive (any compression libarchive reads) by its path in the archive, macOS `._`
/// files skipped.
inline std::map<std::string, std::string> json_members_by_name(const std::string& path)
{
  std::map<std::string, std::string> out;
  archive* a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_all(a);
  if (archive_read_open_filename(a, path.c_str(), 1 << 16) == ARCHIVE_OK) {
    archive_entry* e = nullptr;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
      const std::string name = archive_entry_pathname(e);
      const std::string base = std::filesystem::path(name).filename().string();
      if (archive_entry_filetype(e) != AE_IFREG || name.size() < 5 || name.substr(name.size() - 5) != ".json" ||
          base.rfind("._", 0) == 0)
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
  std::string out;
  archive* a = archive_read_new();
  archive_read_support_filter_all(a);
  archive_read_support_format_all(a);
  if (archive_read_open_filename(a, path.c_str(), 1 << 16) == ARCHIVE_OK) {
    archive_entry* e = nullptr;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
      if (archive_entry_pathname(e) != member) continue;
      std::array<char, 1 << 16> buf{};
      la_ssize_t n;
      while ((n = archive_read_data(a, buf.data(), buf.size())) > 0)
        out.append(buf.data(), static_cast<std::size_t>(n));
      break;
    }
  }
  archive_read_free(a);
  return out;
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
