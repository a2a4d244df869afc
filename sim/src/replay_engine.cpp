// The replay engine's rules: how a lane runs its ops (dependencies, host launch times, runs of compute, rendezvous of
// collectives, eager sends, receives), what each rank's time is accounted as, and the results. Every rule is here
// once; the drivers (replay.cpp) only keep the clock and hand events back.
#include "replay_engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace railyard::sim::replay_engine {

using workloads::Op;
using workloads::OpId;
using workloads::OpKind;
using workloads::RankGraph;
using workloads::StreamId;

namespace {

// Connection tags: collectives use (communicator, sequence mod 8) x 256 channels; point-to-point messages their
// trace tag with the top bit set (build_messages). FIFO matching per (src, dst, tag) keeps a recycled collective tag
// safe: two collectives of one communicator eight sequence numbers apart are never in flight at one rank together.
constexpr std::uint64_t kSeqTags = 8;
constexpr std::uint64_t kChannelTags = 256;

std::uint64_t collective_tag_base(int comm, std::uint32_t seq)
{
  return (static_cast<std::uint64_t>(comm) * kSeqTags + seq % kSeqTags) * kChannelTags;
}

bool is_kernel(OpKind k)
{
  return k == OpKind::Compute || k == OpKind::Memcpy;
}

} // namespace

void Acct::advance(double now)
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
    if (host_wait > 0) b.host_bound_s += dt;
  }
}

void Engine::attach(Driver& driver, FlowNetwork* net)
{
  driver_ = &driver;
  net_ = net;
  if (opt_.comm == CommModel::Flows && !net_)
    throw std::logic_error("replay engine: the flows model needs a network to run on");
  if (opt_.comm == CommModel::Coupled) {
    cnet_ = std::make_unique<coupled::Network>(topo_, cfg_.fluid, cfg_.seed);
    msg_latency_.assign(msgs_.size(), 0.0);
    link_k_.assign(topo_.num_links(), 0.0);
  }
}

void Engine::start()
{
  now_ = driver_->now();
  for (auto& rt : ranks_) {
    rt.lanes.assign(rt.prog->lanes.size(), LaneState{});
    const auto r = static_cast<std::size_t>(rt.rank);
    rt.slowdown = r < opt_.compute_slowdown.size() ? opt_.compute_slowdown[r] : 1.0;
  }
  for (auto& rt : ranks_)
    if (rt.host) host_advance(rt);
  for (auto& rt : ranks_)
    for (std::uint32_t t = 0; t < rt.threads.size(); ++t)
      trace_host_advance(rt, t);
  for (auto& rt : ranks_)
    for (std::uint32_t l = 0; l < rt.lanes.size(); ++l)
      advance_lane(rt, l);
}

void Engine::host_advance(RankRt& rt)
{
  const RankGraph& g = *rt.prog->g;
  const HostModel& h = opt_.host;
  const double before = rt.host_clock;
  while (!rt.host_blocked && rt.host_next < g.size()) {
    const OpId op = rt.host_next++;
    const std::uint8_t marks = g.host_marks(op);
    if (marks & workloads::kHostMicrobatch) rt.host_clock += h.microbatch_s;
    if (marks & workloads::kHostStep) rt.host_clock += h.step_s;
    rt.host_clock += is_kernel(g.op(op).kind) ? h.launch_s : h.collective_s;
    rt.issue[op] = rt.host_clock;
    ++rt.outstanding;
    if ((marks & workloads::kHostSync) || (h.sync_after_p2p && (marks & workloads::kHostSyncP2p)))
      rt.host_blocked = true;
  }
  rt.host_busy += rt.host_clock - before;
  wake_host_waiters(rt);
}

void Engine::wake_host_waiters(RankRt& rt)
{
  std::vector<std::uint32_t> lanes;
  lanes.swap(rt.host_waiters);
  for (std::uint32_t l : lanes)
    advance_lane(rt, l);
}

// A thread's call starts when the previous one ended plus the host's own work between them (gap_s); a launch releases
// its ops at its start; a synchronisation that waited in the trace ends when its op has ended plus the recorded
// wake-up (tail_s), and no sooner than that wake-up after its own start (what it costs when it need not wait).
void Engine::trace_host_advance(RankRt& rt, std::uint32_t t)
{
  RankRt::Thread& th = rt.threads[t];
  const auto calls = rt.prog->g->host_calls();
  while (th.next < th.end) {
    const workloads::HostCall& c = calls[th.next];
    if (!th.blocked) rt.call_start[th.next] = th.clock;
    const double start = rt.call_start[th.next];
    double end = start + c.duration_s;
    if (c.waits != workloads::kNone) {
      if (!rt.done[c.waits]) {
        th.blocked = true;
        return;
      }
      end = std::max(start + std::min(c.tail_s, c.duration_s), rt.op_end[c.waits] + c.tail_s);
    }
    th.blocked = false;
    if (++th.next < th.end) th.clock = std::max(start, end + calls[th.next].gap_s);
  }
}

void Engine::set_host_wait(RankRt& rt, LaneState& st, bool waiting)
{
  if (st.host_wait == waiting) return;
  rt.acct.advance(now_);
  rt.acct.host_wait += waiting ? 1 : -1;
  st.host_wait = waiting;
}

void Engine::flush_hosts()
{
  while (!host_pending_.empty()) {
    RankRt& rt = ranks_[host_pending_.back()];
    host_pending_.pop_back();
    if (!rt.threads.empty()) {
      for (std::uint32_t t = 0; t < rt.threads.size(); ++t)
        trace_host_advance(rt, t);
      wake_host_waiters(rt);
      continue;
    }
    rt.host_clock = std::max(rt.host_clock, now_);
    host_advance(rt);
  }
}

bool Engine::lane_done(int rank, std::uint32_t lane) const
{
  const RankRt& rt = ranks_[rank];
  return rt.lanes[lane].next >= rt.prog->lanes[lane].size();
}

void Engine::check_finished() const
{
  for (const auto& rt : ranks_)
    for (std::uint32_t l = 0; l < rt.lanes.size(); ++l)
      if (!lane_done(rt.rank, l)) {
        const OpId op = rt.prog->lanes[l][rt.lanes[l].next];
        throw InputError({rt.prog->g->source_file(), 0, fmt::format("rank {} {}", rt.rank, rt.prog->g->describe(op))},
                         fmt::format("the replay deadlocked at t = {} s: rank {} waits forever at op '{}' (its ranks "
                                     "wait for each other in a cycle)",
                                     now_, rt.rank, rt.prog->g->name(op)),
                         "check the order of the workload's sends, receives and collectives: a receive issued before "
                         "the send its peer waits on, or members issuing one communicator's collectives in different "
                         "orders");
      }
}

void Engine::post(double at, LaneEv type, int rank, std::uint32_t lane, std::uint32_t arg)
{
  driver_->post(at, {type, rank, lane, arg, type == LaneEv::OpDone ? ranks_[rank].lanes[lane].gen : 0U});
}

void Engine::handle(const LaneEvent& e)
{
  now_ = driver_->now();
  if (e.type >= LaneEv::NetStart) {
    handle_net(e);
    return;
  }
  RankRt& rt = ranks_[e.rank];
  switch (e.type) {
  case LaneEv::OpDone:
    if (e.gen == rt.lanes[e.lane].gen) finish_op(rt, e.lane);
    break;
  case LaneEv::Retry:
    rt.lanes[e.lane].retry = false;
    advance_lane(rt, e.lane);
    break;
  case LaneEv::Deliver:
    message_arrived(e.arg);
    break;
  case LaneEv::RunSchedule:
    run_schedule(rt, e.lane);
    break;
  case LaneEv::Isend: {
    const Message& m = msgs_[e.arg];
    net_->isend(m.src, m.dst, m.net_tag, Bytes(m.bytes));
    break;
  }
  case LaneEv::NetStart:
  case LaneEv::NetEnd:
  case LaneEv::NetSolve:
  case LaneEv::NetStep:
    break; // handled above
  }
  flush_hosts();
}

void Engine::delivered(std::uint32_t id)
{
  now_ = driver_->now();
  message_arrived(id);
  flush_hosts();
}

// ---- a lane ----

double Engine::release_time(const RankRt& rt, OpId op) const
{
  if (rt.host) return op < rt.host_next ? rt.issue[op] : kInf;
  if (!rt.threads.empty())
    if (const auto c = rt.prog->g->launch_call(op); c != workloads::kNone)
      return std::isnan(rt.call_start[c]) ? kInf : rt.call_start[c];
  if (std::isnan(rt.release_shift)) return -kInf;
  const auto t = rt.prog->g->issue_time(op);
  return t ? t->seconds() + rt.release_shift : -kInf;
}

// The dependencies of `op` are done, counting ops of its stream in [chain_begin, chain_end) as done.
bool Engine::deps_done(const RankRt& rt, OpId op, OpId chain_begin, OpId chain_end) const
{
  const RankGraph& g = *rt.prog->g;
  const StreamId s = g.op(op).stream;
  for (OpId d : g.deps(op))
    if (!rt.done[d] && !(d >= chain_begin && d < chain_end && g.op(d).stream == s)) return false;
  return true;
}

// A GEMM that the event loop re-times when NCCL's kernels take or give back SMs.
bool Engine::sm_shared(const RankRt& rt, OpId op) const
{
  const RankGraph& g = *rt.prog->g;
  return share_sms() && g.op(op).kind == OpKind::Compute && !std::isnan(rt.prog->duration[op]) && g.gemm(op) &&
         !(opt_.measured_durations && g.measured_duration(op));
}

// Starts the lane's next ops while their dependencies are done and their launch times have come.
void Engine::advance_lane(RankRt& rt, std::uint32_t l)
{
  LaneState& st = rt.lanes[l];
  const auto& ops = rt.prog->lanes[l];
  while (!st.busy && st.next < ops.size()) {
    const OpId op = ops[st.next];
    for (OpId d : rt.prog->g->deps(op))
      if (!rt.done[d]) {
        set_host_wait(rt, st, false);
        rt.lane_waiters.emplace_back(d, l);
        return;
      }
    const double at = release_time(rt, op);
    if (at == kInf) { // the host has not issued it yet
      set_host_wait(rt, st, true);
      rt.host_waiters.push_back(l);
      return;
    }
    if (at > now_) {
      set_host_wait(rt, st, true);
      if (!st.retry) {
        st.retry = true;
        post(at, LaneEv::Retry, rt.rank, l);
      }
      return;
    }
    set_host_wait(rt, st, false);
    start_op(rt, l, op);
  }
  if (st.next >= ops.size()) driver_->lane_finished(rt.rank, l);
}

void Engine::hold(RankRt& rt, LaneState& st, std::int8_t what)
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

void Engine::release(RankRt& rt, LaneState& st)
{
  rt.acct.advance(now_);
  if (st.holds == kHoldCompute)
    --rt.acct.compute;
  else if (st.holds == kHoldBubble)
    --rt.acct.bubble;
  else if (st.holds >= 0)
    --rt.acct.comm[st.holds];
  st.holds = kHoldNothing;
}

void Engine::start_op(RankRt& rt, std::uint32_t l, OpId op_id)
{
  LaneState& st = rt.lanes[l];
  const Op& op = rt.prog->g->op(op_id);
  st.start = now_;
  st.busy = true;
  switch (op.kind) {
  case OpKind::Compute:
  case OpKind::Memcpy:
    start_compute(rt, l, op_id);
    return;
  case OpKind::Collective:
    start_collective(rt, l, op_id, op);
    return;
  case OpKind::Send:
    start_send(rt, l, op_id);
    return;
  case OpKind::Recv:
    start_recv(rt, l, op_id);
    return;
  }
}

// A compute or memcpy op, and the ones after it on its lane that nothing on another lane waits for in between, whose
// dependencies are met and whose launch is due by then: one run, timed as one interval (one event instead of one per
// kernel); each op's own start and end are recorded as they ran back to back. A GEMM that shares SMs with NCCL runs
// alone, re-timed as their count changes.
void Engine::start_compute(RankRt& rt, std::uint32_t l, OpId op_id)
{
  LaneState& st = rt.lanes[l];
  const Program& p = *rt.prog;
  hold(rt, st, kHoldCompute);
  st.gemm = false;
  if (sm_shared(rt, op_id)) {
    st.gemm = true;
    st.run_end = st.next + 1;
    st.work_left = 1;
    st.seg_start = now_;
    st.sms_taken = rt.nccl_sms;
    st.seg_duration =
        rt.slowdown *
        (rt.nccl_sms > 0 ? gemm_duration(*p.g->gemm(op_id), p.g->op(op_id).bytes, rt.nccl_sms) : p.duration[op_id]);
    post(now_ + st.seg_duration, LaneEv::OpDone, rt.rank, l);
    return;
  }
  const auto& ops = p.lanes[l];
  double end = now_ + rt.slowdown * p.duration[op_id];
  std::uint32_t j = st.next + 1;
  for (; j < ops.size(); ++j) {
    const OpId o = ops[j];
    if (!is_kernel(p.g->op(o).kind) || p.external[ops[j - 1]] || !deps_done(rt, o, op_id, o) ||
        release_time(rt, o) > end || sm_shared(rt, o))
      break;
    end += rt.slowdown * p.duration[o];
  }
  st.run_end = j;
  post(end, LaneEv::OpDone, rt.rank, l);
}

void Engine::start_collective(RankRt& rt, std::uint32_t l, OpId op_id, const Op& op)
{
  LaneState& st = rt.lanes[l];
  const int comm = w_.communicator_of(rt.rank, op);
  const int n = static_cast<int>(w_.communicators[comm].ranks.size());
  hold(rt, st, static_cast<std::int8_t>(kind_of(comm)));
  if (n <= 1) {
    post(now_ + one_member_duration(rt, op_id, op, comm), LaneEv::OpDone, rt.rank, l);
    return;
  }
  // From its launch (waiting for the other members included) the NCCL kernel holds its SMs.
  if (share_sms()) change_nccl_sms(rt, channels_of(rt, op_id, op, comm));
  const std::uint64_t key = (static_cast<std::uint64_t>(comm) << 32) | rt.prog->seq[op_id];
  Instance& inst = instances_[key];
  inst.bytes = std::max(inst.bytes, op.bytes.bytes());
  if (opt_.comm == CommModel::Flows) {
    // Every member runs its part on the network as it arrives; the schedule is the first arrival's lowering.
    if (!inst.schedule) inst.schedule = schedule_for(rt, op_id, op, comm);
    st.schedule = inst.schedule;
    st.position = position(rt, comm);
    st.tag_base = collective_tag_base(comm, rt.prog->seq[op_id]);
    if (++inst.left == n) instances_.erase(key);
    post(now_, LaneEv::RunSchedule, rt.rank, l);
    return;
  }
  // Analytical, ideal, coupled: the collective starts when its last member arrives and ends for all of them together.
  inst.members.emplace_back(rt.rank, l);
  if (opt_.comm == CommModel::Coupled) {
    if (++inst.arrived == n) {
      start_coupled(rt, op_id, op, comm, inst);
      instances_.erase(key);
    }
    return;
  }
  if (opt_.measured_collectives) {
    if (const auto d = rt.prog->g->measured_duration(op_id))
      inst.measured = std::min(inst.measured, d->seconds());
    else
      inst.all_measured = false;
  }
  if (++inst.arrived == n) {
    double t = 0;
    if (opt_.comm != CommModel::Ideal)
      t = opt_.measured_collectives && inst.all_measured
              ? std::max(0.0, inst.measured + collective_delta(rt, op_id, op, comm, inst.bytes))
              : analytical_time(rt, op_id, op, comm, inst.bytes);
    const double end = now_ + t;
    for (const auto& [r, lane] : inst.members)
      post(end, LaneEv::OpDone, r, lane);
    instances_.erase(key);
  }
}

void Engine::run_schedule(RankRt& rt, std::uint32_t l)
{
  LaneState& st = rt.lanes[l];
  const auto schedule = std::move(st.schedule);
  execute_schedule(*net_, *schedule, st.position, st.tag_base); // blocks this lane's actor; others run meanwhile
  now_ = driver_->now();
  finish_op(rt, l);
}

// Eager: a Send completes when its bytes have arrived, whether or not the receiver has reached its Recv.
void Engine::start_send(RankRt& rt, std::uint32_t l, OpId op_id)
{
  LaneState& st = rt.lanes[l];
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
  switch (opt_.comm) {
  case CommModel::Flows:
    post(now_, LaneEv::Isend, rt.rank, l, id); // the receiving rank's proxy reports its arrival
    break;
  case CommModel::Analytical:
    post(now_ + transfer_time(m), LaneEv::Deliver, rt.rank, l, id);
    break;
  case CommModel::Ideal:
    post(now_, LaneEv::Deliver, rt.rank, l, id);
    break;
  case CommModel::Coupled:
    send_coupled(id);
    break;
  }
}

void Engine::start_recv(RankRt& rt, std::uint32_t l, OpId op_id)
{
  LaneState& st = rt.lanes[l];
  Message& m = message_of(rt, op_id);
  if (m.delivered >= 0) { // already here: nothing to wait for
    st.busy = false;
    record_done(rt, op_id, now_, now_);
    ++st.next;
    wake(rt, op_id);
    return;
  }
  // Waiting for a message not sent yet is a bubble; for one on its way, communication.
  hold(rt, st, m.sent ? static_cast<std::int8_t>(m.kind) : kHoldBubble);
  m.recv_lane = static_cast<std::int32_t>(l);
}

// The message has arrived: its Send completes, and its Recv if it waits.
void Engine::message_arrived(std::uint32_t id)
{
  Message& m = msgs_[id];
  m.delivered = now_;
  if (m.send_lane >= 0) finish_op(ranks_[m.src], static_cast<std::uint32_t>(m.send_lane));
  if (m.recv_lane >= 0) {
    const auto l = static_cast<std::uint32_t>(m.recv_lane);
    m.recv_lane = -1;
    finish_op(ranks_[m.dst], l);
  }
}

// The rank's collectives in flight hold `delta` more (or fewer) SMs: its running GEMMs continue at the new count.
void Engine::change_nccl_sms(RankRt& rt, int delta)
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
    st.seg_duration = rt.slowdown * gemm_duration(*rt.prog->g->gemm(op_id), op.bytes, rt.nccl_sms);
    ++st.gen;
    post(now_ + st.work_left * st.seg_duration, LaneEv::OpDone, rt.rank, l);
  }
}

// The lane's running op (or run of compute ops) has ended: record it, start what follows, wake who waited for it.
void Engine::finish_op(RankRt& rt, std::uint32_t l)
{
  LaneState& st = rt.lanes[l];
  const Program& p = *rt.prog;
  release(rt, st);
  const OpId first = p.lanes[l][st.next];
  OpId last = first;
  const Op& o = p.g->op(first);
  if (is_kernel(o.kind)) {
    double t = st.start;
    for (std::uint32_t k = st.next; k < st.run_end; ++k) {
      last = p.lanes[l][k];
      const double e = t + rt.slowdown * p.duration[last];
      record_done(rt, last, t, k + 1 == st.run_end ? now_ : e);
      t = e;
    }
    st.next = st.run_end;
  } else {
    if (share_sms() && o.kind == OpKind::Collective) {
      const int comm = w_.communicator_of(rt.rank, o);
      if (w_.communicators[comm].ranks.size() > 1) change_nccl_sms(rt, -channels_of(rt, first, o, comm));
    }
    record_done(rt, first, st.start, now_);
    ++st.next;
  }
  st.gemm = false;
  st.busy = false;
  advance_lane(rt, l);
  wake(rt, last);
}

void Engine::record_done(RankRt& rt, OpId op, double start, double end)
{
  rt.done[op] = 1;
  ++rt.ops;
  if (rt.host && --rt.outstanding == 0 && rt.host_blocked) { // once per block: host_advance blocks it again
    rt.host_blocked = false;
    host_pending_.push_back(rt.rank);
  }
  if (!rt.threads.empty()) {
    rt.op_end[op] = end;
    const auto calls = rt.prog->g->host_calls();
    for (const auto& th : rt.threads)
      if (th.blocked && calls[th.next].waits == op) {
        host_pending_.push_back(rt.rank);
        break;
      }
  }
  if (cfg_.progress) cfg_.progress->publish_ops(end, ++ops_done_);
  rt.first_start = std::min(rt.first_start, start);
  rt.last_end = std::max(rt.last_end, end);
  if (rt.traced) events_.push_back({rt.rank, rt.prog->g->op(op).stream, op, start, end});
}

// Lanes that waited for `op` try again.
void Engine::wake(RankRt& rt, OpId op)
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

// ---- results ----

ReplayResult Engine::collect(const FlowTotals& flows)
{
  ReplayResult out;
  out.comm = opt_.comm;
  double start = kInf, end = 0;
  for (const auto& rt : ranks_) {
    start = std::min(start, rt.first_start);
    end = std::max(end, rt.last_end);
  }
  if (start == kInf) start = 0;
  if (opt_.host.enabled) start = 0; // the step starts when the hosts start issuing
  out.start = Seconds(start);
  out.end = Seconds(end);
  out.step_time = Seconds(end - start);
  const int n = w_.world_size();
  out.ranks.resize(n);
  for (int r = 0; r < n; ++r) {
    RankRt& rt = ranks_[r];
    rt.acct.advance(end);
    TimeBreakdown b = rt.acct.b;
    b.idle_s -= std::min(b.idle_s, start); // before the step starts, nothing is accounted
    b.host_bound_s -= std::min(b.host_bound_s, start);
    if (rt.pipeline && rt.last_end < end) { // a pipeline stage that finished early waits for the others
      const double tail = std::min(b.idle_s, end - rt.last_end);
      b.idle_s -= tail;
      b.bubble_s += tail;
    }
    b.host_bound_s = std::min(b.host_bound_s, b.idle_s);
    out.ranks[r].breakdown = b;
    out.ranks[r].first_start = Seconds(rt.first_start == kInf ? 0 : rt.first_start);
    out.ranks[r].last_end = Seconds(rt.last_end);
    out.ops_executed += rt.ops;
    auto& m = out.mean;
    m.compute_s += b.compute_s / n;
    m.bubble_s += b.bubble_s / n;
    m.idle_s += b.idle_s / n;
    m.host_bound_s += b.host_bound_s / n;
    for (std::size_t k = 0; k < kGroupKinds; ++k) {
      m.exposed_s[k] += b.exposed_s[k] / n;
      m.comm_s[k] += b.comm_s[k] / n;
    }
    out.hardware_flops += rt.prog->flops;
    out.host_busy_s += rt.host_busy / n;
  }
  out.model_flops = opt_.model_flops;
  if (profile_ && profile_->kernel)
    if (const auto* c = profile_->kernel->compute_for(opt_.dtype)) out.peak_flops = c->peak_flops;
  if (const double gpu_s = out.step_time.seconds() * n; gpu_s > 0) {
    if (out.model_flops > 0) out.model_flops_per_gpu_per_s = out.model_flops / gpu_s;
    if (out.hardware_flops > 0) out.hardware_flops_per_gpu_per_s = out.hardware_flops / gpu_s;
  }
  const double denom = out.step_time.seconds() * n * out.peak_flops;
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
  if (cnet_) {
    cnet_->finish(end);
    out.network = std::make_shared<const FluidReport>(cnet_->take_report());
    out.flows = coupled_totals_;
    out.collectives = std::move(runs_);
  }
  out.notes = std::move(notes_);
  return out;
}

} // namespace railyard::sim::replay_engine
