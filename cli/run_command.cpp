#include "commands.hpp"

#include "railyard/common/error.hpp"
#include "railyard/common/numbers.hpp"
#include "railyard/common/output_dir.hpp"
#include "railyard/common/units.hpp"
#include "railyard/scenario/run.hpp"
#include "railyard/scenario/run_workload.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <stdexcept>

namespace scn = railyard::scenario;

namespace railyard::cli {

void add_run_command(CLI::App& app, Action* action)
{
  struct Options {
    std::string scenario;
    std::string out;
    std::optional<std::string> seed; // parsed by us: CLI11 2.1 wraps -1 and saturates 2^64 into a uint64 silently
    bool force = false;
    bool progress = false;
    double progress_interval_s = 2.0;
    std::string max_memory;
    std::string max_transfers = "0"; // parsed by us, as the seed is
    std::string paths_from;
    bool memory_only = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd =
      app.add_subcommand("run", "Simulate a scenario: a cluster with collectives (writes summary.json and "
                                "collectives.csv: time, algbw, busbw per collective) or with a workload "
                                "(writes summary.json: step time, breakdown, MFU; breakdown.csv; trace.json)");
  cmd->add_option("scenario", opts->scenario, "scenario YAML file")->required();
  cmd->add_option("--out,-o", opts->out,
                  "output folder (default: out/<scenario name>); written as <DIR>.partial and renamed at the end. An "
                  "existing folder is replaced only if it is empty or an earlier Railyard output holding nothing else");
  cmd->add_flag("--force", opts->force,
                "replace an existing --out folder (and a leftover <DIR>.partial) even if Railyard did not write it; "
                "never the working directory, the home folder, a folder above them, or one holding the scenario or "
                "its inputs");
  cmd->add_option("--paths-from", opts->paths_from,
                  "resolve the scenario's relative paths (profile, traces, comm_group) beside this file instead of "
                  "beside the scenario (what railyard sweep passes for the points it writes: their base scenario)");
  cmd->add_flag("--memory-only", opts->memory_only,
                "a generated training step: write summary.json with the memory model's report per GPU (does it fit, "
                "the peak stage's breakdown) and simulate nothing (what railyard search prunes layouts with)");
  cmd->add_option("--seed", opts->seed, "override the scenario's seed (ECMP hashing): a whole number from 0 to 2^64-1");
  cmd->add_option("--max-memory", opts->max_memory,
                  "refuse up front a run whose estimated memory exceeds this ('8 GiB'; default: the machine's memory, "
                  "or its container's limit); the estimate is in summary.json's memory_estimate");
  cmd->add_option("--max-transfers", opts->max_transfers,
                  "refuse up front a run whose lowered collectives start more point-to-point transfers than this "
                  "(a work budget for sweeps; default: none)");
  cmd->add_flag("--progress", opts->progress,
                "print progress to stderr (simulated time, transfers or ops done, rate, ETA) even when stderr is not a "
                "terminal; on a terminal it is printed anyway");
  cmd->add_option("--progress-interval", opts->progress_interval_s, "seconds between progress lines (default 2)")
      ->check(CLI::Range(0.01, 3600.0));
  cmd->callback([opts, action] {
    *action = [opts] {
      const auto uint64_option = [](const std::string& text, const char* option) {
        try {
          return parse_uint64(text);
        } catch (const std::invalid_argument& e) {
          throw InputError({"railyard run", 0, option}, e.what(),
                           "give a whole number from 0 to 18446744073709551615 (2^64-1)");
        }
      };
      std::optional<std::uint64_t> seed;
      if (opts->seed) seed = uint64_option(*opts->seed, "--seed");
      const std::uint64_t max_transfers = uint64_option(opts->max_transfers, "--max-transfers");
      scn::Scenario scenario = scn::load_scenario(opts->scenario, opts->paths_from);
      if (seed) scenario.sim.seed = *seed;
      const std::string out = opts->out.empty() ? "out/" + scenario.name : opts->out;
      sim::RunLimits limits;
      limits.max_transfers = max_transfers;
      sim::MemoryLimit& memory = limits.memory;
      if (!opts->max_memory.empty()) {
        try {
          memory = {parse_bytes(opts->max_memory).bytes(), "--max-memory " + opts->max_memory};
        } catch (const std::invalid_argument& e) {
          throw InputError({"", 0, "--max-memory"}, e.what(), "give a size with its unit, such as '8 GiB'");
        }
        if (!(memory.bytes > 0))
          throw InputError({"", 0, "--max-memory"}, "the limit must be above zero", "give a size such as '8 GiB'");
      }
      // Before simulating: a folder that cannot or may not be written is refused now, not after a long run.
      OutputDir folder(out, {opts->force, "--out", "run", scenario.file, scenario.input_files()});
      // Progress goes to stderr on a terminal, or anywhere with --progress; the probe is only written by the engines.
      sim::ProgressProbe probe;
      std::unique_ptr<sim::ProgressReporter> reporter;
      if (opts->progress || isatty(STDERR_FILENO)) {
        scenario.sim.progress = &probe;
        reporter = std::make_unique<sim::ProgressReporter>(
            probe, scenario.workload ? sim::ProgressProbe::Unit::Ops : sim::ProgressProbe::Unit::Transfers, std::cerr,
            std::chrono::milliseconds(static_cast<long>(opts->progress_interval_s * 1000)));
      }
      if (opts->memory_only) {
        const nlohmann::ordered_json j = scn::workload_memory_summary(scenario, limits);
        folder.write("summary.json", [&](std::ostream& o) { o << j.dump(2) << "\n"; });
        folder.commit();
        const auto& g = j["gpu_memory"][0];
        std::cout << fmt::format(
            "memory per GPU: peak {:.1f} GiB on pipeline stage {} ({}){}\n",
            g["peak_bytes"].get<double>() / (1024.0 * 1024 * 1024), g["peak_stage"].get<int>(),
            g["breakdown"].get<std::string>(),
            g["fits"].is_null() ? "   (the GPU's memory is unknown)"
            : g["fits"].get<bool>()
                ? fmt::format(": fits in {:.1f} GiB", g["capacity_bytes"].get<double>() / (1024.0 * 1024 * 1024))
                : fmt::format(": DOES NOT FIT in {:.1f} GiB",
                              g["capacity_bytes"].get<double>() / (1024.0 * 1024 * 1024)));
        std::cout << "wrote " << out << "/summary.json\n";
        return 0;
      }
      if (scenario.workload) {
        const scn::WorkloadRunResult w = scn::run_workload(scenario, limits);
        if (reporter) reporter->finish();
        scn::write_workload_outputs(w, folder);
        const auto& r = w.replay;
        const double step = r.step_time.seconds();
        std::cout << fmt::format("workload: {} ({} ranks, {} programs)\n", w.workload.source, w.workload.world_size(),
                                 w.workload.graphs.size());
        // MFU, and the TFLOP/s per GPU papers quote beside it (model FLOPs; hardware FLOPs with recomputation).
        std::string tflops;
        if (r.model_flops_per_gpu_per_s)
          tflops = fmt::format("   {:.1f} model TFLOP/s per GPU", *r.model_flops_per_gpu_per_s / 1e12);
        if (r.hardware_flops_per_gpu_per_s)
          tflops += r.model_flops_per_gpu_per_s
                        ? fmt::format(", {:.1f} hardware", *r.hardware_flops_per_gpu_per_s / 1e12)
                        : fmt::format("   {:.1f} hardware TFLOP/s per GPU", *r.hardware_flops_per_gpu_per_s / 1e12);
        std::cout << fmt::format("step time {:.6f} s   communication {}   MFU {}{}\n", step, sim::to_string(r.comm),
                                 r.mfu ? fmt::format("{:.1f}%", *r.mfu * 100) : "n/a", tflops);
        const auto& b = r.mean;
        auto pct = [&](double v) { return step > 0 ? 100 * v / step : 0.0; };
        std::cout << fmt::format("mean per rank: compute {:.1f}%  exposed comm {:.1f}% (TP {:.1f} PP {:.1f} DP {:.1f} "
                                 "EP {:.1f} CP {:.1f} other {:.1f})  bubble {:.1f}%  idle {:.1f}%\n",
                                 pct(b.compute_s), pct(b.exposed_total()), pct(b.exposed_s[0]), pct(b.exposed_s[1]),
                                 pct(b.exposed_s[2]), pct(b.exposed_s[3]), pct(b.exposed_s[4]), pct(b.exposed_s[5]),
                                 pct(b.bubble_s), pct(b.idle_s));
        for (const auto& g : w.gpu_memory) {
          // The memory model's peak per GPU (summary.json "gpu_memory" has every stage's breakdown).
          constexpr double kGiB = 1024.0 * 1024 * 1024;
          const auto& m = g.stages[static_cast<std::size_t>(g.peak_stage)];
          std::cout << fmt::format(
              "memory per GPU{}: peak {:.1f} GiB on pipeline stage {}{} ({}){}\n",
              g.job.empty() ? "" : fmt::format(" (job {})", g.job), g.peak_bytes() / kGiB, g.peak_stage,
              g.capacity_bytes > 0 ? fmt::format(" of {:.1f} GiB", g.capacity_bytes / kGiB) : "",
              scn::memory_breakdown(m),
              g.capacity_bytes <= 0 ? "   (the GPU's memory is unknown: training.memory_limit_GiB gives it)"
              : g.checked           ? ""
              : g.peak_bytes() > g.capacity_bytes ? "   DOES NOT FIT (training.memory_check: false)"
                                                  : "   (training.memory_check: false)");
        }
        std::cout << "wrote " << out << "/summary.json, breakdown.csv and trace.json\n";
        return 0;
      }
      const scn::RunResult result = scn::run_scenario(scenario, limits);
      if (reporter) reporter->finish();
      scn::write_outputs(result, folder);
      std::cout << fmt::format("{:>16} {:>8} {:>10} {:>8} {:>4} {:>14} {:>12} {:>12}\n", "op", "ranks", "algorithm",
                               "protocol", "ch", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
      for (const auto& c : result.collectives)
        std::cout << fmt::format("{:>16} {:>8} {:>10} {:>8} {:>4} {:>14.3f} {:>12.2f} {:>12.2f}\n",
                                 models::to_string(c.call.kind), c.call.ranks.size(),
                                 models::to_string(*c.call.algorithm), models::to_string(*c.call.protocol),
                                 *c.call.channels, c.time().seconds() * 1e6, c.algbw().bytes_per_sec() / 1e9,
                                 c.busbw().bytes_per_sec() / 1e9);
      std::cout << "wrote " << out << "/summary.json and " << out << "/collectives.csv\n";
      return 0;
    };
  });
}

} // namespace railyard::cli
