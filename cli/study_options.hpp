// The options railyard sweep and railyard search share (points run at once, progress, the memory limit passed to each
// point's railyard run) and the run options they make.
#pragma once

#include "railyard/studies/sweep.hpp"

#include <CLI/CLI.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>

namespace railyard::cli {

struct StudyOptions {
  std::string out;
  int jobs = 1;
  bool progress = false;
  std::string max_memory;
};

/// Adds -j, --progress and --max-memory to `cmd`.
inline void add_study_options(CLI::App* cmd, StudyOptions& o)
{
  cmd->add_option("-j,--jobs", o.jobs, "points run at once (default 1)")->check(CLI::Range(1, 1024));
  cmd->add_flag("--progress", o.progress,
                "print a progress line per finished point to stderr even when it is not a terminal");
  cmd->add_option("--max-memory", o.max_memory,
                  "passed to each point's railyard run (refuse a point whose estimated memory exceeds this, e.g. "
                  "'8 GiB')");
}

/// The run options of a study named `name` read from `file`: its folder (default out/<name>), this binary as the one
/// that runs each point.
inline studies::SweepRunOptions study_run_options(const StudyOptions& o, const std::string& name,
                                                  const std::string& file)
{
  studies::SweepRunOptions r;
  r.out = o.out.empty() ? "out/" + name : o.out;
  r.jobs = o.jobs;
  r.progress = o.progress;
  r.sweep_file = file;
  std::error_code ec;
  r.railyard = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  if (ec) throw std::runtime_error("railyard: cannot find its own binary (/proc/self/exe)");
  if (!o.max_memory.empty()) r.run_args = {"--max-memory", o.max_memory};
  return r;
}

} // namespace railyard::cli
