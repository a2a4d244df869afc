// What both queue models (fluid_queues.cpp per transfer, coupled_queues.cpp per lane of a coupled flow) draw for the
// notification point: a flow's marks form a Poisson-like process whose first arrival after the receiver's CNP
// interval sends a CNP, drawn as an exponential threshold on the accumulated hazard -ln(1 - p) per packet.
#pragma once

#include "railyard/common/hash.hpp"
#include "railyard/models/cc/dcqcn.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

namespace railyard::sim {

/// An exponential variate of mean 1 from the splitmix64 stream `state` (advanced): the next CNP threshold.
inline double next_exponential(std::uint64_t& state)
{
  state += 0x9e3779b97f4a7c15ULL;
  const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
  return -std::log1p(-u);
}

/// The hazard one packet leaving with marking probability `p` adds, -ln(1 - p), so a window of packets sees at least
/// one mark with probability 1 - prod(1 - p): 0 for p <= 0, infinity for p >= 1.
inline double mark_hazard(double p)
{
  return p <= 0 ? 0.0 : (p >= 1 ? std::numeric_limits<double>::infinity() : -std::log1p(-p));
}

/// How a step's departures from a queue are marked: the queue moves linearly from `queue_start` to `queue_end` bytes
/// over the step, so they leave with the mean of RED's probability at the two ends (`p`), each adding the mean of the
/// two ends' hazards (`hazard`).
struct StepMarking {
  double p = 0, hazard = 0;
};

inline StepMarking step_marking(const models::cc::DcqcnParams& d, double queue_start, double queue_end)
{
  const double p0 = models::cc::marking_probability(d, Bytes(queue_start));
  const double p1 = models::cc::marking_probability(d, Bytes(queue_end));
  return {(p0 + p1) / 2, (mark_hazard(p0) + mark_hazard(p1)) / 2};
}

} // namespace railyard::sim
