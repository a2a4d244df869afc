// The least-squares fitter: recovers known latency and bandwidth from synthetic measurements with seeded noise,
// within tolerances derived from that noise; splits where one line does not fit; refuses too few points.
#include "railyard/calibration/fit.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace rc = railyard::calibration;

namespace {

// Uniform in [-1, 1) from std::mt19937_64's raw output, which the C++ standard fixes bit for bit (unlike the
// distributions), so the samples are the same on every platform.
struct Noise {
  std::mt19937_64 gen;
  explicit Noise(std::uint64_t seed) : gen(seed) {}
  double next() { return static_cast<double>(gen() >> 11) * 0x1.0p-53 * 2.0 - 1.0; }
};

std::vector<double> powers_of_two(double lo, double hi)
{
  std::vector<double> out;
  for (double s = lo; s <= hi; s *= 2)
    out.push_back(s);
  return out;
}

} // namespace

TEST(Fit, ExactLineIsRecovered)
{
  const double a = 12e-6, b = 1.0 / 250e9; // 12 us, 250 GB/s
  std::vector<rc::Sample> s;
  for (double x : powers_of_two(8, 1 << 30))
    s.push_back({x, a + b * x});
  const auto f = rc::fit_line(s);
  EXPECT_NEAR(f.intercept / a, 1.0, 1e-9);
  EXPECT_NEAR(f.slope / b, 1.0, 1e-9);
  EXPECT_LT(f.quality.max_rel_error, 1e-9);
  EXPECT_EQ(f.quality.points, static_cast<int>(s.size()));
}

TEST(Fit, RecoversParametersWithinTheNoise)
{
  // y_i = (a + x_i / B) (1 + eps u_i), u_i uniform in [-1, 1): standard deviation of the relative noise
  // sigma = eps / sqrt(3).
  const double a = 20e-6, bw = 300e9, eps = 0.01;
  const double sigma = eps / std::sqrt(3.0);
  Noise noise(42);
  std::vector<rc::Sample> s;
  const auto xs = powers_of_two(8, 64.0 * (1ull << 30));
  for (double x : xs)
    s.push_back({x, (a + x / bw) * (1.0 + eps * noise.next())});
  const auto f = rc::fit_line(s);

  // The intercept is carried by the K_a sizes where x / B is under 1% of a; the relative-error fit averages their
  // noise, so its relative standard error is about sigma / sqrt(K_a). Same for 1/slope with the K_b sizes where a is
  // under 1% of x / B. Four standard errors bound the estimate.
  int ka = 0, kb = 0;
  for (double x : xs) {
    ka += x / bw < 0.01 * a;
    kb += a < 0.01 * x / bw;
  }
  ASSERT_GE(ka, 3);
  ASSERT_GE(kb, 3);
  EXPECT_NEAR(f.intercept / a, 1.0, 4 * sigma / std::sqrt(ka));
  EXPECT_NEAR((1.0 / f.slope) / bw, 1.0, 4 * sigma / std::sqrt(kb));
  // The optimum's residual is no larger than the true parameters' residual, whose relative errors are
  // 1 / (1 + eps u) - 1, at most eps / (1 - eps) in size.
  EXPECT_LE(f.quality.rms_rel_error, eps / (1 - eps));
  EXPECT_LE(f.quality.max_rel_error, std::sqrt(static_cast<double>(xs.size())) * eps / (1 - eps));
}

TEST(Fit, TooFewPointsAreRefusedWithTheNumberNeeded)
{
  // Five measurements but only two distinct sizes: a line through two sizes leaves no residual to judge.
  const std::vector<rc::Sample> s{{1024, 1e-5}, {1024, 1.1e-5}, {4096, 2e-5}, {4096, 2.1e-5}, {1024, 1.05e-5}};
  try {
    (void)rc::fit_line(s);
    FAIL() << "expected TooFewPoints";
  } catch (const rc::TooFewPoints& e) {
    EXPECT_EQ(e.needed(), 3);
    EXPECT_EQ(e.got(), 2);
    EXPECT_NE(std::string(e.what()).find("at least 3"), std::string::npos);
  }
  EXPECT_THROW((void)rc::fit_piecewise(std::vector<rc::Sample>(s)), rc::TooFewPoints);
}

TEST(Fit, NonPositiveTimesAreRefused)
{
  const std::vector<rc::Sample> s{{1, 1e-5}, {2, 0.0}, {3, 1e-5}};
  EXPECT_THROW((void)rc::fit_line(s), std::invalid_argument);
}

TEST(Fit, NegativeInterceptIsClampedToZero)
{
  // y = b x - c with c > 0: the unconstrained optimum has intercept -c, which is not a latency. On the boundary
  // a = 0 the best slope minimises sum((b' x_i / y_i - 1)^2): b' = sum(x_i / y_i) / sum((x_i / y_i)^2).
  const double b = 1e-9, c = 1e-7;
  std::vector<rc::Sample> s;
  double su = 0, su2 = 0;
  for (double x : powers_of_two(1024, 1 << 20)) {
    const double y = b * x - c;
    s.push_back({x, y});
    su += x / y;
    su2 += (x / y) * (x / y);
  }
  const auto f = rc::fit_line(s);
  EXPECT_EQ(f.intercept, 0.0);
  EXPECT_NEAR(f.slope / (su / su2), 1.0, 1e-12);
}

TEST(Fit, QualityIsTheRelativeError)
{
  // Model y = 2x against (1, 2.2) and (2, 3.8): relative errors (2 - 2.2) / 2.2 and (4 - 3.8) / 3.8.
  const std::vector<rc::Sample> s{{1, 2.2}, {2, 3.8}};
  const auto q = rc::quality_of([](double x) { return 2 * x; }, std::span<const rc::Sample>(s));
  const double e1 = (2 - 2.2) / 2.2, e2 = (4 - 3.8) / 3.8;
  EXPECT_EQ(q.points, 2);
  EXPECT_NEAR(q.rms_rel_error, std::sqrt((e1 * e1 + e2 * e2) / 2), 1e-15);
  EXPECT_NEAR(q.max_rel_error, std::fabs(e1), 1e-15);
}

TEST(Fit, PiecewiseSplitsWhereTheRegimeChanges)
{
  // Small messages: 10 us + x / 5 GB/s; from 1 MiB on: 40 us + x / 300 GB/s (NCCL moving to more channels and a
  // bandwidth protocol), with 0.5% noise. One line misses the small sizes by far more than the 5% split threshold.
  const double split = 1 << 20, eps = 0.005;
  const double sigma = eps / std::sqrt(3.0);
  Noise noise(7);
  std::vector<rc::Sample> s;
  const auto xs = powers_of_two(8, 16.0 * (1ull << 30));
  for (double x : xs) {
    const double t = x < split ? 10e-6 + x / 5e9 : 40e-6 + x / 300e9;
    s.push_back({x, t * (1.0 + eps * noise.next())});
  }
  const auto f = rc::fit_piecewise(s);
  ASSERT_EQ(f.pieces.size(), 2u);
  EXPECT_EQ(f.pieces[0].x_from, 0.0);
  EXPECT_EQ(f.pieces[1].x_from, split); // the first size of the second regime
  // Each piece's parameters within four standard errors of the points that carry them (see the test above).
  int ka0 = 0, kb1 = 0;
  for (double x : xs) {
    if (x < split) {
      ka0 += x / 5e9 < 0.01 * 10e-6;
    } else {
      kb1 += 40e-6 < 0.01 * x / 300e9;
    }
  }
  ASSERT_GE(ka0, 3);
  ASSERT_GE(kb1, 3);
  EXPECT_NEAR(f.pieces[0].intercept / 10e-6, 1.0, 4 * sigma / std::sqrt(ka0));
  EXPECT_NEAR((1.0 / f.pieces[1].slope) / 300e9, 1.0, 4 * sigma / std::sqrt(kb1));
  // The same residual argument as for one line, now per piece: no worse than the noise.
  EXPECT_LE(f.quality.rms_rel_error, eps / (1 - eps));
  EXPECT_NEAR(f(4096), 10e-6 + 4096 / 5e9, 10e-6 * 0.05);
}

TEST(Fit, PiecesAreCapped)
{
  // y = sqrt(x) is no line anywhere; with the split threshold at 0 every split that helps is taken until the cap.
  std::vector<rc::Sample> s;
  for (double x : powers_of_two(1, 1 << 24))
    s.push_back({x, std::sqrt(x)});
  rc::PiecewiseOptions o;
  o.max_pieces = 3;
  o.split_above_max_rel_error = 0.0;
  o.min_improvement = 0.0;
  const auto f = rc::fit_piecewise(s, o);
  EXPECT_EQ(f.pieces.size(), 3u);
  for (const auto& p : f.pieces)
    EXPECT_GE(p.quality.points, rc::kMinDistinctPointsPerLine);
}

TEST(Fit, GoodLineIsNotSplit)
{
  std::vector<rc::Sample> s;
  for (double x : powers_of_two(8, 1 << 30))
    s.push_back({x, 5e-6 + x / 100e9});
  EXPECT_EQ(rc::fit_piecewise(s).pieces.size(), 1u);
}
