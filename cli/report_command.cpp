#include "commands.hpp"

#include "railyard/studies/report.hpp"

#include <filesystem>
#include <iostream>
#include <memory>

namespace railyard::cli {

void add_report_command(CLI::App& app, Action* action)
{
  struct Options {
    std::string dir, out;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "report", "One self-contained HTML page (charts and tables, no network needed to open it) for the output folder "
                "of railyard run, sweep, search or plan: the step's breakdown, timeline, hottest links and link "
                "heatmap; a sweep's results against each axis; a search's ranking and Pareto front; a plan's bill of "
                "materials (studies/README.md)");
  cmd->add_option("dir", opts->dir, "the output folder (railyard run --out, sweep --out, search --out, plan -o)")
      ->required();
  cmd->add_option("-o,--out", opts->out,
                  "the page to write (default: DIR/report.html); an existing file is replaced only if it is an "
                  "earlier report page");
  cmd->callback([opts, action] {
    *action = [opts] {
      const studies::ReportOutcome r = studies::write_report(opts->dir, opts->out);
      std::cout << "report (" << studies::to_string(r.kind) << "): wrote " << r.file.string() << "\n";
      return 0;
    };
  });
}

} // namespace railyard::cli
