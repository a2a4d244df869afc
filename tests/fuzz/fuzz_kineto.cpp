// The Kineto reader. One input is one trace, or several (one per rank) joined by kFileSeparator (at most 8). Each is
// written under the name its bytes call for, so every path of the reader is reached: .json, .json.gz (zlib), .tar.gz
// and .tar (libarchive).
#include "fuzz_support.hpp"

#include "railyard/workloads/readers.hpp"

#include <zlib.h>

namespace {

bool is_tar(const std::string& bytes)
{
  return bytes.size() >= 262 && bytes.compare(257, 5, "ustar") == 0;
}

// The first bytes of a gzip stream, decompressed, to tell a .tar.gz from a .json.gz.
std::string gunzip_head(const std::string& bytes)
{
  std::string out(512, '\0');
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) return {};
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  inflate(&z, Z_SYNC_FLUSH);
  out.resize(out.size() - z.avail_out);
  inflateEnd(&z);
  return out;
}

std::string file_name(int rank, const std::string& bytes)
{
  const std::string base = "rank" + std::to_string(rank);
  if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f && static_cast<unsigned char>(bytes[1]) == 0x8b)
    return base + (is_tar(gunzip_head(bytes)) ? ".tar.gz" : ".json.gz");
  return base + (is_tar(bytes) ? ".tar" : ".json");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  namespace fz = railyard::fuzz;
  const std::vector<std::string> files = fz::split_files(fz::as_text(data, size), 8);
  auto& dir = fz::scratch();
  dir.clear();
  std::vector<std::string> paths;
  for (std::size_t r = 0; r < files.size(); ++r)
    paths.push_back(dir.write(file_name(static_cast<int>(r), files[r]), files[r]));
  fz::expect_only_input_errors([&] { (void)railyard::workloads::read_kineto(paths); });
  return 0;
}
