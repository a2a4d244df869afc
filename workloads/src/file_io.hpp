// Reading trace files whole: plain, gzip-compressed, or members of a tar archive (internal to workloads/).
#pragma once

#include <string>
#include <vector>

namespace railyard::workloads::detail {

/// The bytes of `path`; throws InputError (file, "cannot read") when it cannot be opened.
std::string read_file(const std::string& path);
/// The decompressed bytes of a gzip file (zlib); a plain file is returned as is.
std::string read_gzip_file(const std::string& path);

struct ArchiveMember {
  std::string name; ///< "archive.tar.gz:member/path.json"
  std::string data;
};
/// Regular-file members of a tar archive (any compression libarchive knows) whose names end in one of `suffixes`.
/// macOS resource forks ("._name") are skipped.
std::vector<ArchiveMember> read_archive(const std::string& path, const std::vector<std::string>& suffixes);

bool ends_with(const std::string& s, const std::string& suffix);

} // namespace railyard::workloads::detail
