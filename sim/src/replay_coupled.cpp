// Coupled communication (ReplayOptions::comm = CommModel::Coupled): a collective call becomes a few coupled flows on
// the collective-level fluid network (coupled_network.hpp), on the event loop's one calendar with the ranks' ops.
#include "replay_engine.hpp"

#include "railyard/common/hash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <tuple>
#include <unordered_map>

namespace railyard::sim::replay_engine {

using workloads::Op;
using workloads::OpId;

namespace {

constexpr std::uint64_t kMessageBit = std::uint64_t{1} << 63;

bool independent_edges(models::CollectiveKind k)
{
  return k == models::CollectiveKind::AllToAll || k == models::CollectiveKind::SendRecv;
}

} // namespace

void Engine::connection_paths(int src, int dst, std::uint64_t key, std::vector<std::pair<topo::Path, double>>& out)
{
  out.clear();
  const FluidConfig& f = cfg_.fluid;
  if (f.ecmp == EcmpMode::Spray) {
    const std::uint64_t pair = pair_key(src, dst);
    auto it = spray_paths_.find(pair);
    if (it == spray_paths_.end())
      it = spray_paths_.emplace(pair, topo_.all_paths(src, dst, cfg_.pxn, f.spray_max_paths)).first;
    const double share = 1.0 / static_cast<double>(it->second.size());
    for (const auto& p : it->second)
      out.emplace_back(p, share);
    return;
  }
  const int q = std::max(1, f.qps_per_connection);
  for (int qp = 0; qp < q; ++qp)
    out.emplace_back(topo_.route(src, dst, splitmix64(key ^ static_cast<std::uint64_t>(qp)), cfg_.seed, cfg_.pxn),
                     1.0 / q);
}

// The shape of a lowered call, whatever the paths: per channel its distinct edges (src, dst) with the bytes each moves
// over the whole call and its path latency, and which edge each send of each of its patterns is.
std::shared_ptr<const CoupledShape> Engine::coupled_shape(const models::Schedule& s)
{
  if (auto it = shapes_.find(&s); it != shapes_.end()) return it->second;
  auto shape = std::make_shared<CoupledShape>();
  shape->independent = independent_edges(s.kind);
  const int n = s.nranks();
  std::unordered_map<std::uint64_t, std::uint32_t> edge_of;
  std::vector<double> pattern_wire(s.patterns.size());
  std::vector<std::int32_t> slot(s.patterns.size());
  std::vector<std::pair<topo::Path, double>> paths;
  for (std::size_t c = 0; c < s.channels.size(); ++c) {
    CoupledShape::Channel ch;
    edge_of.clear();
    std::fill(pattern_wire.begin(), pattern_wire.end(), 0.0);
    std::fill(slot.begin(), slot.end(), -1);
    for (const models::Step& st : s.channels[c]) {
      pattern_wire[st.pattern] += st.wire_bytes.bytes();
      if (slot[st.pattern] >= 0) continue;
      slot[st.pattern] = static_cast<std::int32_t>(ch.patterns.size());
      ch.patterns.emplace_back(st.pattern, std::vector<std::uint32_t>{});
      auto& pe = ch.patterns.back().second;
      const models::Pattern& p = s.patterns[st.pattern];
      for (int r = 0; r < n; ++r)
        for (int peer : p.sends(r)) {
          const int src = s.gpus[r], dst = s.gpus[peer];
          if (src == dst) {
            pe.push_back(CoupledShape::kSelf);
            continue;
          }
          const std::uint64_t pair = pair_key(src, dst);
          auto [it, inserted] = edge_of.emplace(pair, static_cast<std::uint32_t>(ch.edges.size()));
          if (inserted) {
            CoupledShape::Edge e{src, dst, 0, 0};
            shape->single_paths = shape->single_paths && single_path(src, dst);
            connection_paths(src, dst, edge_key(src, dst, c, 0), paths);
            for (const auto& path : paths)
              e.latency = std::max(e.latency, topo_.path_latency(path.first).seconds());
            ch.edges.push_back(e);
          }
          pe.push_back(it->second);
        }
    }
    // Bytes per edge: every step's wire bytes x the send's weight.
    for (const auto& [pi, pe] : ch.patterns) {
      const models::Pattern& p = s.patterns[pi];
      std::size_t k = 0;
      for (int r = 0; r < n; ++r) {
        const auto peers = p.sends(r);
        for (std::size_t i = 0; i < peers.size(); ++i, ++k)
          if (pe[k] != CoupledShape::kSelf) ch.edges[pe[k]].bytes += pattern_wire[pi] * p.send_weight(r, i);
      }
    }
    shape->channels.push_back(std::move(ch));
  }
  shapes_.emplace(&s, shape);
  return shape;
}

// The critical path of channel c when every transfer moves at `rate` per unit of weight: the schedule run under the
// collective runner's rules (lowering.hpp, Step: a rank's receives of step s+d are posted once those of step s
// arrived and its sends of step s are posted, d the channel's depth, its sends go the per-hop overhead after that
// arrival and never before its sends of step s, a transfer starts
// once both sides posted and takes its path latency plus its bytes over the rate, a rank is done the overhead after its
// last arrival). Returned split as latency (launch, path latencies, overheads) and bytes along that path, so the
// channel's time at another rate r is latency + bytes / r. A ring's path is its every step (bytes per edge); a chain's
// or a tree's pipeline includes its fill, which a per-edge count would miss.
std::pair<double, double> Engine::critical_path(const models::Schedule& s, const CoupledShape& shape, std::size_t c,
                                                double rate)
{
  using T = CpTime;
  auto later = [](const T& x, const T& y) { return y.t > x.t ? y : x; };
  const double u = rate > 0 && rate < std::numeric_limits<double>::infinity() ? 1.0 / rate : 0.0;
  const int n = s.nranks();
  const auto& ch = shape.channels[c];
  const T launch{s.launch.seconds(), s.launch.seconds(), 0};
  send_ready_.assign(n, launch);
  // Per rank, the dates its last d steps were done (receives arrived, sends posted), at slot step % d: the receives of
  // step s were posted when step s - d was done (at the start for the first d).
  const auto d = static_cast<std::size_t>(s.depth_of(c));
  done_.assign(n * d, T{});
  arrive_.resize(n);
  // Per edge, when its connection's last transfer has left (a connection is one stream: a transfer leaves once the one
  // before it has).
  edge_free_.assign(ch.edges.size(), T{});
  T end = launch;
  std::vector<std::int32_t>& slot = slot_;
  slot.assign(s.patterns.size(), -1);
  for (std::size_t i = 0; i < ch.patterns.size(); ++i)
    slot[ch.patterns[i].first] = static_cast<std::int32_t>(i);
  const auto& steps = s.channels[c];
  for (std::size_t j = 0; j < steps.size(); ++j) {
    const models::Step& st = steps[j];
    const models::Pattern& p = s.patterns[st.pattern];
    const auto& pe = ch.patterns[slot[st.pattern]].second;
    const double wire = st.wire_bytes.bytes();
    const std::size_t at = j % d; // done_[r * d + at]: when rank r posted this step's receives
    for (int r = 0; r < n; ++r)
      if (!p.recvs(r).empty()) arrive_[r] = done_[r * d + at];
    std::size_t k = 0;
    for (int r = 0; r < n; ++r) {
      const auto peers = p.sends(r);
      for (std::size_t i = 0; i < peers.size(); ++i, ++k) {
        T x = later(send_ready_[r], done_[static_cast<std::size_t>(peers[i]) * d + at]);
        if (pe[k] != CoupledShape::kSelf) {
          const double bytes = wire * p.send_weight(r, i);
          const double lat = ch.edges[pe[k]].latency;
          T& free = edge_free_[pe[k]];
          x = later(x, free);
          free = T{x.t + bytes * u, x.a, x.b + bytes};
          x = T{free.t + lat, free.a + lat, free.b};
        }
        arrive_[peers[i]] = later(arrive_[peers[i]], x);
      }
    }
    for (int r = 0; r < n; ++r) {
      if (p.recvs(r).empty()) {
        done_[r * d + at] = send_ready_[r];
        continue;
      }
      const T now = later(arrive_[r], send_ready_[r]);
      const double o =
          st.overhead_inter && p.receives_inter_node(r) ? st.overhead_inter->seconds() : st.overhead.seconds();
      done_[r * d + at] = now;
      send_ready_[r] = later(now, T{arrive_[r].t + o, arrive_[r].a + o, arrive_[r].b});
      end = later(end, send_ready_[r]);
    }
  }
  return {end.a, end.b};
}

bool Engine::single_path(int src, int dst)
{
  const std::uint64_t pair = pair_key(src, dst);
  auto it = single_path_.find(pair);
  if (it == single_path_.end())
    it = single_path_.emplace(pair, topo_.all_paths(src, dst, cfg_.pxn, 2).size() == 1).first;
  return it->second;
}

void Engine::add_path_load(const topo::Path& path, double k)
{
  for (auto l : path) {
    if (link_k_[l] == 0) touched_.push_back(static_cast<std::uint32_t>(l));
    link_k_[l] += k;
  }
}

void Engine::take_loads(std::vector<coupled::Load>& out)
{
  std::sort(touched_.begin(), touched_.end());
  for (auto l : touched_) {
    out.push_back({l, link_k_[l]});
    link_k_[l] = 0;
  }
  touched_.clear();
}

std::uint64_t Engine::edge_key(int src, int dst, std::size_t channel, std::uint64_t salt)
{
  const std::uint64_t pair = pair_key(src, dst);
  return splitmix64(pair) ^ splitmix64(splitmix64(static_cast<std::uint64_t>(channel) + 1) ^ salt);
}

// Queues on: an edge's QPs (or sprayed paths) as lanes of `bytes` x their share each, each holding its share of the
// connection's `buffer` (NCCL's FIFO: NCCL_STEPS slots of the protocol's step); QPs of one path are one lane.
void Engine::add_lanes(std::vector<coupled::LaneSpec>& lanes, const std::vector<std::pair<topo::Path, double>>& paths,
                       double bytes, double buffer)
{
  const std::size_t first = lanes.size();
  for (const auto& [path, share] : paths) {
    std::vector<std::uint32_t> links(path.begin(), path.end());
    auto same = std::find_if(lanes.begin() + static_cast<std::ptrdiff_t>(first), lanes.end(),
                             [&](const coupled::LaneSpec& l) { return l.links == links; });
    if (same != lanes.end()) {
      same->w += share * bytes;
      same->window += share * buffer;
      ++same->qps;
      continue;
    }
    lanes.push_back({std::move(links), share * bytes, 1, share * buffer});
  }
}

// The call on the links: each channel's edges routed (per QP, or sprayed), a coupled flow over the multiset of links
// they cross (an all-to-all's or send/recv's edges each a flow of their own), and the call's time alone.
std::shared_ptr<const CoupledPlan> Engine::coupled_plan(const models::Schedule& s)
{
  // ECMP per flow hashes every call anew; per QP and spraying give a connection the same paths every call.
  const auto shape = coupled_shape(s);
  const bool per_call = cfg_.fluid.ecmp == EcmpMode::PerFlow && !shape->single_paths;
  if (!per_call)
    if (auto it = plans_.find(&s); it != plans_.end()) return it->second;
  const std::uint64_t salt = per_call ? ++salt_ : 0;
  const bool queues = cnet_->queues();
  const double buffer = models::protocol_spec(s.protocol).connection_buffer().bytes();
  auto plan = std::make_shared<CoupledPlan>();
  // A call with no step (zero bytes) does nothing and costs nothing, as NCCL returns at once for count 0 and the
  // collective runner posts nothing; otherwise the launch comes first.
  if (s.num_steps() == 0) {
    if (!per_call) plans_.emplace(&s, plan);
    return plan;
  }
  plan->launch = s.launch.seconds();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<std::pair<topo::Path, double>>> edge_paths;
  // Coupled channels: bytes per link over the call and the rate cap of their busiest step, per part.
  std::vector<std::vector<coupled::Load>> bytes_on;
  std::vector<std::size_t> part_of;    ///< per coupled channel: its part
  std::vector<std::size_t> channel_at; ///< per coupled channel: its channel in the schedule
  for (std::size_t c = 0; c < shape->channels.size(); ++c) {
    const auto& ch = shape->channels[c];
    edge_paths.resize(ch.edges.size());
    for (std::size_t i = 0; i < ch.edges.size(); ++i)
      connection_paths(ch.edges[i].src, ch.edges[i].dst, edge_key(ch.edges[i].src, ch.edges[i].dst, c, salt),
                       edge_paths[i]);
    if (shape->independent) {
      // Each pair a flow of its own, of its own bytes; the channel's latency its steps with zero bytes.
      const double latency = critical_path(s, *shape, c, 0).first - plan->launch;
      for (std::size_t i = 0; i < ch.edges.size(); ++i) {
        CoupledPart part{{}, ch.edges[i].bytes, latency, ch.edges[i].bytes, inf, 1, {}};
        if (part.ref_bytes > 0) {
          for (const auto& [path, share] : edge_paths[i])
            add_path_load(path, share);
          take_loads(part.loads);
          if (queues) add_lanes(part.lanes, edge_paths[i], 1.0, buffer);
        }
        plan->parts.push_back(std::move(part));
      }
      if (ch.edges.empty()) plan->parts.push_back(CoupledPart{{}, 0, latency, 0, inf, 1, {}});
      continue;
    }
    // One coupled flow. A transfer moves at the flow's rate r while its step runs, so on a link that k transfers of
    // one step cross the flow needs k x r: the busiest step caps r. Over the call the link carries its bytes_l; with
    // the flow's size V (the bytes along its critical path), it consumes bytes_l / V x r on average, which is what it
    // shares with other flows.
    CoupledPart part{{}, 0, 0, 0, inf, 1, {}};
    for (std::size_t i = 0; i < ch.edges.size(); ++i) {
      part.wire_bytes += ch.edges[i].bytes;
      if (ch.edges[i].bytes > 0) {
        for (const auto& [path, share] : edge_paths[i])
          add_path_load(path, share * ch.edges[i].bytes);
        // w in bytes until the size is known
        if (queues) add_lanes(part.lanes, edge_paths[i], ch.edges[i].bytes, buffer);
      }
    }
    std::vector<coupled::Load> bytes;
    take_loads(bytes);
    if (!bytes.empty()) {
      for (const auto& [pi, pe] : ch.patterns) {
        for (std::uint32_t e : pe)
          if (e != CoupledShape::kSelf && ch.edges[e].bytes > 0)
            for (const auto& [path, share] : edge_paths[e])
              add_path_load(path, share);
        for (auto l : touched_) {
          part.cap = std::min(part.cap, topo_.link(l).bandwidth.bytes_per_sec() / link_k_[l]);
          link_k_[l] = 0;
        }
        touched_.clear();
      }
      part.ref_bytes = critical_path(s, *shape, c, part.cap).second;
    }
    bytes_on.push_back(std::move(bytes));
    part_of.push_back(plan->parts.size());
    channel_at.push_back(c);
    plan->parts.push_back(std::move(part));
  }
  // The critical path at the rates the call's channels get among themselves (not at their caps: sixteen channels
  // sharing one NVLink each get a sixteenth), then the loads for that size.
  auto set_loads = [&] {
    for (std::size_t j = 0; j < part_of.size(); ++j) {
      CoupledPart& part = plan->parts[part_of[j]];
      part.loads.clear();
      if (part.ref_bytes <= 0) continue;
      for (const auto& b : bytes_on[j])
        part.loads.push_back({b.link, b.k / part.ref_bytes});
    }
  };
  const auto lanes_per_ref = [&] {
    for (std::size_t j = 0; j < part_of.size(); ++j) {
      CoupledPart& part = plan->parts[part_of[j]];
      if (part.ref_bytes <= 0) {
        part.lanes.clear();
        continue;
      }
      for (auto& lane : part.lanes)
        lane.w /= part.ref_bytes;
    }
  };
  auto solve_alone = [&] {
    std::vector<std::vector<coupled::Load>> loads;
    std::vector<double> caps;
    loads.reserve(plan->parts.size());
    for (const auto& p : plan->parts) {
      loads.push_back(p.loads);
      caps.push_back(p.cap);
    }
    return cnet_->rates_alone(loads, caps);
  };
  set_loads();
  if (!part_of.empty()) {
    const std::vector<double> first = solve_alone();
    for (std::size_t j = 0; j < part_of.size(); ++j) {
      CoupledPart& part = plan->parts[part_of[j]];
      const auto [latency, bytes] =
          critical_path(s, *shape, channel_at[j], part.loads.empty() ? inf : first[part_of[j]]);
      part.latency = latency - plan->launch;
      part.ref_bytes = part.loads.empty() ? 0 : bytes;
    }
    set_loads();
  }
  lanes_per_ref();
  const std::vector<double> rates = solve_alone();
  double slowest = 0;
  for (std::size_t i = 0; i < plan->parts.size(); ++i) {
    const CoupledPart& p = plan->parts[i];
    slowest = std::max(slowest, (p.ref_bytes > 0 && !p.loads.empty() ? p.ref_bytes / rates[i] : 0.0) + p.latency);
  }
  plan->alone = plan->launch + slowest;
  // Parts alike (same links, multiplicities, size and cap: the channels of a ring inside one NVSwitch node) move at
  // one rate in any max-min solution, so each group is one flow carrying the group's multiplicities: the same rates,
  // a fraction of the flows.
  std::map<std::tuple<double, double, std::vector<std::pair<std::uint32_t, double>>>, std::size_t> alike;
  std::vector<CoupledPart> merged;
  for (auto& p : plan->parts) {
    std::vector<std::pair<std::uint32_t, double>> key;
    key.reserve(p.loads.size());
    for (const auto& l : p.loads)
      key.emplace_back(l.link, l.k);
    auto [it, inserted] = alike.emplace(std::make_tuple(p.ref_bytes, p.cap, std::move(key)), merged.size());
    if (inserted) {
      merged.push_back(std::move(p));
      continue;
    }
    CoupledPart& m = merged[it->second];
    m.copies += 1;
    m.latency = std::max(m.latency, p.latency);
    m.wire_bytes += p.wire_bytes;
  }
  for (auto& m : merged)
    if (m.copies > 1) {
      for (auto& l : m.loads)
        l.k *= m.copies;
      for (auto& lane : m.lanes) {
        lane.w *= m.copies;
        lane.window *= m.copies;
        lane.qps *= m.copies;
      }
    }
  plan->parts = std::move(merged);
  if (!per_call) plans_.emplace(&s, plan);
  return plan;
}

void Engine::start_coupled(const RankRt& rt, OpId op_id, const Op& op, int comm, Instance& inst)
{
  Op sized = op;
  sized.bytes = Bytes(inst.bytes);
  const auto schedule = schedule_for(rt, op_id, sized, comm);
  const std::uint32_t r = running_.acquire();
  Running& run = running_[r];
  run.members = std::move(inst.members);
  run.plan = coupled_plan(*schedule);
  run.parts_left = static_cast<std::uint32_t>(run.plan->parts.size());
  run.end = now_ + run.plan->launch;
  run.run = CollectiveRun{comm, schedule->kind, static_cast<std::uint8_t>(kind_of(comm)), inst.bytes, now_,
                          0,    run.plan->alone};
  driver_->post(now_ + run.plan->launch, {LaneEv::NetStart, 0, 0, r, 0});
}

void Engine::request_solve()
{
  if (solve_posted_ || !cnet_->dirty()) return;
  solve_posted_ = true;
  driver_->post(now_, {LaneEv::NetSolve, 0, 0, 0, 0});
}

coupled::Network::PostEnd Engine::post_end()
{
  return [this](std::uint32_t flow, std::uint32_t version, double at) {
    if (at < driver_->now())
      throw std::logic_error(
          fmt::format("coupled network: flow {} ends at {} s, before now ({} s)", flow, at, driver_->now()));
    driver_->post(at, {LaneEv::NetEnd, 0, 0, flow, version});
  };
}

void Engine::net_sync()
{
  if (!cnet_->queues()) return;
  cnet_->advance(now_, post_end());
  request_solve();
}

void Engine::net_schedule()
{
  if (!cnet_->queues()) return;
  const double next = cnet_->next_time();
  if (next < step_posted_) {
    step_posted_ = next;
    driver_->post(next, {LaneEv::NetStep, 0, 0, 0, 0});
  }
}

void Engine::handle_net(const LaneEvent& e)
{
  net_sync();
  handle_net_event(e);
  net_schedule();
}

void Engine::handle_net_event(const LaneEvent& e)
{
  switch (e.type) {
  case LaneEv::NetStart: {
    Running& run = running_[e.arg];
    // Held here: the call may end inside the loop (every part without bytes), which releases the run's plan.
    const std::shared_ptr<const CoupledPlan> held = run.plan;
    const CoupledPlan& plan = *held;
    if (plan.parts.empty()) {
      run.parts_left = 1;
      part_done(e.arg, 0, now_);
      return;
    }
    for (std::uint32_t p = 0; p < plan.parts.size(); ++p) {
      const CoupledPart& part = plan.parts[p];
      coupled_totals_.flows_sent += part.copies;
      coupled_totals_.bytes_sent += part.wire_bytes;
      if (part.loads.empty() || part.ref_bytes <= 0) {
        coupled_totals_.flows_received += part.copies;
        coupled_totals_.bytes_received += part.wire_bytes;
        part_done(e.arg, p, now_);
        continue;
      }
      cnet_->add(now_, part.loads, part.ref_bytes, part.cap, (static_cast<std::uint64_t>(e.arg) << 32) | p, part.lanes);
    }
    request_solve();
    return;
  }
  case LaneEv::NetEnd: {
    std::uint64_t owner = 0;
    double at = now_;
    const bool ended = cnet_->end(e.arg, e.gen, now_, owner, at);
    request_solve();
    if (!ended) return;
    if (owner & kMessageBit) {
      const auto m = static_cast<std::uint32_t>(owner & ~kMessageBit);
      coupled_totals_.flows_received += 1;
      coupled_totals_.bytes_received += msgs_[m].bytes;
      post(std::max(now_, at + msg_latency_[m]), LaneEv::Deliver, msgs_[m].dst, 0, m);
      return;
    }
    const auto r = static_cast<std::uint32_t>(owner >> 32);
    const auto p = static_cast<std::uint32_t>(owner & 0xffffffffU);
    coupled_totals_.flows_received += running_[r].plan->parts[p].copies;
    coupled_totals_.bytes_received += running_[r].plan->parts[p].wire_bytes;
    part_done(r, p, at);
    return;
  }
  case LaneEv::NetSolve:
    solve_posted_ = false;
    cnet_->solve(now_, post_end());
    return;
  case LaneEv::NetStep:
    if (now_ >= step_posted_) step_posted_ = std::numeric_limits<double>::infinity();
    return; // net_sync() did the work
  default:
    return;
  }
}

void Engine::part_done(std::uint32_t r, std::uint32_t p, double t)
{
  Running& run = running_[r];
  const auto& parts = run.plan->parts;
  run.end = std::max(run.end, t + (p < parts.size() ? parts[p].latency : 0.0));
  if (--run.parts_left > 0) return;
  run.end = std::max(run.end, now_); // a part's last byte may have arrived inside the queue model's last step
  for (const auto& [rank, lane] : run.members)
    post(run.end, LaneEv::OpDone, rank, lane);
  run.run.end_s = run.end;
  runs_.push_back(run.run);
  run.members.clear();
  run.plan.reset();
  running_.release(r);
}

// A message is a flow of its own over its connection's QPs (or sprayed paths); it is delivered its path latency after
// its last byte left.
void Engine::send_coupled(std::uint32_t id)
{
  const Message& m = msgs_[id];
  std::vector<std::pair<topo::Path, double>> paths;
  const std::uint64_t pair = pair_key(m.src, m.dst);
  const std::uint64_t key = cfg_.fluid.ecmp == EcmpMode::PerFlow ? splitmix64(pair ^ splitmix64(++salt_))
                                                                 : splitmix64(splitmix64(pair) ^ m.net_tag);
  coupled_totals_.flows_sent += 1;
  coupled_totals_.bytes_sent += m.bytes;
  if (m.src == m.dst || m.bytes <= 0) {
    coupled_totals_.flows_received += 1;
    coupled_totals_.bytes_received += m.bytes;
    post(now_, LaneEv::Deliver, m.dst, 0, id);
    return;
  }
  connection_paths(m.src, m.dst, key, paths);
  double latency = 0;
  for (const auto& [path, share] : paths) {
    latency = std::max(latency, topo_.path_latency(path).seconds());
    add_path_load(path, share);
  }
  std::vector<coupled::Load> loads;
  take_loads(loads);
  std::vector<coupled::LaneSpec> lanes;
  if (cnet_->queues())
    add_lanes(lanes, paths, 1.0, models::protocol_spec(models::Protocol::Simple).connection_buffer().bytes());
  msg_latency_[id] = latency;
  net_sync();
  cnet_->add(now_, loads, m.bytes, std::numeric_limits<double>::infinity(), kMessageBit | id, lanes);
  request_solve();
  net_schedule();
}

} // namespace railyard::sim::replay_engine
