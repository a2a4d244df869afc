// `railyard calibrate --from LOGS_OR_CSVS... --out PROFILE.yaml`: fits a profile from nccl-tests logs and the CSVs
// of calibration/cuda/, and writes it only when every input is valid and every fit succeeded.
#include "commands.hpp"

#include "railyard/calibration/calibrate.hpp"
#include "railyard/calibration/profile.hpp"
#include "railyard/common/csv.hpp"
#include "railyard/common/error.hpp"
#include "railyard/common/output_file.hpp"
#include "railyard/scenario/collective_calibration.hpp"
#include "railyard/scenario/step_calibration.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace railyard::cli {
namespace {

struct CalibrateCliOptions {
  std::vector<std::string> from;
  std::string steps;
  std::string scenario;
  double fit_fraction = 0.5;
  std::uint64_t seed = 1;
  std::optional<int> max_evaluations; ///< empty: the fit's own default
  std::string framework;
  std::string predictions;
  std::string collectives;
  std::vector<std::string> fit;
  std::vector<int> fit_ranks;
  std::vector<std::string> only;
  std::string out;
  std::string system;
  std::string description;
  std::string intra_node_link;
  int max_pieces = 4;
  double split_above = 0.05;
};

std::string percent(double v)
{
  return fmt::format("{:.2f}%", v * 100.0);
}

void print_summary(const calibration::CalibrationResult& r, std::ostream& out)
{
  const auto& p = r.profile;
  out << fmt::format("profile {}: {} x{} per node{}, from {} input(s)\n", p.system, p.gpu_model, p.gpus_per_node,
                     p.nccl_version.empty()
                         ? ""
                         : fmt::format(", {} {}", calibration::library_name(p.collective_library), p.nccl_version),
                     p.inputs.size());
  if (!p.collectives.empty()) {
    out << fmt::format("{:<15} {:<10} {:<8} {:<8} {:>5} {:>5} {:>6} {:>6} {:>9} {:>9}\n", "collective", "algorithm",
                       "protocol", "link", "ranks", "nodes", "pieces", "points", "rms err", "max err");
    for (const auto& c : p.collectives)
      out << fmt::format(
          "{:<15} {:<10} {:<8} {:<8} {:>5} {:>5} {:>6} {:>6} {:>9} {:>9}\n", models::to_string(c.collective),
          calibration::algorithm_name(c.algorithm), calibration::protocol_name(c.protocol),
          calibration::to_string(c.link), c.nranks, c.nodes, c.pieces.size(), c.fit ? c.fit->quality.points : 0,
          c.fit ? percent(c.fit->quality.rms_rel_error) : "-", c.fit ? percent(c.fit->quality.max_rel_error) : "-");
  }
  for (const auto& l : p.links)
    out << fmt::format("link {:<8} latency {}, bandwidth {}{}\n", calibration::to_string(l.kind),
                       format_seconds(l.latency), format_bandwidth(l.bandwidth),
                       l.fit ? fmt::format(" (fit: {} points, rms {}, max {})", l.fit->quality.points,
                                           percent(l.fit->quality.rms_rel_error), percent(l.fit->quality.max_rel_error))
                             : "");
  if (p.kernel) {
    const auto& k = *p.kernel;
    out << fmt::format("kernel: launch {}, memory {} x {:.3f}\n", format_seconds(k.launch_overhead),
                       format_bandwidth(k.memory_bandwidth), k.memory_efficiency);
    for (const auto& c : k.compute)
      out << fmt::format("kernel {:<5} peak {:.1f} TFLOP/s x {:.3f}{}\n", calibration::to_string(c.dtype),
                         c.peak_flops / 1e12, c.efficiency,
                         c.fit
                             ? fmt::format(" (roofline over {} GEMMs: rms {}, max {})", c.fit->quality.points,
                                           percent(c.fit->quality.rms_rel_error), percent(c.fit->quality.max_rel_error))
                             : "");
  }
  for (const auto& n : r.notes)
    out << "note: " << n << "\n";
}

void print_errors(const char* what, const scenario::StepErrors& e, std::ostream& out)
{
  out << fmt::format("{:<28} {:>5} {:>9} {:>9} {:>9} {:>10} {:>9}\n", what, e.n,
                     fmt::format("{:.1f}%", 100 * e.geomean), fmt::format("{:+.1f}%", 100 * e.bias),
                     fmt::format("{:+.1f}%", 100 * e.worst), fmt::format("{:.0f}%", 100 * e.within_8),
                     fmt::format("{:.3f}", e.spearman));
}

// The profile never replaces one of the measurements it is fitted from.
void refuse_output_over_input(const std::string& out_path, const std::vector<std::string>& inputs, const char* option)
{
  namespace fs = std::filesystem;
  std::error_code ec_out;
  const fs::path out = fs::weakly_canonical(fs::absolute(out_path, ec_out), ec_out);
  for (const auto& input : inputs) {
    std::error_code ec, ec_in;
    const fs::path in = fs::weakly_canonical(fs::absolute(input, ec_in), ec_in);
    if (fs::equivalent(out_path, input, ec) || (!ec_out && !ec_in && out == in))
      throw InputError({out_path, 0, option}, fmt::format("the file to write is the input '{}'", input),
                       "name a new file, e.g. --out my_cluster.yaml");
  }
}

// --out and --predictions of a fit with a base scenario: neither replaces an input; the predictions file is new.
void refuse_outputs_over_inputs(const CalibrateCliOptions& o, const std::string& measurements)
{
  refuse_output_over_input(o.out, {measurements, o.scenario}, "--out");
  if (o.predictions.empty()) return;
  refuse_output_over_input(o.predictions, {measurements, o.scenario, o.out}, "--predictions");
  if (std::filesystem::exists(o.predictions))
    throw InputError({o.predictions, 0, "--predictions"}, "the predictions file exists already",
                     "name a new file, or remove the old one first");
}

int run_calibrate_steps(const CalibrateCliOptions& o)
{
  if (o.scenario.empty())
    throw InputError({"", 0, "--scenario"}, "--steps needs the base scenario the rows complete",
                     "add --scenario BASE.yaml (cluster, nccl, profile and a generated workload)");
  refuse_outputs_over_inputs(o, o.steps);
  scenario::StepFitOptions options;
  options.scenario = o.scenario;
  options.fit_fraction = o.fit_fraction;
  options.seed = o.seed;
  options.max_evaluations = o.max_evaluations.value_or(options.max_evaluations);
  options.framework_name = o.framework;
  if (options.max_evaluations < 5)
    throw InputError({"", 0, "--max-evaluations"}, "the fit needs at least 5 evaluations (its first simplex)",
                     "write e.g. --max-evaluations 200");
  auto result = scenario::calibrate_steps(o.steps, options);
  if (!o.system.empty()) result.profile.system = o.system;
  if (!o.description.empty()) result.profile.description = o.description;
  calibration::write_profile(result.profile, o.out);
  if (!o.predictions.empty())
    write_file_replacing(o.predictions, [&](std::ostream& out) {
      CsvWriter w(out);
      w.record("line", "half", "configuration", "measured_s", "device_alone_s", "device_alone_error", "framework_s",
               "framework_error");
      for (const auto& r : result.rows)
        w.record(r.line, r.fit ? "fit" : "held-out", r.label, r.measured_s, r.device_s, r.device_s / r.measured_s - 1,
                 r.framework_s, r.framework_s / r.measured_s - 1);
    });
  const auto& f = *result.profile.framework;
  std::cout << fmt::format("framework model from {} measured steps ({} evaluations): {:.4g} us per kernel, {:.4g} us "
                           "per communication call, {:.4g} us per micro-batch, {:.4g} us per step\n",
                           result.rows.size(), result.evaluations, f.launch.seconds() * 1e6,
                           f.collective.seconds() * 1e6, f.microbatch.seconds() * 1e6, f.step.seconds() * 1e6);
  std::cout << fmt::format("{:<28} {:>5} {:>9} {:>9} {:>9} {:>10} {:>9}\n", "simulated vs measured", "rows", "geomean",
                           "bias", "worst", "within 8%", "spearman");
  print_errors("device alone, fit half", result.device_fit, std::cout);
  print_errors("device alone, held-out", result.device_held_out, std::cout);
  print_errors("with framework, fit half", result.framework_fit, std::cout);
  print_errors("with framework, held-out", result.framework_held_out, std::cout);
  std::cout << "wrote " << o.out << (o.predictions.empty() ? "" : " and " + o.predictions) << "\n";
  return 0;
}

double geomean_error(const std::vector<scenario::CollectivePrediction>& points, bool fit, bool fitted)
{
  double sum = 0;
  int n = 0;
  for (const auto& p : points)
    if (p.fit == fit) {
      sum += std::abs(std::log((fitted ? p.fitted_us : p.base_us) / p.point.time_us));
      ++n;
    }
  return n ? std::exp(sum / n) - 1 : 0;
}

int run_calibrate_collectives(const CalibrateCliOptions& o)
{
  if (o.scenario.empty())
    throw InputError({"", 0, "--scenario"}, "--collectives needs the base scenario of the machine",
                     "add --scenario BASE.yaml (its cluster, network and nccl sections)");
  refuse_outputs_over_inputs(o, o.collectives);
  scenario::CollectiveFitOptions options;
  options.scenario = o.scenario;
  options.keys = o.fit;
  options.fit_ranks = o.fit_ranks;
  options.only = o.only;
  options.max_evaluations = o.max_evaluations.value_or(options.max_evaluations);
  if (options.max_evaluations < static_cast<int>(o.fit.size()) + 1)
    throw InputError({"", 0, "--max-evaluations"}, "the fit needs at least one evaluation more than it has keys",
                     "give a larger --max-evaluations");
  const auto r = scenario::calibrate_collectives(o.collectives, options);
  std::string header = fmt::format("# {} with {} fitted by railyard calibrate --collectives to the {} points of {} "
                                   "with {} ranks ({} evaluations):\n",
                                   o.scenario, r.keys.size() == 1 ? "one key" : fmt::format("{} keys", r.keys.size()),
                                   std::count_if(r.points.begin(), r.points.end(), [](const auto& p) { return p.fit; }),
                                   o.collectives, fmt::join(o.fit_ranks, " or "), r.evaluations);
  for (const auto& k : r.keys)
    header += fmt::format("#   {}: {} -> {}\n", k.key, k.base_value, k.fitted_value);
  write_file_replacing(o.out, [&](std::ostream& out) { out << header << r.scenario_yaml; });
  if (!o.predictions.empty())
    write_file_replacing(o.predictions, [&](std::ostream& out) {
      CsvWriter w(out);
      w.record("id", "collective", "ranks", "nodes", "size_bytes", "algorithm", "protocol", "half", "measured_us",
               "base_us", "base_error", "fitted_us", "fitted_error");
      for (const auto& p : r.points)
        w.record(p.point.id, p.point.collective, p.point.ranks, p.point.nodes, p.point.size_bytes, p.point.algorithm,
                 p.point.protocol, p.fit ? "fit" : "predicted", p.point.time_us, p.base_us,
                 p.base_us / p.point.time_us - 1, p.fitted_us, p.fitted_us / p.point.time_us - 1);
    });
  std::cout << header;
  std::cout << fmt::format("{:<22} {:>6} {:>14} {:>14}\n", "points", "n", "base geomean", "fitted geomean");
  std::map<std::pair<bool, int>, std::vector<scenario::CollectivePrediction>> by;
  for (const auto& p : r.points)
    by[{!p.fit, p.point.ranks}].push_back(p);
  for (const auto& [k, v] : by)
    std::cout << fmt::format("{:<22} {:>6} {:>13.1f}% {:>13.1f}%\n",
                             fmt::format("{} ranks ({})", k.second, k.first ? "predicted" : "fit"), v.size(),
                             100 * geomean_error(v, !k.first, false), 100 * geomean_error(v, !k.first, true));
  std::cout << "wrote " << o.out << (o.predictions.empty() ? "" : " and " + o.predictions) << "\n";
  return 0;
}

int run_calibrate(const CalibrateCliOptions& o)
{
  if (!o.collectives.empty() + !o.steps.empty() + !o.from.empty() > 1)
    throw InputError({"", 0, !o.collectives.empty() ? "--collectives" : "--steps"},
                     "--from, --steps and --collectives fit different things",
                     "run calibrate once per kind of input: --from (nccl-tests logs, kernel CSVs), --steps (measured "
                     "step times) or --collectives (measured nccl-tests points)");
  if (!o.collectives.empty()) return run_calibrate_collectives(o);
  if (!o.steps.empty()) return run_calibrate_steps(o);
  if (o.from.empty())
    throw InputError({"", 0, "--from"}, "nothing to calibrate from",
                     "give --from LOGS_OR_CSVS..., or --steps FILE.csv --scenario BASE.yaml");
  calibration::CalibrateOptions options;
  options.system = o.system;
  options.description = o.description;
  if (!o.intra_node_link.empty()) {
    const auto k = calibration::link_kind_from_string(o.intra_node_link);
    if (!k || *k == calibration::LinkKind::Network)
      throw InputError({"", 0, "--intra-node-link"}, fmt::format("'{}' is not nvlink, xgmi or pcie", o.intra_node_link),
                       "write --intra-node-link nvlink, xgmi (AMD Instinct) or pcie");
    options.intra_node_link = k;
  }
  if (o.max_pieces < 1)
    throw InputError({"", 0, "--max-pieces"}, "at least one piece is needed", "write --max-pieces 1 or more");
  if (!(o.split_above >= 0))
    throw InputError({"", 0, "--split-above"}, "the split threshold is a relative error >= 0",
                     "write e.g. --split-above 0.05 for 5%");
  options.piecewise.max_pieces = o.max_pieces;
  options.piecewise.split_above_max_rel_error = o.split_above;
  refuse_output_over_input(o.out, calibration::expand_inputs(o.from), "--out");
  const auto result = calibration::calibrate(o.from, options);
  calibration::write_profile(result.profile, o.out);
  print_summary(result, std::cout);
  std::cout << "wrote " << o.out << "\n";
  return 0;
}

} // namespace

void add_calibrate_command(CLI::App& app, Action* action)
{
  auto opts = std::make_shared<CalibrateCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Fit a profile of a GPU system from measurements: nccl-tests output as all_reduce_perf, all_gather_perf, "
      "reduce_scatter_perf, broadcast_perf, reduce_perf, alltoall_perf and sendrecv_perf print it (any version; "
      "keep the header lines, which name the GPUs and the NCCL version), and the CSVs of calibration/cuda/ "
      "(nccl_sweep, peer_copy, gemm_bench, mem_bench). Per (collective, algorithm, protocol, link kind) it fits "
      "time = latency + size x busbw factor / busbw, piecewise over size where one line does not fit; links get a "
      "latency and a bandwidth; GEMM and memory CSVs give a roofline kernel model with fitted efficiencies. Every "
      "number in the profile names the files it came from and the fit's residual. The profile is written only if "
      "every input is valid (truncated logs, wrong results, mixed GPU models or NCCL versions, too few sizes are "
      "refused with the file, line and fix; exit code 2). The algorithm and protocol of a log come from "
      "NCCL_ALGO / NCCL_PROTO lines in it, or from its file name (e.g. all_reduce_ring_ll128.log); otherwise "
      "'auto' (NCCL's own choice). Two other fits take a base scenario (--scenario): --steps fits the training "
      "framework's host costs to measured step times, and --collectives fits physical parameters of a machine "
      "(scenario keys such as cluster.nic.bandwidth or nccl.step_overhead) to the nccl-tests points of some "
      "communicator sizes and predicts the others; both report their errors on what the fit did not see.");
  cmd->add_option("--from", opts->from, "nccl-tests logs, calibration CSVs, or folders holding them")->expected(1, -1);
  cmd->add_option(
      "--steps", opts->steps,
      "measured training step times (CSV): fit the framework's host costs (per kernel, per communication call, "
      "per micro-batch, per step) instead; columns are dotted scenario keys (workload.model.layers, "
      "workload.parallel.tp, ...), "
      "'gpus' and 'step_time_s' or 'step_time_ms' (vTrain's ground-truth column names are read too); "
      "needs --scenario");
  cmd->add_option("--scenario", opts->scenario,
                  "with --steps: the base scenario each row completes (cluster, nccl, profile, a generated workload); "
                  "the profile written is its profile plus the fitted 'framework:' block. With --collectives: the "
                  "machine (cluster, network, nccl) whose --fit keys are fitted; --out is it with the fitted values");
  cmd->add_option("--fit-fraction", opts->fit_fraction,
                  "with --steps: share of the rows the fit may use; the rest are held out and only reported "
                  "(default 0.5)");
  cmd->add_option("--seed", opts->seed, "with --steps: seed of the fit / held-out split (default 1)");
  cmd->add_option("--max-evaluations", opts->max_evaluations,
                  "with --steps or --collectives: most objective evaluations of the fit, each simulating every fit "
                  "row (default 200 for --steps, 60 for --collectives)");
  cmd->add_option("--collectives", opts->collectives,
                  "measured nccl-tests points (CSV: collective, ranks, size_bytes, time_us; optional nodes, "
                  "algorithm, protocol, id, system; data/validation/nccl_tests/points.csv reads as is): fit the "
                  "--fit keys of the --scenario machine on the points with --fit-ranks ranks and predict the others; "
                  "--out is then the fitted scenario");
  cmd->add_option("--fit", opts->fit,
                  "with --collectives: dotted scenario keys to fit, each scaled from its base value (e.g. "
                  "cluster.nic.bandwidth,nccl.step_overhead)")
      ->delimiter(',');
  cmd->add_option("--fit-ranks", opts->fit_ranks, "with --collectives: the communicator sizes the fit may use")
      ->delimiter(',');
  cmd->add_option("--only", opts->only, "with --collectives: keep the points whose system column is one of these")
      ->delimiter(',');
  cmd->add_option("--framework", opts->framework,
                  "with --steps: name of the measured stack, stored in the profile (e.g. Megatron-DeepSpeed)");
  cmd->add_option("--predictions", opts->predictions,
                  "with --steps: write each row's measured and simulated times (device alone and with the fitted "
                  "framework) and its half to this CSV (a new file)");
  cmd->add_option(
         "--out", opts->out,
         "profile YAML to write (written to a temporary file beside it, then renamed; never one of the --from inputs)")
      ->required();
  cmd->add_option("--system", opts->system, "system name in the profile (default: calibrated_<gpu model>)");
  cmd->add_option("--description", opts->description, "free text stored in the profile");
  cmd->add_option("--intra-node-link", opts->intra_node_link,
                  "link kind of single-node measurements, nvlink, xgmi or pcie (default: from the GPU's name)");
  cmd->add_option("--max-pieces", opts->max_pieces, "most pieces per collective fit (default 4)");
  cmd->add_option("--split-above", opts->split_above,
                  "split a piece whose worst point is off by more than this relative error (default 0.05)");
  cmd->callback([opts, action] { *action = [opts] { return run_calibrate(*opts); }; });
}

} // namespace railyard::cli
