// The queue model of the collective-level network (coupled_network.hpp), used when DCQCN or PFC is on.
//
// Each edge QP of a coupled flow that crosses switch egress ports is a lane: its path, the bytes it moves per reference
// byte of the flow (w), and its own DCQCN reaction point. The flow injects w x r into each lane, r its rate: the
// minimum of its max-min share over the host links before the lanes' first switch queue (GPU, PCIe, NIC) and of every
// lane's reaction-point rate (a ring is a pipeline: the slowest edge sets the pace of all). A lane whose window holds
// bytes while its reaction point allows more than its share catches up, sharing with the other lanes catching up behind
// its host link what the flows' shares leave of that link (settle()): a NIC never sends beyond its line rate. Switch
// egress ports are fluid queues, served in up*/down* order within a step so a step's departures feed the next hop in
// the same step; a port serves capacity x dt, each lane in proportion to what it has queued there (processor sharing of
// the queue's content: in steady state each lane leaves at the share it arrives at, as with FIFO). Departing bytes are
// ECN-marked with RED's probability of the queue they leave, which moves linearly over a step until it empties
// (ecn_draws.hpp, path_marking(): above K_max every packet over that part); a lane's marks trigger CNPs as the
// per-transfer queue model's do (fluid_queues.cpp: an exponential threshold on the accumulated hazard per packet,
// handled at the end of the time step it falls in, at most one CNP per interval, back at the sender two path latencies
// later). PFC counts per ingress link the bytes that came in over it and still wait in the switch's egress queues:
// above XOFF it pauses that link (a switch port stops serving; a host link stops every flow with a lane behind it),
// below XON it resumes it, each a cable latency (plus the response time) after crossing.
//
// Adaptive steps (FluidConfig::adaptive_steps), port by port: a port offered no more than its capacity (its lanes'
// send rates summed) with an empty queue passes everything through at once. A port is hot when it is offered more,
// holds bytes or is paused; the lanes crossing a hot port are stepped, every other lane keeps its own date (a DCQCN
// timer or byte-counter event below line rate, its window filling or emptying, its last byte sent) and catches up in
// one go there. Stepped lanes form groups (lanes joined by the ports they cross and, with PFC, by their host link's
// counter): only their flows' max-min rates couple two groups, and those are exact for the bytes whatever the steps,
// so each group steps on its own clock, cut only by its own lanes' CNPs and its own links' PAUSEs. A group's step is
// one time_step, or longer, up to 64 of them, while nothing it holds changes within it: no reaction point's timer or
// byte counter, window, or CNP interval of its lanes ends, no queue moves by more than a quarter of RED's band or
// empties, no PFC counter can reach XOFF even at its link's full rate, and no pause is pending. Inside a long step
// the notification points keep the time_step grid (a crossing is handled at the end of the time step it falls in),
// so a long step dates CNPs as time steps would. `adaptive_steps: false` steps every lane every time_step, the
// reference.
#include "coupled_network.hpp"
#include "ecn_draws.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace railyard::sim::coupled {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

} // namespace

void Network::init_queues()
{
  q_.resize(links_.size());
  int max_tier = 0;
  for (std::size_t v = 0; v < topo_.num_vertices(); ++v)
    max_tier = std::max(max_tier, topo_.vertex(v).tier);
  step_ = cfg_.time_step.seconds();
  for (topo::LinkId id = 0; id < topo_.num_links(); ++id) {
    const auto& from = topo_.vertex(topo_.link_source(id));
    const auto& to = topo_.vertex(topo_.link_target(id));
    QLink& q = q_[id];
    // As the per-transfer network: only switch egress ports queue (NVLink and PCIe are credit-based, a NIC paces its
    // own QPs), and up*/down* paths visit them up by source tier, then down by target tier.
    q.queued = topo::is_fabric_switch(from.kind);
    q.stage = to.tier > from.tier ? from.tier : 2 * max_tier - to.tier;
    if (cfg_.pfc.enabled) {
      const auto& link = topo_.link(id);
      q.headroom =
          cfg_.pfc.headroom.bytes() > 0
              ? cfg_.pfc.headroom.bytes()
              : models::cc::required_headroom(link.bandwidth, link.latency, cfg_.pfc.response_time, cfg_.mtu).bytes();
      // A step must not exceed the time a PAUSE takes to act on a port into a switch, or the headroom sized for that
      // time would be overrun by the step's own delay in noticing XOFF.
      if (topo::is_fabric_switch(to.kind))
        step_ = std::min(step_, link.latency.seconds() + cfg_.pfc.response_time.seconds());
    }
  }
}

bool Network::lane_done(const LaneRec& lr)
{
  // Sent everything and holds nothing in any queue. (The delivered tally drifts by rounding over millions of steps:
  // what the queues hold says it exactly, as a port that passes all it holds empties each lane there to zero.)
  if (lr.injected < lr.total * (1 - 1e-12)) return false;
  for (int k = 0; k < lr.nq; ++k)
    if (lr.backlog[k] > 0 || lr.arriving[k] > 0) return false;
  return true;
}

double Network::injected_ref(const FlowRec& fr, double t) const
{
  if (fr.draining) return fr.ref;
  if (fr.fresh || fr.rate <= 0) return fr.ref - fr.remaining;
  return std::min(fr.ref, fr.ref - fr.remaining + fr.rate * (t - fr.last_t));
}

double Network::lane_lag(const LaneRec& lr, double t) const
{
  return std::min(lr.total, lr.w * injected_ref(flows_[lr.flow], t)) - lr.injected;
}

double Network::lane_share(const LaneRec& lr) const
{
  const FlowRec& fr = flows_[lr.flow];
  return fr.fresh || fr.draining ? 0.0 : lr.w * fr.rate;
}

void Network::add_lanes(std::uint32_t f, double t, std::span<const LaneSpec> specs)
{
  // Max-min takes the hops before a lane's first switch queue; the queue model moves the bytes from there.
  std::vector<std::pair<std::uint32_t, double>> mm, extra;
  for (const LaneSpec& spec : specs) {
    std::size_t h0 = spec.links.size();
    for (std::size_t h = 0; h < spec.links.size(); ++h)
      if (q_[spec.links[h]].queued) {
        h0 = h;
        break;
      }
    for (std::size_t h = 0; h < spec.links.size(); ++h)
      (h < h0 ? mm : extra).emplace_back(spec.links[h], spec.w);
    if (h0 == spec.links.size()) continue; // inside a node: no queue on its way
    if (h0 == 0) throw std::logic_error("coupled queue model: a path starts at a switch");
    const std::uint32_t ln = lanes_.acquire();
    LaneRec& lr = lanes_[ln];
    const std::uint32_t gen = lr.gen + 1, ver = lr.ver + 1;
    lr = LaneRec{};
    lr.gen = gen;
    lr.ver = ver;
    lr.t = t;
    lr.window = spec.window;
    lr.flow = f;
    lr.w = spec.w;
    lr.qps = std::max<std::uint32_t>(1, spec.qps);
    lr.total = spec.w * flows_[f].ref;
    lr.active = true;
    double line = kInf;
    for (std::size_t h = 0; h < spec.links.size(); ++h) {
      lr.latency += topo_.link(spec.links[h]).latency.seconds();
      if (h < h0) line = std::min(line, links_[spec.links[h]].capacity);
    }
    for (std::size_t h = h0; h < spec.links.size(); ++h) {
      const std::uint32_t l = spec.links[h];
      if (!q_[l].queued) continue;
      if (lr.nq == kMaxQueues) throw std::logic_error("coupled queue model: a path crosses too many switch queues");
      const auto k = lr.nq++;
      lr.port[k] = l;
      lr.ingress[k] = spec.links[h - 1];
      QLink& q = q_[l];
      lr.pos[k] = static_cast<std::uint32_t>(q.lanes.size());
      q.lanes.emplace_back(ln, k);
    }
    QLink& host = q_[lr.ingress[0]];
    lr.host_pos = static_cast<std::uint32_t>(host.host_lanes.size());
    host.host_lanes.push_back(ln);
    if (host.paused) ++flows_[f].paused;
    if (cfg_.cc == CongestionControl::Dcqcn)
      lr.rp = models::cc::ReactionPoint(cfg_.dcqcn, BytesPerSec(line), Seconds(t));
    lr.last_cnp = -kInf;
    lr.rng = splitmix64(seed_ ^ splitmix64(lanes_started_ + 0x5bd1e995ULL));
    lr.threshold = next_exponential(lr.rng);
    ++lanes_started_;
    ++lanes_live_;
    flows_[f].lanes.push_back(ln);
    for (int k = 0; k < lr.nq; ++k)
      lr.hot += q_[lr.port[k]].hot ? 1 : 0;
    if (lr.hot > 0 || !cfg_.adaptive_steps) set_stepped(ln, true, t);
  }
  auto merge = [](std::vector<std::pair<std::uint32_t, double>>& v, std::vector<Load>& out) {
    std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [l, k] : v)
      if (!out.empty() && out.back().link == l)
        out.back().k += k;
      else
        out.push_back({l, k});
  };
  FlowRec& fr = flows_[f];
  merge(mm, fr.loads);
  merge(extra, fr.extra);
  refresh_cap(f);
}

void Network::remove_lanes(std::uint32_t f)
{
  FlowRec& fr = flows_[f];
  for (std::uint32_t ln : fr.lanes) {
    LaneRec& lr = lanes_[ln];
    lr.active = false; // first: leaving the steps, it has nothing to deliver or schedule
    if (lr.stepped) set_stepped(ln, false, lr.t);
    update_offer(ln); // its ports' offered load no longer counts it
    for (int k = 0; k < lr.nq; ++k) {
      list_heat(lr.port[k]);
      auto& list = q_[lr.port[k]].lanes;
      const std::uint32_t p = lr.pos[k];
      const auto moved = list.back();
      list[p] = moved;
      list.pop_back();
      if (p < list.size()) lanes_[moved.first].pos[moved.second] = p;
      if (list.empty()) set_offered(lr.port[k], 0.0); // an idle port offers nothing, rounding residue included
    }
    auto& hl = q_[lr.ingress[0]].host_lanes;
    const auto moved = hl.back();
    hl[lr.host_pos] = moved;
    hl.pop_back();
    if (lr.host_pos < hl.size()) lanes_[moved].host_pos = lr.host_pos;
    if (cfg_.cc == CongestionControl::Dcqcn) decreases_ += static_cast<std::uint64_t>(lr.rp.decreases());
    lanes_.release(ln);
    --lanes_live_;
  }
  fr.lanes.clear();
}

void Network::refresh_cap(std::uint32_t f)
{
  FlowRec& fr = flows_[f];
  double c = fr.paused > 0 ? 0.0 : fr.base_cap;
  if (cfg_.cc == CongestionControl::Dcqcn)
    for (std::uint32_t ln : fr.lanes) {
      const LaneRec& lr = lanes_[ln];
      if (lr.full) c = std::min(c, lr.rp.rate().bytes_per_sec() * lr.qps / lr.w);
    }
  if (c == fr.cap) return;
  fr.cap = c;
  if (!fr.draining) dirty_flows_.push_back(f);
}

void Network::set_offered(std::uint32_t port, double delta)
{
  QLink& q = q_[port];
  q.in_rate += delta;
  if (q.lanes.empty() || q.in_rate < 0) q.in_rate = 0;
  const bool over = q.in_rate > links_[port].capacity * (1 + 1e-9);
  if (over == q.overloaded) return;
  q.overloaded = over;
  list_heat(port);
}

void Network::list_heat(std::uint32_t port)
{
  QLink& q = q_[port];
  if (q.heat_listed) return;
  q.heat_listed = true;
  heat_.push_back(port);
}

std::uint32_t Network::group_of(std::uint32_t link) const
{
  const QLink& q = q_[link];
  return q.stepped > 0 || q.hstepped > 0 || q.watched ? q.group : kNoGroup;
}

std::uint32_t Network::new_group(double t)
{
  const std::uint32_t g = groups_.acquire();
  Group& G = groups_[g];
  G.lanes.clear();
  G.order.clear();
  G.watch.clear();
  G.t = t;
  G.live = true;
  G.split_due = false;
  ++G.ver;
  return g;
}

void Network::drop_group(std::uint32_t g)
{
  Group& G = groups_[g];
  G.live = false;
  ++G.ver; // its posted step is void
  groups_.release(g);
}

double Network::group_horizon(const Group& G) const
{
  const double t = G.t;
  double h = kInf;
  const bool dcqcn = cfg_.cc == CongestionControl::Dcqcn;
  const auto& dc = cfg_.dcqcn;
  const auto& pfc = cfg_.pfc;
  for (const std::uint32_t ln : G.lanes) {
    const LaneRec& lr = lanes_[ln];
    if (pfc.enabled)
      for (int k = 0; k < lr.nq; ++k) {
        // A counter may reach XOFF no sooner than its link's full rate takes to fill what is left below it: the PAUSE
        // must go out within a cable latency (plus the response time) of that, as on the grid. Pausing or resuming:
        // the grid.
        const std::uint32_t l = lr.ingress[k];
        const QLink& in = q_[l];
        if (in.paused || in.pause_pending || in.resume_pending || q_[lr.port[k]].paused) return t;
        const double occ = in.watched ? in.ingress : 0.0;
        h = std::min(h, t + std::max(0.0, pfc.xoff.bytes() - occ) / links_[l].capacity +
                            topo_.link(l).latency.seconds() + pfc.response_time.seconds());
      }
    if (!dcqcn || lr.injected >= lr.total) continue;
    // Its reaction point's next event, its window filling or emptying (every one: a step must not run past them),
    // the end of its CNP interval while marked.
    h = std::min(h, lane_next_change(lr, t, false));
    // Marked: once its CNP interval is over, its next CNP may come at any packet (step() dates it inside a step); a
    // step then ends within a round trip, as the CNP's effect would.
    if (lr.hazard_rate > 0) h = std::min(h, std::max(t, lr.last_cnp + dc.cnp_interval.seconds()) + 2 * lr.latency);
  }
  // A queue moves by at most a quarter of RED's band (of XOFF, with PFC alone) in a step, and a queue that empties
  // ends it.
  const double band = dcqcn ? (dc.k_max.bytes() - dc.k_min.bytes()) / 4 : pfc.xoff.bytes() / 4;
  for (const std::uint32_t l : G.order) {
    const QLink& q = q_[l];
    const double slope = q.queue > 0 ? q.slope : std::max(0.0, q.in_rate - links_[l].capacity);
    if (slope != 0) h = std::min(h, t + std::max(band, cfg_.mtu.bytes()) / std::abs(slope));
    if (q.queue > 0 && slope < 0) h = std::min(h, t + q.queue / -slope);
  }
  return h;
}

void Network::schedule_group(std::uint32_t g)
{
  Group& G = groups_[g];
  double len = step_;
  if (cfg_.adaptive_steps) {
    // A step grows while nothing the group holds changes within it, up to kMaxGrowth time steps.
    constexpr double kMaxGrowth = 64;
    const double horizon = group_horizon(G) - G.t;
    if (horizon > step_) len = std::min(horizon, kMaxGrowth * step_);
  }
  post_group(g, G.t + len);
}

void Network::post_group(std::uint32_t g, double end)
{
  Group& G = groups_[g];
  G.end = end;
  ++G.ver; // an earlier post is void
  group_dates_.push_back({end, g, G.ver});
  std::push_heap(group_dates_.begin(), group_dates_.end(), std::greater<>{});
}

bool Network::drop_if_idle(std::uint32_t g)
{
  const Group& G = groups_[g];
  if (!G.lanes.empty() || !G.watch.empty()) return false;
  drop_group(g);
  return true;
}

void Network::cut_group(std::uint32_t g, double t)
{
  if (t > groups_[g].t) step(g, t);
  schedule_group(g);
}

void Network::order_insert(std::uint32_t g, std::uint32_t port)
{
  auto& order = groups_[g].order;
  order.insert(std::lower_bound(order.begin(), order.end(), port, port_before()), port);
}

void Network::order_erase(std::uint32_t g, std::uint32_t port)
{
  auto& order = groups_[g].order;
  order.erase(std::find(order.begin(), order.end(), port));
}

void Network::merge_groups(std::uint32_t g, std::uint32_t o, double t)
{
  if (t > groups_[g].t) step(g, t);
  if (t > groups_[o].t) step(o, t);
  Group& G = groups_[g];
  Group& O = groups_[o];
  for (const std::uint32_t ln : O.lanes) {
    LaneRec& lr = lanes_[ln];
    lr.group = g;
    lr.gpos = static_cast<std::uint32_t>(G.lanes.size());
    G.lanes.push_back(ln);
    for (int k = 0; k < lr.nq; ++k)
      q_[lr.port[k]].group = g;
    if (cfg_.pfc.enabled) q_[lr.ingress[0]].group = g;
  }
  for (const std::uint32_t l : O.watch) {
    q_[l].group = g;
    G.watch.push_back(l);
  }
  const std::size_t mid = G.order.size();
  G.order.insert(G.order.end(), O.order.begin(), O.order.end());
  std::inplace_merge(G.order.begin(), G.order.begin() + static_cast<std::ptrdiff_t>(mid), G.order.end(), port_before());
  G.split_due = G.split_due || O.split_due;
  G.t = t;
  O.lanes.clear();
  O.order.clear();
  O.watch.clear();
  drop_group(o);
  schedule_group(g);
}

void Network::split_group(std::uint32_t g, std::vector<std::uint32_t>& parts)
{
  parts.clear();
  parts.push_back(g);
  Group& G0 = groups_[g];
  if (!G0.split_due) return;
  G0.split_due = false;
  if (G0.lanes.size() < 2) return;
  // Breadth first over lanes and the ports (and, with PFC, host links) they share: each part after the first becomes
  // a group on the same clock.
  const std::uint32_t epoch = ++seen_epoch_;
  const std::vector<std::uint32_t> lanes = std::move(G0.lanes);
  G0.lanes.clear();
  const double t = G0.t;
  for (const std::uint32_t start : lanes) {
    if (lanes_[start].seen == epoch) continue;
    const std::uint32_t part = parts.size() == 1 && groups_[g].lanes.empty() ? g : new_group(t);
    if (part != g) parts.push_back(part);
    bfs_.clear();
    bfs_.push_back(start);
    lanes_[start].seen = epoch;
    for (std::size_t i = 0; i < bfs_.size(); ++i) {
      const std::uint32_t ln = bfs_[i];
      LaneRec& lr = lanes_[ln];
      lr.group = part;
      Group& P = groups_[part];
      lr.gpos = static_cast<std::uint32_t>(P.lanes.size());
      P.lanes.push_back(ln);
      const auto visit = [&](std::uint32_t l, bool host) {
        QLink& q = q_[l];
        if (q.seen == epoch) return;
        q.seen = epoch;
        q.group = part;
        const auto reach = [&](std::uint32_t other) {
          LaneRec& o = lanes_[other];
          if (!o.stepped || o.seen == epoch) return;
          o.seen = epoch;
          bfs_.push_back(other);
        };
        if (host)
          for (const std::uint32_t other : q.host_lanes)
            reach(other);
        else
          for (const auto& [other, k] : q.lanes)
            reach(other);
      };
      for (int k = 0; k < lr.nq; ++k)
        visit(lr.port[k], false);
      if (cfg_.pfc.enabled) visit(lr.ingress[0], true);
    }
  }
  if (parts.size() == 1) return;
  // Ports and watched links follow their lanes (a watched link no lane of the group reaches stays with the first part).
  Group& G = groups_[g];
  std::vector<std::uint32_t> order = std::move(G.order), watch = std::move(G.watch);
  G.order.clear();
  G.watch.clear();
  for (const std::uint32_t l : order)
    groups_[q_[l].group].order.push_back(l); // each part's ports stay in order
  for (const std::uint32_t l : watch) {
    if (q_[l].seen != epoch) q_[l].group = g;
    groups_[q_[l].group].watch.push_back(l);
  }
  for (const std::uint32_t p : parts)
    groups_[p].end = groups_[g].end;
}

void Network::set_stepped(std::uint32_t ln, bool on, double t)
{
  LaneRec& lr = lanes_[ln];
  if (lr.stepped == on) return;
  const bool pfc = cfg_.pfc.enabled;
  if (on) {
    // It joins the steps at t: what it sent since its own date went through ports that held nothing.
    sync_lane(ln, t);
    ++lr.ver; // its own date is void
    // The group of its ports (and host link): groups it bridges merge, each brought to t first.
    std::uint32_t g = kNoGroup;
    const auto join = [&](std::uint32_t l) {
      std::uint32_t o = group_of(l);
      if (o == kNoGroup || o == g) return;
      if (g == kNoGroup) {
        g = o;
        return;
      }
      if (groups_[o].lanes.size() > groups_[g].lanes.size()) std::swap(g, o);
      merge_groups(g, o, t);
    };
    for (int k = 0; k < lr.nq; ++k)
      join(lr.port[k]);
    if (pfc) join(lr.ingress[0]);
    const bool fresh = g == kNoGroup;
    if (fresh) g = new_group(t);
    Group& G = groups_[g];
    lr.group = g;
    lr.gpos = static_cast<std::uint32_t>(G.lanes.size());
    lr.step_t0 = t;
    G.lanes.push_back(ln);
    // A new group takes one time step first; so does a group's step under way that would run longer (what the lane
    // brings was not in its horizon).
    if (fresh || G.end > t + step_) post_group(g, t + step_);
  } else {
    Group& G = groups_[lr.group];
    const std::uint32_t moved = G.lanes.back();
    G.lanes[lr.gpos] = moved;
    G.lanes.pop_back();
    if (lr.gpos < G.lanes.size()) lanes_[moved].gpos = lr.gpos;
    G.split_due = true;
    // It leaves the steps with every port on its path cold (no queue there): what it sent into them since the last
    // step passes them now. A draining flow it belongs to may be done: the model looks at t.
    if (lr.active) {
      for (int k = 0; k < lr.nq; ++k) {
        lr.delivered += lr.arriving[k] + lr.backlog[k];
        lr.arriving[k] = lr.backlog[k] = 0;
      }
      if (flows_[lr.flow].draining && !flows_[lr.flow].drained) {
        note_drain(lr.flow);
        drain_due_ = std::min(drain_due_, t);
      }
    }
  }
  lr.stepped = on;
  const std::uint32_t g = lr.group;
  for (int k = 0; k < lr.nq; ++k) {
    const std::uint32_t l = lr.port[k];
    QLink& q = q_[l];
    q.stepped += on ? 1 : static_cast<std::uint32_t>(-1);
    q.stepped_offer += on ? lr.offer : -lr.offer;
    if (q.stepped == 0) q.stepped_offer = 0;
    if (on && q.stepped == 1) {
      q.group = g;
      order_insert(g, l);
    } else if (!on && q.stepped == 0) {
      order_erase(g, l);
    }
  }
  if (pfc) {
    QLink& h = q_[lr.ingress[0]];
    h.hstepped += on ? 1 : static_cast<std::uint32_t>(-1);
    if (on) h.group = g;
  }
  if (!on) {
    drop_if_idle(g);
    schedule_lane(ln);
  }
}

void Network::process_heat(double t)
{
  // A port is hot while it is offered more than its capacity, holds bytes or is paused; its lanes are stepped then.
  // Stepping a lane can change offers, and so other ports: until nothing changes.
  for (std::size_t i = 0; i < heat_.size(); ++i) {
    const std::uint32_t l = heat_[i];
    QLink& q = q_[l];
    q.heat_listed = false;
    const bool hot = q.overloaded || q.queue > 0 || q.paused;
    if (hot == q.hot) continue;
    q.hot = hot;
    for (const auto& [ln, k] : q.lanes) {
      LaneRec& lr = lanes_[ln];
      lr.hot += hot ? 1 : static_cast<std::uint32_t>(-1);
      if (cfg_.adaptive_steps) set_stepped(ln, lr.hot > 0, t);
    }
  }
  heat_.clear();
}

double Network::lane_send(const LaneRec& lr, double t1, double dt) const
{
  const double avail = lane_lag(lr, t1);
  if (!(avail > 0) || q_[lr.ingress[0]].paused) return 0.0; // PFC paused its sender's link: nothing leaves
  if (cfg_.cc != CongestionControl::Dcqcn) return avail;
  return std::min(avail, catch_rate(lr) * dt);
}

void Network::lane_after_send(std::uint32_t ln, double t0, double t1, double sent)
{
  if (cfg_.cc != CongestionControl::Dcqcn) {
    update_offer(ln);
    return;
  }
  LaneRec& lr = lanes_[ln];
  const FlowRec& fr = flows_[lr.flow];
  bool changed = lr.rp.advance_uniform(cfg_.dcqcn, Seconds(t0), Seconds(t1), Bytes(sent / lr.qps));
  // Full: the sender holds its whole window back and its share of the flow still comes faster than DCQCN lets it
  // send, so the flow (every edge of the ring) slows to this lane's rate.
  const double lag = lane_lag(lr, t1);
  const double in = lane_share(lr);
  const bool full =
      !fr.draining && lag >= lr.window * (1 - 1e-9) && in >= lr.rp.rate().bytes_per_sec() * lr.qps * (1 - 1e-12);
  if (full != lr.full) {
    lr.full = full;
    changed = true;
  }
  if (changed) refresh_cap(lr.flow);
  update_offer(ln);
}

void Network::sync_lane(std::uint32_t ln, double t)
{
  LaneRec& lr = lanes_[ln];
  const double dt = t - lr.t;
  if (dt < 0) return;
  const double sent = lane_send(lr, t, dt);
  const double t0 = lr.t;
  lr.injected += sent;
  lr.delivered += sent; // no port holds a byte
  lr.t = t;
  note_drain(lr.flow);
  // Its reaction point's events since its last date, each at its own date (the lane sent evenly over the interval:
  // its flow's rate and its own did not change in it, or it would have been brought here then).
  lane_after_send(ln, t0, t, sent);
}

double Network::lane_next_change(const LaneRec& lr, double t, bool idle_waits) const
{
  const FlowRec& fr = flows_[lr.flow];
  const auto& dc = cfg_.dcqcn;
  const double rp = lr.rp.rate().bytes_per_sec() * lr.qps;
  const double in = lane_share(lr);
  const double lag = lane_lag(lr, t);
  const double cr = catch_rate(lr); // rp, or less while its host link's catching lanes would exceed it
  const double send = lag > 0 ? cr : std::min(rp, in);
  double next = kInf;
  // Its reaction point only raises its rate until a CNP comes: while that rate is at or above what its flow injects
  // into it and its window is empty, the rate changes nothing the model uses (it sends its share) until the flow's
  // rate changes, a CNP or a pause comes, or it is stepped, and each of those brings it up to date first
  // (sync_lane(): its events in the order of their dates). So a lane that keeps its own dates has none for them.
  const bool idle_rp = idle_waits && !fr.draining && !lr.rp.decrease_held() && rp >= in && !(lag > 1e-9 * lr.total);
  if (!lr.rp.at_line_rate() && !idle_rp) {
    next = lr.rp.next_change(dc).seconds();
    if (send > 0) next = std::min(next, t + lr.rp.bytes_to_byte_event(dc).bytes() * lr.qps / send);
  }
  if (fr.draining) {
    if (lag > 0 && cr > 0) next = std::min(next, t + lag / cr); // its last byte leaves
  } else {
    if (!lr.full && in > rp && lr.window > lag) next = std::min(next, t + (lr.window - lag) / (in - rp));
    // Catching up: once its window is empty it sends at the flow's share again.
    if (lag > 1e-9 * lr.total && cr > in) next = std::min(next, t + lag / (cr - in));
  }
  return next;
}

void Network::schedule_lane(std::uint32_t ln)
{
  LaneRec& lr = lanes_[ln];
  ++lr.ver;
  if (!lr.active || cfg_.cc != CongestionControl::Dcqcn) return;
  if (lr.injected >= lr.total) return; // nothing left to send
  const double next = lane_next_change(lr, lr.t, true);
  if (next == kInf) return;
  lane_dates_.push_back({std::max(next, std::nextafter(lr.t, kInf)), ln, lr.ver});
  std::push_heap(lane_dates_.begin(), lane_dates_.end(), std::greater<>{});
}

double Network::next_time()
{
  if (!queues_) return kInf;
  double t = std::min(qevents_.next_date(), drain_due_);
  while (!group_dates_.empty()) {
    const GroupDate& top = group_dates_.front();
    const Group& G = groups_[top.g];
    if (G.live && G.ver == top.ver) {
      t = std::min(t, top.t);
      break;
    }
    std::pop_heap(group_dates_.begin(), group_dates_.end(), std::greater<>{});
    group_dates_.pop_back();
  }
  while (!lane_dates_.empty()) {
    const LaneDate& top = lane_dates_.front();
    const LaneRec& lr = lanes_[top.lane];
    if (lr.active && !lr.stepped && lr.ver == top.ver) return std::min(t, top.t);
    std::pop_heap(lane_dates_.begin(), lane_dates_.end(), std::greater<>{});
    lane_dates_.pop_back();
  }
  return t;
}

void Network::run_group(std::uint32_t g)
{
  split_group(g, parts_);
  const double t1 = groups_[g].end;
  for (const std::uint32_t p : parts_) {
    step(p, t1);
    if (!drop_if_idle(p)) schedule_group(p);
  }
}

void Network::advance(double t, const PostEnd& post)
{
  if (!queues_) return;
  while (true) {
    const double next = next_time();
    if (next > t) break;
    // The groups whose step ends at `next`. A lane that keeps its own dates does not cut a step: what it sends passes
    // ports that hold nothing, and a lane it makes stepped joins the step under way from that date (step() sends its
    // bytes from lr.t); its flow's new rate is exact for the bytes the stepped lanes take.
    while (!group_dates_.empty() && group_dates_.front().t <= next) {
      const GroupDate d = group_dates_.front();
      std::pop_heap(group_dates_.begin(), group_dates_.end(), std::greater<>{});
      group_dates_.pop_back();
      const Group& G = groups_[d.g];
      if (!G.live || G.ver != d.ver) continue;
      run_group(d.g);
    }
    // The lanes not stepped whose own date is `next` catch up and look ahead.
    while (!lane_dates_.empty() && lane_dates_.front().t <= next) {
      const LaneDate d = lane_dates_.front();
      std::pop_heap(lane_dates_.begin(), lane_dates_.end(), std::greater<>{});
      lane_dates_.pop_back();
      const LaneRec& lr = lanes_[d.lane];
      if (!lr.active || lr.stepped || lr.ver != d.ver) continue;
      sync_lane(d.lane, next);
      schedule_lane(d.lane);
    }
    if (drain_due_ <= next) drain_due_ = kInf;
    if (!drain_check_.empty()) check_drains(next, post);
    // A CNP or a PAUSE cuts the step of the group it acts on (brought to `next` first).
    while (qevents_.next_date() <= next)
      qevents_.run_next([&](const QEvent& e) {
        std::uint32_t g = kNoGroup;
        if (e.kind == QEventKind::Cnp) {
          if (e.a < lanes_.size() && lanes_[e.a].active && lanes_[e.a].gen == e.gen && lanes_[e.a].stepped)
            g = lanes_[e.a].group;
        } else {
          g = group_of(e.a);
        }
        if (g != kNoGroup) cut_group(g, next);
        queue_event(e, next);
      });
    settle(next);
    // A date before t that nothing but the queue model acts on: its new rates now. At t itself the caller solves
    // once every change at t is in (flows ending at t leave before the rates are shared out again).
    if (next < t && dirty()) solve(next, post);
  }
  // No partial step to t: the steps keep their grid. A change of rate inside a step is exact for the bytes (the lanes
  // take what their flows injected up to the step's end, rate by rate); only where in the step the bytes arrived is
  // not told to the queues.
}

void Network::begin_rate_change(std::uint32_t f, double t)
{
  for (std::uint32_t ln : flows_[f].lanes)
    if (!lanes_[ln].stepped) sync_lane(ln, t); // the steps keep the others at the model's date
}

void Network::end_rate_change(std::uint32_t f)
{
  for (std::uint32_t ln : flows_[f].lanes) {
    update_offer(ln);
    if (!lanes_[ln].stepped) schedule_lane(ln);
  }
}

double Network::catch_rate(const LaneRec& lr) const
{
  const double rp = lr.rp.rate().bytes_per_sec() * lr.qps;
  if (!(lr.want > 0)) return rp;
  return lane_share(lr) + std::min(lr.want, q_[lr.ingress[0]].level);
}

void Network::set_want(std::uint32_t ln, double want)
{
  LaneRec& lr = lanes_[ln];
  const std::uint32_t h = lr.ingress[0];
  QLink& q = q_[h];
  if (want > 0 && !(lr.want > 0)) {
    lr.cpos = static_cast<std::uint32_t>(q.catching.size());
    q.catching.push_back(ln);
  } else if (!(want > 0)) {
    const std::uint32_t moved = q.catching.back();
    q.catching[lr.cpos] = moved;
    q.catching.pop_back();
    if (lr.cpos < q.catching.size()) lanes_[moved].cpos = lr.cpos;
  }
  lr.want = want;
  if (!q.catch_listed) {
    q.catch_listed = true;
    catch_dirty_.push_back(h);
  }
}

void Network::touch_catch(std::uint32_t link)
{
  QLink& q = q_[link];
  if (q.catching.empty() || q.catch_listed) return;
  q.catch_listed = true;
  catch_dirty_.push_back(link);
}

void Network::settle(double t)
{
  // A NIC sends its QPs' bytes at no more than its line rate: the flows' max-min shares fit the host link, and the
  // lanes catching up on their windows share what the shares leave, max-min on what each wants beyond its share.
  // (The shares are what the flows inject, counted in full even for a lane whose window is filling: a bound that errs
  // on the side of the link.)
  const auto fill_level = [&](std::uint32_t h) {
    const QLink& q = q_[h];
    double sum = 0;
    for (const std::uint32_t ln : q.catching)
      sum += lanes_[ln].want;
    double spare = std::max(0.0, links_[h].capacity - links_[h].rate);
    if (sum <= spare * (1 + 1e-12)) return kInf;
    wants_.clear();
    for (const std::uint32_t ln : q.catching)
      wants_.push_back(lanes_[ln].want);
    std::sort(wants_.begin(), wants_.end());
    for (std::size_t i = 0; i < wants_.size(); ++i) {
      const double fair = spare / static_cast<double>(wants_.size() - i);
      if (wants_[i] > fair) return fair;
      spare -= wants_[i];
    }
    return kInf;
  };
  while (true) {
    for (std::size_t i = 0; i < catch_dirty_.size(); ++i) {
      const std::uint32_t h = catch_dirty_[i];
      QLink& q = q_[h];
      q.catch_listed = false;
      const double old = q.level;
      double level = fill_level(h);
      if (level == old) continue;
      // Only lanes wanting more than the lower of the two levels get another grant. Those in pass mode send at their
      // old grant up to t first, which can change who catches up, and so the level: until none is left behind.
      while (true) {
        bool synced = false;
        const double cut = std::min(old, level);
        catch_scratch_.assign(q.catching.begin(), q.catching.end());
        for (const std::uint32_t ln : catch_scratch_) {
          const LaneRec& lr = lanes_[ln];
          if (lr.want > cut && !lr.stepped && lr.t < t) {
            sync_lane(ln, t);
            synced = true;
          }
        }
        if (!synced) break;
        level = fill_level(h);
      }
      q.level = level;
      const double cut = std::min(old, level);
      catch_scratch_.assign(q.catching.begin(), q.catching.end());
      for (const std::uint32_t ln : catch_scratch_) {
        if (!(lanes_[ln].want > cut)) continue;
        update_offer(ln);
        if (!lanes_[ln].stepped) schedule_lane(ln);
      }
    }
    catch_dirty_.clear();
    process_heat(t);
    if (catch_dirty_.empty()) break;
  }
  // What the host links' lanes send, once every change at t is in.
  for (const std::uint32_t h : offer_touched_) {
    QLink& q = q_[h];
    q.offer_listed = false;
    if (q.host_lanes.empty()) q.offer_sum = 0; // no rounding residue on an idle link
    host_peak_ = std::max(host_peak_, q.offer_sum / links_[h].capacity);
  }
  offer_touched_.clear();
}

void Network::update_offer(std::uint32_t ln)
{
  // The rate it sends at now: its flow's share, or its DCQCN rate while below it; while its window holds bytes its
  // DCQCN rate, at most its share plus its host link's grant when that rate is above its share (catching up).
  LaneRec& lr = lanes_[ln];
  const bool dcqcn = cfg_.cc == CongestionControl::Dcqcn;
  const bool sending = lr.active && lr.injected < lr.total;
  const double in = sending ? lane_share(lr) : 0.0;
  double rp = 0, lag = 0, want = 0;
  if (dcqcn && sending) {
    rp = lr.rp.rate().bytes_per_sec() * lr.qps;
    lag = lane_lag(lr, lr.t);
    if (rp > in && lag > 1e-9 * lr.total) want = rp - in;
  }
  if (want != lr.want) set_want(ln, want);
  double r = 0;
  if (sending && !q_[lr.ingress[0]].paused) r = !dcqcn ? in : lag > 1e-9 * lr.total ? catch_rate(lr) : std::min(rp, in);
  if (r == lr.offer) return;
  QLink& h = q_[lr.ingress[0]];
  h.offer_sum += r - lr.offer;
  if (!h.offer_listed) {
    h.offer_listed = true;
    offer_touched_.push_back(lr.ingress[0]);
  }
  for (int k = 0; k < lr.nq; ++k) {
    set_offered(lr.port[k], r - lr.offer);
    if (lr.stepped) q_[lr.port[k]].stepped_offer += r - lr.offer;
  }
  lr.offer = r;
}

void Network::finish_injection(std::uint32_t f, double t)
{
  FlowRec& fr = flows_[f];
  bool done = true;
  for (std::uint32_t ln : fr.lanes) {
    LaneRec& lr = lanes_[ln];
    const bool held = lr.stepped;
    if (cfg_.cc != CongestionControl::Dcqcn) {
      // Without a reaction point a lane sends what its flow injected: only rounding is left.
      const double rest = std::max(0.0, lr.total - lr.injected);
      lr.injected = lr.total;
      if (held)
        lr.arriving[0] += rest;
      else
        lr.delivered += rest;
    } else if (!held) {
      schedule_lane(ln); // what its window holds leaves at its DCQCN rate
    }
    update_offer(ln);
    done = done && lane_done(lr);
  }
  fr.end_at = t;
  fr.drain_pos = 0;
  if (done) fr.drained = true; // else its lanes note it for check_drains() as they deliver
}

void Network::note_drain(std::uint32_t f)
{
  FlowRec& fr = flows_[f];
  if (!fr.draining || fr.drained || fr.drain_listed) return;
  fr.drain_listed = true;
  drain_check_.push_back(f);
}

void Network::check_drains(double t, const PostEnd& post)
{
  // The draining flows one of whose lanes sent or delivered since the last look (note_drain()).
  for (const std::uint32_t f : drain_check_) {
    FlowRec& fr = flows_[f];
    fr.drain_listed = false;
    if (!fr.active || !fr.draining || fr.drained) continue;
    // Lanes found done stay done: each is looked at until it is, once after.
    while (fr.drain_pos < fr.lanes.size() && lane_done(lanes_[fr.lanes[fr.drain_pos]])) {
      const LaneRec& lr = lanes_[fr.lanes[fr.drain_pos++]];
      // Its last byte left inside its group's last step (when it was stepped and delivered in it), else at t (its own
      // date).
      double at = t;
      const double dt = lr.t - lr.step_t0;
      if (lr.stepped && lr.last_delivery > 0 && dt > 0)
        at = lr.step_t0 + dt * std::clamp((lr.total - (lr.delivered - lr.last_delivery)) / lr.last_delivery, 0.0, 1.0);
      fr.end_at = std::max(fr.end_at, at);
    }
    if (fr.drain_pos < fr.lanes.size()) continue;
    fr.drained = true;
    post(f, fr.version, t);
  }
  drain_check_.clear();
}

void Network::step(std::uint32_t g, double t1)
{
  Group& G = groups_[g];
  const double t0 = G.t;
  const double dt = t1 - t0;
  if (!(dt > 0)) return;
  G.t = t1;
  const bool dcqcn = cfg_.cc == CongestionControl::Dcqcn;
  const auto& dc = cfg_.dcqcn;
  const double mtu = cfg_.mtu.bytes();

  // Injection: each stepped lane sends what its flow injected for it, at most at its DCQCN rate, into its first queue.
  // (A lane's sends can change offers and list ports for process_heat(), never the group itself.)
  for (const std::uint32_t ln : G.lanes) {
    LaneRec& lr = lanes_[ln];
    lr.step_t0 = std::max(t0, lr.t); // a lane stepped since t0 sends from then
    lr.hazard_rate = lr.hazard;      // its hazard at the start (the rate is taken at the end)
    lr.marked_on = kInf;             // no packet of it marked throughout yet
    lr.marked_off = -kInf;
    const double sent = lane_send(lr, t1, t1 - lr.step_t0);
    lr.injected += sent;
    lr.arriving[0] += sent;
    lr.last_delivery = 0;
    lr.t = t1;
    note_drain(lr.flow);
    lane_after_send(ln, t1, t1, sent); // a step's bytes: its events at its end, as the fixed steps' grid has them
  }
  // Egress ports stepped lanes cross, upstream first. The lanes not stepped there pass first (the port is cold for
  // them: what they offer fits); the stepped lanes share what capacity is left, in proportion to what each holds.
  for (std::uint32_t l : G.order) {
    QLink& q = q_[l];
    double held = 0;
    for (const auto& [ln, k] : q.lanes) {
      LaneRec& lr = lanes_[ln];
      if (!lr.stepped) continue;
      lr.backlog[k] += lr.arriving[k];
      lr.arriving[k] = 0;
      held += lr.backlog[k];
    }
    const double others = std::max(0.0, q.in_rate - q.stepped_offer);
    const double service = q.paused ? 0.0 : std::max(0.0, links_[l].capacity - others) * dt;
    // What arrives at no more than the capacity leaves (a relative 1e-12 above is the rounding of a port fed at
    // exactly its capacity, not a queue).
    const double ratio = held > service * (1 + 1e-12) ? service / held : 1.0;
    // Packets leave marked with RED's probability of the queue they leave, which moves linearly over the step, until
    // it empties (its bytes held at the start leave first, at the service left after what arrives): inside RED's band
    // the mean of the probabilities at a piece's two ends (exact however long the step), above K_max every packet.
    const double arrived = std::max(0.0, held - q.queue);
    const double s_end = ratio == 1.0 ? empties_at(q.queue, arrived, service) : 1.0;
    const PathMarking marking =
        dcqcn ? path_marking(dc, q.queue, ratio == 1.0 ? 0.0 : std::max(0.0, held - service), s_end) : PathMarking{};
    const double p = marking.p, hazard = marking.hazard;
    const bool all_marked = marking.off > marking.on;
    double sent = 0;
    for (const auto& [ln, k] : q.lanes) {
      LaneRec& lr = lanes_[ln];
      if (!lr.stepped) continue;
      const double dep = ratio == 1.0 ? lr.backlog[k] : lr.backlog[k] * ratio;
      lr.backlog[k] = ratio == 1.0 ? 0.0 : std::max(0.0, lr.backlog[k] - dep);
      sent += dep;
      if (k + 1 < lr.nq) {
        lr.arriving[k + 1] += dep;
      } else {
        lr.delivered += dep;
        lr.last_delivery += dep;
      }
      if (dep > 0 && hazard > 0) lr.hazard += dep / lr.qps / mtu * hazard;
      if (dep > 0 && all_marked) {
        lr.marked_on = std::min(lr.marked_on, t0 + marking.on * dt);
        lr.marked_off = std::max(lr.marked_off, t0 + marking.off * dt);
      }
    }
    const double queue = ratio == 1.0 ? 0.0 : std::max(0.0, held - sent);
    if ((queue > 0) != (q.queue > 0)) list_heat(l);
    q.slope = (queue - q.queue) / dt;
    q.queue = queue;
    const double marks = (sent + others * dt) / mtu * p;
    q.max_queue = std::max(q.max_queue, q.queue);
    q.marks += marks;
    if (record_links_) {
      integrate(l, t1);
      LinkRec& L = links_[l];
      L.bin_max_queue = std::max(L.bin_max_queue, q.queue);
      L.bin_marks += marks;
    }
  }

  // Notification points: the first mark after the CNP interval sends a CNP, back at the sender a round trip later.
  if (dcqcn)
    for (const std::uint32_t ln : G.lanes) {
      LaneRec& lr = lanes_[ln];
      const bool all_marked = lr.marked_off > lr.marked_on;
      if (!all_marked && lr.hazard < lr.threshold) {
        lr.hazard_rate = (lr.hazard - lr.hazard_rate) / dt;
        continue;
      }
      // Its hazard grew linearly over the step. Each crossing of its threshold is a marked packet, which the
      // notification point handles at the end of the time step it falls in (the grid of time_step inside a longer
      // step: so a long step dates CNPs as time steps would): the first after the CNP interval sends a CNP, back at the
      // sender a round trip later; a crossing inside the interval only draws the next threshold. A lane marked on
      // every packet over part of the step (a port above K_max) sends a CNP at the first grid point out of the interval
      // inside that part.
      const double interval = dc.cnp_interval.seconds();
      const auto grid = [&](double x) { return std::min(t1, t0 + step_ * std::max(1.0, std::ceil((x - t0) / step_))); };
      const auto cnp = [&](double at) {
        lr.last_cnp = at;
        qevents_.post(std::max(t1, at + 2 * lr.latency), QEvent{ln, lr.gen, QEventKind::Cnp});
        ++cnps_;
      };
      if (all_marked) {
        // Every packet it sent through a port above K_max over [marked_on, marked_off] left marked.
        for (double e = std::max(lr.marked_on, lr.last_cnp + interval); e <= lr.marked_off; e = lr.last_cnp + interval)
          cnp(grid(e));
        lr.threshold = next_exponential(lr.rng);
        lr.hazard = 0;
        lr.hazard_rate = kInf;
        continue;
      }
      const double rate = (lr.hazard - lr.hazard_rate) / dt;
      double hz = lr.hazard_rate, at = t0;
      while (rate > 0) {
        const double tc = at + std::max(0.0, lr.threshold - hz) / rate;
        if (tc > t1) break;
        at = grid(tc);
        if (at - lr.last_cnp >= interval) cnp(at);
        lr.threshold = next_exponential(lr.rng);
        hz = 0;
      }
      lr.hazard = hz + rate * (t1 - at);
      lr.hazard_rate = rate;
    }

  // PFC ingress counters: bytes queued at a lane's port came in over the link before it.
  if (cfg_.pfc.enabled) {
    for (std::uint32_t l : G.watch) {
      q_[l].ingress_prev = q_[l].ingress;
      q_[l].ingress = 0;
    }
    for (std::uint32_t l : G.order) {
      if (!(q_[l].queue > 0)) continue;
      for (const auto& [ln, k] : q_[l].lanes) {
        const LaneRec& lr = lanes_[ln];
        if (!(lr.backlog[k] > 0)) continue;
        QLink& in = q_[lr.ingress[k]];
        if (!in.watched) {
          in.watched = true;
          in.ingress = in.ingress_prev = 0;
          in.group = g; // a lane of this group queues here: the link's counter is the group's
          G.watch.push_back(lr.ingress[k]);
        }
        in.ingress += lr.backlog[k];
      }
    }
    const auto& pfc = cfg_.pfc;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < G.watch.size(); ++i) {
      const std::uint32_t l = G.watch[i];
      QLink& in = q_[l];
      const double occ = in.ingress;
      const double excess = std::max(0.0, occ - (pfc.xoff.bytes() + in.headroom));
      if (excess > in.excess) overflow_ += excess - in.excess;
      in.excess = excess;
      in.max_ingress = std::max(in.max_ingress, occ);
      const bool want_pause = (in.paused || in.pause_pending) && !in.resume_pending;
      // When inside the step the counter crossed the threshold, assuming it moved linearly: the PAUSE (RESUME)
      // frame leaves then and takes effect upstream one cable latency (plus the response time) later.
      auto crossing = [&](double threshold) {
        const double before = in.ingress_prev;
        if ((before - threshold) * (occ - threshold) >= 0 || occ == before) return t1;
        return t0 + dt * (threshold - before) / (occ - before);
      };
      const double latency = topo_.link(l).latency.seconds();
      if (occ > pfc.xoff.bytes() && !want_pause) {
        in.resume_pending = false;
        if (!in.paused) {
          in.pause_pending = true;
          qevents_.post(std::max(t1, crossing(pfc.xoff.bytes()) + latency + pfc.response_time.seconds()),
                        QEvent{l, 0, QEventKind::PauseOn});
        }
      } else if (occ < pfc.xon.bytes() && want_pause) {
        in.resume_pending = true;
        qevents_.post(std::max(t1, crossing(pfc.xon.bytes()) + latency), QEvent{l, 0, QEventKind::PauseOff});
      }
      if (occ > 0 || in.paused || in.pause_pending || in.resume_pending)
        G.watch[kept++] = l;
      else
        in.watched = false;
    }
    G.watch.resize(kept);
  }
  // A draining flow's last lane may be done: the model looks at t1.
  if (!drain_check_.empty()) drain_due_ = std::min(drain_due_, t1);
}

void Network::queue_event(const QEvent& e, double t)
{
  switch (e.kind) {
  case QEventKind::Cnp: {
    if (e.a >= lanes_.size()) return;
    LaneRec& lr = lanes_[e.a];
    if (!lr.active || lr.gen != e.gen || lr.injected >= lr.total) return;
    const bool pass = !lr.stepped;
    if (pass)
      sync_lane(e.a, t);
    else
      lr.rp.advance(cfg_.dcqcn, Seconds(t), Bytes(0));
    lr.rp.on_cnp(cfg_.dcqcn, Seconds(t));
    refresh_cap(lr.flow);
    update_offer(e.a);
    if (pass) schedule_lane(e.a);
    return;
  }
  case QEventKind::PauseOn:
    set_pause(e.a, true, t);
    return;
  case QEventKind::PauseOff:
    set_pause(e.a, false, t);
    return;
  }
}

void Network::set_pause(std::uint32_t l, bool on, double t)
{
  QLink& q = q_[l];
  if (on) {
    if (!q.pause_pending) return;
    q.pause_pending = false;
    if (q.paused) return;
    ++q.pause_events;
  } else {
    if (!q.resume_pending) return;
    q.resume_pending = q.pause_pending = false;
    if (!q.paused) return;
  }
  integrate(l, t);
  if (!q.queued)
    for (std::uint32_t ln : q.host_lanes)
      if (!lanes_[ln].stepped) sync_lane(ln, t); // up to the pause (or resume), at what they sent so far
  q.paused = on;
  links_[l].paused = on;
  if (q.queued) {
    list_heat(l); // a switch port: its queue stops being served, and it is hot while paused
    return;
  }
  // A host link: every flow with a lane behind it stops (the ring waits for its slowest edge).
  for (std::uint32_t ln : q.host_lanes) {
    FlowRec& fr = flows_[lanes_[ln].flow];
    fr.paused += on ? 1 : static_cast<std::uint32_t>(-1);
    refresh_cap(lanes_[ln].flow);
    update_offer(ln);
    if (!lanes_[ln].stepped) schedule_lane(ln);
  }
}

} // namespace railyard::sim::coupled
