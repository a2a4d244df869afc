// The replay engine's set-up (the programs, ranks and messages it runs) and the costs it asks of the models: kernel
// and GEMM durations, a collective's lowered schedule and analytical time, a message's transfer time.
#include "replay_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

namespace railyard::sim::replay_engine {

namespace {
/// Point-to-point messages use their trace tag with the top bit set as connection tag (collectives use
/// replay_engine.cpp's (communicator, sequence) ranges below it).
constexpr std::uint64_t kP2pTagBit = std::uint64_t{1} << 62;
} // namespace

using workloads::GroupKind;
using workloads::Op;
using workloads::OpId;
using workloads::OpKind;
using workloads::RankGraph;
using workloads::StreamId;

Engine::Engine(const workloads::Workload& w, const topo::Topology& t, const SimulationConfig& cfg,
               const calibration::Profile* profile, const ReplayOptions& opt)
    : w_(w), topo_(t), cfg_(cfg), profile_(profile), opt_(opt)
{
}

void Engine::prepare()
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
}

void Engine::build_programs()
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
      if (op.stream != workloads::kUnordered) by_stream[op.stream].push_back(i);
      for (OpId d : g.deps(i))
        if (op.stream == workloads::kUnordered || g.op(d).stream != op.stream) p.external[d] = 1;
      if (op.kind == OpKind::Collective) p.seq[i] = next_seq[op.comm]++;
      if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
        p.p2p_pos[i] = static_cast<std::int32_t>(p.p2p_ops.size());
        p.p2p_ops.push_back(i);
      }
      if (auto t = g.issue_time(i)) {
        p.has_issue = true;
        p.min_issue = std::min(p.min_issue, t->seconds());
      }
      if (op.kind == OpKind::Compute || op.kind == OpKind::Memcpy) p.duration[i] = kernel_duration(g, i, example);
      if (op.kind == OpKind::Compute) p.flops += op.flops;
    }
    // The host threads of a trace, when the host is modelled: a synchronisation's op ends a run of compute ops (the
    // host must learn its own end, not the run's).
    if (opt_.host_launch == HostLaunch::Model && !g.host_calls().empty()) {
      const auto calls = g.host_calls();
      for (std::uint32_t c = 0; c < calls.size(); ++c) {
        if (c == 0 || calls[c].thread != calls[c - 1].thread) p.threads.emplace_back(c, c);
        ++p.threads.back().second;
        if (calls[c].waits != workloads::kNone) p.external[calls[c].waits] = 1;
      }
    }
    for (auto& [s, ops] : by_stream) {
      p.lanes.push_back(std::move(ops));
      p.lane_stream.push_back(s);
    }
    for (OpId i = 0; i < n; ++i)
      if (g.op(i).stream == workloads::kUnordered) {
        p.lanes.push_back({i});
        p.lane_stream.push_back(workloads::kUnordered);
      }
  }
}

double Engine::kernel_duration(const RankGraph& g, OpId i, int rank)
{
  const Op& op = g.op(i);
  if (opt_.measured_durations)
    if (auto d = g.measured_duration(i)) return d->seconds();
  const double bytes = op.kind == OpKind::Memcpy ? 2 * op.bytes.bytes() : op.bytes.bytes();
  if (op.flops == 0 && bytes == 0) return 0;
  if (!profile_ || !profile_->kernel)
    throw InputError({g.source_file(), 0, fmt::format("rank {} {}", rank, g.describe(i))},
                     fmt::format("op '{}' has {} FLOPs and {} bytes but no measured duration, and the scenario names "
                                 "no profile with a kernel model to time it",
                                 g.name(i), op.flops, op.bytes.bytes()),
                     "add 'profile: calibration/profiles/<system>.yaml' to the scenario");
  if (op.kind == OpKind::Compute)
    if (const auto gm = g.gemm(i)) return gemm_duration(*gm, op.bytes, 0);
  return profile_->kernel_time(op.flops, Bytes(bytes), opt_.dtype).seconds();
}

double Engine::gemm_duration(const workloads::GemmShape& gm, Bytes bytes, int sms_taken) const
{
  return profile_->gemm_time(gm.m, gm.n, gm.k, gm.batch, bytes, opt_.dtype, sms_taken).seconds();
}

// NCCL's SMs are modelled when the event loop times GEMMs by waves (a profile with a `gemm:` block).
bool Engine::share_sms() const
{
  return opt_.nccl_sms && profile_ && profile_->kernel && profile_->kernel->gemm && opt_.comm != CommModel::Flows &&
         opt_.discrete_events;
}

// SMs a collective's NCCL kernel occupies: one per channel of its lowered schedule.
int Engine::channels_of(const RankRt& rt, OpId op_id, const Op& op, int comm)
{
  if (opt_.comm == CommModel::Ideal) return 0;
  return static_cast<int>(schedule_for(rt, op_id, op, comm)->channels.size());
}

void Engine::build_ranks()
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
  const bool gate = opt_.host_launch != HostLaunch::Off;
  if (gate)
    for (int r = 0; r < n; ++r) {
      const Program& p = progs_[w_.ranks[r].graph];
      if (p.has_issue) origin = std::min(origin, clock_offset(r) + p.min_issue);
      for (const auto& [b, e] : p.threads)
        origin = std::min(origin, clock_offset(r) + p.g->host_calls()[b].start_s);
    }
  for (int r = 0; r < n; ++r) {
    RankRt& rt = ranks_[r];
    rt.rank = r;
    rt.prog = &progs_[w_.ranks[r].graph];
    rt.done.assign(rt.prog->g->size(), 0);
    rt.comm_pos = std::move(pos[r]);
    rt.release_shift = gate && rt.prog->has_issue ? clock_offset(r) - origin : kNaN;
    if (gate && !rt.prog->threads.empty()) {
      const auto calls = rt.prog->g->host_calls();
      for (const auto& [b, e] : rt.prog->threads)
        rt.threads.push_back({b, e, calls[b].start_s + clock_offset(r) - origin, false});
      rt.call_start.assign(calls.size(), kNaN);
      rt.op_end.assign(rt.prog->g->size(), kNaN);
    }
    rt.host = opt_.host.enabled && rt.prog->g->has_host_marks() && !rt.prog->has_issue;
    if (rt.host) rt.issue.assign(rt.prog->g->size(), kNaN);
  }
  for (int r : traced)
    ranks_[r].traced = true;
  bool modelled = false;
  for (const auto& rt : ranks_)
    modelled = modelled || !rt.threads.empty();
  if (modelled)
    notes_.push_back("host_launch: model: each host thread of the trace runs its runtime calls in order with its "
                     "measured work between them; a launch releases its kernels, and a synchronisation that waited in "
                     "the trace waits for the kernel that released it (time 0 is the earliest host call)");
  else if (gate && origin < kInf)
    notes_.push_back("host_launch: recorded: ops wait for their host launch times from the trace (the host timeline is "
                     "taken as measured, whatever the GPU does; time 0 is the earliest launch)");
}

double Engine::clock_offset(int r) const
{
  const auto o = w_.graph_of(r).clock_offset();
  return o ? o->seconds() : 0.0;
}

// Pairs the k-th Send a->b with tag t with the k-th Recv on b from a with tag t.
void Engine::build_messages()
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
    m.bytes = op.bytes.bytes();
    m.net_tag = kP2pTagBit | static_cast<std::uint32_t>(s.tag);
    const int comm = w_.communicator_of(s.rank, op);
    m.kind = comm >= 0 ? static_cast<std::size_t>(w_.communicators[comm].kind) : kGroupKinds - 1;
    ranks_[s.rank].msgs[s.pos] = static_cast<std::uint32_t>(i);
    ranks_[r.rank].msgs[r.pos] = static_cast<std::uint32_t>(i);
  }
}

// Resolves and lowers every distinct collective before the simulation starts, so a call the models refuse is an
// InputError here rather than inside an actor, and the analytical times are ready.
void Engine::prepare_collectives()
{
  if (opt_.comm == CommModel::Ideal) return;
  std::vector<std::map<std::tuple<int, int, double, int>, OpId>> shapes(progs_.size());
  for (std::size_t gi = 0; gi < progs_.size(); ++gi) {
    const RankGraph& g = *progs_[gi].g;
    for (OpId i = 0; i < g.size(); ++i) {
      const Op& op = g.op(i);
      if (op.kind == OpKind::Collective)
        shapes[gi].try_emplace({op.comm, static_cast<int>(op.collective_code), op.bytes.bytes(), op.peer}, i);
    }
  }
  for (int r = 0; r < w_.world_size(); ++r) {
    const RankRt& rt = ranks_[r];
    for (const auto& [shape, i] : shapes[w_.ranks[r].graph]) {
      const Op& op = rt.prog->g->op(i);
      const int comm = w_.communicator_of(r, op);
      if (comm < 0) continue;
      const auto& c = w_.communicators[comm];
      if (opt_.measured_collectives && (c.ranks.size() > 1 || c.recorded_ranks.size() > 1))
        (void)collective_delta(rt, i, op, comm, op.bytes.bytes());
      if (c.ranks.size() <= 1) continue;
      // Measured collectives are timed by their schedule only where a member has no measured time (then lazily):
      // lowering them checks them all the same. A fitted collective_time still sees every call (the summary lists
      // them).
      if (opt_.comm == CommModel::Analytical && (!opt_.measured_collectives || opt_.collective_time))
        analytical_time(rt, i, op, comm, op.bytes.bytes());
      else
        schedule_for(rt, i, op, comm);
      // The channel count of every collective, lowered here so that a call the models refuse fails before the run
      // (a fitted collective time may not have needed its schedule).
      if (share_sms()) (void)channels_of(rt, i, op, comm);
    }
  }
}

std::size_t Engine::kind_of(int comm) const
{
  return comm >= 0 ? static_cast<std::size_t>(w_.communicators[comm].kind) : kGroupKinds - 1;
}

int Engine::position(const RankRt& rt, int comm) const
{
  for (const auto& [c, pos] : rt.comm_pos)
    if (c == comm) return pos;
  return -1;
}

// A communicator of one rank moves nothing: NCCL returns at once for an in-place call (the gradient all-reduce of
// DDP and Megatron) and copies the buffer for an out-of-place one, which the op does not say; the replay charges
// nothing. A trace's measured time is kept (a partially traced job's group restricted to its one traced member), and,
// with measured_collectives, moved by the model's difference at the group's recorded size.
double Engine::one_member_duration(const RankRt& rt, OpId op_id, const Op& op, int comm)
{
  const auto d = rt.prog->g->measured_duration(op_id);
  if (!d) return 0;
  if (opt_.measured_collectives && w_.communicators[comm].recorded_ranks.size() > 1)
    return std::max(0.0, d->seconds() + collective_delta(rt, op_id, op, comm, op.bytes.bytes()));
  return d->seconds();
}

double Engine::collective_delta(const RankRt& rt, OpId op_id, const Op& op, int comm, double bytes)
{
  if (!opt_.collective_delta) return 0;
  const auto key = std::make_tuple(comm, static_cast<int>(op.collective_code), bytes, op.peer);
  if (auto it = deltas_.find(key); it != deltas_.end()) return it->second;
  models::CollectiveCall call = call_of(op, comm, bytes);
  const auto& rec = w_.communicators[comm].recorded_ranks;
  if (call.ranks.size() <= 1 && !rec.empty()) call.ranks = rec;
  const double d = opt_.collective_delta(
      call, rec.empty() ? call.ranks : rec,
      {rt.prog->g->source_file(), 0, fmt::format("rank {} {}", rt.rank, rt.prog->g->describe(op_id))});
  deltas_.emplace(key, d);
  return d;
}

models::CollectiveCall Engine::call_of(const Op& op, int comm, double bytes) const
{
  models::CollectiveCall call;
  call.kind = op.collective();
  call.bytes = Bytes(bytes);
  call.ranks = w_.communicators[comm].ranks;
  call.root = std::max(0, op.peer);
  call.label = w_.communicators[comm].name;
  return call;
}

std::shared_ptr<const models::Schedule> Engine::schedule_for(const RankRt& rt, OpId op_id, const Op& op, int comm)
{
  const auto key = std::make_tuple(comm, static_cast<int>(op.collective_code), op.bytes.bytes(), op.peer);
  auto it = schedules_.find(key);
  if (it != schedules_.end()) return it->second;
  const InputLocation where{rt.prog->g->source_file(), 0,
                            fmt::format("rank {} {}", rt.rank, rt.prog->g->describe(op_id))};
  const models::CollectiveCall call = call_of(op, comm, op.bytes.bytes());
  std::shared_ptr<const models::Schedule> s;
  s = std::make_shared<const models::Schedule>(opt_.lower(call, where));
  schedules_.emplace(key, s);
  return s;
}

double Engine::analytical_time(const RankRt& rt, OpId op_id, const Op& op, int comm, double bytes)
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
      given ? given->seconds()
            : isolated_collective_time(*schedule_for(rt, op_id, sized, comm), topo_, cfg_.pxn, cfg_.seed).seconds();
  analytical_.emplace(key, t);
  return t;
}

// A message alone on its path: path latency plus bytes over the path's narrowest link.
double Engine::transfer_time(const Message& m) const
{
  const topo::Path path = topo_.route(m.src, m.dst, 0, cfg_.seed, cfg_.pxn);
  return topo_.path_latency(path).seconds() + m.bytes / topo_.path_bandwidth(path).bytes_per_sec();
}

} // namespace railyard::sim::replay_engine
