// Nelder-Mead (calibration/minimize.hpp): minima known in closed form, and the evaluation budget as a hard cap.
#include "railyard/calibration/minimize.hpp"

#include <gtest/gtest.h>

#include <cmath>

using railyard::calibration::nelder_mead;

TEST(NelderMead, FindsTheMinimumOfAShiftedQuadratic)
{
  // f = (x - 3)^2 + 10 (y + 1)^2 + 2: minimum 2 at (3, -1).
  auto f = [](const std::vector<double>& x) { return std::pow(x[0] - 3, 2) + 10 * std::pow(x[1] + 1, 2) + 2; };
  const auto m = nelder_mead(f, {0, 0}, 1.0, 500, 1e-12);
  EXPECT_NEAR(m.x[0], 3, 1e-4);
  EXPECT_NEAR(m.x[1], -1, 1e-4);
  EXPECT_NEAR(m.value, 2, 1e-8);
}

TEST(NelderMead, FollowsRosenbrocksValley)
{
  // Rosenbrock's function (1 - x)^2 + 100 (y - x^2)^2: minimum 0 at (1, 1), reached along a curved valley.
  auto f = [](const std::vector<double>& x) { return std::pow(1 - x[0], 2) + 100 * std::pow(x[1] - x[0] * x[0], 2); };
  const auto m = nelder_mead(f, {-1.2, 1.0}, 0.5, 2000, 1e-14);
  EXPECT_NEAR(m.x[0], 1, 1e-3);
  EXPECT_NEAR(m.x[1], 1, 1e-3);
}

TEST(NelderMead, NeverExceedsItsBudget)
{
  for (int budget : {3, 4, 5, 6, 7, 10, 17}) {
    int calls = 0;
    auto f = [&](const std::vector<double>& x) {
      ++calls;
      return std::pow(x[0] - 5, 2) + std::pow(x[1] - 5, 2);
    };
    const auto m = nelder_mead(f, {0, 0}, 1.0, budget, 0);
    EXPECT_LE(calls, std::max(budget, 3)) << budget; // the first simplex (3 points) is always evaluated
    EXPECT_EQ(m.evaluations, calls);
  }
}
