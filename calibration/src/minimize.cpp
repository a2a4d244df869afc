#include "railyard/calibration/minimize.hpp"

#include <algorithm>
#include <numeric>

namespace railyard::calibration {

Minimum nelder_mead(const std::function<double(const std::vector<double>&)>& f, const std::vector<double>& start,
                    double step, int max_evaluations, double tolerance)
{
  const std::size_t D = start.size();
  Minimum out;
  auto eval = [&](const std::vector<double>& x) {
    ++out.evaluations;
    return f(x);
  };
  std::vector<std::vector<double>> simplex(D + 1, start);
  for (std::size_t d = 0; d < D; ++d)
    simplex[d + 1][d] += step;
  std::vector<double> fv(D + 1);
  for (std::size_t i = 0; i <= D; ++i)
    fv[i] = eval(simplex[i]);
  std::vector<std::size_t> order(D + 1);
  while (out.evaluations < max_evaluations) {
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return fv[a] < fv[b]; });
    const std::size_t best = order[0], worst = order[D], second = order[D == 0 ? 0 : D - 1];
    if (fv[worst] - fv[best] < tolerance) break;
    std::vector<double> c(D, 0.0);
    for (std::size_t k = 0; k < D; ++k)
      for (std::size_t d = 0; d < D; ++d)
        c[d] += simplex[order[k]][d] / static_cast<double>(D);
    auto along = [&](double t) {
      std::vector<double> p(D);
      for (std::size_t d = 0; d < D; ++d)
        p[d] = c[d] + t * (simplex[worst][d] - c[d]);
      return p;
    };
    auto take = [&](std::vector<double> p, double fp) {
      simplex[worst] = std::move(p);
      fv[worst] = fp;
    };
    auto r = along(-1);
    const double fr = eval(r);
    const bool more = out.evaluations < max_evaluations; // the budget is never exceeded
    if (fr < fv[best]) {                                 // reflect, and try expanding
      if (!more) {
        take(r, fr);
        break;
      }
      auto e = along(-2);
      const double fe = eval(e);
      fe < fr ? take(std::move(e), fe) : take(std::move(r), fr);
    } else if (fr < fv[second]) {
      take(std::move(r), fr);
    } else { // contract outside or inside, else shrink towards the best
      if (!more) break;
      auto k = along(fr < fv[worst] ? -0.5 : 0.5);
      const double fk = eval(k);
      if (fk < std::min(fr, fv[worst])) {
        take(std::move(k), fk);
      } else {
        if (out.evaluations + static_cast<int>(D) > max_evaluations) break;
        for (std::size_t j = 1; j <= D; ++j) {
          const std::size_t i = order[j];
          for (std::size_t d = 0; d < D; ++d)
            simplex[i][d] = simplex[best][d] + 0.5 * (simplex[i][d] - simplex[best][d]);
          fv[i] = eval(simplex[i]);
        }
      }
    }
  }
  const std::size_t best = static_cast<std::size_t>(std::min_element(fv.begin(), fv.end()) - fv.begin());
  out.x = simplex[best];
  out.value = fv[best];
  return out;
}

} // namespace railyard::calibration
