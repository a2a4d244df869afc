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

/// What kind of trace `bytes` (a file's content) look like, for naming the right `trace:` when the user picked the
/// wrong one: "kineto" (a JSON object with traceEvents), "host_et" (a JSON object with nodes and a schema: PyTorch's
/// ExecutionTraceObserver), "chakra" (not text: a protobuf Chakra ET), or "" when it is none of these.
std::string sniff_trace_kind(const std::string& bytes);
/// A sentence naming what a file of kind `kind` (sniff_trace_kind) is and how to read it; empty for "".
std::string read_it_as(const std::string& kind);

} // namespace railyard::workloads::detail
