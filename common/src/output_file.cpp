#include "railyard/common/output_file.hpp"

#include "railyard/common/error.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace railyard {
namespace {

constexpr std::size_t kBufferBytes = 64 * 1024;

// RAILYARD_TEST_FAIL_WRITES_AFTER_BYTES (output_file.hpp): "N", the bytes the process may write through checked
// files, or "NAME:N", the bytes each file named NAME may take. Read once: a test drives the whole binary.
struct WriteBudget {
  WriteBudget()
  {
    const char* text = std::getenv("RAILYARD_TEST_FAIL_WRITES_AFTER_BYTES");
    if (text == nullptr || *text == '\0') return;
    std::string value = text;
    if (const auto colon = value.rfind(':'); colon != std::string::npos) {
      file = value.substr(0, colon);
      value = value.substr(colon + 1);
    }
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || errno != 0 || n < 0)
      throw std::invalid_argument(fmt::format("RAILYARD_TEST_FAIL_WRITES_AFTER_BYTES='{}' is not a byte count N or "
                                              "FILE_NAME:N (a test hook; N an integer >= 0)",
                                              text));
    enabled = true;
    limit = n;
  }
  bool enabled = false;
  std::string file; ///< empty: every file, counted together
  long long limit = 0;
  std::atomic<long long> written{0};
};

WriteBudget& write_budget()
{
  static WriteBudget budget;
  return budget;
}

// Writes all of [data, data + n) or returns the errno that stopped it: loops over short writes and EINTR.
// `file_written` counts the bytes of this file, for the hook's per-file form.
int checked_write(int fd, const std::string& path, long long& file_written, const char* data, std::size_t n)
{
  WriteBudget& budget = write_budget();
  const bool counted = budget.enabled && (budget.file.empty() || std::filesystem::path(path).filename() == budget.file);
  while (n > 0) {
    std::size_t chunk = n;
    if (counted) {
      const long long left = budget.limit - (budget.file.empty() ? budget.written.load() : file_written);
      if (left <= 0) return ENOSPC;
      chunk = std::min<std::size_t>(chunk, static_cast<std::size_t>(left));
    }
    const ssize_t w = ::write(fd, data, chunk);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    // write(2) returns 0 for a non-empty buffer only on an error it did not report; not retrying avoids a spin.
    if (w == 0) return EIO;
    budget.written += w;
    file_written += w;
    data += w;
    n -= static_cast<std::size_t>(w);
  }
  return 0;
}

bool comes_from_path(int err)
{
  switch (err) {
  case EACCES:
  case EPERM:
  case EROFS:
  case ENOENT:
  case ENOTDIR:
  case ENAMETOOLONG:
  case EISDIR:
  case ELOOP:
  case EEXIST:
  case ETXTBSY:
    return true;
  default:
    return false;
  }
}

std::string path_fix(int err)
{
  switch (err) {
  case EACCES:
  case EPERM:
    return "choose a location you may write to";
  case EROFS:
    return "the file system is read-only: choose a location on a writable one";
  case ENOENT:
    return "a folder on the way does not exist: create it or correct the path";
  case ENOTDIR:
    return "a part of the path is a file, not a folder: correct the path";
  case ENAMETOOLONG:
    return "shorten the path (at most NAME_MAX, usually 255, bytes per name and PATH_MAX, 4096, per path)";
  case EISDIR:
    return "a folder of that name is in the way: choose another name";
  case EEXIST:
    return "something of that name exists already: remove it or choose another name";
  case ELOOP:
    return "the path has a loop of symbolic links: correct it";
  default:
    return "choose another location";
  }
}

} // namespace

void throw_path_error(const std::string& path, const std::string& what_failed, int err, const std::string& option)
{
  if (comes_from_path(err))
    throw InputError({path, 0, option},
                     fmt::format("{}: {} ({})", what_failed, std::strerror(err), strerrorname_np(err)), path_fix(err));
  throw OutputError(path, what_failed, err, output_error_fix(err));
}

namespace detail {

FdBuf::FdBuf(int fd, std::string path) : fd_(fd), path_(std::move(path)), buffer_(new char[kBufferBytes])
{
  setp(buffer_.get(), buffer_.get() + kBufferBytes);
}

FdBuf::~FdBuf()
{
  abandon();
}

void FdBuf::abandon()
{
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool FdBuf::put_all(const char* data, std::size_t n)
{
  if (errno_ != 0) return false;
  if (const int err = checked_write(fd_, path_, written_, data, n); err != 0) {
    errno_ = err;
    failed_call_ = "write";
    return false;
  }
  return true;
}

bool FdBuf::drain()
{
  const auto n = static_cast<std::size_t>(pptr() - pbase());
  setp(buffer_.get(), buffer_.get() + kBufferBytes);
  return n == 0 || put_all(buffer_.get(), n);
}

FdBuf::int_type FdBuf::overflow(int_type c)
{
  if (!drain()) return traits_type::eof();
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  *pptr() = traits_type::to_char_type(c);
  pbump(1);
  return c;
}

std::streamsize FdBuf::xsputn(const char* s, std::streamsize n)
{
  if (errno_ != 0) return 0;
  const auto len = static_cast<std::size_t>(n);
  if (len <= static_cast<std::size_t>(epptr() - pptr())) {
    std::memcpy(pptr(), s, len);
    pbump(static_cast<int>(len));
    return n;
  }
  if (!drain()) return 0;
  if (len >= kBufferBytes) return put_all(s, len) ? n : 0;
  std::memcpy(pptr(), s, len);
  pbump(static_cast<int>(len));
  return n;
}

int FdBuf::sync()
{
  return drain() ? 0 : -1;
}

int FdBuf::finish(std::string& failed_call)
{
  if (fd_ < 0) return errno_;
  drain();
  // EINVAL: the file cannot be synced (a pipe, a terminal, /dev/stdout); there is nothing to lose by skipping it.
  if (errno_ == 0 && ::fsync(fd_) != 0 && errno != EINVAL) {
    errno_ = errno;
    failed_call_ = "fsync";
  }
  // Linux releases the descriptor even when close() fails, so it is never retried; EINTR loses nothing.
  if (::close(fd_) != 0 && errno != EINTR && errno_ == 0) {
    errno_ = errno;
    failed_call_ = "close";
  }
  fd_ = -1;
  failed_call = failed_call_;
  return errno_;
}

} // namespace detail

OutputFile::OutputFile(const std::filesystem::path& path, Mode mode) : std::ostream(nullptr), path_(path.string())
{
  const int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (mode == Mode::New ? O_EXCL : O_TRUNC);
  int fd = -1;
  do {
    fd = ::open(path_.c_str(), flags, 0666);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) throw_path_error(path_, "cannot create the file", errno);
  buf_ = std::make_unique<detail::FdBuf>(fd, path_);
  rdbuf(buf_.get());
}

OutputFile::OutputFile(int fd, const std::filesystem::path& path)
    : std::ostream(nullptr), path_(path.string()), buf_(std::make_unique<detail::FdBuf>(fd, path_))
{
  rdbuf(buf_.get());
}

OutputFile::~OutputFile()
{
  if (!closed_ && buf_) buf_->abandon();
}

void OutputFile::close()
{
  if (closed_) return;
  closed_ = true;
  std::string failed_call;
  const int err = buf_->finish(failed_call);
  if (err != 0) {
    setstate(std::ios::badbit);
    throw OutputError(path_, fmt::format("{}() failed", failed_call), err, output_error_fix(err));
  }
  // A stream error without an errno: a formatter threw inside `<<`, or a write was refused before reaching us.
  if (!good()) throw OutputError(path_, "the stream reported an error", 0, "run again; if it persists, report a bug");
}

ReplacingFile::ReplacingFile(const std::filesystem::path& path) : target_(path)
{
  namespace fs = std::filesystem;
  std::error_code ec;
  // Through a symbolic link, replace the file it points to rather than the link itself.
  if (fs::is_symlink(fs::symlink_status(target_, ec))) {
    const fs::path resolved = fs::weakly_canonical(target_, ec);
    if (!ec) target_ = resolved;
  }
  const fs::file_status st = fs::status(target_, ec);
  if (fs::exists(st) && fs::is_directory(st)) throw_path_error(path.string(), "cannot write the file", EISDIR);
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    direct_ = true;
    file_ = std::make_unique<OutputFile>(target_, OutputFile::Mode::Truncate);
    return;
  }
  const fs::path folder = target_.has_parent_path() ? target_.parent_path() : fs::path(".");
  static std::atomic<int> counter{0};
  for (;;) {
    // Not derived from the target's name, so a target name near NAME_MAX still gets a temporary file.
    temp_ = folder / fmt::format(".railyard-{}-{}.tmp", ::getpid(), counter++);
    const int fd = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      file_ = std::make_unique<OutputFile>(fd, temp_);
      return;
    }
    if (errno != EEXIST && errno != EINTR) {
      const int err = errno;
      temp_.clear();
      throw_path_error(path.string(), "cannot create a file in its folder", err);
    }
  }
}

ReplacingFile::~ReplacingFile()
{
  if (committed_ || direct_) return;
  file_.reset();
  if (!temp_.empty()) ::unlink(temp_.c_str());
}

void ReplacingFile::commit()
{
  file_->close();
  if (!direct_) {
    if (::rename(temp_.c_str(), target_.c_str()) != 0) {
      const int err = errno;
      throw OutputError(target_.string(), "cannot move the finished file into place (rename)", err,
                        output_error_fix(err));
    }
    sync_folder(target_.has_parent_path() ? target_.parent_path() : std::filesystem::path("."));
  }
  committed_ = true;
}

void write_file_replacing(const std::filesystem::path& path, const std::function<void(std::ostream&)>& fill)
{
  ReplacingFile file(path);
  fill(file.stream());
  file.commit();
}

void sync_folder(const std::filesystem::path& folder)
{
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw OutputError(folder.string(), "cannot open the folder to sync it", errno, output_error_fix(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL)
    throw OutputError(folder.string(), "fsync() of the folder failed", err, output_error_fix(err));
}

} // namespace railyard
