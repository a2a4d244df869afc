// The one interface rank actors use to move bytes. Backends: `simgrid` (SimGrid comms over the platform built from
// the topology; the max-min reference) and, later, `fluid` (Railyard's own flow-level network with congestion
// control). All calls are made from inside a rank actor.
#pragma once

#include "railyard/common/units.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace railyard::sim {

using RequestId = std::uint64_t;

/// Totals every backend keeps, so a run can show that every byte sent was received.
struct FlowTotals {
  std::uint64_t flows_sent = 0;
  std::uint64_t flows_received = 0;
  double bytes_sent = 0;     ///< wire bytes
  double bytes_received = 0; ///< wire bytes
};

class FlowNetwork {
public:
  virtual ~FlowNetwork() = default;
  [[nodiscard]] virtual std::string name() const = 0;

  /// Sends `bytes` from GPU `src` to GPU `dst` on connection `tag`. Returns at once; the transfer starts when the
  /// receiver has posted the matching irecv (transfers on one (src, dst, tag) connection match in FIFO order).
  virtual void isend(int src, int dst, std::uint64_t tag, Bytes bytes) = 0;
  /// Posts a receive of the next transfer on connection (src, dst, tag). Called from dst's actor.
  virtual RequestId irecv(int dst, int src, std::uint64_t tag) = 0;
  /// A request that completes at simulated time `at`.
  virtual RequestId timer(Seconds at) = 0;
  /// Blocks the calling actor until one of `requests` completes; a receive completes when its last byte has
  /// arrived: transfer end plus the path's latency. Returns the position in `requests` of the earliest one; that
  /// request is then forgotten and must not be passed again.
  virtual std::size_t wait_any(const std::vector<RequestId>& requests) = 0;

  /// Blocks the calling actor until every transfer it sent has ended. Simulation calls it when an actor's body
  /// returns: a transfer keeps its sender alive, as an RDMA write needs its QP until it completes.
  virtual void wait_sends() = 0;

  [[nodiscard]] virtual Seconds now() const = 0;
  [[nodiscard]] virtual const FlowTotals& totals() const = 0;
};

} // namespace railyard::sim
