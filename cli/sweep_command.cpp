#include "commands.hpp"
#include "study_options.hpp"

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
    StudyOptions study;
    bool dry_run = false;
    bool slurm = false, gather = false;
    studies::SlurmOptions so;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "sweep", "Run a base scenario over axes of its keys (values, ranges, zipped or crossed; derived keys such as "
               "dp = gpus / (tp * pp)), each point `railyard run` in its own process, and write one table, "
               "results.csv, with the axes beside each point's metrics; points already finished are reused "
               "(studies/README.md)");
  cmd->add_option("sweep", opts->sweep, "sweep YAML file")->required();
  cmd->add_option("--out,-o", opts->study.out,
                  "the sweep's folder (default: out/<sweep name>): points/ (one folder per point) and results.csv; "
                  "a folder of an earlier run of a sweep is reused, any other non-empty folder refused");
  add_study_options(cmd, opts->study);
  cmd->add_flag("--dry-run", opts->dry_run, "print the points (their axis and derived values) and write nothing");
  cmd->add_flag("--slurm", opts->slurm,
                "submit the points to Slurm instead of running them here: a job array (sbatch --array) of "
                "railyard run tasks and a gather job after it (--dependency=afterany) that writes results.csv; "
                "the sweep's folder must be on a file system the compute nodes share");
  cmd->add_option("--slurm-partition", opts->so.partition, "sbatch --partition");
  cmd->add_option("--slurm-account", opts->so.account, "sbatch --account");
  cmd->add_option("--slurm-time", opts->so.time, "sbatch --time, per task (e.g. 01:00:00)");
  cmd->add_option("--slurm-batch", opts->so.batch, "points per array task (default 1)")->check(CLI::Range(1, 1000000));
  cmd->add_option("--slurm-setup", opts->so.setup,
                  "shell lines each task runs first, e.g. 'module load railyard' or a container's environment");
  cmd->add_option("--slurm-railyard", opts->so.railyard,
                  "the railyard binary on the compute nodes (default: this one's path)");
  cmd->add_flag("--wait", opts->so.wait, "with --slurm: return when the gather job has ended, with its exit code");
  cmd->add_flag("--gather", opts->gather,
                "run nothing: write results.csv from the points that finished (what the Slurm gather job runs); the "
                "others are listed as failed with what their log says");
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
      studies::SweepRunOptions o = study_run_options(opts->study, spec.name, opts->sweep);
      o.slurm = opts->so;
      if (opts->slurm && opts->gather)
        throw InputError({"", 0, "--gather"}, "--slurm and --gather are two different steps",
                         "give --slurm to submit (its gather job runs --gather), or --gather alone");
      o.mode = opts->slurm    ? studies::SweepRunOptions::Mode::Slurm
               : opts->gather ? studies::SweepRunOptions::Mode::Gather
                              : studies::SweepRunOptions::Mode::Local;
      const studies::SweepOutcome r = studies::run_sweep(spec, o);
      if (!r.array_job.empty()) {
        std::cout << fmt::format("sweep {}: {} points: {} submitted to Slurm as array job {}, {} reused, {} invalid; "
                                 "gather job {} writes {}/results.csv when the array ends\n",
                                 spec.name, r.points, r.ran, r.array_job, r.reused, r.invalid, r.gather_job, o.out);
        if (!opts->so.wait) return 0;
        std::cout << fmt::format("gather job {} ended with exit code {} ({}/slurm/gather.log has its output)\n",
                                 r.gather_job, r.gather_exit, o.out);
        return r.gather_exit;
      }
      if (o.mode == studies::SweepRunOptions::Mode::Gather)
        std::cout << fmt::format("sweep {}: {} points: {} finished, {} failed or not run, {} invalid\n", spec.name,
                                 r.points, r.reused, r.failed, r.invalid);
      else
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
