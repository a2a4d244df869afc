#include "railyard/models/host_issue.hpp"

#include "railyard/common/error.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace railyard::models {

Seconds host_issue_time(const HostIssueCost& cost, int calls, int channels)
{
  if (calls < 1 || channels < 1)
    throw InputError(InputLocation{"host issue", 0, calls < 1 ? "calls" : "channels"},
                     fmt::format("{} calls of {} channels do not make an iteration", calls, channels),
                     "give at least one call of at least one channel");
  return (cost.per_call + cost.per_channel * channels) * calls;
}

Seconds back_to_back_time(Seconds device, Seconds host)
{
  return std::max(device, host);
}

HostIssueFit fit_host_issue(const std::vector<HostBoundSample>& samples, int calls, const std::string& source)
{
  std::set<int> distinct;
  for (const auto& s : samples)
    distinct.insert(s.channels);
  if (calls < 1 || distinct.size() < 2)
    throw InputError(InputLocation{source, 0, "host-bound samples"},
                     fmt::format("{} samples with {} different channel counts (calls {}) cannot separate the "
                                 "per-call from the per-channel cost",
                                 samples.size(), distinct.size(), calls),
                     "give host-bound iterations of at least two channel counts and at least one call each");
  // Ordinary least squares of t / calls = a + b * channels.
  const double n = static_cast<double>(samples.size());
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& s : samples) {
    const double x = s.channels;
    const double y = s.time / units::us(1) / calls; // microseconds per call
    sx += x;
    sy += y;
    sxx += x * x;
    sxy += x * y;
  }
  const double b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  const double a = (sy - b * sx) / n;
  if (a < 0 || b < 0)
    throw InputError(
        InputLocation{source, 0, "host-bound samples"},
        fmt::format("the fit gives {:.3g} us per call and {:.3g} us per channel: a negative host cost", a, b),
        "fit only iterations whose time the host sets (the device time well below the measured one)");
  HostIssueFit fit;
  fit.cost = {units::us(a), units::us(b)};
  double sq = 0;
  for (const auto& s : samples) {
    const double rel = host_issue_time(fit.cost, calls, s.channels) / s.time - 1;
    sq += rel * rel;
  }
  fit.rms_relative_residual = std::sqrt(sq / n);
  return fit;
}

} // namespace railyard::models
