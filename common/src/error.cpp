#include "railyard/common/error.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace railyard {

std::string format_input_error(const InputLocation& where, const std::string& rule, const std::string& fix)
{
  std::string out;
  if (!where.file.empty()) {
    out += where.file;
    if (where.line > 0)
      out += fmt::format(":{}", where.line);
    out += ": ";
  }
  if (!where.field.empty())
    out += fmt::format("field '{}': ", where.field);
  out += rule;
  if (!fix.empty())
    out += fmt::format(". Fix: {}", fix);
  return out;
}

InputError::InputError(InputLocation where, std::string rule, std::string fix)
    : std::runtime_error(format_input_error(where, rule, fix))
    , where_(std::move(where))
    , rule_(std::move(rule))
    , fix_(std::move(fix))
{
}

namespace {

std::string format_output_error(const std::string& path, const std::string& what_failed, int os_errno,
                                const std::string& fix)
{
  std::string out = fmt::format("cannot write '{}': {}", path, what_failed);
  if (os_errno != 0)
    out +=
        fmt::format(": {} ({})", std::strerror(os_errno), strerrorname_np(os_errno) ? strerrorname_np(os_errno) : "?");
  if (!fix.empty()) out += fmt::format(". Fix: {}", fix);
  return out;
}

} // namespace

OutputError::OutputError(std::string path, std::string what_failed, int os_errno, std::string fix)
    : std::runtime_error(format_output_error(path, what_failed, os_errno, fix)), path_(std::move(path)),
      errno_(os_errno)
{
}

std::string output_error_fix(int os_errno)
{
  switch (os_errno) {
  case ENOSPC:
    return "free space on the file system that holds it, or write the output elsewhere (--out)";
  case EDQUOT:
    return "free space within your disk quota, or write the output elsewhere (--out)";
  case EIO:
    return "check the device or network file system that holds it (dmesg), then run again";
  case EFBIG:
    return "the file system cannot hold a file this large; write the output elsewhere (--out)";
  case EMFILE:
  case ENFILE:
    return "raise the open-file limit (ulimit -n), then run again";
  default:
    return "check the file system that holds it, then run again";
  }
}

} // namespace railyard
