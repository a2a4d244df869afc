// `railyard calibrate --steps FILE.csv --scenario BASE.yaml`: fits what the training framework costs on the host
// (calibration::FrameworkModel: per kernel and per communication call issued, per micro-batch, per step) from measured
// iteration times, and says how well the fitted model predicts rows it never saw.
//
// Each CSV row is one measured configuration: the base scenario (cluster, NCCL, profile, a generated workload) with
// the row's columns written over its keys, and a measured step time. The rows are split once, by a seeded hash of
// their line, into a half the fit may use and a held-out half it never sees; the fit minimises the mean squared log
// error of simulated against measured times on the first (Nelder-Mead over the logarithms of the four costs), each
// evaluation replaying every fit row's prepared step with the candidate costs (scenario::PreparedStep).
#pragma once

#include "railyard/calibration/profile.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace railyard::scenario {

/// One measured configuration of a steps CSV.
struct MeasuredStep {
  int line = 0;
  std::vector<std::pair<std::string, std::string>> keys; ///< dotted scenario key -> value text (YAML scalar)
  int gpus = 0;                                          ///< the row's GPU count, 0 when it gives none
  double measured_s = 0;
  std::string label; ///< "tp2 pp1 dp4 mb2 gb32 L24 h1024" from the row's own values
};

/// Reads a steps CSV. Columns are dotted scenario keys (workload.model.layers, workload.parallel.tp, ...), `gpus`,
/// and the measurement as `step_time_s` or `step_time_ms`; the column names of vTrain's ground-truth files
/// (VIA-Research/vTrain data/*.csv: "# GPUs", "global batch", "micro batch", "hidden size", "attention heads",
/// "# layers", "sequence length", "tensor parallelism", "data parallelism", "pipeline parallelism", "iteration time
/// (ms)") are read as those keys. A column of neither kind, a row with a missing or non-positive time, or no time
/// column is an InputError naming the file, line and column.
std::vector<MeasuredStep> read_measured_steps(const std::string& path);

struct StepFitOptions {
  std::string scenario;       ///< the base scenario file
  double fit_fraction = 0.5;  ///< share of the rows the fit may use
  std::uint64_t seed = 1;     ///< seed of the split
  int max_evaluations = 200;  ///< Nelder-Mead budget (each evaluation replays every fit row)
  std::string framework_name; ///< stored in the profile (the stack that was measured)
  bool sync_after_p2p = true;
};

/// Signed errors of simulated against measured times (simulated / measured - 1) over a set of rows.
struct StepErrors {
  int n = 0;
  double geomean = 0;  ///< exp(mean |log(simulated / measured)|) - 1
  double bias = 0;     ///< mean signed error
  double worst = 0;    ///< the signed error of largest magnitude
  double within_8 = 0; ///< share of rows within 8%
  double spearman = 0; ///< rank correlation of simulated and measured times
};

struct StepPrediction {
  int line = 0;
  bool fit = false; ///< the row was in the fit half
  std::string label;
  double measured_s = 0;
  double device_s = 0;    ///< simulated without the host (the device alone)
  double framework_s = 0; ///< simulated with the fitted framework model
};

struct StepCalibration {
  calibration::Profile profile; ///< the base scenario's profile with the fitted `framework:` block
  std::vector<StepPrediction> rows;
  StepErrors device_fit, device_held_out, framework_fit, framework_held_out;
  int evaluations = 0;
};

/// Fits the framework model. InputError on a bad CSV, a base scenario without a generated workload or profile, a
/// row that makes an invalid scenario (its line and column named), or too few rows for a split (at least 2 per half).
StepCalibration calibrate_steps(const std::string& steps_csv, const StepFitOptions& options);

/// Errors of the rows selected by `fit` (true: the fit half, false: the held-out half), device alone or with the
/// framework model.
StepErrors step_errors(const std::vector<StepPrediction>& rows, bool fit, bool framework);

} // namespace railyard::scenario
