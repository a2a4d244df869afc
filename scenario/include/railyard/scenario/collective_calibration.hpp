// `railyard calibrate --collectives POINTS.csv --scenario BASE.yaml --fit KEYS --fit-ranks N`: fits a few physical
// parameters of a machine (scenario keys such as cluster.nic.bandwidth or nccl.step_overhead) to measured nccl-tests
// points of one communicator size, and predicts the machine's other communicator sizes with them.
//
// Every point is simulated as `railyard nccl-tests` simulates it (scenario::simulate_nccl_tests: NCCL's choice or
// the forced algorithm and protocol, the lowered schedule on the scenario's network). The fit scales each named key
// of the base scenario by a factor and minimises the mean squared log error of simulated against measured times on
// the points whose rank count is one of the fit sizes (Nelder-Mead over the factors' logarithms); the other points
// are only predicted and reported.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace railyard::scenario {

/// One measured nccl-tests point.
struct MeasuredCollective {
  int line = 0;
  std::string id; ///< the `id` column, or "line N"
  std::string collective;
  int ranks = 0, nodes = 1;
  std::int64_t size_bytes = 0;
  double time_us = 0;
  std::string algorithm, protocol; ///< NCCL_ALGO / NCCL_PROTO in force, empty when NCCL chose
};

/// Reads a points CSV: columns collective, ranks, size_bytes, time_us (required), nodes, algorithm or forced_algo,
/// protocol or forced_proto, id, system (optional; other columns are ignored, so data/validation/nccl_tests/points.csv
/// reads as is). Rows whose `system` is none of `only` are skipped when `only` is not empty. Bad values are InputError
/// naming the file, line and column.
std::vector<MeasuredCollective> read_measured_collectives(const std::string& path,
                                                          const std::vector<std::string>& only = {});

struct CollectiveFitOptions {
  std::string scenario; ///< the base scenario: the machine's cluster, network and nccl sections
  /// Dotted scenario keys to fit, each a number with a unit in the base ("400 Gb/s"), scaled from it; a base value of
  /// 0 ("0 us") is fitted from 1 of its unit.
  std::vector<std::string> keys;
  std::vector<int> fit_ranks; ///< communicator sizes the fit may use
  int max_evaluations = 60;
  std::vector<std::string> only; ///< keep the points of these systems only (empty: all)
};

struct CollectivePrediction {
  MeasuredCollective point;
  bool fit = false;
  double base_us = 0;   ///< simulated with the base scenario's values
  double fitted_us = 0; ///< simulated with the fitted values
};

struct FittedKey {
  std::string key;
  std::string base_value, fitted_value; ///< as written in the scenario ("400 Gb/s")
};

struct CollectiveCalibration {
  std::vector<FittedKey> keys;
  std::vector<CollectivePrediction> points;
  int evaluations = 0;
  std::string scenario_yaml; ///< the base scenario with the fitted values, as YAML
};

CollectiveCalibration calibrate_collectives(const std::string& points_csv, const CollectiveFitOptions& options);

} // namespace railyard::scenario
