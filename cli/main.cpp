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
  railyard::cli::Action action;
  railyard::cli::add_run_command(app, &action);
  railyard::cli::add_topo_command(app, &action);
  railyard::cli::add_calibrate_command(app, &action);
  railyard::cli::add_nccl_tests_command(app, &action);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    return action ? action() : 2;
  } catch (const railyard::InputError& e) {
    std::cerr << "railyard: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "railyard: internal error: " << e.what() << "\n";
    return 3;
  }
}
