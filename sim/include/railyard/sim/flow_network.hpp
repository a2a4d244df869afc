// The one interface ranks use to move bytes. Backends: `simgrid` (SimGrid comms over the platform built from the
// topology; the max-min reference) and `fluid` (Railyard's own flow-level network with congestion control).
// Ranks are either actors (isend/irecv/timer/wait_any/wait_sends, called from inside the rank's actor) or, on a
// backend that supports it, event-driven clients (FlowClient): the network calls them back from its own event loop,
// so a rank costs no actor and no context switch per step.
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

/// A rank driven by events instead of an actor. Its callbacks run inside the network's event loop at the current
/// simulated date; they may post more work (client_isend, client_irecv, client_timer, client_watch_sends).
class FlowClient {
public:
  virtual ~FlowClient() = default;
  /// The receive or timer posted with `cookie` completed now (a receive: its last byte has arrived).
  virtual void on_complete(std::uint64_t cookie) = 0;
  /// Every transfer this client sent has ended (delivered once, after client_watch_sends).
  virtual void on_sends_done() = 0;
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

  /// Whether the client calls below are supported (otherwise they throw std::logic_error).
  [[nodiscard]] virtual bool supports_clients() const { return false; }
  /// Registers an event-driven client; the returned id names it in the client calls.
  virtual std::uint32_t add_client(FlowClient& client);
  /// As isend, for a client.
  virtual void client_isend(std::uint32_t client, int src, int dst, std::uint64_t tag, Bytes bytes);
  /// As irecv; the client's on_complete(cookie) runs when the last byte has arrived.
  virtual void client_irecv(std::uint32_t client, int dst, int src, std::uint64_t tag, std::uint64_t cookie);
  /// on_complete(cookie) runs at simulated time `at` (now, if `at` is past).
  virtual void client_timer(std::uint32_t client, Seconds at, std::uint64_t cookie);
  /// on_sends_done() runs once every transfer the client has sent so far has ended (at once if none is in flight).
  virtual void client_watch_sends(std::uint32_t client);
  /// Blocks the calling actor until no client has anything pending: every receive, timer and watch delivered.
  virtual void wait_clients();

  [[nodiscard]] virtual Seconds now() const = 0;
  [[nodiscard]] virtual const FlowTotals& totals() const = 0;
};

} // namespace railyard::sim
