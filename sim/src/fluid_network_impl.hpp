// Internals of the fluid backend (see railyard/sim/fluid.hpp for what it models).
#pragma once

#include "fluid_fifo.hpp"
#include "railyard/common/hash.hpp"
#include "railyard/common/slot_pool.hpp"
#include "railyard/sim/event_calendar.hpp"
#include "railyard/sim/fluid.hpp"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>
#include <vector>

namespace simgrid::kernel::timer {
class Timer;
}

namespace railyard::sim::fluid {

constexpr std::uint32_t kNone = 0xffffffffU;
/// 2 NVLink (PXN) + GPU->NIC->leaf + 4 switch hops + leaf->NIC->GPU is 10; two spare.
constexpr int kMaxHops = 12;
constexpr double kInf = std::numeric_limits<double>::infinity();

enum class EventKind : std::uint8_t { FlowEnd, Arrival, Timer, ClientTimer, Step, Cnp, PauseOn, PauseOff };

/// An event of the network's calendar (event_calendar.hpp: date order, then posting order).
struct Event {
  std::uint32_t a, b;
  EventKind kind;
  double t;
};

/// A flow on a link: the flow and which hop of its path the link is.
struct Slot {
  std::uint32_t flow;
  std::uint32_t hop;
};

/// The flows on a link. Almost every link carries zero or one flow at a time (a ring's edge), so one slot lives
/// inline and more move to the heap: a link's list costs no allocation and no cache line of its own.
class SlotList {
public:
  SlotList() = default;
  SlotList(const SlotList&) = delete;
  SlotList& operator=(const SlotList&) = delete;
  SlotList(SlotList&& o) noexcept : size_(o.size_), cap_(o.cap_)
  {
    if (cap_ > 1)
      u_.heap = o.u_.heap;
    else
      u_.one = o.u_.one;
    o.size_ = 0;
    o.cap_ = 1;
  }
  SlotList& operator=(SlotList&&) = delete;
  ~SlotList()
  {
    if (cap_ > 1) delete[] u_.heap;
  }

  [[nodiscard]] Slot* begin() { return cap_ > 1 ? u_.heap : &u_.one; }
  [[nodiscard]] Slot* end() { return begin() + size_; }
  [[nodiscard]] const Slot* begin() const { return cap_ > 1 ? u_.heap : &u_.one; }
  [[nodiscard]] const Slot* end() const { return begin() + size_; }
  [[nodiscard]] std::uint32_t size() const { return size_; }
  [[nodiscard]] bool empty() const { return size_ == 0; }
  Slot& operator[](std::uint32_t i) { return begin()[i]; }
  Slot& back() { return begin()[size_ - 1]; }
  void pop_back() { --size_; }
  void push_back(Slot s)
  {
    if (size_ == cap_) {
      const std::uint32_t cap = cap_ < 4 ? 4 : 2 * cap_;
      auto* heap = new Slot[cap];
      std::copy(begin(), end(), heap);
      if (cap_ > 1) delete[] u_.heap;
      u_.heap = heap;
      cap_ = cap;
    }
    begin()[size_++] = s;
  }

private:
  union {
    Slot one;
    Slot* heap;
  } u_{Slot{0, 0}};
  std::uint32_t size_ = 0, cap_ = 1;
};

/// What every flow event touches on a link, in one cache line: a large ring touches a few links per transfer, spread
/// over tens of thousands, so each must cost one miss at most. The rest is in LinkAux and LinkFill.
struct alignas(64) LinkState {
  double capacity = 0;
  double latency = 0;
  SlotList mm; ///< flows whose max-min rate this link constrains
  std::uint32_t flows_now = 0;
  std::uint32_t tot_max_flows = 0;
  std::uint64_t tot_flows = 0;
  double tot_bytes = 0;
  bool queued = false; ///< switch egress port modelled as a fluid queue (only when queues are on)
  bool dirty = false, in_r = false;
  std::uint8_t paused_mask = 0; ///< priorities paused by the downstream port's PFC
};
static_assert(sizeof(LinkState) == 64, "LinkState is meant to fill one cache line");

/// Max-min scratch of a link (fluid_maxmin.cpp), touched only when flows share it.
struct LinkFill {
  bool bottleneck = false;
  std::uint32_t mark = 0, stamp = 0, unfrozen = 0, in_f = 0;
  double res = 0, wsum = 0;
  double bottleneck_level = kInf;
};

/// Queue-model and sampling state of a link.
struct LinkAux {
  int stage = 0;         ///< position of this egress along up*/down* paths
  std::vector<Slot> fab; ///< flows queued at this egress port
  double queue = 0;
  double headroom = 0;
  std::array<double, 8> ingress{};      ///< PFC ingress counter per priority
  std::array<double, 8> ingress_prev{}; ///< the same at the end of the previous step
  std::array<double, 8> excess{};       ///< bytes above XOFF + headroom at the last step
  std::uint8_t pause_pending = 0, resume_pending = 0;
  double pause_since = 0; ///< when it became paused (any priority)
  double pause_mark = 0;  ///< paused time counted for sampling up to here
  bool pfc_watched = false;
  bool in_busy = false; ///< listed in queue_order_

  // sampling
  double rate_sum = 0, acc_t = 0;
  double s_bytes = 0, s_max_queue = 0, s_marks = 0, s_paused = 0;
  std::uint32_t s_max_flows = 0;
  bool touched = false;
};

/// A flow's scalar state, reset when its slot is reused (the path arrays are written as the flow starts).
struct FlowHead {
  std::uint64_t id = 0;
  std::uint32_t message = kNone;
  std::uint32_t version = 0; ///< bumped on every rate change: older FlowEnd events are stale
  std::uint32_t gen = 0;     ///< bumped when the slot is reused: older CNP events are stale
  std::uint32_t fab = kNone; ///< queue-model state, when the flow crosses switch egress queues
  double bytes = 0, remaining = 0, last_t = 0, start = 0, latency = 0;
  double rate = 0, new_rate = 0, weight = 1, cap = kInf;
  int qp = 0;
  std::int8_t priority = 3;
  std::uint8_t hops = 0, n_mm = 0;
  bool active = false, hops_joined = false;
  // max-min scratch
  std::uint32_t mark = 0;
  bool frozen = false;
};

struct Flow : FlowHead {
  std::array<std::uint32_t, kMaxHops> links{};
  std::array<std::uint32_t, kMaxHops> pos{};   ///< position in that link's mm or fab list
  std::array<std::uint8_t, kMaxHops> mm_hop{}; ///< hops whose links constrain the max-min rate
};

/// Queue-model state of one flow (DCQCN/PFC on).
struct FabricFlow {
  std::uint32_t flow = kNone;
  std::uint8_t nq = 0;
  std::array<std::uint8_t, kMaxHops> qhop{}; ///< path hops of its queued links, in order
  std::array<double, kMaxHops> backlog{};    ///< bytes of this flow queued at each queued hop
  std::array<double, kMaxHops> arriving{};   ///< bytes reaching each queued hop during the current step
  double injected = 0, delivered = 0, last_delivery = 0;
  bool cc = false;
  models::cc::ReactionPoint rp;
  double hazard = 0, threshold = 1, last_cnp = -kInf;
  std::uint64_t rng = 0;
};

struct Message {
  int src = 0, dst = 0;
  std::uint64_t tag = 0;
  double bytes = 0, start = 0, arrival = 0;
  std::uint32_t request = kNone, next = kNone, sender = kNone, pending = 0;
  std::uint32_t conn = kNone;
  int priority = 3;
};

/// Owners of requests and senders of messages are actors (their SimGrid pid) or clients (kClientBit | index).
inline constexpr std::uint32_t kClientBit = 0x80000000u;

struct Request {
  double done_at = -1;
  std::uint32_t owner = kNone, next = kNone;
  bool in_use = false;
  std::uint64_t cookie = 0;     ///< a client's
  FlowClient* client = nullptr; ///< the owner, when it is a client (saves a lookup in clients_)
};

/// Transfers and receives waiting for their match on one (src, dst, tag) connection, as FIFO lists.
struct Conn {
  std::uint32_t send_head = kNone, send_tail = kNone, recv_head = kNone, recv_tail = kNone;
  /// A connection is one stream (NCCL writes a connection's FIFO slots in order): the matched transfer injecting
  /// now, and the matched ones waiting for it to leave, in order (Message::next).
  std::uint32_t streaming = kNone, wait_head = kNone, wait_tail = kNone;
  int priority = 3;
  /// The paths of its QPs, when they are the same for every transfer (the pair has one path, or ECMP hashes per
  /// QP): qps_per_connection entries of routes_ from here, found at its first transfer.
  std::uint32_t routes = kNone;
  bool per_flow_hash = false; ///< ECMP per flow over several paths: each transfer hashes anew
};

/// A path stored in Net::route_links_.
struct RouteRef {
  std::uint32_t offset = 0;
  std::uint32_t hops = 0;
  double latency = 0;  ///< sum of its links' latencies
  bool fabric = false; ///< crosses a queued switch port
};

/// Open-addressing map from a key of two 64-bit words to a value: one probe sequence in one array, no node per entry
/// (an unordered_map lookup per transfer was a tenth of a large ring's time).
template <class V>
class FlatMap {
public:
  FlatMap() : slots_(64) {}
  /// The value for (k1, k2), default-constructed and flagged `inserted` the first time.
  V& get(std::uint64_t k1, std::uint64_t k2, bool& inserted)
  {
    if (2 * (size_ + 1) > slots_.size()) grow();
    std::size_t i = index(k1, k2);
    while (slots_[i].used) {
      if (slots_[i].k1 == k1 && slots_[i].k2 == k2) {
        inserted = false;
        return slots_[i].v;
      }
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i].used = true;
    slots_[i].k1 = k1;
    slots_[i].k2 = k2;
    ++size_;
    inserted = true;
    return slots_[i].v;
  }

private:
  struct Entry {
    std::uint64_t k1 = 0, k2 = 0;
    V v{};
    bool used = false;
  };
  [[nodiscard]] std::size_t index(std::uint64_t k1, std::uint64_t k2) const
  {
    return splitmix64(k1 ^ splitmix64(k2)) & (slots_.size() - 1);
  }
  void grow()
  {
    std::vector<Entry> old(slots_.size() * 2);
    old.swap(slots_);
    for (auto& e : old)
      if (e.used) {
        std::size_t i = index(e.k1, e.k2);
        while (slots_[i].used)
          i = (i + 1) & (slots_.size() - 1);
        slots_[i] = std::move(e);
      }
  }
  std::vector<Entry> slots_;
  std::size_t size_ = 0;
};

class Net {
public:
  Net(const topo::Topology& topology, FluidConfig config, std::uint64_t seed, bool pxn);
  ~Net();
  Net(const Net&) = delete;
  Net& operator=(const Net&) = delete;

  void isend(int src, int dst, std::uint64_t tag, Bytes bytes) { send_from(self_index(), src, dst, tag, bytes); }
  RequestId irecv(int dst, int src, std::uint64_t tag) { return recv_for(self_index(), dst, src, tag, 0); }
  RequestId timer(Seconds at) { return timer_for(self_index(), at, 0); }
  std::uint32_t add_client(FlowClient& client);
  void client_isend(std::uint32_t client, int src, int dst, std::uint64_t tag, Bytes bytes)
  {
    send_from(kClientBit | client, src, dst, tag, bytes);
  }
  void client_irecv(std::uint32_t client, int dst, int src, std::uint64_t tag, std::uint64_t cookie);
  void client_timer(std::uint32_t client, Seconds at, std::uint64_t cookie);
  void client_watch_sends(std::uint32_t client);
  void wait_clients();
  std::size_t wait_any(const std::vector<RequestId>& ids);
  void wait_sends();
  void set_priority(int src, int dst, std::uint64_t tag, int priority);
  void on_queue_step(std::function<void(const QueueStep&)> observer) { observer_ = std::move(observer); }
  [[nodiscard]] const FlowTotals& totals() const { return totals_; }
  void set_progress(ProgressProbe* probe) { progress_ = probe; }
  [[nodiscard]] const FluidConfig& config() const { return cfg_; }
  const FluidReport& report();
  /// The current date: SimGrid's, or the network's own while it runs ahead through dates nothing else acts on.
  [[nodiscard]] double clock() const { return processing_ ? now_ : std::max(simgrid::s4u::Engine::get_clock(), now_); }
  FluidReport take_report() { return std::move(report_); }

private:
  struct ActorRec {
    simgrid::s4u::Actor* actor = nullptr;
    bool waiting = false, waiting_sends = false;
    std::uint32_t outstanding = 0;
  };

  /// The last connection a client sent or received on: a rank of a ring uses the same two every step.
  struct ConnMemo {
    int src = -1, dst = -1;
    std::uint64_t tag = 0;
    std::uint32_t conn = kNone;
  };
  struct ClientRec {
    FlowClient* client = nullptr;
    std::uint32_t outstanding = 0;
    bool watching = false;
    ConnMemo last_send, last_recv;
  };
  std::uint32_t memo_connection(ConnMemo& memo, int src, int dst, std::uint64_t tag)
  {
    if (memo.src != src || memo.dst != dst || memo.tag != tag)
      memo = ConnMemo{src, dst, tag, connection(src, dst, tag)};
    return memo.conn;
  }

  ActorRec& self();
  std::uint32_t self_index();
  void send_from(std::uint32_t sender, int src, int dst, std::uint64_t tag, Bytes bytes);
  std::uint32_t recv_for(std::uint32_t owner, int dst, int src, std::uint64_t tag, std::uint64_t cookie);
  std::uint32_t timer_for(std::uint32_t owner, Seconds at, std::uint64_t cookie);
  /// A request is done at `t`: an actor owner is woken, a client owner called back.
  void complete_request(std::uint32_t r, double t);
  /// A client's receive or timer completed: calls it back and counts the work done.
  void deliver(FlowClient& client, std::uint64_t cookie);
  /// One of `sender`'s transfers ended.
  void send_ended(std::uint32_t sender);
  /// The transfer a connection was injecting has left its sender: the next one waiting on it starts.
  void stream_next(std::uint32_t conn);
  /// A client callback delivered: wakes the actor in wait_clients() once no client has anything pending.
  void client_work_done();
  /// The connection's index in conns_, created on first use.
  std::uint32_t connection(int src, int dst, std::uint64_t tag);
  std::uint32_t alloc_message();
  /// A request of `owner` (an actor's pid or kClientBit | client) carrying `cookie`.
  std::uint32_t alloc_request(std::uint32_t owner, std::uint64_t cookie);
  std::uint32_t alloc_flow();
  void match(std::uint32_t message, std::uint32_t request);
  void wake(std::uint32_t actor);

  void push(double t, EventKind kind, std::uint32_t a, std::uint32_t b);
  [[nodiscard]] double next_time() const;
  void arm(double t);
  void process(double t);
  /// Everything due at date t: events, transfers to start, rates.
  void process_date(double t);
  [[nodiscard]] bool may_run_ahead(double next) const;
  /// Resumes an actor, or defers it to a kernel timer at now_ when the network ran ahead of SimGrid's clock.
  void resume(simgrid::s4u::Actor* actor);
  void dispatch(const Event& e, double now);

  const std::vector<topo::Path>& spray_paths(int src, int dst);
  /// The stored route of a pair that has only one path, or nothing.
  std::optional<RouteRef> single_route(int src, int dst);
  void start_pending(double t);
  void add_flow(std::uint32_t message, const std::uint32_t* path, const RouteRef& route, double bytes, double weight,
                int qp, double t);
  void add_flow(std::uint32_t message, const topo::Path& path, double bytes, double weight, int qp, double t);
  /// Stores a path in route_links_ with its latency and whether it crosses a queued port.
  RouteRef store_route(const topo::Path& path);
  RouteRef describe(const std::uint32_t* path, std::size_t hops) const;
  void end_flow(std::uint32_t f, double t);
  /// Swap-removes the slot at `pos`, telling the moved flow its new position.
  template <class List>
  void remove_slot(List& list, std::uint32_t pos)
  {
    const Slot moved = list.back();
    list[pos] = moved;
    list.pop_back();
    if (pos < list.size()) flows_[moved.flow].pos[moved.hop] = pos;
  }
  void complete_message(std::uint32_t m, double t);
  void mark_dirty(std::uint32_t link);
  void mark_flow_dirty(std::uint32_t f);

  // fluid_maxmin.cpp
  void resolve(double t);
  [[nodiscard]] double effective_cap(const Flow& f) const;
  void commit(std::uint32_t f, double t);

  // fluid_queues.cpp
  void start_fabric_flow(std::uint32_t f, double line_rate, double t);
  void end_fabric_flow(std::uint32_t f);
  void advance_queues(double t);
  void queue_step(double t0, double t1);
  void on_cnp(std::uint32_t f, std::uint32_t gen, double t);
  void set_pause(std::uint32_t link, int priority, bool on, double t);
  void rebuild_queue_order();

  // sampling
  void touch(std::uint32_t link);
  void integrate(std::uint32_t link, double t);
  void flush_samples(double t);

  const topo::Topology& topo_;
  FluidConfig cfg_;
  std::uint64_t seed_;
  bool pxn_;
  bool queues_;
  FlowTotals totals_;
  FluidReport report_;
  bool finalized_ = false;
  std::function<void(const QueueStep&)> observer_;

  std::vector<LinkState> links_;
  std::vector<LinkAux> aux_;
  std::vector<LinkFill> fill_links_;
  SlotPool<Flow> flows_;
  SlotPool<Message> messages_;
  SlotPool<Request> requests_;
  std::vector<ActorRec> actors_; ///< by SimGrid pid
  std::vector<ClientRec> clients_;
  std::uint64_t client_work_ = 0; ///< receives, timers and watches of clients not yet delivered
  simgrid::s4u::Actor* clients_waiter_ = nullptr;
  FlatMap<std::uint32_t> conn_ids_;
  std::vector<Conn> conns_;
  std::vector<RouteRef> routes_;
  std::vector<std::uint32_t> route_links_;
  std::vector<std::uint32_t> path_scratch_;
  FlatMap<std::uint64_t> flows_per_pair_;
  std::unordered_map<std::uint64_t, std::vector<topo::Path>> spray_cache_;
  /// Pairs with a single path keep it, stored once in route_links_ for all their connections: route() allocates its
  /// answer, a tenth of a large ring's time otherwise.
  struct PairRoute {
    bool known = false, single = false;
    RouteRef route;
  };
  FlatMap<PairRoute> pair_routes_;
  std::uint64_t next_flow_id_ = 0;
  std::uint64_t active_flows_ = 0;

  EventCalendar<Event> calendar_; ///< the network's events (event_calendar.hpp)
  simgrid::kernel::timer::Timer* armed_ = nullptr;
  double armed_t_ = kInf;
  double now_ = 0;
  bool processing_ = false;
  ProgressProbe* progress_ = nullptr; ///< written after every date, never read (railyard run --progress)
  bool woke_ = false;                 ///< an actor was woken during this process() call
  std::vector<simgrid::s4u::Actor*> deferred_;
  std::vector<std::uint32_t> pending_; ///< matched transfers to start at the next process()
  std::vector<std::uint32_t> starting_;

  // max-min
  std::vector<std::uint32_t> dirty_;
  std::vector<std::uint32_t> lonely_dirty_; ///< flows with a changed cap and no max-min link
  std::vector<std::uint32_t> r_, f_, l_, expand_;
  struct FillEntry {
    double level;
    std::uint32_t id, stamp;
    bool flow;
  };
  std::vector<FillEntry> fill_;
  std::uint32_t epoch_ = 0;

  // queue model
  SlotPool<FabricFlow> fab_;
  std::uint64_t fabric_flows_ = 0;
  double queue_t_ = 0;
  double step_ = 0; ///< the queue model's step: time_step, or shorter so a PAUSE never comes a step late
  bool step_scheduled_ = false;
  std::vector<std::uint32_t> queue_order_; ///< busy queued links by (stage, id)
  bool queue_order_dirty_ = false;
  std::vector<std::uint32_t> pfc_watch_; ///< links with a nonzero ingress counter or a pause state
  std::vector<PortFifos> fifos_;         ///< per link: its egress FIFOs (queued links only; sized on first use)

  // sampling
  std::vector<std::uint32_t> touched_;
  double sample_t_ = 0;
  std::uint64_t sample_k_ = 1; ///< the grid point (k x sample_interval) of the next sample
  double sample_next_ = kInf;  ///< when links are sampled next (not a calendar event: process_date); kInf: not due
  bool sample_due_ = false;    ///< the sample time has passed; taken once the queues have been integrated to a date
};

} // namespace railyard::sim::fluid
