// How a step of either queue model marks the packets leaving a queue (sim/src/ecn_draws.hpp, path_marking()):
// the queue moves linearly over the step (until it empties), and each part of the path is marked with RED's
// probability there. Expectations from RED's piecewise-linear probability (0 up to K_min, p_max (q - K_min) /
// (K_max - K_min) inside the band, 1 above K_max) integrated over that path by hand.
#include "../../sim/src/ecn_draws.hpp"

#include <gtest/gtest.h>

namespace railyard {
namespace {

using sim::mark_hazard;
using sim::path_marking;

struct Red {
  models::cc::DcqcnParams d = models::cc::dcqcn_preset("sigcomm2015"); // K_min 5 KB, K_max 200 KB, p_max 1%
  double k_min = d.k_min.bytes(), k_max = d.k_max.bytes(), p_max = d.p_max;
  [[nodiscard]] double p(double q) const
  {
    return q <= k_min ? 0.0 : q > k_max ? 1.0 : p_max * (q - k_min) / (k_max - k_min);
  }
};

// Inside RED's band the mean of the probabilities at the two ends is exact (p is linear in the queue); the step's
// hazard is the mean of the ends' hazards.
TEST(PathMarking, InsideTheBandIsTheMeanOfTheEnds)
{
  const Red red;
  ASSERT_GT(red.k_min, 0.0);
  ASSERT_GT(red.k_max, red.k_min);
  ASSERT_GT(red.p_max, 0.0);
  const double q0 = red.k_min + 0.2 * (red.k_max - red.k_min), q1 = red.k_min + 0.9 * (red.k_max - red.k_min);
  const auto m = path_marking(red.d, q0, q1, 1.0);
  EXPECT_NEAR(m.p, (red.p(q0) + red.p(q1)) / 2, 1e-15);
  EXPECT_NEAR(m.hazard, (mark_hazard(red.p(q0)) + mark_hazard(red.p(q1))) / 2, 1e-15);
  EXPECT_GE(m.on, m.off); // no packet marked for sure
}

// Above K_max throughout: every packet of the whole step leaves marked.
TEST(PathMarking, AboveKmaxMarksTheWholeStep)
{
  const Red red;
  const auto m = path_marking(red.d, 2 * red.k_max, 3 * red.k_max, 1.0);
  EXPECT_DOUBLE_EQ(m.p, 1.0);
  EXPECT_DOUBLE_EQ(m.on, 0.0);
  EXPECT_DOUBLE_EQ(m.off, 1.0);
  EXPECT_DOUBLE_EQ(m.hazard, 0.0);
}

// A queue draining from 3 K_max to 0 over the step is above K_max for the first 2/3 of it (every packet marked there),
// inside the band from 2/3 to (3 K_max - K_min) / (3 K_max) (mean probability p_max / 2), empty of marks after: not
// marked throughout, as the mean of the two ends' (infinite) hazards would have it.
TEST(PathMarking, ADrainingQueueIsMarkedOnlyWhileAboveKmax)
{
  const Red red;
  const double q0 = 3 * red.k_max;
  const auto m = path_marking(red.d, q0, 0.0, 1.0);
  const double s_kmax = (q0 - red.k_max) / q0, s_kmin = (q0 - red.k_min) / q0;
  EXPECT_NEAR(m.on, 0.0, 1e-15);
  EXPECT_NEAR(m.off, s_kmax, 1e-12);
  EXPECT_NEAR(m.p, s_kmax + (s_kmin - s_kmax) * red.p_max / 2, 1e-12);
  EXPECT_NEAR(m.hazard, (s_kmin - s_kmax) * mark_hazard(red.p_max) / 2, 1e-12);
  // Rising from 0 to 2 K_max: the second half of the step, above K_max.
  const auto r = path_marking(red.d, 0.0, 2 * red.k_max, 1.0);
  EXPECT_NEAR(r.on, 0.5, 1e-12);
  EXPECT_NEAR(r.off, 1.0, 1e-15);
}

// A queue at K_max that empties a quarter into the step: inside the band while it falls from K_max to K_min (the first
// 0.25 (K_max - K_min) / K_max of the step, mean p_max / 2), unmarked after, although the step's end is an empty queue
// either way.
TEST(PathMarking, AQueueThatEmptiesInsideTheStepIsMarkedUntilThen)
{
  const Red red;
  const auto m = path_marking(red.d, red.k_max, 0.0, 0.25);
  const double band = 0.25 * (red.k_max - red.k_min) / red.k_max;
  EXPECT_NEAR(m.p, band * red.p_max / 2, 1e-15);
  EXPECT_NEAR(m.hazard, band * mark_hazard(red.p_max) / 2, 1e-15);
  EXPECT_GE(m.on, m.off);
  // Over the whole step (no emptying inside it) the same drain would be marked four times as long.
  EXPECT_NEAR(path_marking(red.d, red.k_max, 0.0, 1.0).p, 4 * m.p, 1e-15);
}

} // namespace
} // namespace railyard
