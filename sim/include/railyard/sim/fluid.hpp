// The `fluid` FlowNetwork backend: Railyard's own event-driven flow-level network on the SimGrid clock.
//
// Without congestion control every flow gets its max-min fair rate over the links of its path, recomputed only on the
// links a flow event touches (and as far as rates actually change); it agrees with the `simgrid` backend. With DCQCN
// or PFC, switch egress ports become fluid FIFO queues integrated in steps of `time_step`: senders inject at their
// reaction point's rate (DCQCN) or as fast as their host links allow (PFC only), queues build where input exceeds
// capacity, packets are ECN-marked with RED probability, receivers pace CNPs, and ingress counters pause upstream
// links per priority.
#pragma once

#include "railyard/common/units.hpp"
#include "railyard/models/cc/dcqcn.hpp"
#include "railyard/models/cc/pfc.hpp"
#include "railyard/sim/flow_network.hpp"
#include "railyard/sim/progress.hpp"
#include "railyard/topologies/topology.hpp"

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace railyard::sim {

/// How a transfer picks its path among equal-cost ones.
enum class EcmpMode {
  PerFlow, ///< every transfer (and every QP of it) hashes anew: (src, dst, k-th flow of the pair), as `simgrid`
  PerQp,   ///< a static path per (src, dst, tag, qp), as a switch hashes a QP's 5-tuple
  Spray,   ///< ideal packet spraying: every transfer spread evenly over all equal-cost paths
};
enum class CongestionControl { None, Dcqcn };

std::string to_string(EcmpMode m);
std::string to_string(CongestionControl c);

struct FluidConfig {
  EcmpMode ecmp = EcmpMode::PerFlow;
  int qps_per_connection = 1;        ///< NCCL_IB_QPS_PER_CONNECTION: a transfer is split evenly over this many QPs
  std::size_t spray_max_paths = 256; ///< Spray uses at most this many of a pair's equal-cost paths
  CongestionControl cc = CongestionControl::None;
  models::cc::DcqcnParams dcqcn = models::cc::dcqcn_preset("sigcomm2015");
  models::cc::PfcParams pfc = models::cc::pfc_defaults(Bytes(4096));
  Bytes mtu{4096};                  ///< RoCE MTU: the packet unit of ECN marking
  Seconds time_step = units::us(1); ///< queue-model integration step (only while DCQCN or PFC is on)
  /// Coupled communication's queue model: integrate only while a switch port is offered more than its capacity or
  /// holds bytes, in groups of lanes each on its own clock and in steps that grow up to 64 time_steps while nothing
  /// the group holds changes, and jump from one DCQCN timer to the next otherwise (true); or every time_step while any
  /// flow crosses a queue, as the per-transfer network always does (false: the reference the adaptive steps are
  /// tested against).
  bool adaptive_steps = true;
  bool record_flows = true; ///< keep one FlowRecord per flow (flows.csv); off for very large runs
  bool record_links = true; ///< sample links every sample_interval (links.csv)
  /// Links are sampled every sample_interval; while the queue model runs, at the end of the first queue step that
  /// reaches that time (so a sample holds whole steps). Sampling never changes what is simulated.
  Seconds sample_interval = units::us(10);

  /// Queues, marks and pauses are modelled only when DCQCN or PFC is on; otherwise rates are max-min fair.
  [[nodiscard]] bool queues() const { return cc != CongestionControl::None || pfc.enabled; }
};

/// One flow: a transfer, or one QP (or spray path) of it.
struct FlowRecord {
  std::uint64_t id = 0; ///< in start order
  int src = 0, dst = 0;
  std::uint64_t tag = 0;
  int qp = 0; ///< QP index, or path index when spraying
  double bytes = 0;
  double start = 0;                        ///< both sides posted: the flow enters the network
  double end = 0;                          ///< its last byte left the last link
  double arrival = 0;                      ///< end + path latency: the receiver has it
  std::uint32_t path_offset = 0, hops = 0; ///< links in FluidReport::paths[path_offset, path_offset + hops)
  [[nodiscard]] double fct() const { return arrival - start; }
};

/// One link over one sampling interval [time, time + interval). Only intervals with activity are kept.
struct LinkSample {
  double time = 0;     ///< the interval's start, seconds
  double interval = 0; ///< its length: sample_interval (up to a queue step more), or what is left of the run
  std::uint32_t link = 0;
  double bytes = 0;            ///< carried in the interval
  double utilisation = 0;      ///< bytes / (capacity x interval)
  double max_queue = 0;        ///< deepest egress queue in the interval, bytes
  double marks = 0;            ///< ECN-marked packets (expected count: bytes / MTU x marking probability)
  double paused = 0;           ///< seconds the link was paused (any priority)
  std::uint32_t max_flows = 0; ///< most flows on the link at once
};

struct LinkTotals {
  double bytes = 0;
  double max_queue = 0;
  double marks = 0;
  double paused = 0;
  double max_ingress = 0; ///< deepest PFC ingress counter of the link's downstream port
  std::uint32_t max_flows = 0;
  std::uint64_t flows = 0; ///< flows that crossed it
};

struct FluidStats {
  std::uint64_t flows = 0;
  std::uint64_t messages = 0;
  double first_start = -1; ///< when the first transfer entered the network, seconds; -1: none did
  double last_end = 0;     ///< when the last flow's last byte left its last link, seconds
  double max_queue = 0;    ///< bytes, over all egress queues
  std::int64_t max_queue_link = -1;
  double pause_time = 0; ///< seconds, summed over links
  std::uint64_t pause_events = 0;
  double ecn_marks = 0;
  std::uint64_t cnps = 0;
  std::uint64_t rate_decreases = 0;
  /// Bytes that arrived at an ingress counter already above XOFF + headroom: what a real switch would drop. Zero when
  /// the headroom covers the bytes in flight.
  double overflow_bytes = 0;
  /// The collective-level queue model (`communication: coupled` with DCQCN or PFC): the most a host link's lanes
  /// (edge QPs behind one NIC port) sent at once, over its capacity. At most 1: a NIC never sends beyond its line rate.
  /// -1: not measured (no such model ran).
  double host_peak_load = -1;
  std::vector<LinkTotals> links; ///< per link id
};

/// What the outputs need to know about a link.
struct LinkInfo {
  std::string name; ///< "leaf3->spine1"
  std::string kind; ///< nvlink, pcie, nic_leaf, leaf_spine, spine_core
  double capacity = 0;
  std::uint32_t from = 0;               ///< source vertex
  bool from_switch = false, up = false; ///< a switch's egress port; towards a higher tier
};

/// Name, kind, capacity and direction of every link of the topology, by link id (FluidReport::link_info).
std::vector<LinkInfo> describe_links(const topo::Topology& topology);

struct FluidReport {
  std::vector<LinkInfo> link_info; ///< per link id
  std::vector<FlowRecord> flows;
  std::vector<std::uint32_t> paths;
  std::vector<LinkSample> links;
  FluidStats stats;
};

/// One queue-model step of one egress link and priority, for observers (tests, tracing).
struct QueueStep {
  double t0 = 0, t1 = 0;
  std::uint32_t link = 0;
  int priority = 0;
  bool paused = false;
  double sent = 0;    ///< bytes that left the queue in [t0, t1)
  double queue = 0;   ///< bytes queued at t1
  double ingress = 0; ///< the PFC ingress counter of this link's downstream port at t1
};

class FluidNetwork final : public FlowNetwork {
public:
  FluidNetwork(const topo::Topology& topology, FluidConfig config, std::uint64_t seed, bool pxn);
  ~FluidNetwork() override;
  FluidNetwork(const FluidNetwork&) = delete;
  FluidNetwork& operator=(const FluidNetwork&) = delete;

  [[nodiscard]] std::string name() const override { return "fluid"; }
  void isend(int src, int dst, std::uint64_t tag, Bytes bytes) override;
  RequestId irecv(int dst, int src, std::uint64_t tag) override;
  RequestId timer(Seconds at) override;
  std::size_t wait_any(const std::vector<RequestId>& requests) override;
  void wait_sends() override;
  [[nodiscard]] bool supports_clients() const override { return true; }
  std::uint32_t add_client(FlowClient& client) override;
  void client_isend(std::uint32_t client, int src, int dst, std::uint64_t tag, Bytes bytes) override;
  void client_irecv(std::uint32_t client, int dst, int src, std::uint64_t tag, std::uint64_t cookie) override;
  void client_timer(std::uint32_t client, Seconds at, std::uint64_t cookie) override;
  void client_watch_sends(std::uint32_t client) override;
  void wait_clients() override;
  [[nodiscard]] Seconds now() const override;
  [[nodiscard]] const FlowTotals& totals() const override;
  /// Publishes simulated time and transfers delivered into `probe` at every date the network processes (null: none).
  void set_progress(ProgressProbe* probe);

  /// The 802.1p priority of transfers on connection (src, dst, tag); others use config.pfc.priority.
  void set_priority(int src, int dst, std::uint64_t tag, int priority);
  /// Called after every queue-model step of every busy egress link (only when queues are modelled).
  void on_queue_step(std::function<void(const QueueStep&)> observer);

  [[nodiscard]] const FluidConfig& config() const;
  /// Flows, link samples and statistics so far; complete once the simulation has run.
  [[nodiscard]] const FluidReport& report();
  /// Moves the report out (after the run), for outputs of large runs.
  [[nodiscard]] FluidReport take_report();

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

} // namespace railyard::sim
