// Files whose every write is checked. std::ofstream drops errors unless someone asks, and nobody asks after the
// last `<<`: a full disk left a truncated summary.json that looked complete. An OutputFile is an std::ostream over a
// POSIX file descriptor that loops over short writes and EINTR, keeps the first errno, and whose close() flushes,
// fsyncs and closes and throws OutputError naming the file if anything failed on the way.
//
// Test hook: RAILYARD_TEST_FAIL_WRITES_AFTER_BYTES=N in the environment makes every checked write of the process
// fail with ENOSPC once the process has written N bytes through OutputFiles (the write that crosses N is cut short
// at N, as a filling disk does), so a test can make the 1st, 2nd, ... file of a run fail; =NAME:N does the same for
// each file named NAME alone (its first N bytes go through), so a test can pick the file without adding up the sizes
// of those before it. Unset, it costs one branch per buffer written.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <ostream>
#include <streambuf>
#include <string>

namespace railyard {

namespace detail {

/// The buffer under an OutputFile: 64 KiB, written out with checked_write().
class FdBuf : public std::streambuf {
public:
  FdBuf(int fd, std::string path);
  ~FdBuf() override;
  FdBuf(const FdBuf&) = delete;
  FdBuf& operator=(const FdBuf&) = delete;
  /// Flushes, fsyncs and closes; the first errno of the file's life (0: none) and which call failed.
  int finish(std::string& failed_call);
  /// Closes without flushing, for a file abandoned while an exception unwinds.
  void abandon();
  [[nodiscard]] int error() const { return errno_; }

protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

private:
  bool drain();
  bool put_all(const char* data, std::size_t n);

  int fd_;
  std::string path_;
  long long written_ = 0;
  int errno_ = 0;
  std::string failed_call_;
  std::unique_ptr<char[]> buffer_;
};

} // namespace detail

/// A new file, written only through checked calls. Open failures that come from the path (no such folder, read-only
/// file system, permission, a name too long, a folder in the way) are InputErrors naming the path (exit code 2); the
/// rest (ENOSPC, EIO, ...) are OutputErrors (exit code 4).
class OutputFile : public std::ostream {
public:
  enum class Mode {
    Truncate, ///< create or truncate
    New       ///< create; fail if the file exists (O_EXCL)
  };
  explicit OutputFile(const std::filesystem::path& path, Mode mode = Mode::Truncate);
  /// Takes over `fd`, a descriptor open for writing on `path`.
  OutputFile(int fd, const std::filesystem::path& path);
  /// Without close() (an exception is unwinding), the descriptor is closed and nothing is reported.
  ~OutputFile() override;
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  /// Flushes, fsyncs and closes; throws OutputError naming the file if any write, the fsync or the close failed.
  void close();
  [[nodiscard]] const std::string& path() const { return path_; }

private:
  std::string path_;
  std::unique_ptr<detail::FdBuf> buf_;
  bool closed_ = false;
};

/// Writes `path` whole or not at all: the text goes to a temporary file in the same folder (checked, fsynced), which
/// is renamed over `path` by commit(); without commit() the temporary file is removed and `path` is untouched. A
/// `path` that exists and is not a regular file (/dev/stdout, a FIFO) is written directly, as it cannot be renamed
/// over.
class ReplacingFile {
public:
  explicit ReplacingFile(const std::filesystem::path& path);
  ~ReplacingFile();
  ReplacingFile(const ReplacingFile&) = delete;
  ReplacingFile& operator=(const ReplacingFile&) = delete;

  [[nodiscard]] std::ostream& stream() { return *file_; }
  /// Closes the temporary file and renames it over the target; throws OutputError if any of it failed.
  void commit();

private:
  std::filesystem::path target_, temp_;
  std::unique_ptr<OutputFile> file_;
  bool direct_ = false, committed_ = false;
};

/// Writes `path` whole or not at all (ReplacingFile) with what `fill` writes.
void write_file_replacing(const std::filesystem::path& path, const std::function<void(std::ostream&)>& fill);

/// fsync() of a folder, so that a rename or a new file in it survives a crash. File systems that cannot sync a folder
/// (EINVAL) are not an error; anything else is an OutputError naming the folder.
void sync_folder(const std::filesystem::path& folder);

/// The InputError or OutputError for a failed open/mkdir/rename of `path` with `err` (errno): errors that come from
/// the path the user chose are InputErrors (exit code 2), the others OutputErrors (exit code 4).
[[noreturn]] void throw_path_error(const std::string& path, const std::string& what_failed, int err,
                                   const std::string& option = "");

} // namespace railyard
