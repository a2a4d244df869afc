#include "railyard/common/input_file.hpp"

#include "railyard/common/error.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

namespace railyard {

namespace {

std::string mib(std::uint64_t bytes)
{
  return fmt::format("{:g} MiB", static_cast<double>(bytes) / (1 << 20));
}

[[noreturn]] void too_large(const std::string& path, const std::string& size, std::uint64_t max_bytes)
{
  throw InputError(
      {path, 0, ""},
      fmt::format("the file holds more than the {} an input of this kind may hold ({})", mib(max_bytes), size),
      "check that this is the file you meant (a scenario, profile or nccl-tests log, not a trace)");
}

} // namespace

std::string read_input_file(const std::string& path, std::uint64_t max_bytes)
{
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (!ec && fs::is_directory(st))
    throw InputError({path, 0, ""}, "this is a folder, not a file", "give the path of the file itself");
  if (!ec && fs::is_regular_file(st)) {
    const auto size = fs::file_size(path, ec);
    if (!ec && size > max_bytes) too_large(path, fmt::format("{} bytes", size), max_bytes);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, ""}, "cannot open the file", "check the path and that the file is readable");
  // Read in blocks up to one byte past the limit: a pipe or a device has no size to check first.
  std::string out;
  char buf[1 << 16];
  while (in) {
    in.read(buf, sizeof(buf));
    out.append(buf, static_cast<std::size_t>(in.gcount()));
    if (out.size() > max_bytes) too_large(path, "it is not a regular file and did not end", max_bytes);
  }
  if (in.bad()) throw InputError({path, 0, ""}, "cannot read the file (I/O error)", "check the disk and the file");
  return out;
}

} // namespace railyard
