// An output folder that appears complete or not at all, and that never takes the place of something the user did
// not ask to replace.
//
// - Files are written to "<dir>.partial" (the staging folder), whose first file is the marker `.railyard-output`
//   (JSON: railyard_output version, railyard version, command, scenario file; at the end also the list of files).
//   commit() swaps the staging folder in for `dir` only after every file was written, fsynced and closed, with one
//   renameat2(RENAME_EXCHANGE) (or, where the file system lacks it, rename aside / rename in / remove); if anything
//   fails, the earlier `dir` is intact, no folder named `dir` that looks complete appears, and the staging folder is
//   removed.
// - An existing `dir` is replaced only if it is empty, or an earlier Railyard output (it has the marker) holding no
//   file Railyard did not write, or `force` is set; otherwise an InputError names it and the fix (exit code 2).
//   The same holds for a leftover "<dir>.partial" (or "<dir>.replaced" of the fallback swap).
// - Even with `force`, `dir` may not be "/", the home folder, the working directory or a folder above it, or a folder
//   that holds (at any depth) one of the run's inputs. Paths are compared after std::filesystem::weakly_canonical,
//   so "out/../." and symbolic links do not slip through.
// - A bad path (its parent is a file or read-only, a name longer than NAME_MAX, a path longer than PATH_MAX) is an
//   InputError with the path and the reason; a trailing slash names the same folder.
#pragma once

#include <filesystem>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace railyard {

struct OutputDirOptions {
  bool force = false;              ///< replace an existing folder that is not (only) an earlier Railyard output
  std::string option = "--out";    ///< the option that named the folder, for messages
  std::string command;             ///< recorded in the marker, e.g. "run"
  std::string scenario_file;       ///< recorded in the marker
  std::vector<std::string> inputs; ///< files and folders the run reads: the folder may not hold any of them
};

class OutputDir {
public:
  static constexpr const char* kMarker = ".railyard-output";
  static constexpr const char* kStagingSuffix = ".partial";
  static constexpr const char* kAsideSuffix = ".replaced";

  /// Checks `dir` (see above), removes a stale staging folder of an earlier run, creates the staging folder and
  /// writes the marker into it.
  OutputDir(const std::string& dir, OutputDirOptions options);
  /// Without commit(), removes the staging folder: nothing of this run remains.
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  /// Writes the file `name` in the staging folder with what `fill` writes, checked (OutputFile), and closes it.
  void write(const std::string& name, const std::function<void(std::ostream&)>& fill);
  /// Puts the finished folder in place of `dir` (see above). Throws OutputError if the swap fails.
  void commit();

  /// The folder as it will be named (canonical, absolute).
  [[nodiscard]] const std::filesystem::path& path() const { return final_; }
  [[nodiscard]] const std::filesystem::path& staging() const { return staging_; }

private:
  void check_protected(const std::filesystem::path& p) const;
  void clear_leftover(const std::filesystem::path& p, const char* what) const;
  void write_marker(bool complete);

  std::string given_;
  OutputDirOptions options_;
  std::filesystem::path final_, staging_, aside_;
  std::vector<std::string> files_;
  bool created_ = false, committed_ = false;
};

/// Whether `folder` holds a Railyard marker (an earlier output or a staging folder).
bool is_railyard_output(const std::filesystem::path& folder);

} // namespace railyard
