// Each sub-command of `railyard` registers itself here. A command's action returns the process exit code;
// it throws railyard::InputError for bad input, which main() turns into a message and exit code 2.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace railyard::cli {

using Action = std::function<int()>;

/// Registers a sub-command on `app`; when it is chosen, `*action` is set to what it should run.
void add_run_command(CLI::App& app, Action* action);
void add_topo_command(CLI::App& app, Action* action);
void add_calibrate_command(CLI::App& app, Action* action);
void add_nccl_tests_command(CLI::App& app, Action* action);
void add_sweep_command(CLI::App& app, Action* action);
void add_search_command(CLI::App& app, Action* action);
void add_report_command(CLI::App& app, Action* action);
void add_plan_command(CLI::App& app, Action* action);

} // namespace railyard::cli
