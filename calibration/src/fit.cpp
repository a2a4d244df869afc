#include "railyard/calibration/fit.hpp"

#include <Eigen/Dense>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace railyard::calibration {
namespace {

int distinct_x(std::span<const Sample> s)
{
  int n = 0;
  for (size_t i = 0; i < s.size(); ++i)
    if (i == 0 || s[i].x != s[i - 1].x) ++n;
  return n;
}

double sse(const LineFit& f, std::span<const Sample> s)
{
  double out = 0;
  for (const auto& p : s) {
    const double e = (f(p.x) - p.y) / p.y;
    out += e * e;
  }
  return out;
}

// Relative-error least squares on scaled variables: x' = x / xs and y' = y / ys keep the two columns of the design
// matrix [1/y', x'/y'] of comparable size whatever the units, so the QR solve stays well conditioned.
LineFit solve(std::span<const Sample> s)
{
  double xs = 0, ys = 0;
  for (const auto& p : s) {
    xs = std::max(xs, std::fabs(p.x));
    ys = std::max(ys, p.y);
  }
  if (xs == 0) xs = 1;
  const auto n = static_cast<Eigen::Index>(s.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd ones = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    const double y = s[static_cast<size_t>(i)].y / ys;
    a(i, 0) = 1.0 / y;
    a(i, 1) = (s[static_cast<size_t>(i)].x / xs) / y;
  }
  Eigen::Vector2d c = a.colPivHouseholderQr().solve(ones);
  double intercept = c(0) * ys;
  double slope = c(1) * ys / xs;
  // One-parameter refits on the boundary of a >= 0, b >= 0: minimise sum((k * u_i - 1)^2) => k = sum(u) / sum(u^2).
  const auto one_param = [&](int col) {
    const Eigen::VectorXd u = a.col(col);
    return u.sum() / u.squaredNorm();
  };
  if (intercept < 0) {
    intercept = 0;
    slope = one_param(1) * ys / xs;
  }
  if (slope < 0) {
    slope = 0;
    intercept = one_param(0) * ys;
  }
  LineFit f;
  f.intercept = intercept;
  f.slope = slope;
  f.x_first = s.front().x;
  f.x_last = s.back().x;
  f.x_from = s.front().x;
  f.quality = quality_of(f, s);
  return f;
}

} // namespace

TooFewPoints::TooFewPoints(int needed, int got)
    : std::invalid_argument(fmt::format("a fit of latency and bandwidth needs at least {} distinct sizes (two fix the "
                                        "line exactly and leave no residual to judge it by); got {}",
                                        needed, got)),
      needed_(needed), got_(got)
{
}

namespace detail {
FitQuality quality_from_errors(const std::vector<double>& rel_errors)
{
  FitQuality q;
  q.points = static_cast<int>(rel_errors.size());
  double sum2 = 0;
  for (double e : rel_errors) {
    sum2 += e * e;
    q.max_rel_error = std::max(q.max_rel_error, std::fabs(e));
  }
  q.rms_rel_error = rel_errors.empty() ? 0 : std::sqrt(sum2 / static_cast<double>(rel_errors.size()));
  return q;
}
} // namespace detail

LineFit fit_line(std::span<const Sample> samples)
{
  std::vector<Sample> s(samples.begin(), samples.end());
  for (const auto& p : s)
    if (!(p.y > 0) || !std::isfinite(p.y) || !std::isfinite(p.x))
      throw std::invalid_argument(fmt::format("sample at x = {:g} has y = {:g}; times must be positive", p.x, p.y));
  std::stable_sort(s.begin(), s.end(), [](const Sample& a, const Sample& b) { return a.x < b.x; });
  const int d = distinct_x(s);
  if (d < kMinDistinctPointsPerLine) throw TooFewPoints(kMinDistinctPointsPerLine, d);
  return solve(s);
}

const LineFit& PiecewiseFit::piece_at(double x) const
{
  const LineFit* at = &pieces.front();
  for (const auto& p : pieces)
    if (p.x_from <= x) at = &p;
  return *at;
}

PiecewiseFit fit_piecewise(std::vector<Sample> samples, const PiecewiseOptions& options)
{
  std::stable_sort(samples.begin(), samples.end(), [](const Sample& a, const Sample& b) { return a.x < b.x; });
  // Pieces as index ranges [begin, end) into the sorted samples.
  struct Range {
    size_t begin, end;
    LineFit fit;
    bool final = false;
  };
  const auto span_of = [&](size_t b, size_t e) { return std::span<const Sample>(samples.data() + b, e - b); };
  std::vector<Range> pieces{{0, samples.size(), fit_line(samples)}};
  while (static_cast<int>(pieces.size()) < options.max_pieces) {
    Range* worst = nullptr;
    double worst_sse = -1;
    for (auto& p : pieces) {
      if (p.final || p.fit.quality.max_rel_error <= options.split_above_max_rel_error) continue;
      const double e = sse(p.fit, span_of(p.begin, p.end));
      if (e > worst_sse) {
        worst_sse = e;
        worst = &p;
      }
    }
    if (!worst) break;
    // Try every cut between two different x values that leaves enough distinct x on both sides.
    double best = std::numeric_limits<double>::infinity();
    size_t best_cut = 0;
    LineFit best_left, best_right;
    for (size_t cut = worst->begin + 1; cut < worst->end; ++cut) {
      if (samples[cut].x == samples[cut - 1].x) continue;
      const auto left = span_of(worst->begin, cut);
      const auto right = span_of(cut, worst->end);
      if (distinct_x(left) < kMinDistinctPointsPerLine || distinct_x(right) < kMinDistinctPointsPerLine) continue;
      const LineFit lf = fit_line(left);
      const LineFit rf = fit_line(right);
      const double e = sse(lf, left) + sse(rf, right);
      if (e < best) {
        best = e;
        best_cut = cut;
        best_left = lf;
        best_right = rf;
      }
    }
    if (best_cut == 0 || best > (1.0 - options.min_improvement) * worst_sse) {
      worst->final = true;
      continue;
    }
    const Range right{best_cut, worst->end, best_right};
    worst->end = best_cut;
    worst->fit = best_left;
    pieces.push_back(right);
    std::sort(pieces.begin(), pieces.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  }
  PiecewiseFit out;
  for (auto& p : pieces)
    out.pieces.push_back(p.fit);
  out.pieces.front().x_from = 0;
  out.quality = quality_of(out, std::span<const Sample>(samples));
  return out;
}

} // namespace railyard::calibration
