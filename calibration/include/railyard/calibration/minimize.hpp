// Derivative-free minimisation for fits whose objective is a simulation (railyard calibrate --steps and
// --collectives): Nelder and Mead's simplex method (Computer Journal 7(4), 1965) with the usual coefficients
// (reflection 1, expansion 2, contraction 1/2, shrink 1/2).
#pragma once

#include <functional>
#include <vector>

namespace railyard::calibration {

struct Minimum {
  std::vector<double> x;
  double value = 0;
  int evaluations = 0;
};

/// Minimises `f` from `start`, the first simplex spanning `step` along each axis; stops when the simplex's values
/// differ by less than `tolerance` or before an evaluation would exceed `max_evaluations` (never more; at least the
/// first simplex's dimension + 1 evaluations are made).
Minimum nelder_mead(const std::function<double(const std::vector<double>&)>& f, const std::vector<double>& start,
                    double step, int max_evaluations, double tolerance = 1e-7);

} // namespace railyard::calibration
