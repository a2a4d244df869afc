// From measurements to a profile: parse nccl-tests logs and the CSVs of calibration/cuda/, check them, fit, and
// assemble a Profile in which every number names the files it came from and the fit's residual.
#pragma once

#include "railyard/calibration/fit.hpp"
#include "railyard/calibration/names.hpp"
#include "railyard/calibration/profile.hpp"

#include <optional>
#include <string>
#include <vector>

namespace railyard::calibration {

struct CalibrateOptions {
  std::string system; ///< profile's system name; default "calibrated_<gpu model>"
  std::string description;
  /// Link kind of single-node measurements. Default: NVLink, unless the GPU's name says PCIe (or it is a GeForce /
  /// RTX / workstation part), or the calibration CSV recorded what the program found.
  std::optional<LinkKind> intra_node_link;
  PiecewiseOptions piecewise;
  std::string created_by = "railyard calibrate";
};

struct CalibrationResult {
  Profile profile;
  std::vector<std::string> notes; ///< what was skipped or assumed, for the user to read
};

/// Files named, with folders replaced by the regular files inside them (sorted by name, not recursive).
/// InputError when a path does not exist.
std::vector<std::string> expand_inputs(const std::vector<std::string>& paths);

/// Parses every input (nccl-tests logs, or railyard calibration CSVs told apart by their first lines), refuses bad
/// ones (InputError with file, line, rule and fix: truncated logs, wrong results, mixed GPU models or NCCL versions,
/// too few sizes for a fit), fits, and returns the profile. Nothing is written.
CalibrationResult calibrate(const std::vector<std::string>& inputs, const CalibrateOptions& options);

/// Rounds to `digits` significant digits, so profiles stay readable and byte-identical for identical inputs.
double round_significant(double v, int digits = 6);

} // namespace railyard::calibration
