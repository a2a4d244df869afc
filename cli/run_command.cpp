#include "commands.hpp"

#include "railyard/sim/run.hpp"

#include <fmt/format.h>

#include <iostream>
#include <memory>

namespace railyard::cli {

void add_run_command(CLI::App& app, Action* action)
{
  struct Options {
    std::string scenario;
    std::string out;
    std::optional<std::uint64_t> seed;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("run", "Simulate a scenario (cluster + collectives) and write summary.json and "
                                            "collectives.csv (time, algbw, busbw per collective)");
  cmd->add_option("scenario", opts->scenario, "scenario YAML file")->required();
  cmd->add_option("--out,-o", opts->out, "output folder (default: out/<scenario name>)");
  cmd->add_option("--seed", opts->seed, "override the scenario's seed (ECMP hashing)");
  cmd->callback([opts, action] {
    *action = [opts] {
      sim::Scenario scenario = sim::load_scenario(opts->scenario);
      if (opts->seed)
        scenario.sim.seed = *opts->seed;
      const std::string out = opts->out.empty() ? "out/" + scenario.name : opts->out;
      const sim::RunResult result = sim::run_scenario(scenario);
      sim::write_outputs(result, out);
      std::cout << fmt::format("{:>16} {:>8} {:>10} {:>8} {:>4} {:>14} {:>12} {:>12}\n", "op", "ranks", "algorithm",
                               "protocol", "ch", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
      for (const auto& c : result.collectives)
        std::cout << fmt::format("{:>16} {:>8} {:>10} {:>8} {:>4} {:>14.3f} {:>12.2f} {:>12.2f}\n",
                                 models::to_string(c.call.kind), c.call.ranks.size(),
                                 models::to_string(*c.call.algorithm), models::to_string(*c.call.protocol),
                                 *c.call.channels, c.time().value() * 1e6, c.algbw().value() / 1e9,
                                 c.busbw().value() / 1e9);
      std::cout << "wrote " << out << "/summary.json and " << out << "/collectives.csv\n";
      return 0;
    };
  });
}

} // namespace railyard::cli
