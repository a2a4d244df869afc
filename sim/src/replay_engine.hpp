// The replay engine: a rank's execution rules written once, as a state machine over its lanes (sim/README.md,
// "Workload replay"). Two drivers feed it events: Railyard's own event loop (analytical, ideal: replay.cpp,
// EventLoopDriver) and SimGrid actors, one per lane plus a receive proxy per rank (flows on either backend, and the
// other models as a cross-check: replay.cpp, ActorDriver). The engine never waits: it posts what a lane waits for
// (an op's end, a host launch time, a message's delivery, network work to run in the lane's actor) to its driver, and
// the driver hands each back at its date through handle().
#pragma once

#include "coupled_network.hpp"
#include "railyard/common/hash.hpp"
#include "railyard/common/slot_pool.hpp"
#include "railyard/sim/collective_runner.hpp"
#include "railyard/sim/replay.hpp"

#include <array>
#include <bit>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace railyard::sim::replay_engine {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// Per-program tables, shared by the ranks that run the program.
struct Program {
  const workloads::RankGraph* g = nullptr;
  std::vector<double> duration;       ///< seconds, for compute/memcpy ops
  std::vector<std::uint8_t> external; ///< 1: an op of another lane depends on it
  std::vector<std::uint32_t> seq;    ///< collectives: position among the program's collectives on the same communicator
  std::vector<std::int32_t> p2p_pos; ///< send/recv: position in p2p_ops; -1 otherwise
  std::vector<workloads::OpId> p2p_ops;
  /// Lanes: every stream (in stream order, its ops in id order), then each unordered op as a lane of its own; the
  /// stream of each (workloads::kUnordered for the latter).
  std::vector<std::vector<workloads::OpId>> lanes;
  std::vector<workloads::StreamId> lane_stream;
  double flops = 0;        ///< sum over the program's compute ops
  double min_issue = kInf; ///< earliest host issue time of the program, when it has issue times
  bool has_issue = false;
  /// HostLaunch::Model on a program with host calls: [begin, end) of each thread's calls in g->host_calls().
  std::vector<std::pair<std::uint32_t, std::uint32_t>> threads;
};

/// Accounting of one rank's time: what is active (compute, communication per group kind, bubble) since `last`.
struct Acct {
  double last = 0;
  int compute = 0, bubble = 0;
  int host_wait = 0; ///< lanes whose next op is ready but for its host launch
  std::array<int, kGroupKinds> comm{};
  TimeBreakdown b;
  void advance(double now);
};

/// What a lane's running op holds in the accounting: kHoldCompute, kHoldBubble, a group kind, or kHoldNothing.
inline constexpr std::int8_t kHoldNothing = -1, kHoldCompute = 100, kHoldBubble = 101;

/// One lane (a stream, or an unordered op) of a rank.
struct LaneState {
  std::uint32_t next = 0;    ///< index of the op to run next
  std::uint32_t run_end = 0; ///< a running compute op: one past the last op of the run it heads
  bool busy = false;         ///< ops[next] has started
  bool retry = false;        ///< a retry at its host launch time is posted
  bool host_wait = false;    ///< counted in Acct::host_wait
  std::int8_t holds = kHoldNothing;
  double start = 0;
  // A running GEMM whose SMs NCCL may share (ReplayOptions::nccl_sms): the fraction of its work left at `seg_start`,
  // its duration at the SM count since then, and a generation that outdates its earlier end events.
  bool gemm = false;
  double work_left = 0, seg_start = 0, seg_duration = 0;
  int sms_taken = 0;
  std::uint32_t gen = 0;
  /// flows: the running collective's schedule (the first member to arrive lowers it for all), its tag base and this
  /// rank's position in it.
  std::shared_ptr<const models::Schedule> schedule;
  std::uint64_t tag_base = 0;
  int position = 0;
};

struct RankRt {
  int rank = 0;
  const Program* prog = nullptr;
  std::vector<std::uint8_t> done;
  std::vector<LaneState> lanes;
  std::vector<std::pair<workloads::OpId, std::uint32_t>> lane_waiters; ///< (op, lane waiting for it)
  std::vector<std::uint32_t> msgs;           ///< message id per p2p op (same order as Program::p2p_ops)
  std::vector<std::pair<int, int>> comm_pos; ///< (communicator id, this rank's position in it)
  Acct acct;
  double first_start = kInf, last_end = 0;
  double release_shift = 0; ///< added to a program issue time to get the simulated release time; NaN: no gating
  int nccl_sms = 0;         ///< SMs held by this rank's collectives in flight (one per channel)
  double slowdown = 1;      ///< its kernels take this many times their duration (ReplayOptions::compute_slowdown)
  bool pipeline = false;
  bool traced = false;
  // The framework's host thread (ReplayOptions::host), on programs with host marks: issue[op] is known for the ops
  // before host_next; a blocked host waits until `outstanding` (ops issued, not done) is 0.
  bool host = false;
  bool host_blocked = false;
  workloads::OpId host_next = 0;
  double host_clock = 0;
  double host_busy = 0; ///< seconds the host spent issuing
  std::uint32_t outstanding = 0;
  std::vector<double> issue;
  std::vector<std::uint32_t> host_waiters; ///< lanes whose next op the host has not issued yet
  /// HostLaunch::Model: the rank's host threads replaying the trace's calls (none: the host is not modelled so).
  struct Thread {
    std::uint32_t next = 0, end = 0; ///< the call to run next, one past the thread's last
    double clock = 0;                ///< when the call `next` starts
    bool blocked = false;            ///< `next` is a synchronisation waiting for its op
  };
  std::vector<Thread> threads;
  std::vector<double> call_start; ///< per host call: when it started (NaN until the thread reaches it)
  std::vector<double> op_end;     ///< per op: when it ended (NaN until done), for synchronisations
  std::uint64_t ops = 0;
};

struct Message {
  int src = 0, dst = 0;
  std::uint64_t net_tag = 0;
  double bytes = 0;
  std::size_t kind = 0; ///< group kind of the communicator
  bool sent = false;
  double delivered = -1;
  std::int32_t send_lane = -1, recv_lane = -1; ///< the lanes running the Send and a waiting Recv
};

/// A collective instance (communicator, sequence number) that members rendezvous on.
struct Instance {
  std::vector<std::pair<int, std::uint32_t>> members; ///< (rank, lane) of those that arrived
  int arrived = 0, left = 0;
  double bytes = 0;
  double measured = kInf;   ///< measured_collectives: the shortest measured time of the members so far
  bool all_measured = true; ///< measured_collectives: every member so far has a measured time
  std::shared_ptr<const models::Schedule> schedule; ///< flows
};

/// Coupled: a lowered collective as the network sees it. Each channel is one part, a coupled flow over the links of
/// its edges (all-to-all and send/recv schedules: each edge of a channel a part of its own); a part ends `latency`
/// after its last byte left (the channel's steps: per step the slowest edge's path latency and the per-hop cost).
struct CoupledPart {
  std::vector<coupled::Load> loads;
  double ref_bytes = 0;  ///< bytes its heaviest edge moves: the flow's size, at rate r on a link of multiplicity 1
  double latency = 0;    ///< seconds after its data phase
  double wire_bytes = 0; ///< bytes on the wire over all its edges (the totals' bytes sent and received)
  double cap = std::numeric_limits<double>::infinity(); ///< bytes per second its busiest step allows
  std::uint32_t copies = 1; ///< channels alike merged into this flow (its loads count them all)
  /// Queues on (DCQCN or PFC): its edges' QPs with their paths, for the queue model (their w count the copies).
  std::vector<coupled::LaneSpec> lanes;
};
/// Coupled: a lowered call's edges and latency terms, per channel, whatever ECMP picks (coupled_shape).
struct CoupledShape {
  struct Edge {
    int src = 0, dst = 0;
    double bytes = 0;   ///< over the whole call
    double latency = 0; ///< its path's (the longest of its QPs')
  };
  static constexpr std::uint32_t kSelf = ~0U; ///< a send to the same GPU: no edge
  struct Channel {
    std::vector<Edge> edges;
    /// (pattern, the edge of each of its sends in Pattern::sends order) for each pattern the channel's steps use
    std::vector<std::pair<std::uint32_t, std::vector<std::uint32_t>>> patterns;
  };
  std::vector<Channel> channels;
  bool independent = false; ///< all-to-all, send/recv: each edge a flow of its own
  bool single_paths = true; ///< every edge has one path (ECMP has nothing to choose: the plan holds for every call)
};
struct CoupledPlan {
  std::vector<CoupledPart> parts;
  double launch = 0; ///< before the data phase (Schedule::launch)
  double alone = 0;  ///< the whole call alone on the fabric, seconds
};

/// Coupled: a collective call in flight.
struct Running {
  std::vector<std::pair<int, std::uint32_t>> members; ///< (rank, lane)
  std::shared_ptr<const CoupledPlan> plan;
  std::uint32_t parts_left = 0;
  double end = 0; ///< the latest part's end plus its latency so far
  CollectiveRun run;
};

/// What a driver hands back to a lane at a date.
enum class LaneEv : std::uint8_t {
  OpDone,      ///< the running op (or run of compute ops) ends
  Retry,       ///< the host launch time of the next op has come
  Deliver,     ///< message `arg` has arrived (analytical, ideal)
  RunSchedule, ///< flows: run this rank's part of the collective's schedule on the network (blocking, in the lane's
               ///< actor)
  Isend,       ///< flows: put message `arg` on the network (in the lane's actor)
  // Coupled: the network's own events (rank and lane unused)
  NetStart, ///< collective call `arg` (a Running) starts its data phase: its parts enter the network
  NetEnd,   ///< flow `arg` of the coupled network ends, if `gen` is still its version
  NetSolve, ///< re-solve the rates the changes at this date touch
  NetStep,  ///< the queue model has a step to end or an event to act on at this date
};
struct LaneEvent {
  LaneEv type;
  int rank;
  std::uint32_t lane;
  std::uint32_t arg; ///< message id (Deliver, Isend)
  std::uint32_t gen; ///< OpDone: the lane's generation when posted
};

/// Feeds the engine: keeps its clock and hands every posted event back through Engine::handle at its date.
class Driver {
public:
  virtual ~Driver() = default;
  [[nodiscard]] virtual double now() const = 0;
  virtual void post(double at, const LaneEvent& e) = 0;
  /// The lane has run its last op (an actor may end).
  virtual void lane_finished(int /*rank*/, std::uint32_t /*lane*/) {}
};

class Engine {
public:
  Engine(const workloads::Workload& w, const topo::Topology& t, const SimulationConfig& cfg,
         const calibration::Profile* profile, const ReplayOptions& opt);

  /// Builds the programs, ranks and messages and lowers every distinct collective (a call the models refuse is an
  /// InputError here, before anything runs).
  void prepare();
  /// Runs on `driver`; `net` is the network of flows (null for analytical and ideal).
  void attach(Driver& driver, FlowNetwork* net);
  /// Every lane's first ops start (at the driver's time 0).
  void start();
  /// An event the driver was handed by post() has come.
  void handle(const LaneEvent& e);
  /// flows: message `id` has arrived (the receiving rank's proxy saw it).
  void delivered(std::uint32_t id);
  /// Throws an InputError naming the rank and op of the first lane that never finished: the workload deadlocks.
  void check_finished() const;
  [[nodiscard]] ReplayResult collect(const FlowTotals& flows);

  [[nodiscard]] const std::vector<RankRt>& ranks() const { return ranks_; }
  [[nodiscard]] const std::vector<Message>& messages() const { return msgs_; }
  [[nodiscard]] bool lane_done(int rank, std::uint32_t lane) const;
  /// GEMMs share SMs with NCCL's kernels (event loop, a profile with a `gemm:` block, ReplayOptions::nccl_sms).
  [[nodiscard]] bool share_sms() const;

private:
  // set-up (replay_program.cpp)
  void build_programs();
  double kernel_duration(const workloads::RankGraph& g, workloads::OpId i, int rank);
  void build_ranks();
  void build_messages();
  void prepare_collectives();
  double clock_offset(int r) const;

  // costs (replay_program.cpp)
  double gemm_duration(const workloads::GemmShape& gm, Bytes bytes, int sms_taken) const;
  double one_member_duration(const RankRt& rt, workloads::OpId op_id, const workloads::Op& op, int comm);
  /// measured_collectives: ReplayOptions::collective_delta of the call (at its recorded group), cached; 0 without.
  double collective_delta(const RankRt& rt, workloads::OpId op_id, const workloads::Op& op, int comm, double bytes);
  int channels_of(const RankRt& rt, workloads::OpId op_id, const workloads::Op& op, int comm);
  models::CollectiveCall call_of(const workloads::Op& op, int comm, double bytes) const;
  std::shared_ptr<const models::Schedule> schedule_for(const RankRt& rt, workloads::OpId op_id, const workloads::Op& op,
                                                       int comm);
  double analytical_time(const RankRt& rt, workloads::OpId op_id, const workloads::Op& op, int comm, double bytes);
  double transfer_time(const Message& m) const;
  std::size_t kind_of(int comm) const;
  int position(const RankRt& rt, int comm) const;

  // coupled (replay_coupled.cpp)
  void start_coupled(const RankRt& rt, workloads::OpId op_id, const workloads::Op& op, int comm, Instance& inst);
  std::shared_ptr<const CoupledShape> coupled_shape(const models::Schedule& s);
  std::shared_ptr<const CoupledPlan> coupled_plan(const models::Schedule& s);
  /// Adds k on every link of `path` to the plan scratch (link_k_, touched_); take_loads() moves the sums out as
  /// loads in link order and clears the scratch.
  void add_path_load(const topo::Path& path, double k);
  void take_loads(std::vector<coupled::Load>& out);
  bool single_path(int src, int dst);
  static std::uint64_t edge_key(int src, int dst, std::size_t channel, std::uint64_t salt);
  std::pair<double, double> critical_path(const models::Schedule& s, const CoupledShape& shape, std::size_t c,
                                          double rate);
  /// The paths of a connection's QPs (or, spraying, of every equal-cost path) and the share of its bytes each takes.
  void connection_paths(int src, int dst, std::uint64_t key, std::vector<std::pair<topo::Path, double>>& out);
  void handle_net(const LaneEvent& e);
  void handle_net_event(const LaneEvent& e);
  void add_lanes(std::vector<coupled::LaneSpec>& lanes, const std::vector<std::pair<topo::Path, double>>& paths,
                 double bytes, double buffer);
  void part_done(std::uint32_t running, std::uint32_t part, double t);
  void send_coupled(std::uint32_t message);
  void request_solve();
  /// Queues on: the queue model caught up to now (before anything changes the network at this date) ...
  void net_sync();
  /// ... and its next date on the calendar (after it changed).
  void net_schedule();
  /// The poster of the coupled network's flow ends.
  coupled::Network::PostEnd post_end();

  // the rules (replay_engine.cpp)
  void post(double at, LaneEv type, int rank, std::uint32_t lane, std::uint32_t arg = 0);
  double release_time(const RankRt& rt, workloads::OpId op) const;
  bool deps_done(const RankRt& rt, workloads::OpId op, workloads::OpId chain_begin, workloads::OpId chain_end) const;
  bool sm_shared(const RankRt& rt, workloads::OpId op) const;
  void advance_lane(RankRt& rt, std::uint32_t l);
  void start_op(RankRt& rt, std::uint32_t l, workloads::OpId op_id);
  void start_compute(RankRt& rt, std::uint32_t l, workloads::OpId op_id);
  void start_collective(RankRt& rt, std::uint32_t l, workloads::OpId op_id, const workloads::Op& op);
  void start_send(RankRt& rt, std::uint32_t l, workloads::OpId op_id);
  void start_recv(RankRt& rt, std::uint32_t l, workloads::OpId op_id);
  void finish_op(RankRt& rt, std::uint32_t l);
  void run_schedule(RankRt& rt, std::uint32_t l);
  void message_arrived(std::uint32_t id);
  void change_nccl_sms(RankRt& rt, int delta);
  void hold(RankRt& rt, LaneState& st, std::int8_t what);
  void release(RankRt& rt, LaneState& st);
  void record_done(RankRt& rt, workloads::OpId op, double start, double end);
  void wake(RankRt& rt, workloads::OpId op);
  /// The host issues ops until it blocks at a synchronisation or has issued all; lanes waiting for it try again.
  void host_advance(RankRt& rt);
  /// Hosts unblocked while an event was handled advance now.
  void flush_hosts();
  /// HostLaunch::Model: runs thread `t` of the rank until it blocks or ends.
  void trace_host_advance(RankRt& rt, std::uint32_t t);
  /// Lanes that waited for their host to issue an op try again.
  void wake_host_waiters(RankRt& rt);
  /// HostLaunch::Model: a lane waits for (or no longer waits for) its host, for the host-bound account.
  void set_host_wait(RankRt& rt, LaneState& st, bool waiting);
  Message& message_of(const RankRt& rt, workloads::OpId op_id) { return msgs_[rt.msgs[rt.prog->p2p_pos[op_id]]]; }

  const workloads::Workload& w_;
  const topo::Topology& topo_;
  SimulationConfig cfg_;
  const calibration::Profile* profile_;
  ReplayOptions opt_;
  Driver* driver_ = nullptr;
  FlowNetwork* net_ = nullptr;
  double now_ = 0; ///< the driver's time at the current entry (refreshed after the one blocking call, run_schedule)
  std::vector<Program> progs_;
  std::vector<RankRt> ranks_;
  std::vector<Message> msgs_;
  std::unordered_map<std::uint64_t, Instance> instances_;
  /// A call's shape: (communicator, collective code, bytes, root or peer). Looked up at every collective a rank starts;
  /// never iterated, so a hash map keeps the results independent of its order.
  using ShapeKey = std::tuple<int, int, double, int>;
  struct ShapeHash {
    std::size_t operator()(const ShapeKey& k) const noexcept
    {
      const auto [comm, code, bytes, peer] = k;
      std::uint64_t h = splitmix64(static_cast<std::uint64_t>(static_cast<std::uint32_t>(comm)) << 32 |
                                   static_cast<std::uint32_t>(code));
      h = splitmix64(h ^ std::bit_cast<std::uint64_t>(bytes + 0.0)); // + 0.0: -0.0 hashes as 0.0, which it equals
      return static_cast<std::size_t>(splitmix64(h ^ static_cast<std::uint32_t>(peer)));
    }
  };
  std::unordered_map<ShapeKey, std::shared_ptr<const models::Schedule>, ShapeHash> schedules_;
  std::unordered_map<ShapeKey, double, ShapeHash> analytical_;
  std::unordered_map<ShapeKey, double, ShapeHash> deltas_; ///< collective_delta by shape
  std::vector<int> traced_;
  std::vector<TraceEvent> events_;
  std::uint64_t ops_done_ = 0; ///< over all ranks, for the progress probe only
  // coupled
  std::unique_ptr<coupled::Network> cnet_;
  std::unordered_map<const models::Schedule*, std::shared_ptr<const CoupledShape>> shapes_;
  std::unordered_map<const models::Schedule*, std::shared_ptr<const CoupledPlan>> plans_;
  std::vector<double> link_k_;         ///< plan scratch: multiplicity per link (zero between uses)
  std::vector<std::uint32_t> touched_; ///< plan scratch: links with a nonzero link_k_
  /// critical_path's scratch: a date at the rate asked, split as its latency part and its bytes part
  struct CpTime {
    double t = 0, a = 0, b = 0;
  };
  std::vector<CpTime> send_ready_, done_, arrive_, edge_free_;
  std::vector<std::int32_t> slot_;
  std::unordered_map<std::uint64_t, std::vector<topo::Path>> spray_paths_;
  std::unordered_map<std::uint64_t, bool> single_path_;
  SlotPool<Running> running_;
  std::vector<double> msg_latency_; ///< per message: its path latency
  std::vector<CollectiveRun> runs_;
  FlowTotals coupled_totals_;
  std::uint64_t salt_ = 0; ///< ecmp per_flow: calls hashed so far
  bool solve_posted_ = false;
  double step_posted_ = std::numeric_limits<double>::infinity(); ///< the earliest NetStep on the calendar
  std::vector<std::string> notes_;
  std::vector<int> host_pending_; ///< ranks whose host a completion unblocked, to advance once the event is handled
};

} // namespace railyard::sim::replay_engine
