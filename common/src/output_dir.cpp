#include "railyard/common/output_dir.hpp"

#include "railyard/common/error.hpp"
#include "railyard/common/output_file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <set>

namespace railyard {
namespace {

namespace fs = std::filesystem;

// The longest name Railyard writes into an output folder, with room to spare: a path that cannot hold it is refused
// up front rather than after the simulation.
constexpr std::size_t kLongestFileName = 64;

fs::path canonical_or_self(const fs::path& p)
{
  std::error_code ec;
  const fs::path abs = fs::absolute(p, ec);
  if (ec) return p;
  const fs::path c = fs::weakly_canonical(abs, ec);
  return ec ? abs.lexically_normal() : c;
}

/// Whether `outer` is `inner` or a folder above it (both canonical).
bool holds(const fs::path& outer, const fs::path& inner)
{
  auto o = outer.begin(), i = inner.begin();
  for (; o != outer.end(); ++o, ++i) {
    if (o->empty()) continue; // a trailing separator
    if (i == inner.end() || *o != *i) return false;
  }
  return true;
}

bool read_marker_files(const fs::path& folder, std::vector<std::string>& files)
{
  std::ifstream in(folder / OutputDir::kMarker, std::ios::binary);
  if (!in) return false;
  const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("files") || !j["files"].is_array()) return false;
  for (const auto& f : j["files"])
    if (f.is_string()) files.push_back(f.get<std::string>());
  return true;
}

std::string list_some(const std::vector<std::string>& names)
{
  std::string out;
  for (std::size_t k = 0; k < names.size() && k < 5; ++k)
    out += (k ? ", " : "") + names[k];
  if (names.size() > 5) out += fmt::format(" and {} more", names.size() - 5);
  return out;
}

long name_max_of(fs::path p)
{
  std::error_code ec;
  while (!p.empty() && !fs::exists(p, ec) && p.has_parent_path() && p != p.parent_path())
    p = p.parent_path();
  const long n = ::pathconf(p.c_str(), _PC_NAME_MAX);
  return n > 0 ? n : NAME_MAX;
}

} // namespace

bool is_railyard_output(const fs::path& folder)
{
  std::error_code ec;
  return fs::is_regular_file(folder / OutputDir::kMarker, ec);
}

OutputDir::OutputDir(const std::string& dir, OutputDirOptions options) : given_(dir), options_(std::move(options))
{
  const auto refuse = [&](const std::string& rule, const std::string& fix) {
    throw InputError({given_, 0, options_.option}, rule, fix);
  };
  if (dir.empty()) refuse("the output folder is empty", "name a folder, e.g. out/<scenario name>");
  // "out/" names the folder "out"; without this "<dir>.partial" would be "out/.partial", inside the folder.
  std::string trimmed = dir;
  while (trimmed.size() > 1 && trimmed.back() == '/')
    trimmed.pop_back();

  std::error_code ec;
  const fs::path abs = fs::absolute(trimmed, ec);
  if (ec) throw_path_error(given_, "cannot resolve the output folder", ec.value(), options_.option);
  final_ = fs::weakly_canonical(abs, ec);
  if (ec) throw_path_error(given_, "cannot resolve the output folder", ec.value(), options_.option);
  // "new/." comes back as "new/": the folder is "new", and its staging folder "new.partial" beside it.
  if (!final_.has_filename() && final_.has_relative_path()) final_ = final_.parent_path();
  staging_ = final_.string() + kStagingSuffix;
  aside_ = final_.string() + kAsideSuffix;

  // Refused whatever --force says: replacing any of these deletes what the user works in or with.
  check_protected(final_);
  check_protected(staging_);
  check_protected(aside_);

  const std::size_t name = final_.filename().string().size();
  const long name_max = name_max_of(final_.parent_path());
  const std::size_t suffix = std::max(std::strlen(kStagingSuffix), std::strlen(kAsideSuffix));
  if (static_cast<long>(name + suffix) > name_max)
    refuse(fmt::format("the folder name is {} bytes long; with the '{}' suffix of the staging folder Railyard writes "
                       "first, it passes the file system's limit of {} bytes per name (NAME_MAX)",
                       name, kStagingSuffix, name_max),
           fmt::format("choose a name of at most {} bytes", name_max - static_cast<long>(suffix)));
  if (aside_.string().size() + 1 + kLongestFileName >= PATH_MAX)
    refuse(fmt::format("the path is {} bytes long; with the names of the files written into it, it passes the "
                       "system's limit of {} bytes per path (PATH_MAX)",
                       final_.string().size(), PATH_MAX),
           "choose a shorter path");

  // The parent: the nearest part that exists must be a folder; the missing ones are created.
  fs::path existing = final_.parent_path();
  while (!fs::exists(fs::symlink_status(existing, ec)) && existing.has_parent_path() &&
         existing != existing.parent_path())
    existing = existing.parent_path();
  if (!fs::is_directory(existing, ec))
    refuse(fmt::format("'{}' is a file, not a folder, so the output folder '{}' cannot be made in it",
                       existing.string(), final_.string()),
           "correct the path, or choose another one");
  fs::create_directories(final_.parent_path(), ec);
  if (ec)
    throw_path_error(final_.parent_path().string(), "cannot create the folder that holds the output folder", ec.value(),
                     options_.option);

  const fs::file_status st = fs::symlink_status(final_, ec);
  if (fs::exists(st)) {
    if (fs::is_symlink(st))
      refuse(fmt::format("'{}' is a symbolic link to nothing", final_.string()),
             "remove the link, or choose another path");
    if (!fs::is_directory(st))
      refuse(fmt::format("'{}' exists and is not a folder", final_.string()),
             "choose a new folder for the output (--out names a folder; a file there is never replaced)");
    // A mount point cannot be renamed over (EXDEV): found out now, not after the simulation.
    struct stat folder_st = {};
    struct stat parent_st = {};
    if (::stat(final_.c_str(), &folder_st) == 0 && ::stat(final_.parent_path().c_str(), &parent_st) == 0 &&
        folder_st.st_dev != parent_st.st_dev)
      refuse(fmt::format("'{}' is a mount point, and Railyard puts a finished output in place by renaming, which "
                         "cannot cross file systems",
                         final_.string()),
             fmt::format("choose a folder inside it, e.g. --out {}/run1", final_.string()));
    std::vector<std::string> entries;
    for (const auto& e : fs::directory_iterator(final_, ec))
      entries.push_back(e.path().filename().string());
    if (ec) throw_path_error(final_.string(), "cannot list the existing output folder", ec.value(), options_.option);
    std::sort(entries.begin(), entries.end());
    if (!entries.empty() && !options_.force) {
      std::vector<std::string> ours;
      if (!is_railyard_output(final_))
        refuse(fmt::format("'{}' exists and is not an earlier Railyard output (it has no {} file), so replacing it "
                           "would delete what it holds ({})",
                           final_.string(), kMarker, list_some(entries)),
               "choose another --out (a new or empty folder), or pass --force to replace the folder and everything "
               "in it");
      if (!read_marker_files(final_, ours))
        refuse(fmt::format("'{}' has a {} file that does not list the files Railyard wrote (an interrupted or "
                           "edited output), so Railyard cannot tell its files from yours",
                           final_.string(), kMarker),
               "choose another --out, or pass --force to replace the folder and everything in it");
      std::vector<std::string> foreign;
      const std::set<std::string> known(ours.begin(), ours.end());
      for (const auto& e : entries)
        if (e != kMarker && !known.count(e)) foreign.push_back(e);
      if (!foreign.empty())
        refuse(fmt::format("'{}' is an earlier Railyard output, but it also holds what Railyard did not write there "
                           "({}), which replacing it would delete",
                           final_.string(), list_some(foreign)),
               "move those out, choose another --out, or pass --force to replace the folder and everything in it");
    }
  }
  clear_leftover(staging_, "Railyard writes the output there first and renames it at the end");
  clear_leftover(aside_, "Railyard moves the earlier output there while it swaps in the new one");

  if (::mkdir(staging_.c_str(), 0777) != 0)
    throw_path_error(staging_.string(), "cannot create the staging folder of the output", errno, options_.option);
  created_ = true;
  try {
    write_marker(false);
  } catch (...) {
    // A constructor that throws gets no destructor call: the staging folder is removed here.
    std::error_code ignored;
    fs::remove_all(staging_, ignored);
    throw;
  }
}

void OutputDir::check_protected(const fs::path& p) const
{
  const auto refuse = [&](const std::string& what, const std::string& fix) {
    throw InputError({given_, 0, options_.option},
                     fmt::format("'{}' {}; Railyard replaces its output folder as a whole, so it refuses this folder "
                                 "even with --force",
                                 p.string(), what),
                     fix);
  };
  const std::string fix = "choose a new folder for the output, e.g. --out out/<scenario name>";
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (!ec && holds(p, canonical_or_self(cwd)))
    refuse(p == canonical_or_self(cwd) ? "is the working directory" : "holds the working directory", fix);
  std::vector<fs::path> homes;
  if (const char* h = std::getenv("HOME"); h && *h) homes.emplace_back(h);
  if (const passwd* pw = ::getpwuid(::getuid()); pw && pw->pw_dir && *pw->pw_dir) homes.emplace_back(pw->pw_dir);
  for (const auto& h : homes)
    if (holds(p, canonical_or_self(h)))
      refuse(p == canonical_or_self(h) ? "is the home folder" : "holds the home folder", fix);
  for (const auto& input : options_.inputs)
    if (holds(p, canonical_or_self(input)))
      refuse(fmt::format("{} the input '{}'", canonical_or_self(input) == p ? "is" : "holds", input),
             "choose a folder that does not hold the scenario or any file it reads, e.g. a new folder beside them");
}

void OutputDir::clear_leftover(const fs::path& p, const char* what) const
{
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(p, ec);
  if (!fs::exists(st)) return;
  const bool ours = fs::is_directory(st) && is_railyard_output(p);
  if (!ours && !options_.force)
    throw InputError(
        {given_, 0, options_.option},
        fmt::format("'{}' exists ({}) and is not Railyard's, so Railyard will not remove it", p.string(), what),
        "move it away, choose another --out, or pass --force to replace it");
  fs::remove_all(p, ec);
  if (ec) throw_path_error(p.string(), "cannot remove what an earlier run left there", ec.value(), options_.option);
}

void OutputDir::write_marker(bool complete)
{
  nlohmann::ordered_json j;
  j["railyard_output"] = 1;
  j["railyard_version"] = RAILYARD_VERSION;
  j["command"] = options_.command;
  j["scenario_file"] = options_.scenario_file;
  j["complete"] = complete;
  j["files"] = files_;
  OutputFile out(staging_ / kMarker, OutputFile::Mode::Truncate);
  out << j.dump(2) << "\n";
  out.close();
}

void OutputDir::write(const std::string& name, const std::function<void(std::ostream&)>& fill)
{
  OutputFile out(staging_ / name, OutputFile::Mode::New);
  fill(out);
  out.close();
  files_.push_back(name);
}

void OutputDir::commit()
{
  write_marker(true);
  sync_folder(staging_);
  std::error_code ec;
  const fs::path parent = final_.parent_path();
  const auto fail = [&](const fs::path& p, const char* what, int err) {
    throw OutputError(p.string(), what, err, output_error_fix(err));
  };
  if (!fs::exists(fs::symlink_status(final_, ec))) {
    if (::rename(staging_.c_str(), final_.c_str()) != 0)
      fail(final_, "cannot rename the finished staging folder to the output folder", errno);
    committed_ = true;
  } else if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, final_.c_str(), RENAME_EXCHANGE) == 0) {
    // One atomic step: the new output is in place, the earlier one now sits at the staging name.
    committed_ = true;
    fs::remove_all(staging_, ec);
  } else if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) {
    // A file system without RENAME_EXCHANGE: the earlier output goes aside and comes back if the new one cannot
    // take its place.
    if (::rename(final_.c_str(), aside_.c_str()) != 0) fail(final_, "cannot move the earlier output aside", errno);
    if (::rename(staging_.c_str(), final_.c_str()) != 0) {
      const int err = errno;
      ::rename(aside_.c_str(), final_.c_str());
      fail(final_, "cannot rename the finished staging folder to the output folder", err);
    }
    committed_ = true;
    fs::remove_all(aside_, ec);
  } else {
    fail(final_, "cannot swap the finished staging folder in for the earlier output (renameat2)", errno);
  }
  sync_folder(parent);
}

OutputDir::~OutputDir()
{
  if (created_ && !committed_) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
}

} // namespace railyard
