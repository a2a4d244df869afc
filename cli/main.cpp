#include "commands.hpp"

#include "railyard/common/error.hpp"

#include <fmt/format.h>

#include <exception>
#include <iostream>

int main(int argc, char** argv)
{
  CLI::App app{"Railyard: discrete-event network and collective simulator for GPU clusters", "railyard"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "railyard 0.1.0");
  app.footer("Exit codes: 0 success; 2 bad input (the message names the file, line or option, the rule broken and "
             "the fix); 1 (sweep) some points failed, results.csv lists them, (search) no layout could be ranked; 3 "
             "internal error (a bug: please report "
             "it); 4 an output could not be written (disk full, "
             "I/O error: the message names the file and the reason; no incomplete output is left looking complete).");
  railyard::cli::Action action;
  railyard::cli::add_run_command(app, &action);
  railyard::cli::add_topo_command(app, &action);
  railyard::cli::add_calibrate_command(app, &action);
  railyard::cli::add_nccl_tests_command(app, &action);
  railyard::cli::add_sweep_command(app, &action);
  railyard::cli::add_search_command(app, &action);
  railyard::cli::add_report_command(app, &action);
  railyard::cli::add_plan_command(app, &action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    const int code = action ? action() : 2;
    // A table printed into a full disk or a closed pipe is an output that did not arrive.
    std::cout.flush();
    if (!std::cout)
      throw railyard::OutputError("standard output", "writing the results failed", 0,
                                  "check where the standard output goes (a full disk, a closed pipe)");
    return code;
  } catch (const railyard::InputError& e) {
    std::cerr << "railyard: error: " << e.what() << "\n";
    return 2;
  } catch (const railyard::OutputError& e) {
    std::cerr << "railyard: error: " << e.what() << "\n";
    return 4;
  } catch (const std::exception& e) {
    std::cerr << "railyard: internal error: " << e.what() << "\n";
    return 3;
  }
}
