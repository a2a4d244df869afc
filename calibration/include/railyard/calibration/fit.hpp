// Least-squares fits of y = intercept + slope * x (time = latency + size / bandwidth), weighted so that the
// relative error is minimised: measurements span microseconds to seconds, and an unweighted fit would ignore every
// small size. Piecewise over x where one line does not fit (NCCL switches protocol and channel count with size).
#pragma once

#include <cstddef>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace railyard::calibration {

struct Sample {
  double x = 0; ///< e.g. bytes
  double y = 0; ///< e.g. seconds; must be > 0
};

/// How well a model reproduces its samples: relative error e_i = (model(x_i) - y_i) / y_i.
struct FitQuality {
  int points = 0;
  double rms_rel_error = 0; ///< sqrt(mean(e_i^2))
  double max_rel_error = 0; ///< max |e_i|
};

struct LineFit {
  double intercept = 0; ///< >= 0
  double slope = 0;     ///< >= 0; 0 when y does not grow with x inside the piece
  double x_from = 0;    ///< the piece applies from this x on (0 for the first piece)
  double x_first = 0;   ///< smallest sample x in the piece
  double x_last = 0;    ///< largest sample x in the piece
  FitQuality quality;

  [[nodiscard]] double operator()(double x) const { return intercept + slope * x; }
};

/// A line needs this many distinct x values: two fix it exactly, the third is what makes a residual meaningful.
inline constexpr int kMinDistinctPointsPerLine = 3;

/// Not enough distinct x values for the fit that was asked for.
class TooFewPoints : public std::invalid_argument {
public:
  TooFewPoints(int needed, int got);
  [[nodiscard]] int needed() const { return needed_; }
  [[nodiscard]] int got() const { return got_; }

private:
  int needed_;
  int got_;
};

/// Fits one line minimising sum(((a + b x_i) - y_i) / y_i)^2 with a, b >= 0 (a negative latency or bandwidth is
/// not physical: the constrained optimum then lies on the boundary, found by refitting with that parameter at 0).
/// Throws TooFewPoints below kMinDistinctPointsPerLine distinct x, std::invalid_argument for y <= 0.
LineFit fit_line(std::span<const Sample> samples);

struct PiecewiseOptions {
  int max_pieces = 4;                      ///< cap: more pieces would follow the noise
  double split_above_max_rel_error = 0.05; ///< a piece whose worst point is off by more than this is split
  /// A split must cut the sum of squared relative errors of the piece by at least this fraction.
  double min_improvement = 0.25;
};

struct PiecewiseFit {
  std::vector<LineFit> pieces; ///< ordered by x_from
  FitQuality quality;          ///< over all samples

  [[nodiscard]] const LineFit& piece_at(double x) const;
  [[nodiscard]] double operator()(double x) const { return piece_at(x)(x); }
};

/// One line over all samples; while the worst piece misses a point by more than split_above_max_rel_error and
/// fewer than max_pieces exist, that piece is split at the x where the sum of squared relative errors of its two
/// halves is smallest (each half keeping kMinDistinctPointsPerLine distinct x). Throws TooFewPoints like fit_line.
PiecewiseFit fit_piecewise(std::vector<Sample> samples, const PiecewiseOptions& options = {});

/// Quality of any model over samples.
template <class Model>
FitQuality quality_of(const Model& model, std::span<const Sample> samples);

namespace detail {
FitQuality quality_from_errors(const std::vector<double>& rel_errors);
}

template <class Model>
FitQuality quality_of(const Model& model, std::span<const Sample> samples)
{
  std::vector<double> e;
  e.reserve(samples.size());
  for (const auto& s : samples)
    e.push_back((model(s.x) - s.y) / s.y);
  return detail::quality_from_errors(e);
}

} // namespace railyard::calibration
