#include "commands.hpp"
#include "study_options.hpp"

#include "railyard/common/error.hpp"
#include "railyard/studies/plan.hpp"
#include "railyard/studies/search.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

namespace railyard::cli {

void add_search_command(CLI::App& app, Action* action)
{
  struct Options {
    std::string search;
    StudyOptions study;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "search", "The fastest parallel layouts of a generated training step on a cluster: every combination of the "
                "layout keys given (tp, pp, virtual_stages, cp, ep, zero, micro_batch, recompute, ...; dp derived), "
                "pruned by the memory model (layouts that do not fit are reported with their breakdown, not run), "
                "ranked by step time, with the Pareto front of step time against GPUs (studies/README.md)");
  cmd->add_option("search", opts->search, "search YAML file")->required();
  cmd->add_option("--out,-o", opts->study.out,
                  "the search's folder (default: out/<search name>): memory/ and steps/ (its two sweeps) and "
                  "search.csv; an earlier search's folder is reused, points already run are not run again");
  add_study_options(cmd, opts->study);
  cmd->callback([opts, action] {
    *action = [opts] {
      const studies::SearchSpec spec = studies::load_search(opts->search);
      const studies::SweepRunOptions o = study_run_options(opts->study, spec.name, opts->search);
      const studies::SearchOutcome r = studies::run_search(spec, o);
      constexpr double kGiB = 1024.0 * 1024 * 1024;
      std::cout << fmt::format("search {}: {} layouts: {} simulated and ranked, {} do not fit in GPU memory, {} are "
                               "not layouts of this model and cluster, {} failed\n",
                               spec.name, r.candidates.size(), r.ranked, r.does_not_fit, r.not_a_layout, r.failed);
      std::string head = fmt::format("{:>4} {:>6}", "rank", "gpus");
      for (const auto& k : spec.keys)
        head += fmt::format(" {:>10}", k.size() > 10 ? k.substr(0, 10) : k);
      head += fmt::format(" {:>6} {:>12} {:>6} {:>14} {:>10}", "dp", "step (s)", "MFU", "TFLOP/s/GPU", "mem (GiB)");
      const bool priced = spec.sweep.cost != nullptr;
      if (priced) head += fmt::format(" {:>12}", "capex (USD)");
      std::cout << head << (spec.gpus.size() > 1 ? "  pareto" : "") << "\n";
      for (const auto& c : r.candidates) {
        if (c.status != "ok" || c.rank > spec.top) continue;
        std::string line = fmt::format("{:>4} {:>6}", c.rank, c.gpus);
        for (std::size_t k = 0; k < spec.keys.size(); ++k)
          line += fmt::format(" {:>10}", c.layout[k]);
        line += fmt::format(" {:>6} {:>12.6f} {:>5.1f}% {:>14.1f} {:>10.1f}", c.layout.back(), c.step_time_s,
                            100 * c.mfu, c.model_tflops_per_gpu, c.peak_memory_bytes / kGiB);
        if (priced) line += fmt::format(" {:>12.0f}", c.capex_usd);
        std::cout << line << (spec.gpus.size() > 1 ? (c.pareto ? "  yes" : "") : "") << "\n";
      }
      if (spec.gpus.size() > 1) {
        std::cout << "Pareto front (no layout is both faster and on fewer GPUs):";
        for (const auto& c : r.candidates)
          if (c.pareto) std::cout << fmt::format(" rank {} ({} GPUs, {:.6f} s)", c.rank, c.gpus, c.step_time_s);
        std::cout << "\n";
      }
      if (priced) {
        std::cout << "Pareto front against capex (no layout is both faster and cheaper):";
        for (const auto& c : r.candidates)
          if (c.pareto_cost)
            std::cout << fmt::format(" rank {} ({} GPUs, ${:.0f}, {:.6f} s)", c.rank, c.gpus, c.capex_usd,
                                     c.step_time_s);
        std::cout << "\n";
      }
      std::size_t shown = 0;
      for (const auto& c : r.candidates) {
        if (c.status != "does_not_fit") continue;
        if (shown++ == 0) std::cout << "do not fit (not simulated):\n";
        if (shown > 10) {
          std::cout << fmt::format("  ... and {} more (search.csv)\n", r.does_not_fit - 10);
          break;
        }
        std::string line = "  ";
        for (std::size_t k = 0; k < spec.keys.size(); ++k)
          line += fmt::format("{}={} ", spec.keys[k], c.layout[k]);
        std::cout << line << fmt::format("dp={}: {}\n", c.layout.back(), c.reason);
      }
      std::cout << "wrote " << r.table << "\n";
      return r.ranked > 0 ? 0 : 1;
    };
  });
}

} // namespace railyard::cli
