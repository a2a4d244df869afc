// Workload replay: every rank of a Workload (workloads/op_graph.hpp) executes its program on the simulated cluster.
//
// Execution model (sim/README.md, "Workload replay"): one engine (src/replay_engine.hpp) holds a rank's execution
// rules, once, as a state machine over its lanes (every CUDA stream, and each op on kUnordered); two drivers run it:
// Railyard's event loop (analytical, ideal) and SimGrid actors, one per lane (flows on either backend).
//  - a lane runs its ops in op-id order; an op starts once its dependencies have completed (and, for traces with host
//    launch times, not before the host launched it); consecutive compute ops that no other lane waits for run as one
//    timed interval;
//  - compute and memcpy ops take the trace's measured duration or the profile's roofline kernel_time(flops, bytes);
//    GEMMs with a shape (workloads::GemmShape) take the profile's gemm_time: whole waves of output tiles over the SMs;
//  - on the event loop (Analytical, Ideal), a GEMM that runs while collectives of its rank run gets the SMs their
//    NCCL kernels leave: NCCL runs one thread block per channel, each on an SM of its own (NVIDIA/nccl
//    src/enqueue.cc, ncclLaunchKernel: grid = {nChannels, 1, 1}), so with c channels in flight the GEMM's waves are
//    counted over SMs - c; its remaining work is re-timed whenever that count changes (ReplayOptions::nccl_sms);
//  - collectives run on their communicator: lowered (ReplayOptions::lower) and executed flow by flow on the network
//    (CommModel::Flows), or timed by the same schedule evaluated without other traffic once every member has arrived
//    (Analytical), or free once every member has arrived (Ideal). Concurrent collectives of one communicator use
//    distinct connection tags, per sequence number;
//  - point-to-point: a Send completes when its bytes are delivered, whether or not the receiver has reached its Recv
//    (eager, as workloads/README.md requires). With Flows, each receiving rank has a proxy actor, as NCCL has a
//    proxy thread, that posts a receive for every message it will get at the start of the step, so a transfer starts
//    as soon as its sender issues it; the Recv op then completes when its message has arrived.
// Outputs: step time, a per-rank breakdown of time (compute, exposed communication per group kind, pipeline
// bubbles, idle), MFU/HFU, and a timeline of selected ranks for a Chrome/Perfetto trace.
#pragma once

#include "railyard/calibration/profile.hpp"
#include "railyard/models/lowering.hpp"
#include "railyard/sim/flow_network.hpp"
#include "railyard/sim/simulation.hpp"
#include "railyard/topologies/topology.hpp"
#include "railyard/workloads/op_graph.hpp"

#include <array>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace railyard::sim {

/// How communication is timed in a replay.
enum class CommModel {
  Flows,      ///< every transfer of every lowered collective and send is a flow on the FlowNetwork (contention)
  Analytical, ///< each collective alone on the fabric: its lowered schedule evaluated in closed form
  Ideal,      ///< communication is free; only its ordering (rendezvous, message arrival) remains
  /// Collective-level flows on Railyard's event loop: every channel of a lowered collective is one coupled fluid flow
  /// over the links its steps use (all edges at one rate, k x rate on a link k edges cross), max-min fair with
  /// everything else in flight; all-to-all pairs and point-to-point messages are flows of their own. Time = launch +
  /// the steps' latency terms + bytes over the rate integrated in time (sim/README.md, "Collective-level flows").
  Coupled,
};
std::string to_string(CommModel m);
/// Every communication model a scenario can name (`to_string` of each is its name): the parser accepts exactly these,
/// and the CLI tests run each of them through the binary.
inline constexpr std::array kCommModels{CommModel::Flows, CommModel::Analytical, CommModel::Ideal, CommModel::Coupled};

/// How a replay treats the host threads of a trace that recorded them (Kineto's runtime calls).
enum class HostLaunch : std::uint8_t {
  /// GPU only: ops start as soon as their stream and dependencies allow (the host never holds the GPU back).
  Off,
  /// The host timeline as recorded: each op waits for its recorded launch time, whatever the GPU does (a what-if
  /// that changes the GPU's time cannot move the host).
  Recorded,
  /// The host as a dependency graph (workloads::HostCall): each thread runs its calls in order with its measured
  /// work between them; a launch releases its ops; a synchronisation that waited in the trace waits for the op that
  /// released it. A host that ran ahead keeps running ahead; a host blocked on a sync waits for the new GPU time.
  Model,
};
std::string to_string(HostLaunch h);
inline constexpr std::array kHostLaunchModes{HostLaunch::Off, HostLaunch::Recorded, HostLaunch::Model};

/// The training framework's host thread (PyTorch and Megatron's Python), on programs that carry HostMark bits (the
/// generator's; a trace's own launch times are host_launch's). Each rank's host issues its ops in op id order, paying
/// `launch_s` per kernel (compute, memcpy), `collective_s` per communication call (collective, send, receive),
/// `microbatch_s` before an op that opens a micro-batch and `step_s` before the one that opens the optimizer; an op
/// starts no earlier than its issue. After an op marked kHostSync (and kHostSyncP2p with `sync_after_p2p`) the host
/// waits until the device has finished everything it issued. The step then starts at time 0, when the hosts start
/// issuing. calibration::FrameworkModel carries fitted values (railyard calibrate --steps).
struct HostModel {
  bool enabled = false;
  double launch_s = 0;     ///< host time per kernel issued (framework dispatch and CUDA launch)
  double collective_s = 0; ///< host time per communication call issued (process-group call, NCCL enqueue)
  double microbatch_s = 0; ///< host time per micro-batch (forward slot) beyond its ops
  double step_s = 0;       ///< host time per step beyond its ops (optimizer, gradient clipping, logging)
  bool sync_after_p2p = true;
};

/// The host model of a profile's fitted framework costs.
inline HostModel host_model_of(const calibration::FrameworkModel& f)
{
  return {true, f.launch.seconds(), f.collective.seconds(), f.microbatch.seconds(), f.step.seconds(), f.sync_after_p2p};
}

struct ReplayOptions {
  CommModel comm = CommModel::Flows;
  /// Analytical and Ideal run on Railyard's own discrete-event loop (no SimGrid actors: the same results, tens of
  /// times faster); false drives the same engine by SimGrid actors, as Flows is, as a cross-check of the two drivers.
  bool discrete_events = true;
  bool measured_durations = true;             ///< use a trace's measured compute durations where it has them
  HostLaunch host_launch = HostLaunch::Model; ///< how a trace's host threads hold its ops back (HostLaunch)
  /// Analytical: a traced collective takes its measured time (the shortest over its members: the last to arrive
  /// waited for nobody) plus collective_delta of the call, instead of its modelled time. A one-member communicator
  /// of a partially traced job is timed as its recorded group (workloads::Communicator::recorded_ranks).
  bool measured_collectives = false;
  /// With measured_collectives: seconds to add to a collective's measured time: the model's time of the call as it
  /// runs (its communicator; a one-member one of a partial trace at its recorded group) on the replayed cluster minus
  /// the time of the call as it was recorded (ranks `recorded`: the group in the traced job) on the cluster the trace
  /// was recorded on. Empty: none.
  std::function<double(const models::CollectiveCall& call, const std::vector<int>& recorded, const InputLocation&)>
      collective_delta;
  /// Event loop with a profile that has a `gemm:` block: GEMMs overlapping collectives of their rank run on the SMs
  /// NCCL's channels leave. false: every GEMM has all SMs.
  bool nccl_sms = true;
  /// Straggler GPUs: rank r's kernels (compute, copies) take compute_slowdown[r] times their duration (a GPU that
  /// runs slow: thermal or power throttling, a bad part); ranks past the end run at 1.
  std::vector<double> compute_slowdown;
  HostModel host; ///< the framework's host thread on generated programs; off by default
  calibration::DType dtype = calibration::DType::Bf16; ///< kernel model data type of compute ops
  /// Ranks whose ops go into the timeline. Empty optional: every rank up to 16 ranks, else the first rank of each
  /// distinct program (every pipeline stage of a generated workload) up to 16; an empty list: none.
  std::optional<std::vector<int>> trace_ranks;
  /// Model FLOPs of the step over all GPUs, for MFU (e.g. workloads::megatron_model_flops); 0: not known.
  double model_flops = 0;
  /// Resolves and lowers one collective of the workload; required with Flows and Analytical (replay_workload throws
  /// std::invalid_argument without it: there is no default NCCL configuration). sim::nccl_lowering gives NCCL's choice
  /// and fixed costs for given `nccl:` settings; `railyard run` passes the scenario's this way.
  std::function<models::Schedule(const models::CollectiveCall&, const InputLocation&)> lower;
  /// Analytical only: the time of one collective from elsewhere than its lowered schedule, asked once per distinct
  /// (communicator, collective, size); an empty result times the lowered schedule. Empty: schedules only.
  /// `railyard run` passes the profile's fitted collective costs this way (`replay.collective_model: profile`).
  std::function<std::optional<Seconds>(const models::CollectiveCall&, const InputLocation&)> collective_time;
};

/// Number of group kinds (workloads::GroupKind: TP, PP, DP, EP, CP, Other), indexing per-kind arrays.
inline constexpr std::size_t kGroupKinds = 6;

/// Where one rank's time went, in seconds. At each instant the rank is in exactly one of: compute (a compute or
/// memcpy op runs, whatever else runs), exposed communication (no compute, some communication op active; split
/// evenly between the kinds active then), bubble (nothing but a pipeline receive waiting for a message its sender
/// has not sent yet; and, for ranks with pipeline peers, the time after their last op until the step ends), idle
/// (the rest: waiting for host launches, dependencies, or the end of the step). The four add up to the step time.
struct TimeBreakdown {
  double compute_s = 0;
  std::array<double, kGroupKinds> exposed_s{}; ///< exposed communication by group kind
  double bubble_s = 0;
  double idle_s = 0;
  /// Part of idle_s: no op runs and some stream waits for the host to launch its next op (host-bound time).
  double host_bound_s = 0;
  std::array<double, kGroupKinds> comm_s{}; ///< all communication time by kind, overlapped or not
  [[nodiscard]] double exposed_total() const;
  [[nodiscard]] double total() const { return compute_s + exposed_total() + bubble_s + idle_s; }
};

struct RankReplay {
  Seconds first_start{0}; ///< first op start
  Seconds last_end{0};    ///< last op end
  TimeBreakdown breakdown;
};

/// One executed op of a traced rank.
struct TraceEvent {
  int rank = 0;
  workloads::StreamId stream = 0;
  workloads::OpId op = 0;
  double start_s = 0, end_s = 0;
};

/// Coupled: one collective call (all its members together), when it ran and what it would have taken alone on the
/// fabric, so end_s - start_s over alone_s is its congestion factor.
struct CollectiveRun {
  std::int32_t comm = 0;
  models::CollectiveKind kind = models::CollectiveKind::AllReduce;
  std::uint8_t group = 0; ///< workloads::GroupKind of the communicator (index into kGroupKinds arrays)
  double bytes = 0;
  double start_s = 0; ///< its last member arrived
  double end_s = 0;   ///< it ended for every member
  double alone_s = 0; ///< the same call alone on the fabric (launch, latency terms, bytes at its max-min rates alone)
  [[nodiscard]] double factor() const { return alone_s > 0 ? (end_s - start_s) / alone_s : 1.0; }
};

struct ReplayResult {
  CommModel comm = CommModel::Flows;
  Seconds start{0};     ///< earliest op start (0 unless the first host launch comes later)
  Seconds end{0};       ///< latest op end
  Seconds step_time{0}; ///< end - start
  std::vector<RankReplay> ranks;
  TimeBreakdown mean;        ///< mean over ranks
  double model_flops = 0;    ///< as given in ReplayOptions
  double hardware_flops = 0; ///< sum of compute-op FLOPs over all ranks (with recomputation)
  double peak_flops = 0;     ///< per GPU, the profile's dense peak for the dtype; 0 without a profile
  std::optional<double> mfu; ///< model_flops / (step_time x GPUs x peak)
  std::optional<double> hfu; ///< hardware_flops / (step_time x GPUs x peak)
  /// What papers quote as "TFLOPs per GPU", in FLOP per second per GPU: model_flops (hardware_flops, with
  /// recomputation) / (step_time x GPUs). Needs no profile; empty when the FLOPs or the step are 0.
  std::optional<double> model_flops_per_gpu_per_s, hardware_flops_per_gpu_per_s;
  std::vector<int> traced_ranks;
  std::vector<TraceEvent> events; ///< ops of the traced ranks, sorted by (rank, stream, start, op)
  FlowTotals flows;
  /// Flows on the fluid backend: its flows, link samples (as its FluidConfig records them) and statistics; else null.
  std::shared_ptr<const FluidReport> network;
  /// Coupled: every collective call of multi-rank communicators, in the order they ended.
  std::vector<CollectiveRun> collectives;
  std::uint64_t ops_executed = 0;
  /// With a HostModel: mean over ranks of the time their hosts spent issuing (the rest of the step they waited for
  /// the device at a synchronisation, or had issued everything); 0 without one.
  double host_busy_s = 0;
  std::vector<std::string> notes;
};

/// Replays `workload` on `topology` (rank r runs on GPU r). Compute ops without measured durations need `profile`
/// (its kernel model); without one they are an InputError naming the file, rank and op. A workload whose ranks wait
/// for each other in a cycle (a receive before the send its peer waits on) is an InputError naming a waiting rank and
/// its op.
ReplayResult replay_workload(const workloads::Workload& workload, const topo::Topology& topology,
                             const SimulationConfig& config, const calibration::Profile* profile,
                             const ReplayOptions& options);

/// A lowered collective alone on the fabric: the call's launch cost, then rounds: the j-th steps of all channels run
/// together as one round; each flow of a round gets min over its links of (link bandwidth / flows of the round on
/// that link) and lasts its path latency plus its bytes (x its weight) over that rate; a round ends with its slowest
/// flow plus the largest per-hop overhead of a receiving rank (the inter-node one for ranks that receive across
/// nodes), as the collective runner forwards what arrived after that overhead; rounds add up. For the
/// symmetric patterns NCCL builds (rings, trees) this is max-min sharing, so it equals the Flows replay of the
/// collective alone. Routes are Topology::route with the channel as flow key.
/// The ranks whose ops go into the timeline: options.trace_ranks, else every rank up to 16 ranks, else the first rank
/// of each distinct program, up to 16.
std::vector<int> traced_ranks(const workloads::Workload& w, const ReplayOptions& options);
/// Ops of those ranks (the timeline's events).
std::size_t traced_ops(const workloads::Workload& w, const ReplayOptions& options);

Seconds isolated_collective_time(const models::Schedule& schedule, const topo::Topology& topology, bool pxn,
                                 std::uint64_t seed);

/// The profile's fitted cost of one resolved collective (algorithm and protocol filled in, as resolve_call does), or
/// why the profile has none. The profile covers the call when it has an entry of the same collective, link kind
/// (nvlink when every rank is on one node, else network), rank count and node count, and either the call's
/// algorithm and protocol or, failing that, "auto" for both (what NCCL chose itself when measured). The time is the
/// entry's latency + size x busbw_factor / busbw of the piece the size falls in (calibration::CollectiveFit::time).
struct ProfileCollectiveCost {
  const calibration::CollectiveFit* fit = nullptr; ///< the entry used; null when the profile does not cover the call
  Seconds time{0};
  bool extrapolated = false; ///< the size lies outside the entry's measured_bytes
  int nodes = 0;             ///< nodes the call's ranks span
  std::string reason;        ///< which entry and why, or why none
};
ProfileCollectiveCost profile_collective_cost(const calibration::Profile& profile,
                                              const models::CollectiveCall& resolved, const topo::Topology& topology);

} // namespace railyard::sim
