// What both queue models (fluid_queues.cpp per transfer, coupled_queues.cpp per lane of a coupled flow) mark and draw
// for the notification point: a flow's marks form a Poisson-like process whose first arrival after the receiver's CNP
// interval sends a CNP, drawn as an exponential threshold on the accumulated hazard -ln(1 - p) per packet.
#pragma once

#include "railyard/common/hash.hpp"
#include "railyard/models/cc/dcqcn.hpp"

#include <algorithm>
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

/// Where inside a step (a fraction of it) a queue holding `queue_start` bytes at its start empties, when `arrived`
/// bytes come in over the step and `service` bytes can leave: its bytes held at the start leave first, at the service
/// left after what arrives. For a queue known to empty within the step (the caller's test); 1 if nothing drains it.
inline double empties_at(double queue_start, double arrived, double service)
{
  return queue_start > 0 && service > arrived ? queue_start / (service - arrived) : 1.0;
}

/// How a step's departures from a queue are marked when the queue moves linearly from `queue_start` to `queue_end`
/// bytes over the first `s_end` of the step (a fraction of it) and stays at `queue_end` after (a queue that empties
/// inside the step): `p`, the mean of RED's probability over the step; `hazard`, the mean per-packet hazard where the
/// probability is below 1 (each piece inside RED's band with the mean of its two ends' hazards, so a step inside the
/// band gets the mean of its two ends' probabilities and hazards); [on, off], the part of the step (fractions of it)
/// where the queue is above K_max and every packet leaves marked (on >= off: none). A step entirely above K_max is
/// [0, 1]; one that crosses K_max or empties inside the step is marked throughout only over its part above K_max.
struct PathMarking {
  double p = 0, hazard = 0, on = 1, off = 0;
};

inline PathMarking path_marking(const models::cc::DcqcnParams& d, double queue_start, double queue_end, double s_end)
{
  PathMarking m;
  const double k_min = d.k_min.bytes(), k_max = d.k_max.bytes();
  // One piece of the path, [sa, sb] of the step, over which the queue moves linearly from qa to qb and stays on one
  // side of K_min and of K_max.
  const auto region = [&](double sa, double sb, double qa, double qb) {
    const double len = sb - sa;
    if (!(len > 0)) return;
    const double mid = (qa + qb) / 2;
    if (mid > k_max) {
      m.on = std::min(m.on, sa);
      m.off = std::max(m.off, sb);
      m.p += len;
    } else if (mid > k_min) {
      const double p0 = models::cc::marking_probability(d, Bytes(qa));
      const double p1 = models::cc::marking_probability(d, Bytes(qb));
      m.p += len * (p0 + p1) / 2;
      m.hazard += len * (mark_hazard(p0) + mark_hazard(p1)) / 2;
    }
  };
  // A linear piece, cut where it crosses K_min and K_max.
  const auto piece = [&](double sa, double sb, double qa, double qb) {
    if (!(sb > sa)) return;
    const auto cut = [&](double k) { // where the piece crosses k, or sb
      return (qa - k) * (qb - k) < 0 ? sa + (sb - sa) * (k - qa) / (qb - qa) : sb;
    };
    const double c1 = std::min(cut(k_min), cut(k_max)), c2 = std::max(cut(k_min), cut(k_max));
    const auto q_at = [&](double s) { return s >= sb ? qb : qa + (qb - qa) * (s - sa) / (sb - sa); };
    region(sa, c1, qa, q_at(c1));
    region(c1, c2, q_at(c1), q_at(c2));
    region(c2, sb, q_at(c2), qb);
  };
  const double se = std::clamp(s_end, 0.0, 1.0);
  piece(0.0, se, queue_start, queue_end);
  piece(se, 1.0, queue_end, queue_end);
  return m;
}

} // namespace railyard::sim
