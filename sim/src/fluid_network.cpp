// The fluid backend. Layout of this file:
//   - state: links, flows, messages (transfers), requests, connections, per-actor wait records;
//   - the actor-facing calls (isend, irecv, timer, wait_any, wait_sends), which only queue work and block;
//   - process(t): the network's event loop, run by one SimGrid kernel timer at the date of the next event;
//   - resolve(): incremental max-min fair rates on the links that changed (fluid_maxmin.cpp);
//   - the queue model for DCQCN/PFC (fluid_queues.cpp) and link sampling.
#include "fluid_network_impl.hpp"

#include <simgrid/kernel/Timer.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace railyard::sim {
namespace sg = simgrid;

std::string to_string(EcmpMode m)
{
  switch (m) {
  case EcmpMode::PerFlow:
    return "per_flow";
  case EcmpMode::PerQp:
    return "per_qp";
  case EcmpMode::Spray:
    return "spray";
  }
  return "?";
}

std::string to_string(CongestionControl c)
{
  switch (c) {
  case CongestionControl::None:
    return "none";
  case CongestionControl::Dcqcn:
    return "dcqcn";
  }
  return "?";
}

std::vector<LinkInfo> describe_links(const topo::Topology& topology)
{
  std::vector<LinkInfo> out(topology.num_links());
  for (topo::LinkId id = 0; id < topology.num_links(); ++id) {
    LinkInfo& info = out[id];
    const auto& from = topology.vertex(topology.link_source(id));
    const auto& to = topology.vertex(topology.link_target(id));
    info.name = topology.link_name(id);
    info.kind = topo::to_string(topology.link(id).kind);
    info.capacity = topology.link(id).bandwidth.bytes_per_sec();
    info.from = static_cast<std::uint32_t>(topology.link_source(id));
    info.from_switch = topo::is_fabric_switch(from.kind);
    info.up = to.tier > from.tier;
  }
  return out;
}

namespace fluid {

Net::Net(const topo::Topology& topology, FluidConfig config, std::uint64_t seed, bool pxn)
    : topo_(topology), cfg_(std::move(config)), seed_(seed), pxn_(pxn), queues_(cfg_.queues())
{
  if (cfg_.qps_per_connection < 1) throw std::invalid_argument("qps_per_connection must be at least 1");
  if (!(cfg_.time_step.seconds() > 0)) throw std::invalid_argument("time_step must be positive");
  if (!(cfg_.sample_interval.seconds() > 0)) throw std::invalid_argument("sample_interval must be positive");
  int max_tier = 0;
  for (std::size_t v = 0; v < topo_.num_vertices(); ++v)
    max_tier = std::max(max_tier, topo_.vertex(v).tier);
  links_.resize(topo_.num_links());
  aux_.resize(topo_.num_links());
  fill_links_.resize(topo_.num_links());
  for (topo::LinkId id = 0; id < topo_.num_links(); ++id) {
    LinkState& l = links_[id];
    l.capacity = topo_.link(id).bandwidth.bytes_per_sec();
    l.latency = topo_.link(id).latency.seconds();
    const auto& from = topo_.vertex(topo_.link_source(id));
    const auto& to = topo_.vertex(topo_.link_target(id));
    const bool from_switch = topo::is_fabric_switch(from.kind);
    // Only switch egress ports queue: NVLink and PCIe are credit-based and a NIC paces its own QPs.
    l.queued = queues_ && from_switch;
    // Up*/down* paths visit egress ports in this order: up by source tier, then down by target tier.
    aux_[id].stage = to.tier > from.tier ? from.tier : 2 * max_tier - to.tier;
    if (cfg_.pfc.enabled) {
      aux_[id].headroom = cfg_.pfc.headroom.bytes() > 0
                              ? cfg_.pfc.headroom.bytes()
                              : models::cc::required_headroom(topo_.link(id).bandwidth, topo_.link(id).latency,
                                                              cfg_.pfc.response_time, cfg_.mtu)
                                    .bytes();
    }
  }
  // With PFC, a step must not exceed the time a PAUSE takes to act (cable latency + response) on any port into a
  // switch, or the headroom sized for that time would be overrun by the step's own delay in noticing XOFF.
  step_ = cfg_.time_step.seconds();
  if (cfg_.pfc.enabled)
    for (topo::LinkId id = 0; id < topo_.num_links(); ++id) {
      const auto& to = topo_.vertex(topo_.link_target(id));
      if (topo::is_fabric_switch(to.kind))
        step_ = std::min(step_, links_[id].latency + cfg_.pfc.response_time.seconds());
    }
  report_.stats.links.resize(links_.size());
  report_.link_info = describe_links(topo_);
}

Net::~Net()
{
  if (armed_) armed_->remove();
}

// ---------------------------------------------------------------------------------------------------------------
// Actor-facing calls. They run in the calling actor's context: they change only this network's own state, queue the
// work for process() and make sure a kernel timer fires at the current date to do it, after every actor runnable at
// this date has run (so transfers posted at one date start, and share links, together).

Net::ActorRec& Net::self()
{
  const auto pid = static_cast<std::size_t>(sg::s4u::this_actor::get_pid());
  if (pid >= actors_.size()) actors_.resize(pid + 1);
  ActorRec& a = actors_[pid];
  if (!a.actor) a.actor = sg::s4u::Actor::self();
  return a;
}

std::uint32_t Net::self_index()
{
  self();
  return static_cast<std::uint32_t>(sg::s4u::this_actor::get_pid());
}

std::uint32_t Net::connection(int src, int dst, std::uint64_t tag)
{
  bool inserted = false;
  std::uint32_t& id = conn_ids_.get((static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32) |
                                        static_cast<std::uint32_t>(dst),
                                    tag, inserted);
  if (inserted) {
    id = static_cast<std::uint32_t>(conns_.size());
    conns_.emplace_back();
    conns_.back().priority = cfg_.pfc.priority;
  }
  return id;
}

void Net::set_priority(int src, int dst, std::uint64_t tag, int priority)
{
  if (priority < 0 || priority > 7) throw std::invalid_argument(fmt::format("priority {} is outside 0..7", priority));
  conns_[connection(src, dst, tag)].priority = priority;
}

std::uint32_t Net::alloc_message()
{
  const std::uint32_t m = messages_.acquire();
  messages_[m] = Message{};
  return m;
}

std::uint32_t Net::alloc_request(std::uint32_t owner, std::uint64_t cookie)
{
  const std::uint32_t r = requests_.acquire();
  Request& req = requests_[r];
  req = Request{};
  req.in_use = true;
  req.owner = owner;
  req.cookie = cookie;
  if (owner & kClientBit) req.client = clients_[owner & ~kClientBit].client;
  return r;
}

void Net::send_from(std::uint32_t sender, int src, int dst, std::uint64_t tag, Bytes bytes)
{
  if (src == dst) throw std::logic_error("isend: a GPU cannot send to itself through the network");
  if (src < 0 || dst < 0 || src >= topo_.num_gpus() || dst >= topo_.num_gpus())
    throw std::out_of_range(fmt::format("isend {} -> {}: GPUs are 0..{}", src, dst, topo_.num_gpus() - 1));
  std::uint32_t conn;
  if (sender & kClientBit) {
    ClientRec& cr = clients_[sender & ~kClientBit];
    cr.outstanding++;
    conn = memo_connection(cr.last_send, src, dst, tag);
  } else {
    actors_[sender].outstanding++;
    conn = connection(src, dst, tag);
  }
  Conn& c = conns_[conn];
  const std::uint32_t m = alloc_message();
  Message& msg = messages_[m];
  msg.conn = conn;
  msg.src = src;
  msg.dst = dst;
  msg.tag = tag;
  msg.bytes = std::max(0.0, bytes.bytes());
  msg.sender = sender;
  msg.priority = c.priority;
  totals_.flows_sent++;
  totals_.bytes_sent += msg.bytes;
  if (c.recv_head != kNone) {
    const std::uint32_t r = c.recv_head;
    c.recv_head = requests_[r].next;
    if (c.recv_head == kNone) c.recv_tail = kNone;
    match(m, r);
  } else {
    if (c.send_tail == kNone)
      c.send_head = m;
    else
      messages_[c.send_tail].next = m;
    c.send_tail = m;
  }
}

std::uint32_t Net::recv_for(std::uint32_t owner, int dst, int src, std::uint64_t tag, std::uint64_t cookie)
{
  if (src < 0 || dst < 0 || src >= topo_.num_gpus() || dst >= topo_.num_gpus())
    throw std::out_of_range(fmt::format("irecv {} <- {}: GPUs are 0..{}", dst, src, topo_.num_gpus() - 1));
  const std::uint32_t r = alloc_request(owner, cookie);
  Conn& c = conns_[(owner & kClientBit) ? memo_connection(clients_[owner & ~kClientBit].last_recv, src, dst, tag)
                                        : connection(src, dst, tag)];
  if (c.send_head != kNone) {
    const std::uint32_t m = c.send_head;
    c.send_head = messages_[m].next;
    if (c.send_head == kNone) c.send_tail = kNone;
    match(m, r);
  } else {
    if (c.recv_tail == kNone)
      c.recv_head = r;
    else
      requests_[c.recv_tail].next = r;
    c.recv_tail = r;
  }
  return r;
}

void Net::match(std::uint32_t m, std::uint32_t r)
{
  messages_[m].request = r;
  messages_[m].next = kNone;
  requests_[r].next = kNone;
  // A transfer leaves once the one before it on its connection has left (its last byte injected, not arrived: the
  // stream pipelines over the path latency).
  Conn& c = conns_[messages_[m].conn];
  if (c.streaming != kNone) {
    if (c.wait_tail == kNone)
      c.wait_head = m;
    else
      messages_[c.wait_tail].next = m;
    c.wait_tail = m;
    return;
  }
  c.streaming = m;
  pending_.push_back(m);
  arm(clock());
}

void Net::stream_next(std::uint32_t conn)
{
  Conn& c = conns_[conn];
  c.streaming = c.wait_head;
  if (c.wait_head == kNone) return;
  c.wait_head = messages_[c.wait_head].next;
  if (c.wait_head == kNone) c.wait_tail = kNone;
  messages_[c.streaming].next = kNone;
  pending_.push_back(c.streaming); // started in the same process_date() pass
}

std::uint32_t Net::timer_for(std::uint32_t owner, Seconds at, std::uint64_t cookie)
{
  const std::uint32_t r = alloc_request(owner, cookie);
  const double t = std::max(at.seconds(), clock());
  push(t, EventKind::Timer, r, 0);
  arm(t);
  return r;
}

std::size_t Net::wait_any(const std::vector<RequestId>& ids)
{
  // By index: other actors may grow actors_ while this one is suspended.
  const std::uint32_t me = self_index();
  while (true) {
    std::size_t best = ids.size();
    double best_t = kInf;
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const Request& r = requests_.at(ids[i]);
      if (!r.in_use) throw std::logic_error("wait_any: a request was already completed and forgotten");
      if (r.done_at >= 0 && r.done_at < best_t) {
        best_t = r.done_at;
        best = i;
      }
    }
    if (best < ids.size()) {
      const std::uint32_t id = static_cast<std::uint32_t>(ids[best]);
      requests_[id] = Request{};
      requests_.release(id);
      return best;
    }
    if (ids.empty()) throw std::logic_error("wait_any: nothing to wait for");
    actors_[me].waiting = true;
    sg::s4u::this_actor::suspend();
  }
}

void Net::wait_sends()
{
  const std::uint32_t me = self_index();
  while (actors_[me].outstanding > 0) {
    actors_[me].waiting_sends = true;
    sg::s4u::this_actor::suspend();
  }
}

void Net::wake(std::uint32_t actor)
{
  ActorRec& a = actors_[actor];
  if (a.waiting) {
    a.waiting = false;
    resume(a.actor);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Event-driven clients: the same matching and flows, with callbacks instead of suspended actors.

std::uint32_t Net::add_client(FlowClient& client)
{
  clients_.push_back(ClientRec{&client, 0, false, {}, {}});
  return static_cast<std::uint32_t>(clients_.size() - 1);
}

void Net::client_irecv(std::uint32_t client, int dst, int src, std::uint64_t tag, std::uint64_t cookie)
{
  ++client_work_;
  recv_for(kClientBit | client, dst, src, tag, cookie);
}

void Net::client_timer(std::uint32_t client, Seconds at, std::uint64_t cookie)
{
  ++client_work_;
  if (cookie > 0xffffffffULL) {
    timer_for(kClientBit | client, at, cookie);
    return;
  }
  // The event carries the client and its cookie: no request to allocate, fill and free for the commonest post.
  const double t = std::max(at.seconds(), clock());
  push(t, EventKind::ClientTimer, client, static_cast<std::uint32_t>(cookie));
  arm(t);
}

void Net::client_watch_sends(std::uint32_t client)
{
  ClientRec& c = clients_.at(client);
  if (c.outstanding == 0) {
    c.client->on_sends_done();
    return;
  }
  if (!c.watching) {
    c.watching = true;
    ++client_work_;
  }
}

void Net::wait_clients()
{
  while (client_work_ > 0) {
    clients_waiter_ = sg::s4u::Actor::self();
    sg::s4u::this_actor::suspend();
  }
  clients_waiter_ = nullptr;
}

void Net::client_work_done()
{
  if (--client_work_ == 0 && clients_waiter_ != nullptr) resume(clients_waiter_);
}

void Net::complete_request(std::uint32_t r, double t)
{
  Request& req = requests_[r];
  const std::uint32_t owner = req.owner;
  if ((owner & kClientBit) == 0) {
    req.done_at = t;
    wake(owner);
    return;
  }
  const std::uint64_t cookie = req.cookie;
  FlowClient* client = req.client;
  req = Request{};
  requests_.release(r);
  deliver(*client, cookie);
}

void Net::deliver(FlowClient& client, std::uint64_t cookie)
{
  client.on_complete(cookie);
  client_work_done();
}

void Net::send_ended(std::uint32_t sender)
{
  if (sender & kClientBit) {
    ClientRec& c = clients_[sender & ~kClientBit];
    if (--c.outstanding == 0 && c.watching) {
      c.watching = false;
      c.client->on_sends_done();
      client_work_done();
    }
    return;
  }
  ActorRec& s = actors_[sender];
  if (--s.outstanding == 0 && s.waiting_sends) {
    s.waiting_sends = false;
    resume(s.actor);
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The event loop.

void Net::push(double t, EventKind kind, std::uint32_t a, std::uint32_t b)
{
  calendar_.post(t, Event{a, b, kind, t});
}

double Net::next_time() const
{
  return std::min(calendar_.next_date(), sample_next_);
}

void Net::arm(double t)
{
  // One pending kernel timer at a time, at the date of the earliest thing to do; process() arms it when it ends.
  if (processing_ || (armed_ && armed_t_ <= t)) return;
  if (armed_) armed_->remove();
  armed_t_ = t;
  armed_ = sg::kernel::timer::Timer::set(t, [this, t] {
    armed_ = nullptr;
    armed_t_ = kInf;
    process(t);
  });
}

void Net::resume(simgrid::s4u::Actor* actor)
{
  woke_ = true;
  if (now_ > sg::s4u::Engine::get_clock())
    deferred_.push_back(actor); // ran ahead of SimGrid's clock: the actor must run at now_, not before
  else
    actor->resume();
}

bool Net::may_run_ahead(double next) const
{
  // The network may take its next date itself, without a round through SimGrid's loop, when nothing else in the
  // simulation can act before it: the only actor is the one waiting for the clients (suspended in wait_clients), no
  // actor uses the network directly, this call woke nobody, and no kernel timer is due by then.
  if (woke_ || !actors_.empty() || clients_waiter_ == nullptr ||
      sg::s4u::Engine::get_instance()->get_actor_count() != 1)
    return false;
  const double timer = sg::kernel::timer::Timer::next();
  return timer < 0 || timer > next;
}

void Net::process(double t)
{
  processing_ = true;
  woke_ = false;
  while (true) {
    now_ = std::max(now_, t);
    t = now_;
    process_date(t);
    if (progress_) progress_->publish_transfers(t, totals_.flows_received);
    const double next = next_time();
    if (!(next < kInf) || !may_run_ahead(next)) break;
    t = next;
  }
  processing_ = false;
  if (!deferred_.empty()) {
    // Resume what the last date woke once SimGrid's clock has caught up with it.
    sg::kernel::timer::Timer::set(now_, [this] {
      std::vector<simgrid::s4u::Actor*> actors;
      actors.swap(deferred_);
      for (auto* a : actors)
        a->resume();
    });
  }
  if (next_time() < kInf) arm(next_time());
}

void Net::process_date(double t)
{
  // The queues integrate up to a date where something happens to the flows. A date that only samples the links does
  // not move them (its samples hold the queues as of their last step): what is recorded, and how often, never changes
  // the queue model's steps, and so never what is simulated. Samples are therefore not calendar events.
  const bool physical = calendar_.next_date() <= t || !pending_.empty() || !dirty_.empty() || !lonely_dirty_.empty();
  if (queues_ && physical) advance_queues(t);
  while (true) {
    while (calendar_.next_date() <= t) {
      // The earliest date's events, in posting order; what they post at the same date runs after them.
      calendar_.run_next([&](const Event& e) { dispatch(e, t); });
    }
    if (!pending_.empty()) start_pending(t);
    if (!dirty_.empty() || !lonely_dirty_.empty()) resolve(t);
    if (calendar_.next_date() > t) break;
  }
  // A sample is taken once the queues have been integrated to its date: at the sample time itself without queues
  // running, else at the first date they reach (a step's end), so every interval holds whole queue steps and no link
  // shows more bytes than its capacity allows.
  if (sample_next_ <= t) {
    sample_next_ = kInf;
    sample_due_ = true;
  }
  if (sample_due_ && (!queues_ || fabric_flows_ == 0 || queue_t_ >= t)) {
    sample_due_ = false;
    flush_samples(t);
  }
  if (queues_ && fabric_flows_ > 0 && !step_scheduled_) {
    step_scheduled_ = true;
    push(queue_t_ + step_, EventKind::Step, 0, 0);
  }
  if (cfg_.record_links && sample_next_ == kInf && !sample_due_ && active_flows_ > 0) {
    // Samples are due on the grid k x sample_interval, the first point after the last sample: a late sample (one that
    // waited for a queue step) does not shift the ones after it.
    const double interval = cfg_.sample_interval.seconds();
    while (static_cast<double>(sample_k_) * interval <= sample_t_)
      ++sample_k_;
    sample_next_ = static_cast<double>(sample_k_) * interval;
  }
}

void Net::dispatch(const Event& e, double now)
{
  switch (e.kind) {
  case EventKind::FlowEnd: {
    Flow& f = flows_[e.a];
    if (f.active && f.version == e.b) end_flow(e.a, e.t);
    break;
  }
  case EventKind::Arrival:
    complete_message(e.a, e.t);
    break;
  case EventKind::Timer:
    complete_request(e.a, e.t);
    break;
  case EventKind::ClientTimer:
    deliver(*clients_[e.a].client, e.b);
    break;
  case EventKind::Step:
    step_scheduled_ = false;
    break;
  case EventKind::Cnp:
    on_cnp(e.a, e.b, e.t);
    break;
  case EventKind::PauseOn:
    set_pause(e.a, static_cast<int>(e.b), true, e.t);
    break;
  case EventKind::PauseOff:
    set_pause(e.a, static_cast<int>(e.b), false, e.t);
    break;
  }
  (void)now;
}

// ---------------------------------------------------------------------------------------------------------------
// Transfers become flows.

std::uint32_t Net::alloc_flow()
{
  const std::uint32_t f = flows_.acquire();
  Flow& fl = flows_[f];
  const std::uint32_t gen = fl.gen + 1, version = fl.version + 1;
  static_cast<FlowHead&>(fl) = FlowHead{};
  fl.gen = gen;
  fl.version = version;
  return f;
}

std::optional<RouteRef> Net::single_route(int src, int dst)
{
  bool inserted = false;
  PairRoute& pr = pair_routes_.get(static_cast<std::uint64_t>(src), static_cast<std::uint64_t>(dst), inserted);
  if (!pr.known) {
    pr.known = true;
    const auto paths = topo_.all_paths(src, dst, pxn_, 2);
    pr.single = paths.size() == 1;
    if (pr.single) pr.route = store_route(paths.front());
  }
  return pr.single ? std::optional<RouteRef>(pr.route) : std::nullopt;
}

const std::vector<topo::Path>& Net::spray_paths(int src, int dst)
{
  const std::uint64_t key = pair_key(src, dst);
  auto it = spray_cache_.find(key);
  if (it == spray_cache_.end())
    it = spray_cache_.emplace(key, topo_.all_paths(src, dst, pxn_, cfg_.spray_max_paths)).first;
  return it->second;
}

void Net::start_pending(double t)
{
  // Swap out first: starting a flow never posts new transfers, but keep the loop independent of that.
  starting_.swap(pending_);
  for (std::uint32_t m : starting_) {
    Message& msg = messages_[m];
    msg.start = t;
    ++report_.stats.messages;
    if (report_.stats.first_start < 0) report_.stats.first_start = t;
    const int q = cfg_.qps_per_connection;
    if (cfg_.ecmp == EcmpMode::Spray) {
      const auto& paths = spray_paths(msg.src, msg.dst);
      const double n = static_cast<double>(paths.size()) * q;
      for (int qp = 0; qp < q; ++qp)
        for (std::size_t p = 0; p < paths.size(); ++p)
          add_flow(m, paths[p], msg.bytes / n, 1.0 / static_cast<double>(paths.size()),
                   static_cast<int>(p) + qp * static_cast<int>(paths.size()), t);
    } else {
      Conn& c = conns_[msg.conn];
      if (c.routes == kNone && !c.per_flow_hash) {
        // The connection's QPs keep their paths unless ECMP hashes every flow over several: found once, at its
        // first transfer.
        const std::optional<RouteRef> only = single_route(msg.src, msg.dst);
        if (!only && cfg_.ecmp == EcmpMode::PerFlow) {
          c.per_flow_hash = true;
        } else {
          c.routes = static_cast<std::uint32_t>(routes_.size());
          for (int qp = 0; qp < q; ++qp) {
            if (only) {
              routes_.push_back(*only);
              continue;
            }
            // The QP's 5-tuple: both ends, the connection and the QP. Topology::route's switch hash sees only this
            // key, so the pair must be in it, or every pair's QP 0 would take the same uplink.
            const std::uint64_t pair = pair_key(msg.src, msg.dst);
            const std::uint64_t key =
                splitmix64(splitmix64(splitmix64(pair) ^ msg.tag) ^ static_cast<std::uint64_t>(qp));
            routes_.push_back(store_route(topo_.route(msg.src, msg.dst, key, seed_, pxn_)));
          }
        }
      }
      if (c.per_flow_hash) {
        // A new hash per flow: the k-th flow of the pair.
        for (int qp = 0; qp < q; ++qp) {
          bool inserted = false;
          const std::uint64_t key =
              flows_per_pair_.get(static_cast<std::uint64_t>(msg.src), static_cast<std::uint64_t>(msg.dst), inserted)++;
          add_flow(m, topo_.route(msg.src, msg.dst, key, seed_, pxn_), msg.bytes / q, 1.0, qp, t);
        }
        continue;
      }
      for (int qp = 0; qp < q; ++qp) {
        const RouteRef route = routes_[c.routes + static_cast<std::uint32_t>(qp)];
        add_flow(m, route_links_.data() + route.offset, route, msg.bytes / q, 1.0, qp, t);
      }
    }
  }
  starting_.clear();
}

RouteRef Net::store_route(const topo::Path& path)
{
  const auto offset = static_cast<std::uint32_t>(route_links_.size());
  for (topo::LinkId l : path)
    route_links_.push_back(static_cast<std::uint32_t>(l));
  RouteRef r = describe(route_links_.data() + offset, path.size());
  r.offset = offset;
  return r;
}

RouteRef Net::describe(const std::uint32_t* path, std::size_t hops) const
{
  RouteRef r;
  r.hops = static_cast<std::uint32_t>(hops);
  for (std::size_t h = 0; h < hops; ++h) {
    r.latency += links_[path[h]].latency;
    r.fabric = r.fabric || links_[path[h]].queued;
  }
  return r;
}

void Net::add_flow(std::uint32_t m, const topo::Path& path, double bytes, double weight, int qp, double t)
{
  path_scratch_.clear();
  for (topo::LinkId l : path)
    path_scratch_.push_back(static_cast<std::uint32_t>(l));
  add_flow(m, path_scratch_.data(), describe(path_scratch_.data(), path_scratch_.size()), bytes, weight, qp, t);
}

void Net::add_flow(std::uint32_t m, const std::uint32_t* path, const RouteRef& route, double bytes, double weight,
                   int qp, double t)
{
  const std::size_t hops = route.hops;
  if (hops > kMaxHops)
    throw std::logic_error(fmt::format("a path of {} links is longer than the fluid backend's {}", hops, kMaxHops));
  const std::uint32_t f = alloc_flow();
  Flow& fl = flows_[f];
  Message& msg = messages_[m];
  fl.active = true;
  fl.message = m;
  fl.bytes = fl.remaining = bytes;
  fl.start = fl.last_t = t;
  fl.weight = weight;
  fl.qp = qp;
  fl.priority = static_cast<std::int8_t>(msg.priority);
  fl.hops = static_cast<std::uint8_t>(hops);
  fl.id = next_flow_id_++;
  msg.pending++;
  ++active_flows_;
  ++report_.stats.flows;
  std::copy(path, path + hops, fl.links.begin());
  fl.latency = route.latency;
  if (bytes <= 0) {
    // Nothing to move: only the latency remains.
    fl.hops_joined = false;
    push(t, EventKind::FlowEnd, f, fl.version);
    return;
  }
  fl.hops_joined = true;
  double line = kInf;
  bool queued_seen = false;
  for (std::size_t h = 0; h < hops; ++h) {
    const std::uint32_t l = fl.links[h];
    LinkState& ls = links_[l];
    ls.tot_flows++;
    ls.tot_max_flows = std::max(ls.tot_max_flows, ++ls.flows_now);
    if (cfg_.record_links) {
      aux_[l].s_max_flows = std::max(aux_[l].s_max_flows, ls.flows_now);
      touch(l);
    }
    if (ls.queued) {
      auto& fab = aux_[l].fab;
      fl.pos[h] = static_cast<std::uint32_t>(fab.size());
      fab.push_back(Slot{f, static_cast<std::uint32_t>(h)});
      queued_seen = true;
    } else if (queued_seen) {
      // Past the first switch queue the queue model moves the bytes: a link there (the receiver's NIC or PCIe)
      // must not hold back what the sender injects.
      fl.pos[h] = kNone;
    } else {
      fl.mm_hop[fl.n_mm++] = static_cast<std::uint8_t>(h);
      fl.pos[h] = ls.mm.size();
      ls.mm.push_back(Slot{f, static_cast<std::uint32_t>(h)});
      mark_dirty(l);
      line = std::min(line, ls.capacity);
    }
  }
  if (route.fabric) start_fabric_flow(f, line, t);
}

void Net::end_flow(std::uint32_t f, double t)
{
  Flow& fl = flows_[f];
  report_.stats.last_end = std::max(report_.stats.last_end, t);
  if (fl.hops_joined) {
    for (int i = 0; i < fl.n_mm; ++i) {
      const int h = fl.mm_hop[i];
      const std::uint32_t l = fl.links[h];
      LinkState& ls = links_[l];
      if (cfg_.record_links) {
        integrate(l, now_);
        aux_[l].rate_sum -= fl.rate;
      }
      remove_slot(ls.mm, fl.pos[h]);
      // The flows left on the link may speed up; a link left empty has nothing to recompute.
      if (!ls.mm.empty()) mark_dirty(l);
    }
    if (fl.fab != kNone) end_fabric_flow(f);
    for (int h = 0; h < fl.hops; ++h) {
      LinkState& ls = links_[fl.links[h]];
      ls.flows_now--;
      ls.tot_bytes += fl.bytes;
    }
  }
  --active_flows_;
  if (cfg_.record_flows) {
    FlowRecord rec;
    const Message& msg = messages_[fl.message];
    rec.id = fl.id;
    rec.src = msg.src;
    rec.dst = msg.dst;
    rec.tag = msg.tag;
    rec.qp = fl.qp;
    rec.bytes = fl.bytes;
    rec.start = fl.start;
    rec.end = t;
    rec.arrival = t + fl.latency;
    rec.path_offset = static_cast<std::uint32_t>(report_.paths.size());
    rec.hops = fl.hops;
    report_.paths.insert(report_.paths.end(), fl.links.begin(), fl.links.begin() + fl.hops);
    report_.flows.push_back(rec);
  }
  Message& msg = messages_[fl.message];
  msg.arrival = std::max(msg.arrival, t + fl.latency);
  fl.active = false;
  fl.version++;
  flows_.release(f);
  if (--msg.pending == 0) {
    push(msg.arrival, EventKind::Arrival, fl.message, 0);
    stream_next(msg.conn);
    send_ended(msg.sender);
  }
}

void Net::complete_message(std::uint32_t m, double t)
{
  Message& msg = messages_[m];
  totals_.flows_received++;
  totals_.bytes_received += msg.bytes;
  const std::uint32_t r = msg.request;
  messages_.release(m);
  complete_request(r, t);
}

void Net::mark_dirty(std::uint32_t l)
{
  LinkState& ls = links_[l];
  if (!ls.dirty) {
    ls.dirty = true;
    dirty_.push_back(l);
  }
}

void Net::mark_flow_dirty(std::uint32_t f)
{
  const Flow& fl = flows_[f];
  for (int i = 0; i < fl.n_mm; ++i)
    mark_dirty(fl.links[fl.mm_hop[i]]);
  if (fl.n_mm == 0) lonely_dirty_.push_back(f);
}

// ---------------------------------------------------------------------------------------------------------------
// Link sampling.

void Net::touch(std::uint32_t l)
{
  LinkAux& a = aux_[l];
  if (!a.touched) {
    a.touched = true;
    touched_.push_back(l);
  }
}

void Net::integrate(std::uint32_t l, double t)
{
  LinkAux& a = aux_[l];
  if (t > a.acc_t) {
    a.s_bytes += a.rate_sum * (t - a.acc_t);
    a.acc_t = t;
  }
}

void Net::flush_samples(double t)
{
  if (!cfg_.record_links) return;
  const double interval = t - sample_t_;
  std::sort(touched_.begin(), touched_.end());
  std::vector<std::uint32_t> keep;
  for (std::uint32_t l : touched_) {
    const LinkState& ls = links_[l];
    LinkAux& a = aux_[l];
    integrate(l, t);
    if (ls.paused_mask != 0) {
      a.s_paused += t - a.pause_mark;
      a.pause_mark = t;
    }
    if (a.s_bytes > 0 || a.s_max_queue > 0 || a.s_paused > 0) {
      LinkSample s;
      s.time = sample_t_;
      s.interval = interval;
      s.link = l;
      s.bytes = a.s_bytes;
      s.utilisation = interval > 0 && ls.capacity > 0 ? a.s_bytes / (ls.capacity * interval) : 0;
      s.max_queue = a.s_max_queue;
      s.marks = a.s_marks;
      s.paused = a.s_paused;
      s.max_flows = a.s_max_flows;
      report_.links.push_back(s);
    }
    a.s_bytes = 0;
    a.s_max_queue = a.queue;
    a.s_marks = 0;
    a.s_paused = 0;
    a.s_max_flows = ls.flows_now;
    a.touched = false;
    if (ls.flows_now > 0 || a.queue > 0 || ls.paused_mask != 0) {
      a.touched = true;
      keep.push_back(l);
    }
  }
  touched_.swap(keep);
  sample_t_ = t;
}

const FluidReport& Net::report()
{
  if (!finalized_) {
    finalized_ = true;
    const double t = std::max(now_, sample_t_);
    if (cfg_.record_links && !touched_.empty()) flush_samples(t);
    FluidStats& st = report_.stats;
    for (std::size_t l = 0; l < links_.size(); ++l) {
      const LinkState& ls = links_[l];
      LinkAux& a = aux_[l];
      st.links[l].bytes = ls.tot_bytes;
      st.links[l].flows = ls.tot_flows;
      st.links[l].max_flows = ls.tot_max_flows;
      if (ls.paused_mask != 0) {
        st.links[l].paused += t - a.pause_since;
        a.pause_since = t;
      }
      st.pause_time += st.links[l].paused;
      st.ecn_marks += st.links[l].marks;
      if (st.links[l].max_queue > st.max_queue) {
        st.max_queue = st.links[l].max_queue;
        st.max_queue_link = static_cast<std::int64_t>(l);
      }
    }
  }
  return report_;
}

} // namespace fluid

// ---------------------------------------------------------------------------------------------------------------
// The public class forwards to the implementation.

struct FluidNetwork::Impl {
  fluid::Net net;
  Impl(const topo::Topology& t, FluidConfig c, std::uint64_t seed, bool pxn) : net(t, std::move(c), seed, pxn) {}
};

FluidNetwork::FluidNetwork(const topo::Topology& topology, FluidConfig config, std::uint64_t seed, bool pxn)
    : impl_(std::make_unique<Impl>(topology, std::move(config), seed, pxn))
{
}

FluidNetwork::~FluidNetwork() = default;
void FluidNetwork::isend(int src, int dst, std::uint64_t tag, Bytes bytes)
{
  impl_->net.isend(src, dst, tag, bytes);
}
RequestId FluidNetwork::irecv(int dst, int src, std::uint64_t tag)
{
  return impl_->net.irecv(dst, src, tag);
}
RequestId FluidNetwork::timer(Seconds at)
{
  return impl_->net.timer(at);
}
std::size_t FluidNetwork::wait_any(const std::vector<RequestId>& requests)
{
  return impl_->net.wait_any(requests);
}
void FluidNetwork::wait_sends()
{
  impl_->net.wait_sends();
}
std::uint32_t FluidNetwork::add_client(FlowClient& client)
{
  return impl_->net.add_client(client);
}
void FluidNetwork::client_isend(std::uint32_t client, int src, int dst, std::uint64_t tag, Bytes bytes)
{
  impl_->net.client_isend(client, src, dst, tag, bytes);
}
void FluidNetwork::client_irecv(std::uint32_t client, int dst, int src, std::uint64_t tag, std::uint64_t cookie)
{
  impl_->net.client_irecv(client, dst, src, tag, cookie);
}
void FluidNetwork::client_timer(std::uint32_t client, Seconds at, std::uint64_t cookie)
{
  impl_->net.client_timer(client, at, cookie);
}
void FluidNetwork::client_watch_sends(std::uint32_t client)
{
  impl_->net.client_watch_sends(client);
}
void FluidNetwork::wait_clients()
{
  impl_->net.wait_clients();
}
Seconds FluidNetwork::now() const
{
  return Seconds(impl_->net.clock());
}
const FlowTotals& FluidNetwork::totals() const
{
  return impl_->net.totals();
}
void FluidNetwork::set_progress(ProgressProbe* probe)
{
  impl_->net.set_progress(probe);
}
void FluidNetwork::set_priority(int src, int dst, std::uint64_t tag, int priority)
{
  impl_->net.set_priority(src, dst, tag, priority);
}
void FluidNetwork::on_queue_step(std::function<void(const QueueStep&)> observer)
{
  impl_->net.on_queue_step(std::move(observer));
}
const FluidConfig& FluidNetwork::config() const
{
  return impl_->net.config();
}
const FluidReport& FluidNetwork::report()
{
  return impl_->net.report();
}
FluidReport FluidNetwork::take_report()
{
  impl_->net.report();
  return impl_->net.take_report();
}

} // namespace railyard::sim
