#include "file_io.hpp"

#include "railyard/common/error.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>
#include <zlib.h>

#include <fstream>
#include <memory>
#include <sstream>

namespace railyard::workloads::detail {

bool ends_with(const std::string& s, const std::string& suffix)
{
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_file(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, ""}, "cannot open the file", "check the path and that it is readable");
  std::ostringstream out;
  out << in.rdbuf();
  return std::move(out).str();
}

std::string read_gzip_file(const std::string& path)
{
  std::unique_ptr<gzFile_s, int (*)(gzFile)> gz(gzopen(path.c_str(), "rb"), gzclose);
  if (!gz) throw InputError({path, 0, ""}, "cannot open the file", "check the path and that it is readable");
  std::string out;
  char buf[1 << 16];
  for (;;) {
    int n = gzread(gz.get(), buf, sizeof(buf));
    if (n < 0) {
      int code = 0;
      const char* msg = gzerror(gz.get(), &code);
      throw InputError({path, 0, fmt::format("byte {}", out.size())},
                       fmt::format("gzip data is corrupt ({})", msg ? msg : "zlib error"),
                       "re-export or re-download the trace");
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  return out;
}

std::vector<ArchiveMember> read_archive(const std::string& path, const std::vector<std::string>& suffixes)
{
  std::unique_ptr<archive, int (*)(archive*)> a(archive_read_new(), archive_read_free);
  archive_read_support_filter_all(a.get());
  archive_read_support_format_all(a.get());
  if (archive_read_open_filename(a.get(), path.c_str(), 1 << 16) != ARCHIVE_OK)
    throw InputError({path, 0, ""}, fmt::format("cannot open the archive: {}", archive_error_string(a.get())),
                     "give a readable .tar, .tar.gz or .tgz file");
  std::vector<ArchiveMember> out;
  archive_entry* entry = nullptr;
  for (;;) {
    int rc = archive_read_next_header(a.get(), &entry);
    if (rc == ARCHIVE_EOF) break;
    if (rc != ARCHIVE_OK && rc != ARCHIVE_WARN)
      throw InputError({path, 0, ""}, fmt::format("corrupt archive: {}", archive_error_string(a.get())),
                       "re-create the archive");
    std::string name = archive_entry_pathname(entry);
    std::string base = name.substr(name.find_last_of('/') + 1);
    bool wanted = archive_entry_filetype(entry) == AE_IFREG && base.rfind("._", 0) != 0;
    if (wanted) {
      wanted = false;
      for (const auto& s : suffixes)
        wanted = wanted || ends_with(name, s);
    }
    if (!wanted) {
      archive_read_data_skip(a.get());
      continue;
    }
    ArchiveMember m{path + ":" + name, {}};
    char buf[1 << 16];
    for (;;) {
      la_ssize_t n = archive_read_data(a.get(), buf, sizeof(buf));
      if (n < 0)
        throw InputError({m.name, 0, ""}, fmt::format("corrupt archive member: {}", archive_error_string(a.get())),
                         "re-create the archive");
      if (n == 0) break;
      m.data.append(buf, static_cast<std::size_t>(n));
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::string sniff_trace_kind(const std::string& bytes)
{
  std::size_t i = 0;
  while (i < bytes.size() && (bytes[i] == ' ' || bytes[i] == '\n' || bytes[i] == '\r' || bytes[i] == '\t'))
    ++i;
  if (i == bytes.size()) return "";
  if (bytes[i] != '{' && bytes[i] != '[') {
    // A Chakra ET starts with the varint length of its GlobalMetadata: a control byte, not text.
    const auto c = static_cast<unsigned char>(bytes[i]);
    return c < 0x20 ? "chakra" : "";
  }
  // The keys sit near the start of both formats (the profiler writes schemaVersion/distributedInfo/traceEvents, the
  // observer schema/pid/time/nodes); look in the first megabyte.
  const std::string head = bytes.substr(i, 1 << 20);
  if (head.find("\"traceEvents\"") != std::string::npos) return "kineto";
  if (head.find("\"nodes\"") != std::string::npos && head.find("\"schema\"") != std::string::npos) return "host_et";
  return "";
}

std::string read_it_as(const std::string& kind)
{
  if (kind == "kineto") return "it is a PyTorch profiler (Kineto) trace: read it with trace: kineto";
  if (kind == "host_et")
    return "it is a PyTorch host execution trace (ExecutionTraceObserver JSON): give it as workload.host_et beside "
           "the rank's Kineto trace (trace: kineto), or convert it with chakra's converter into a Chakra ET";
  if (kind == "chakra")
    return "it is not JSON but a binary Chakra execution trace (protobuf .et): read it with "
           "trace: chakra";
  return "";
}

} // namespace railyard::workloads::detail
