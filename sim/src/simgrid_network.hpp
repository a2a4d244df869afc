// SimGrid backend internals: the ECMP routing zone and the FlowNetwork over mailbox comms.
#pragma once

#include "railyard/common/slot_pool.hpp"
#include "railyard/sim/flow_network.hpp"
#include "railyard/topologies/topology.hpp"

#include <simgrid/kernel/routing/NetPoint.hpp>
#include <simgrid/kernel/routing/NetZoneImpl.hpp>
#include <simgrid/s4u.hpp>

#include <deque>
#include <unordered_map>
#include <vector>

namespace railyard::sim {

/// The root netzone: one host per GPU, one SimGrid link per directed topology link. SimGrid asks it for a route at
/// every transfer start; it answers with the topology's ECMP route for the k-th flow between that pair of GPUs
/// (flow key = k), so each flow hashes anew, deterministically for a seed. SimGrid weighs a flow's bandwidth share
/// by its route latency, while RDMA flows at line rate share a link equally; so routes report no latency, and
/// SimGridNetwork adds the path's latency when the last byte has left (a comm then ends when its last byte is
/// injected, where the next transfer of its connection may start, as in the fluid backend). Measured: a 1,024-GPU
/// ring all_reduce (bench_fluid_vs_simgrid) takes 26.6 s of wall time so, against 12.1 s when every route charged the
/// shortest path's latency and the rest came after; but then each transfer of a connection started that latency late
/// and the two backends differed by 16%.
class EcmpZone : public simgrid::kernel::routing::NetZoneImpl {
public:
  EcmpZone(const topo::Topology& topology, std::uint64_t seed, bool pxn);
  void build();
  [[nodiscard]] simgrid::s4u::Host* host(int gpu) const { return hosts_[gpu]; }
  [[nodiscard]] const std::vector<simgrid::s4u::Host*>& hosts() const { return hosts_; }

  void get_local_route(const simgrid::kernel::routing::NetPoint* src, const simgrid::kernel::routing::NetPoint* dst,
                       simgrid::kernel::routing::Route* into, double* latency) override;

private:
  const topo::Topology& topology_;
  std::uint64_t seed_;
  bool pxn_;
  std::vector<simgrid::s4u::Host*> hosts_;
  std::vector<simgrid::s4u::Link*> links_;
  std::unordered_map<const simgrid::kernel::routing::NetPoint*, int> gpu_of_netpoint_;
  std::unordered_map<std::uint64_t, std::uint64_t> flows_per_pair_;
};

class SimGridNetwork final : public FlowNetwork {
public:
  SimGridNetwork(const topo::Topology& topology, bool pxn, const EcmpZone& zone);

  [[nodiscard]] std::string name() const override { return "simgrid"; }
  void isend(int src, int dst, std::uint64_t tag, Bytes bytes) override;
  RequestId irecv(int dst, int src, std::uint64_t tag) override;
  RequestId timer(Seconds at) override;
  std::size_t wait_any(const std::vector<RequestId>& requests) override;
  void wait_sends() override;
  [[nodiscard]] Seconds now() const override;
  [[nodiscard]] const FlowTotals& totals() const override { return totals_; }

private:
  struct Request {
    simgrid::s4u::CommPtr comm; ///< null for timers, and for a receive waiting its turn on its connection
    double arrival = -1;        ///< simulated time the request completes; -1 until known
    double latency = 0;         ///< path latency added after the transfer ends
    void* payload = nullptr;
    simgrid::s4u::Mailbox* box = nullptr; ///< a receive's connection
    bool in_use = false;
  };
  /// A connection is one stream (NCCL writes a connection's FIFO slots in order): its receives are matched one at a
  /// time, so its transfers leave one after another, each once the one before has arrived (SimGrid routes charge no
  /// latency; the path's is added after the last byte). Per connection: a receive in flight, and those posted after it.
  struct Stream {
    bool busy = false;
    std::deque<RequestId> waiting;
  };
  /// The receive in flight on `box` is done: the next one posted on it starts.
  void stream_next(simgrid::s4u::Mailbox* box);

  simgrid::s4u::Mailbox* mailbox(int src, int dst, std::uint64_t tag);
  double pair_latency(int src, int dst);
  RequestId allocate();
  void release(RequestId id);

  const topo::Topology& topology_;
  bool pxn_;
  std::unordered_map<std::uint64_t, simgrid::s4u::Mailbox*> mailboxes_;
  std::unordered_map<simgrid::s4u::Mailbox*, Stream> streams_;

  std::unordered_map<std::uint64_t, double> latencies_;
  /// Each actor's sends still in flight, reaped by that actor in wait_any(). SimGrid 3.32 keeps a comm in its
  /// sender's activity list until the sender waits on it, and removes entries with a linear search; detached sends
  /// (removed by the receiver from that list) made a 512-GPU ring spend a fifth of its time in that search. Keyed by
  /// actor, not by GPU: a workload replay runs one actor per CUDA stream, and two actors of one GPU waiting on one
  /// shared list would each remove what the other reaped.
  std::unordered_map<aid_t, std::vector<simgrid::s4u::CommPtr>> sends_;
  std::unordered_map<const simgrid::s4u::Host*, int> gpu_of_host_;
  /// A deque: a pending receive holds a pointer to its request's payload, which must not move as the pool grows.
  SlotPool<Request, RequestId, std::deque<Request>> requests_;
  FlowTotals totals_;
};

} // namespace railyard::sim
