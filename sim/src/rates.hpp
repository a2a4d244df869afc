// What the two max-min solvers (fluid_maxmin.cpp, coupled_network.cpp) count as a rate change: equal, or within
// 1e-12 relative (rounding of the same fill done in another order), is no change.
#pragma once

#include <algorithm>
#include <cmath>

namespace railyard::sim {

inline bool rates_differ(double a, double b)
{
  if (a == b) return false;
  if (std::isinf(a) || std::isinf(b)) return true;
  return std::abs(a - b) > 1e-12 * std::max({std::abs(a), std::abs(b), 1.0});
}

} // namespace railyard::sim
