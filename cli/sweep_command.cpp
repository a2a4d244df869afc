#include "commands.hpp"

#include "railyard/common/error.hpp"
#include "railyard/studies/sweep.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

namespace railyard::cli {

void add_sweep_command(CLI::App& app, Action* action)
{
  struct Options {
    std::string sweep;
    std::string out;
    int jobs = 1;
    bool progress = false;
    bool dry_run = false;
    std::string max_memory;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Run a base scenario over axes of its keys (values, ranges, zipped or crossed; derived keys such as "
               "dp = gpus / (tp * pp)), each point `railyard run` in its own process, and write one table, "
               "results.csv, with the axes beside each point's metrics; points already finished are reused "
               "(studies/README.md)");
  cmd->add_option("sweep", opts->sweep, "sweep YAML file")->required();
  cmd->add_option("--out,-o", opts->out,
                  "the sweep's folder (default: out/<sweep name>): points/ (one folder per point) and results.csv; "
                  "a folder of an earlier run of a sweep is reused, any other non-empty folder refused");
  cmd->add_option("-j,--jobs", opts->jobs, "points run at once (default 1)")->check(CLI::Range(1, 1024));
  cmd->add_flag("--progress", opts->progress,
                "print a progress line per finished point to stderr even when it is not a terminal");
  cmd->add_flag("--dry-run", opts->dry_run, "print the points (their axis and derived values) and write nothing");
  cmd->add_option("--max-memory", opts->max_memory,
                  "passed to each point's railyard run (refuse a point whose "
                  "estimated memory exceeds this, e.g. '8 GiB')");
  cmd->callback([opts, action] {
    *action = [opts] {
      const studies::SweepSpec spec = studies::load_sweep(opts->sweep);
      if (opts->dry_run) {
        const auto columns = spec.columns();
        for (const auto& p : studies::expand_sweep(spec)) {
          std::string line = fmt::format("point {}:", p.index);
          for (std::size_t c = 0; c < columns.size(); ++c)
            line += fmt::format(" {}={}", columns[c], p.values[c]);
          if (!p.invalid.empty()) line += "   INVALID: " + p.invalid;
          std::cout << line << "\n";
        }
        std::cout << fmt::format("{} points\n", spec.points());
        return 0;
      }
      studies::SweepRunOptions o;
      o.out = opts->out.empty() ? "out/" + spec.name : opts->out;
      o.jobs = opts->jobs;
      o.progress = opts->progress;
      std::error_code ec;
      o.railyard = std::filesystem::read_symlink("/proc/self/exe", ec).string();
      if (ec) throw std::runtime_error("railyard sweep: cannot find its own binary (/proc/self/exe)");
      if (!opts->max_memory.empty()) o.run_args = {"--max-memory", opts->max_memory};
      const studies::SweepOutcome r = studies::run_sweep(spec, o);
      std::cout << fmt::format("sweep {}: {} points: {} ran, {} reused, {} failed, {} invalid\n", spec.name, r.points,
                               r.ran, r.reused, r.failed, r.invalid);
      std::cout << "wrote " << r.results << "\n";
      if (r.failed + r.invalid > 0) {
        std::cout << "points that did not finish (results.csv lists each with its error):\n";
        for (const auto& [index, status, error] : r.problems)
          std::cout << fmt::format("  point {} {}: {}\n", index, status, error);
        return 1;
      }
      return 0;
    };
  });
}

} // namespace railyard::cli
