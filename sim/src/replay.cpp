#include "railyard/sim/replay.hpp"

#include "railyard/sim/collective_runner.hpp"
#include "railyard/sim/event_calendar.hpp"

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <tuple>
#include <unordered_map>

namespace railyard::sim {

namespace sg = simgrid::s4u;
using workloads::GroupKind;
using workloads::Op;
using workloads::OpId;
using workloads::OpKind;
using workloads::RankGraph;
using workloads::StreamId;

std::string to_string(CommModel m)
{
  switch (m) {
  case CommModel::Flows:
    return "flows";
  case CommModel::Analytical:
    return "analytical";
  case CommModel::Ideal:
    return "ideal";
  }
  return "?";
}

double TimeBreakdown::exposed_total() const
{
  return std::accumulate(exposed_s.begin(), exposed_s.end(), 0.0);
}

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();
// Connection tags: collectives use (communicator, sequence mod 8) x 256 channels; point-to-point messages their
// trace tag with the top bit set. FIFO matching per (src, dst, tag) keeps a recycled collective tag safe: two
// collectives of one communicator eight sequence numbers apart are never in flight at one rank together.
constexpr std::uint64_t kSeqTags = 8;
constexpr std::uint64_t kChannelTags = 256;
constexpr std::uint64_t kP2pTagBit = std::uint64_t{1} << 62;

std::uint64_t collective_tag_base(int comm, std::uint32_t seq)
{
  return (static_cast<std::uint64_t>(comm) * kSeqTags + seq % kSeqTags) * kChannelTags;
}

// ---- per-program tables (shared by the ranks that run the program) ----

struct Program {
  const RankGraph* g = nullptr;
  std::vector<std::pair<StreamId, std::vector<OpId>>> streams; // ordered streams and their ops in id order
  std::vector<OpId> unordered;
  std::vector<double> duration;       // seconds, for compute/memcpy ops (and one-member collectives)
  std::vector<std::uint8_t> external; // 1: an op of another stream (or an unordered op) depends on it
  std::vector<std::uint32_t> seq;     // collectives: position among the program's collectives on the same slot
  std::vector<std::int32_t> p2p_pos;  // send/recv: position in p2p_ops; -1 otherwise
  std::vector<OpId> p2p_ops;
  // The event executor's lanes: every stream, then each unordered op as a lane of its own; lane_of[op].
  std::vector<std::vector<OpId>> lanes;
  std::vector<std::uint32_t> lane_of;
  double flops = 0;        // sum over the program's compute ops
  double min_issue = kInf; // earliest host issue time of the program, when it has issue times
  bool has_issue = false;
};

// ---- accounting of one rank's time ----

struct Acct {
  double last = 0;
  int compute = 0, bubble = 0;
  std::array<int, kGroupKinds> comm{};
  TimeBreakdown b;

  void advance(double now)
  {
    const double dt = now - last;
    last = now;
    if (dt <= 0) return;
    int active = 0;
    for (std::size_t k = 0; k < kGroupKinds; ++k)
      if (comm[k] > 0) {
        b.comm_s[k] += dt;
        ++active;
      }
    if (compute > 0) {
      b.compute_s += dt;
    } else if (active > 0) {
      for (std::size_t k = 0; k < kGroupKinds; ++k)
        if (comm[k] > 0) b.exposed_s[k] += dt / active;
    } else if (bubble > 0) {
      b.bubble_s += dt;
    } else {
      b.idle_s += dt;
    }
  }
};

struct Waiter {
  OpId op;
  sg::Semaphore* sem;
};

// One lane (stream) of a rank in the event executor.
struct LaneState {
  std::uint32_t next = 0; // index of the op to run next
  bool busy = false;      // that op has started
  bool retry = false;     // a retry at its host launch time is queued
  std::int8_t holds = -1; // what the running op holds in the accounting: kHoldCompute, kHoldBubble, or a group kind
  double start = 0;
  // A running GEMM whose SMs NCCL may share (event executor): the fraction of its work left at `seg_start`, its
  // duration at the SM count since then, and a generation that outdates its earlier end events.
  bool gemm = false;
  double work_left = 0, seg_start = 0, seg_duration = 0;
  int sms_taken = 0; // channels it was timed with
  std::uint32_t gen = 0;
};
constexpr std::int8_t kHoldCompute = 100, kHoldBubble = 101;

struct RankRt {
  int rank = 0;
  const Program* prog = nullptr;
  std::vector<std::uint8_t> done;
  std::vector<Waiter> waiters;
  std::vector<LaneState> lanes;                             // event executor
  std::vector<std::pair<OpId, std::uint32_t>> lane_waiters; // event executor: (op, lane waiting for it)
  std::vector<std::uint32_t> msgs;           // message id per p2p op of the program (same order as Program::p2p_ops)
  std::vector<std::pair<int, int>> comm_pos; // (communicator id, this rank's position in it)
  Acct acct;
  double first_start = kInf, last_end = 0;
  double release_shift = 0; // added to a program issue time to get the simulated release time
  int nccl_sms = 0;         // event executor: SMs held by this rank's collectives in flight (one per channel)
  bool pipeline = false;
  bool traced = false;
  std::uint64_t ops = 0;
};

struct Message {
  int src = 0, dst = 0;
  std::uint64_t net_tag = 0;
  double bytes = 0;
  std::size_t kind = 0; // group kind of the communicator
  bool sent = false;
  double delivered = -1;
  sg::Semaphore* recv_waiter = nullptr;        // the receiving stream, waiting in its Recv
  sg::Semaphore* send_waiter = nullptr;        // the sending stream, waiting for delivery
  std::int32_t send_lane = -1, recv_lane = -1; // event executor: the lanes running the Send and a waiting Recv
};

// A collective instance (communicator, sequence number) that members rendezvous on.
struct Instance {
  std::vector<std::pair<int, std::uint32_t>> members; // event executor: (rank, lane) of those that arrived
  int arrived = 0, left = 0;
  double bytes = 0;
  double end = kNaN;
  std::shared_ptr<const models::Schedule> schedule;
  std::vector<sg::Semaphore*> waiting;
};

class Replayer {
public:
  Replayer(const workloads::Workload& w, const topo::Topology& t, const SimulationConfig& cfg,
           const calibration::Profile* profile, const ReplayOptions& opt)
      : w_(w), topo_(t), cfg_(cfg), profile_(profile), opt_(opt)
  {
  }

  ReplayResult run()
  {
    if (w_.world_size() > topo_.num_gpus())
      throw InputError(
          {w_.source, 0, "workload"},
          fmt::format("the workload has {} ranks but the cluster only {} GPUs", w_.world_size(), topo_.num_gpus()),
          "give a cluster with at least as many GPUs as the workload has ranks");
    if (cfg_.progress) {
      std::uint64_t ops = 0;
      for (int r = 0; r < w_.world_size(); ++r)
        ops += w_.graph_of(r).size();
      cfg_.progress->total.store(ops, std::memory_order_relaxed);
    }
    build_programs();
    build_ranks();
    build_messages();
    prepare_collectives();
    if (w_.world_size() < topo_.num_gpus())
      notes_.push_back(fmt::format("the workload has {} ranks on a cluster of {} GPUs: GPUs {}..{} stay idle",
                                   w_.world_size(), topo_.num_gpus(), w_.world_size(), topo_.num_gpus() - 1));

    if (opt_.comm != CommModel::Flows && opt_.discrete_events) {
      run_events();
      return collect(FlowTotals{});
    }
    Simulation sim(topo_, cfg_);
    net_ = &sim.network();
    spawn_actors(sim);
    sim.run();
    return collect(sim.network().totals());
  }

private:
  // ---- set-up ----
  void build_programs()
  {
    progs_.resize(w_.graphs.size());
    for (std::size_t gi = 0; gi < w_.graphs.size(); ++gi) {
      Program& p = progs_[gi];
      const RankGraph& g = *w_.graphs[gi];
      p.g = &g;
      const auto n = static_cast<OpId>(g.size());
      std::map<StreamId, std::vector<OpId>> by_stream;
      p.seq.assign(n, 0);
      p.p2p_pos.assign(n, -1);
      p.duration.assign(n, kNaN);
      p.external.assign(n, 0);
      std::unordered_map<std::int32_t, std::uint32_t> next_seq;
      // A rank of this program, for error messages.
      int example = 0;
      for (int r = 0; r < w_.world_size(); ++r)
        if (w_.ranks[r].graph == gi) {
          example = r;
          break;
        }
      for (OpId i = 0; i < n; ++i) {
        const Op& op = g.op(i);
        if (op.stream == workloads::kUnordered)
          p.unordered.push_back(i);
        else
          by_stream[op.stream].push_back(i);
        for (OpId d : g.deps(i))
          if (op.stream == workloads::kUnordered || g.op(d).stream != op.stream) p.external[d] = 1;
        if (op.kind == OpKind::Collective) p.seq[i] = next_seq[op.comm]++;
        if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
          p.p2p_pos[i] = static_cast<std::int32_t>(p.p2p_ops.size());
          p.p2p_ops.push_back(i);
        }
        if (auto t = g.issue_time(i)) {
          p.has_issue = true;
          p.min_issue = std::min(p.min_issue, t->value());
        }
        if (op.kind == OpKind::Compute || op.kind == OpKind::Memcpy) p.duration[i] = kernel_duration(g, i, example);
        if (op.kind == OpKind::Compute) p.flops += op.flops;
      }
      for (auto& [s, ops] : by_stream)
        p.streams.emplace_back(s, std::move(ops));
      p.lane_of.assign(n, 0);
      for (const auto& [s, ops] : p.streams)
        p.lanes.push_back(ops);
      for (OpId u : p.unordered)
        p.lanes.push_back({u});
      for (std::uint32_t l = 0; l < p.lanes.size(); ++l)
        for (OpId o : p.lanes[l])
          p.lane_of[o] = l;
    }
  }

  double kernel_duration(const RankGraph& g, OpId i, int rank)
  {
    const Op& op = g.op(i);
    if (opt_.measured_durations)
      if (auto d = g.measured_duration(i)) return d->value();
    const double bytes = op.kind == OpKind::Memcpy ? 2 * op.bytes.value() : op.bytes.value();
    if (op.flops == 0 && bytes == 0) return 0;
    if (!profile_ || !profile_->kernel)
      throw InputError({g.source_file(), 0, fmt::format("rank {} {}", rank, g.describe(i))},
                       fmt::format("op '{}' has {} FLOPs and {} bytes but no measured duration, and the scenario names "
                                   "no profile with a kernel model to time it",
                                   g.name(i), op.flops, op.bytes.value()),
                       "add 'profile: calibration/profiles/<system>.yaml' to the scenario");
    if (op.kind == OpKind::Compute)
      if (const auto gm = g.gemm(i)) return gemm_duration(*gm, op.bytes, 0);
    return profile_->kernel_time(op.flops, Bytes(bytes), opt_.dtype).value();
  }

  double gemm_duration(const workloads::GemmShape& gm, Bytes bytes, int sms_taken) const
  {
    return profile_->gemm_time(gm.m, gm.n, gm.k, gm.batch, bytes, opt_.dtype, sms_taken).value();
  }

  // NCCL's SMs are modelled when the event loop times GEMMs by waves (a profile with a `gemm:` block).
  bool share_sms() const
  {
    return opt_.nccl_sms && profile_ && profile_->kernel && profile_->kernel->gemm && opt_.comm != CommModel::Flows &&
           opt_.discrete_events;
  }

  // SMs a collective's NCCL kernel occupies: one per channel of its lowered schedule.
  int channels_of(const RankRt& rt, OpId op_id, const Op& op, int comm)
  {
    if (opt_.comm == CommModel::Ideal) return 0;
    return static_cast<int>(schedule_for(rt, op_id, op, comm)->channels.size());
  }

  void build_ranks()
  {
    const int n = w_.world_size();
    ranks_.resize(n);
    std::vector<std::vector<std::pair<int, int>>> pos(n);
    for (const auto& c : w_.communicators)
      for (std::size_t i = 0; i < c.ranks.size(); ++i)
        if (c.ranks[i] >= 0 && c.ranks[i] < n) pos[c.ranks[i]].emplace_back(c.id, static_cast<int>(i));
    const std::vector<int> traced = traced_ranks(w_, opt_);
    for (int r : traced)
      if (r < 0 || r >= n)
        throw InputError({w_.source, 0, "trace_ranks"},
                         fmt::format("rank {} is not a rank of the workload (0..{})", r, n - 1),
                         "list ranks of the workload");
    traced_ = traced;
    // Host launch times: the earliest launch of any rank is time 0.
    double origin = kInf;
    const bool gate = opt_.host_launch;
    if (gate)
      for (int r = 0; r < n; ++r) {
        const Program& p = progs_[w_.ranks[r].graph];
        if (p.has_issue) origin = std::min(origin, clock_offset(r) + p.min_issue);
      }
    for (int r = 0; r < n; ++r) {
      RankRt& rt = ranks_[r];
      rt.rank = r;
      rt.prog = &progs_[w_.ranks[r].graph];
      rt.done.assign(rt.prog->g->size(), 0);
      rt.comm_pos = std::move(pos[r]);
      rt.release_shift = gate && rt.prog->has_issue ? clock_offset(r) - origin : kNaN;
    }
    for (int r : traced)
      ranks_[r].traced = true;
    if (gate && origin < kInf)
      notes_.push_back("ops wait for their host launch times from the trace (the host timeline is taken as measured; "
                       "time 0 is the earliest launch)");
  }

  double clock_offset(int r) const
  {
    const auto o = w_.graph_of(r).clock_offset();
    return o ? o->value() : 0.0;
  }

  // Pairs the k-th Send a->b with tag t with the k-th Recv on b from a with tag t.
  void build_messages()
  {
    struct End {
      int src, dst, tag;
      std::uint32_t k;
      int rank;
      std::uint32_t pos;
      bool operator<(const End& o) const { return std::tie(src, dst, tag, k) < std::tie(o.src, o.dst, o.tag, o.k); }
    };
    std::vector<End> sends, recvs;
    for (int r = 0; r < w_.world_size(); ++r) {
      RankRt& rt = ranks_[r];
      const Program& p = *rt.prog;
      rt.msgs.assign(p.p2p_ops.size(), 0);
      std::map<std::tuple<int, int, bool>, std::uint32_t> count;
      for (std::uint32_t i = 0; i < p.p2p_ops.size(); ++i) {
        const Op& op = p.g->op(p.p2p_ops[i]);
        const int peer = w_.peer_global_rank(r, op);
        const bool send = op.kind == OpKind::Send;
        if (peer < 0)
          throw InputError({p.g->source_file(), 0, fmt::format("rank {} {}", r, p.g->describe(p.p2p_ops[i]))},
                           "the peer of this send/receive is not a rank of its communicator",
                           "give a peer inside the communicator");
        const std::uint32_t k = count[{peer, op.tag, send}]++;
        const int comm = w_.communicator_of(r, op);
        if (comm >= 0 && w_.communicators[comm].kind == GroupKind::PP) rt.pipeline = true;
        (send ? sends : recvs).push_back(send ? End{r, peer, op.tag, k, r, i} : End{peer, r, op.tag, k, r, i});
      }
    }
    std::sort(sends.begin(), sends.end());
    std::sort(recvs.begin(), recvs.end());
    if (sends.size() != recvs.size())
      throw InputError({w_.source, 0, "workload"}, fmt::format("{} sends but {} receives", sends.size(), recvs.size()),
                       "give every send a matching receive (k-th send a->b with tag t meets the k-th receive)");
    msgs_.resize(sends.size());
    for (std::size_t i = 0; i < sends.size(); ++i) {
      const End& s = sends[i];
      const End& r = recvs[i];
      if (std::tie(s.src, s.dst, s.tag, s.k) != std::tie(r.src, r.dst, r.tag, r.k))
        throw InputError({w_.source, 0, fmt::format("rank {}", s.src)},
                         fmt::format("send {} -> {} tag {} (#{}) has no matching receive", s.src, s.dst, s.tag, s.k),
                         "give every send a matching receive");
      Message& m = msgs_[i];
      const RankRt& sr = ranks_[s.rank];
      const Op& op = sr.prog->g->op(sr.prog->p2p_ops[s.pos]);
      m.src = s.src;
      m.dst = s.dst;
      m.bytes = op.bytes.value();
      m.net_tag = kP2pTagBit | static_cast<std::uint32_t>(s.tag);
      const int comm = w_.communicator_of(s.rank, op);
      m.kind = comm >= 0 ? static_cast<std::size_t>(w_.communicators[comm].kind) : kGroupKinds - 1;
      ranks_[s.rank].msgs[s.pos] = static_cast<std::uint32_t>(i);
      ranks_[r.rank].msgs[r.pos] = static_cast<std::uint32_t>(i);
    }
  }

  // Resolves and lowers every distinct collective before the simulation starts, so a call the models refuse is an
  // InputError here rather than inside an actor, and the analytical times are ready.
  void prepare_collectives()
  {
    if (opt_.comm == CommModel::Ideal) return;
    std::vector<std::map<std::tuple<int, int, double, int>, OpId>> shapes(progs_.size());
    for (std::size_t gi = 0; gi < progs_.size(); ++gi) {
      const RankGraph& g = *progs_[gi].g;
      for (OpId i = 0; i < g.size(); ++i) {
        const Op& op = g.op(i);
        if (op.kind == OpKind::Collective)
          shapes[gi].try_emplace({op.comm, static_cast<int>(op.collective_code), op.bytes.value(), op.peer}, i);
      }
    }
    for (int r = 0; r < w_.world_size(); ++r) {
      const RankRt& rt = ranks_[r];
      for (const auto& [shape, i] : shapes[w_.ranks[r].graph]) {
        const Op& op = rt.prog->g->op(i);
        const int comm = w_.communicator_of(r, op);
        if (comm < 0 || w_.communicators[comm].ranks.size() <= 1) continue;
        if (opt_.comm == CommModel::Analytical)
          analytical_time(rt, i, op, comm, op.bytes.value());
        else
          schedule_for(rt, i, op, comm);
        // The channel count of every collective, lowered here so that a call the models refuse fails before the run
        // (a fitted collective time may not have needed its schedule).
        if (share_sms()) (void)channels_of(rt, i, op, comm);
      }
    }
  }

  void spawn_actors(Simulation& sim)
  {
    for (int r = 0; r < w_.world_size(); ++r) {
      RankRt& rt = ranks_[r];
      const Program& p = *rt.prog;
      for (std::size_t s = 0; s < p.streams.size(); ++s)
        sim.spawn(r, fmt::format("rank{}-stream{}", r, p.streams[s].first), [this, &rt, s] { run_stream(rt, s); });
      for (OpId op : p.unordered)
        sim.spawn(r, fmt::format("rank{}-op{}", r, op), [this, &rt, op] { run_unordered(rt, op); });
      if (opt_.comm == CommModel::Flows) {
        bool receives = false;
        for (OpId op : p.p2p_ops)
          receives = receives || p.g->op(op).kind == OpKind::Recv;
        if (receives) sim.spawn(r, fmt::format("rank{}-proxy", r), [this, &rt] { run_proxy(rt); });
      }
    }
  }

  // ---- execution ----
  bool deps_done(const RankRt& rt, OpId op, OpId chain_begin = 1, OpId chain_end = 0) const
  {
    const RankGraph& g = *rt.prog->g;
    const StreamId s = g.op(op).stream;
    for (OpId d : g.deps(op))
      if (!rt.done[d] && !(d >= chain_begin && d < chain_end && g.op(d).stream == s)) return false;
    return true;
  }

  void wait_deps(RankRt& rt, OpId op, sg::Semaphore& sem)
  {
    for (OpId d : rt.prog->g->deps(op))
      while (!rt.done[d]) {
        rt.waiters.push_back({d, &sem});
        sem.acquire();
      }
  }

  void record_done(RankRt& rt, OpId op, double start, double end)
  {
    rt.done[op] = 1;
    ++rt.ops;
    if (cfg_.progress) cfg_.progress->publish_ops(end, ++ops_done_);
    rt.first_start = std::min(rt.first_start, start);
    rt.last_end = std::max(rt.last_end, end);
    if (rt.traced) events_.push_back({rt.rank, rt.prog->g->op(op).stream, op, start, end});
  }

  void mark_done(RankRt& rt, OpId op, double start, double end)
  {
    record_done(rt, op, start, end);
    for (std::size_t i = 0; i < rt.waiters.size();) {
      if (rt.waiters[i].op == op) {
        rt.waiters[i].sem->release();
        rt.waiters[i] = rt.waiters.back();
        rt.waiters.pop_back();
      } else {
        ++i;
      }
    }
  }

  double release_time(const RankRt& rt, OpId op) const
  {
    if (std::isnan(rt.release_shift)) return -kInf;
    const auto t = rt.prog->g->issue_time(op);
    return t ? t->value() + rt.release_shift : -kInf;
  }

  void gate(const RankRt& rt, OpId op)
  {
    const double at = release_time(rt, op);
    if (at > sg::Engine::get_clock()) sg::this_actor::sleep_until(at);
  }

  static double now() { return sg::Engine::get_clock(); }

  void run_stream(RankRt& rt, std::size_t stream)
  {
    auto sem = sg::Semaphore::create(0);
    const auto& ops = rt.prog->streams[stream].second;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const OpId op = ops[i];
      wait_deps(rt, op, *sem);
      gate(rt, op);
      const OpKind kind = rt.prog->g->op(op).kind;
      if (kind == OpKind::Compute || kind == OpKind::Memcpy)
        i = run_compute_chain(rt, ops, i);
      else
        run_comm(rt, op, *sem);
    }
  }

  void run_unordered(RankRt& rt, OpId op)
  {
    auto sem = sg::Semaphore::create(0);
    wait_deps(rt, op, *sem);
    gate(rt, op);
    const OpKind kind = rt.prog->g->op(op).kind;
    if (kind == OpKind::Compute || kind == OpKind::Memcpy) {
      const std::vector<OpId> one{op};
      run_compute_chain(rt, one, 0);
    } else {
      run_comm(rt, op, *sem);
    }
  }

  // Runs ops[i] and the compute ops after it that nothing on another stream waits for in between, whose
  // dependencies are met and whose launch is due, as one timed interval (one simulated event instead of one per
  // kernel); their individual times are recorded as they would have run. Returns the index of the last op run.
  std::size_t run_compute_chain(RankRt& rt, const std::vector<OpId>& ops, std::size_t i)
  {
    const Program& p = *rt.prog;
    const double start = now();
    double end = start + p.duration[ops[i]];
    std::size_t j = i + 1;
    for (; j < ops.size(); ++j) {
      const OpId o = ops[j];
      const OpKind k = p.g->op(o).kind;
      if ((k != OpKind::Compute && k != OpKind::Memcpy) || p.external[ops[j - 1]] || !deps_done(rt, o, ops[i], o) ||
          release_time(rt, o) > end)
        break;
      end += p.duration[o];
    }
    rt.acct.advance(start);
    ++rt.acct.compute;
    if (end > start) sg::this_actor::sleep_until(end);
    rt.acct.advance(now());
    --rt.acct.compute;
    double t = start;
    for (std::size_t k = i; k < j; ++k) {
      const double e = t + p.duration[ops[k]];
      mark_done(rt, ops[k], t, k + 1 == j ? now() : e);
      t = e;
    }
    return j - 1;
  }

  std::size_t kind_of(int comm) const
  {
    return comm >= 0 ? static_cast<std::size_t>(w_.communicators[comm].kind) : kGroupKinds - 1;
  }

  void run_comm(RankRt& rt, OpId op_id, sg::Semaphore& sem)
  {
    const Op& op = rt.prog->g->op(op_id);
    const double start = now();
    switch (op.kind) {
    case OpKind::Collective:
      run_collective(rt, op_id, op, sem);
      break;
    case OpKind::Send:
      run_send(rt, op_id, sem);
      break;
    case OpKind::Recv:
      run_recv(rt, op_id, sem);
      break;
    default:
      break;
    }
    mark_done(rt, op_id, start, now());
  }

  int position(const RankRt& rt, int comm) const
  {
    for (const auto& [c, pos] : rt.comm_pos)
      if (c == comm) return pos;
    return -1;
  }

  void run_collective(RankRt& rt, OpId op_id, const Op& op, sg::Semaphore& sem)
  {
    const int comm = w_.communicator_of(rt.rank, op);
    const auto& members = w_.communicators[comm].ranks;
    const std::size_t kind = kind_of(comm);
    const int n = static_cast<int>(members.size());
    rt.acct.advance(now());
    ++rt.acct.comm[kind];
    if (n <= 1) {
      const double d = one_member_duration(rt, op_id, op);
      if (d > 0) sg::this_actor::sleep_for(d);
    } else {
      const std::uint64_t key = (static_cast<std::uint64_t>(comm) << 32) | rt.prog->seq[op_id];
      Instance& inst = instances_[key];
      ++inst.arrived;
      inst.bytes = std::max(inst.bytes, op.bytes.value());
      if (opt_.comm == CommModel::Flows) {
        if (!inst.schedule) inst.schedule = schedule_for(rt, op_id, op, comm);
        const auto schedule = inst.schedule;
        if (++inst.left == n) instances_.erase(key);
        execute_schedule(*net_, *schedule, position(rt, comm), collective_tag_base(comm, rt.prog->seq[op_id]));
      } else {
        if (inst.arrived == n) {
          inst.end = now() + (opt_.comm == CommModel::Ideal ? 0.0 : analytical_time(rt, op_id, op, comm, inst.bytes));
          for (sg::Semaphore* s : inst.waiting)
            s->release();
          inst.waiting.clear();
        } else {
          while (std::isnan(inst.end)) {
            inst.waiting.push_back(&sem);
            sem.acquire();
          }
        }
        const double end = inst.end;
        if (++inst.left == n) instances_.erase(key);
        if (end > now()) sg::this_actor::sleep_until(end);
      }
    }
    rt.acct.advance(now());
    --rt.acct.comm[kind];
  }

  double one_member_duration(const RankRt& rt, OpId op_id, const Op& op)
  {
    if (auto d = rt.prog->g->measured_duration(op_id)) return d->value();
    if (profile_ && profile_->kernel) return profile_->kernel_time(0, op.bytes * 2, opt_.dtype).value();
    return 0;
  }

  models::CollectiveCall call_of(const Op& op, int comm, double bytes) const
  {
    models::CollectiveCall call;
    call.kind = op.collective();
    call.bytes = Bytes(bytes);
    call.ranks = w_.communicators[comm].ranks;
    call.root = std::max(0, op.peer);
    call.label = w_.communicators[comm].name;
    return call;
  }

  std::shared_ptr<const models::Schedule> schedule_for(const RankRt& rt, OpId op_id, const Op& op, int comm)
  {
    const auto key = std::make_tuple(comm, static_cast<int>(op.collective_code), op.bytes.value(), op.peer);
    auto it = schedules_.find(key);
    if (it != schedules_.end()) return it->second;
    const InputLocation where{rt.prog->g->source_file(), 0,
                              fmt::format("rank {} {}", rt.rank, rt.prog->g->describe(op_id))};
    const models::CollectiveCall call = call_of(op, comm, op.bytes.value());
    std::shared_ptr<const models::Schedule> s;
    s = std::make_shared<const models::Schedule>(opt_.lower(call, where));
    schedules_.emplace(key, s);
    return s;
  }

  double analytical_time(const RankRt& rt, OpId op_id, const Op& op, int comm, double bytes)
  {
    const auto key = std::make_tuple(comm, static_cast<int>(op.collective_code), bytes, op.peer);
    auto it = analytical_.find(key);
    if (it != analytical_.end()) return it->second;
    Op sized = op;
    sized.bytes = Bytes(bytes);
    std::optional<Seconds> given;
    if (opt_.collective_time)
      given = opt_.collective_time(
          call_of(op, comm, bytes),
          {rt.prog->g->source_file(), 0, fmt::format("rank {} {}", rt.rank, rt.prog->g->describe(op_id))});
    const double t =
        given ? given->value()
              : isolated_collective_time(*schedule_for(rt, op_id, sized, comm), topo_, cfg_.pxn, cfg_.seed).value();
    analytical_.emplace(key, t);
    return t;
  }

  Message& message_of(const RankRt& rt, OpId op_id) { return msgs_[rt.msgs[rt.prog->p2p_pos[op_id]]]; }

  // A message alone on its path: path latency plus bytes over the path's narrowest link.
  double transfer_time(const Message& m) const
  {
    const topo::Path path = topo_.route(m.src, m.dst, 0, cfg_.seed, cfg_.pxn);
    return topo_.path_latency(path).value() + m.bytes / topo_.path_bandwidth(path).value();
  }

  void run_send(RankRt& rt, OpId op_id, sg::Semaphore& sem)
  {
    Message& m = message_of(rt, op_id);
    rt.acct.advance(now());
    ++rt.acct.comm[m.kind];
    m.sent = true;
    RankRt& dst = ranks_[m.dst];
    if (m.recv_waiter) { // the receiver waits in its Recv: from now on it waits for a transfer, not for work
      dst.acct.advance(now());
      --dst.acct.bubble;
      ++dst.acct.comm[m.kind];
    }
    switch (opt_.comm) {
    case CommModel::Flows:
      net_->isend(m.src, m.dst, m.net_tag, Bytes(m.bytes));
      while (m.delivered < 0) {
        m.send_waiter = &sem;
        sem.acquire();
      }
      break;
    case CommModel::Analytical:
      sg::this_actor::sleep_for(transfer_time(m));
      deliver(m);
      break;
    case CommModel::Ideal:
      deliver(m);
      break;
    }
    rt.acct.advance(now());
    --rt.acct.comm[m.kind];
  }

  // The message has arrived: wake its receiver (if it waits) and its sender (if it waits for delivery).
  void deliver(Message& m)
  {
    m.delivered = now();
    if (m.recv_waiter) {
      m.recv_waiter->release();
      m.recv_waiter = nullptr;
    }
    if (m.send_waiter) {
      m.send_waiter->release();
      m.send_waiter = nullptr;
    }
  }

  void run_recv(RankRt& rt, OpId op_id, sg::Semaphore& sem)
  {
    Message& m = message_of(rt, op_id);
    if (m.delivered >= 0) return;
    rt.acct.advance(now());
    const bool sent = m.sent;
    if (sent)
      ++rt.acct.comm[m.kind];
    else
      ++rt.acct.bubble;
    while (m.delivered < 0) {
      m.recv_waiter = &sem;
      sem.acquire();
    }
    rt.acct.advance(now());
    // run_send moved this rank from bubble to communication when the sender issued the message.
    --rt.acct.comm[m.kind];
  }

  // Posts, at the start, a receive for every message this rank will get (in op order, so FIFO per connection
  // pairs them right), then delivers each as it arrives.
  void run_proxy(RankRt& rt)
  {
    std::vector<RequestId> reqs;
    std::vector<std::uint32_t> which;
    const Program& p = *rt.prog;
    for (std::size_t i = 0; i < p.p2p_ops.size(); ++i)
      if (p.g->op(p.p2p_ops[i]).kind == OpKind::Recv) {
        Message& m = msgs_[rt.msgs[i]];
        reqs.push_back(net_->irecv(m.dst, m.src, m.net_tag));
        which.push_back(rt.msgs[i]);
      }
    while (!reqs.empty()) {
      const std::size_t k = net_->wait_any(reqs);
      deliver(msgs_[which[k]]);
      reqs[k] = reqs.back();
      reqs.pop_back();
      which[k] = which.back();
      which.pop_back();
    }
  }

  // ---- the event executor (Analytical, Ideal) ----
  // The same rules as the actors above, as a discrete-event loop of Railyard's own ordered by (time, sequence): each
  // op start and end is an event, with no SimGrid actor, context switch or activity behind it.
  enum class Ev : std::uint8_t { OpDone, Retry, Deliver };
  struct Event {
    Ev type;
    int rank;
    std::uint32_t arg; // lane, or message id
    std::uint32_t gen; // OpDone: the lane's generation when pushed (a re-timed GEMM outdates its earlier end)
  };

  void push(double t, Ev type, int rank, std::uint32_t arg)
  {
    const std::uint32_t gen = type == Ev::OpDone ? ranks_[rank].lanes[arg].gen : 0;
    calendar_.post(t, {type, rank, arg, gen});
  }

  void run_events()
  {
    for (auto& rt : ranks_)
      rt.lanes.assign(rt.prog->lanes.size(), LaneState{});
    for (auto& rt : ranks_)
      for (std::uint32_t l = 0; l < rt.lanes.size(); ++l)
        advance_lane(rt, l);
    while (!calendar_.empty()) {
      now_ = calendar_.next_date();
      calendar_.run_next([&](const Event& e) {
        switch (e.type) {
        case Ev::OpDone:
          if (e.gen == ranks_[e.rank].lanes[e.arg].gen) finish_lane_op(ranks_[e.rank], e.arg);
          break;
        case Ev::Retry:
          ranks_[e.rank].lanes[e.arg].retry = false;
          advance_lane(ranks_[e.rank], e.arg);
          break;
        case Ev::Deliver:
          delivered(e.arg);
          break;
        }
      });
    }
    for (const auto& rt : ranks_)
      for (std::uint32_t l = 0; l < rt.lanes.size(); ++l)
        if (rt.lanes[l].next < rt.prog->lanes[l].size()) {
          const OpId op = rt.prog->lanes[l][rt.lanes[l].next];
          throw std::runtime_error(fmt::format("replay deadlocked at t = {} s: rank {} waits at {} ('{}')", now_,
                                               rt.rank, rt.prog->g->describe(op), rt.prog->g->name(op)));
        }
  }

  void advance_lane(RankRt& rt, std::uint32_t l)
  {
    LaneState& st = rt.lanes[l];
    const auto& ops = rt.prog->lanes[l];
    while (!st.busy && st.next < ops.size()) {
      const OpId op = ops[st.next];
      for (OpId d : rt.prog->g->deps(op))
        if (!rt.done[d]) {
          rt.lane_waiters.emplace_back(d, l);
          return;
        }
      const double at = release_time(rt, op);
      if (at > now_) {
        if (!st.retry) {
          st.retry = true;
          push(at, Ev::Retry, rt.rank, l);
        }
        return;
      }
      start_lane_op(rt, l, op);
    }
  }

  void hold(RankRt& rt, LaneState& st, std::int8_t what)
  {
    rt.acct.advance(now_);
    st.holds = what;
    if (what == kHoldCompute)
      ++rt.acct.compute;
    else if (what == kHoldBubble)
      ++rt.acct.bubble;
    else if (what >= 0)
      ++rt.acct.comm[what];
  }

  void release(RankRt& rt, LaneState& st)
  {
    rt.acct.advance(now_);
    if (st.holds == kHoldCompute)
      --rt.acct.compute;
    else if (st.holds == kHoldBubble)
      --rt.acct.bubble;
    else if (st.holds >= 0)
      --rt.acct.comm[st.holds];
    st.holds = -1;
  }

  void start_lane_op(RankRt& rt, std::uint32_t l, OpId op_id)
  {
    LaneState& st = rt.lanes[l];
    const Op& op = rt.prog->g->op(op_id);
    st.start = now_;
    st.busy = true;
    switch (op.kind) {
    case OpKind::Compute:
    case OpKind::Memcpy:
      hold(rt, st, kHoldCompute);
      st.gemm = false;
      if (share_sms() && op.kind == OpKind::Compute && !std::isnan(rt.prog->duration[op_id]))
        if (const auto gm = rt.prog->g->gemm(op_id);
            gm && !(opt_.measured_durations && rt.prog->g->measured_duration(op_id))) {
          st.gemm = true;
          st.work_left = 1;
          st.seg_start = now_;
          st.sms_taken = rt.nccl_sms;
          st.seg_duration = rt.nccl_sms > 0 ? gemm_duration(*gm, op.bytes, rt.nccl_sms) : rt.prog->duration[op_id];
          push(now_ + st.seg_duration, Ev::OpDone, rt.rank, l);
          return;
        }
      push(now_ + rt.prog->duration[op_id], Ev::OpDone, rt.rank, l);
      return;
    case OpKind::Collective: {
      const int comm = w_.communicator_of(rt.rank, op);
      const int n = static_cast<int>(w_.communicators[comm].ranks.size());
      hold(rt, st, static_cast<std::int8_t>(kind_of(comm)));
      if (n <= 1) {
        push(now_ + one_member_duration(rt, op_id, op), Ev::OpDone, rt.rank, l);
        return;
      }
      // From its launch (waiting for the other members included) the NCCL kernel holds its SMs.
      if (share_sms()) change_nccl_sms(rt, channels_of(rt, op_id, op, comm));
      const std::uint64_t key = (static_cast<std::uint64_t>(comm) << 32) | rt.prog->seq[op_id];
      Instance& inst = instances_[key];
      inst.bytes = std::max(inst.bytes, op.bytes.value());
      inst.members.emplace_back(rt.rank, l);
      if (++inst.arrived == n) {
        const double end =
            now_ + (opt_.comm == CommModel::Ideal ? 0.0 : analytical_time(rt, op_id, op, comm, inst.bytes));
        for (const auto& [r, lane] : inst.members)
          push(end, Ev::OpDone, r, lane);
        instances_.erase(key);
      }
      return;
    }
    case OpKind::Send: {
      const std::uint32_t id = rt.msgs[rt.prog->p2p_pos[op_id]];
      Message& m = msgs_[id];
      hold(rt, st, static_cast<std::int8_t>(m.kind));
      m.sent = true;
      m.send_lane = static_cast<std::int32_t>(l);
      if (m.recv_lane >= 0) { // the receiver waits: from now on for a transfer, not for work
        RankRt& dst = ranks_[m.dst];
        LaneState& ds = dst.lanes[m.recv_lane];
        release(dst, ds);
        hold(dst, ds, static_cast<std::int8_t>(m.kind));
      }
      push(now_ + (opt_.comm == CommModel::Ideal ? 0.0 : transfer_time(m)), Ev::Deliver, rt.rank, id);
      return;
    }
    case OpKind::Recv: {
      Message& m = message_of(rt, op_id);
      if (m.delivered >= 0) { // already here: nothing to wait for
        st.busy = false;
        record_done(rt, op_id, now_, now_);
        ++st.next;
        wake(rt, op_id);
        return;
      }
      hold(rt, st, m.sent ? static_cast<std::int8_t>(m.kind) : kHoldBubble);
      m.recv_lane = static_cast<std::int32_t>(l);
      return;
    }
    }
  }

  // The rank's collectives in flight hold `delta` more (or fewer) SMs: its running GEMMs continue at the new count.
  void change_nccl_sms(RankRt& rt, int delta)
  {
    if (delta == 0) return;
    rt.nccl_sms += delta;
    for (std::uint32_t l = 0; l < rt.lanes.size(); ++l) {
      LaneState& st = rt.lanes[l];
      if (!st.busy || !st.gemm || st.sms_taken == rt.nccl_sms) continue;
      const OpId op_id = rt.prog->lanes[l][st.next];
      const Op& op = rt.prog->g->op(op_id);
      if (st.seg_duration > 0) st.work_left -= (now_ - st.seg_start) / st.seg_duration;
      st.work_left = std::max(0.0, st.work_left);
      st.seg_start = now_;
      st.sms_taken = rt.nccl_sms;
      st.seg_duration = gemm_duration(*rt.prog->g->gemm(op_id), op.bytes, rt.nccl_sms);
      ++st.gen;
      push(now_ + st.work_left * st.seg_duration, Ev::OpDone, rt.rank, l);
    }
  }

  void finish_lane_op(RankRt& rt, std::uint32_t l)
  {
    LaneState& st = rt.lanes[l];
    release(rt, st);
    const OpId op = rt.prog->lanes[l][st.next];
    st.gemm = false;
    if (share_sms()) {
      const Op& o = rt.prog->g->op(op);
      if (o.kind == OpKind::Collective) {
        const int comm = w_.communicator_of(rt.rank, o);
        if (w_.communicators[comm].ranks.size() > 1) change_nccl_sms(rt, -channels_of(rt, op, o, comm));
      }
    }
    record_done(rt, op, st.start, now_);
    st.busy = false;
    ++st.next;
    advance_lane(rt, l);
    wake(rt, op);
  }

  // Lanes that waited for `op` try again.
  void wake(RankRt& rt, OpId op)
  {
    for (std::size_t i = 0; i < rt.lane_waiters.size();) {
      if (rt.lane_waiters[i].first == op) {
        const std::uint32_t l = rt.lane_waiters[i].second;
        rt.lane_waiters[i] = rt.lane_waiters.back();
        rt.lane_waiters.pop_back();
        advance_lane(rt, l);
        i = 0; // advancing may have changed the list
      } else {
        ++i;
      }
    }
  }

  void delivered(std::uint32_t id)
  {
    Message& m = msgs_[id];
    m.delivered = now_;
    if (m.send_lane >= 0) finish_lane_op(ranks_[m.src], static_cast<std::uint32_t>(m.send_lane));
    if (m.recv_lane >= 0) {
      const auto l = static_cast<std::uint32_t>(m.recv_lane);
      m.recv_lane = -1;
      finish_lane_op(ranks_[m.dst], l);
    }
  }

  // ---- results ----
  ReplayResult collect(const FlowTotals& flows)
  {
    ReplayResult out;
    out.comm = opt_.comm;
    double start = kInf, end = 0;
    for (const auto& rt : ranks_) {
      start = std::min(start, rt.first_start);
      end = std::max(end, rt.last_end);
    }
    if (start == kInf) start = 0;
    out.start = Seconds(start);
    out.end = Seconds(end);
    out.step_time = Seconds(end - start);
    const int n = w_.world_size();
    out.ranks.resize(n);
    for (int r = 0; r < n; ++r) {
      RankRt& rt = ranks_[r];
      rt.acct.advance(end);
      TimeBreakdown b = rt.acct.b;
      b.idle_s -= std::min(b.idle_s, start);  // before the step starts, nothing is accounted
      if (rt.pipeline && rt.last_end < end) { // a pipeline stage that finished early waits for the others
        const double tail = std::min(b.idle_s, end - rt.last_end);
        b.idle_s -= tail;
        b.bubble_s += tail;
      }
      out.ranks[r].breakdown = b;
      out.ranks[r].first_start = Seconds(rt.first_start == kInf ? 0 : rt.first_start);
      out.ranks[r].last_end = Seconds(rt.last_end);
      out.ops_executed += rt.ops;
      auto& m = out.mean;
      m.compute_s += b.compute_s / n;
      m.bubble_s += b.bubble_s / n;
      m.idle_s += b.idle_s / n;
      for (std::size_t k = 0; k < kGroupKinds; ++k) {
        m.exposed_s[k] += b.exposed_s[k] / n;
        m.comm_s[k] += b.comm_s[k] / n;
      }
      out.hardware_flops += rt.prog->flops;
    }
    out.model_flops = opt_.model_flops;
    if (profile_ && profile_->kernel)
      if (const auto* c = profile_->kernel->compute_for(opt_.dtype)) out.peak_flops = c->peak_flops;
    const double denom = out.step_time.value() * n * out.peak_flops;
    if (denom > 0) {
      if (out.model_flops > 0) out.mfu = out.model_flops / denom;
      if (out.hardware_flops > 0) out.hfu = out.hardware_flops / denom;
    }
    out.traced_ranks = traced_;
    std::sort(events_.begin(), events_.end(), [](const TraceEvent& a, const TraceEvent& b) {
      return std::tie(a.rank, a.stream, a.start_s, a.op) < std::tie(b.rank, b.stream, b.start_s, b.op);
    });
    out.events = std::move(events_);
    out.flows = flows;
    out.notes = std::move(notes_);
    return out;
  }

  const workloads::Workload& w_;
  const topo::Topology& topo_;
  SimulationConfig cfg_;
  const calibration::Profile* profile_;
  ReplayOptions opt_;
  FlowNetwork* net_ = nullptr;
  std::vector<Program> progs_;
  std::vector<RankRt> ranks_;
  std::vector<Message> msgs_;
  std::unordered_map<std::uint64_t, Instance> instances_;
  std::map<std::tuple<int, int, double, int>, std::shared_ptr<const models::Schedule>> schedules_;
  std::map<std::tuple<int, int, double, int>, double> analytical_;
  std::vector<int> traced_;
  std::vector<TraceEvent> events_;
  std::uint64_t ops_done_ = 0;    ///< over all ranks, for the progress probe only
  EventCalendar<Event> calendar_; ///< the event executor's events (event_calendar.hpp: date, then posting order)
  double now_ = 0;
  std::vector<std::string> notes_;
};

} // namespace

std::vector<int> traced_ranks(const workloads::Workload& w, const ReplayOptions& options)
{
  if (options.trace_ranks) return *options.trace_ranks;
  const int n = w.world_size();
  std::vector<int> traced;
  if (n <= 16) {
    traced.resize(static_cast<std::size_t>(n));
    std::iota(traced.begin(), traced.end(), 0);
    return traced;
  }
  std::vector<char> seen(w.graphs.size(), 0);
  for (int r = 0; r < n && traced.size() < 16; ++r)
    if (!seen[w.ranks[r].graph]) {
      seen[w.ranks[r].graph] = 1;
      traced.push_back(r);
    }
  return traced;
}

std::size_t traced_ops(const workloads::Workload& w, const ReplayOptions& options)
{
  std::size_t ops = 0;
  for (int r : traced_ranks(w, options))
    if (r >= 0 && r < w.world_size()) ops += w.graph_of(r).size();
  return ops;
}

ReplayResult replay_workload(const workloads::Workload& workload, const topo::Topology& topology,
                             const SimulationConfig& config, const calibration::Profile* profile,
                             const ReplayOptions& options)
{
  if (options.comm != CommModel::Ideal && !options.lower)
    throw std::invalid_argument("replay_workload: ReplayOptions::lower is empty; pass the lowering of the workload's "
                                "collectives (sim::nccl_lowering for NCCL's choice, or your own)");
  return Replayer(workload, topology, config, profile, options).run();
}

} // namespace railyard::sim
