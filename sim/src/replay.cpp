// Workload replay: the two drivers of the replay engine (replay_engine.hpp), and what the replay publishes.
#include "railyard/sim/replay.hpp"

#include "railyard/sim/event_calendar.hpp"
#include "replay_engine.hpp"

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace railyard::sim {

namespace sg = simgrid::s4u;
using workloads::OpId;
using workloads::OpKind;

std::string to_string(CommModel m)
{
  switch (m) {
  case CommModel::Flows:
    return "flows";
  case CommModel::Analytical:
    return "analytical";
  case CommModel::Ideal:
    return "ideal";
  case CommModel::Coupled:
    return "coupled";
  }
  return "?";
}

std::string to_string(HostLaunch h)
{
  switch (h) {
  case HostLaunch::Off:
    return "off";
  case HostLaunch::Recorded:
    return "recorded";
  case HostLaunch::Model:
    return "model";
  }
  return "?";
}

double TimeBreakdown::exposed_total() const
{
  return std::accumulate(exposed_s.begin(), exposed_s.end(), 0.0);
}

namespace {

using replay_engine::Engine;
using replay_engine::LaneEvent;

/// Railyard's own event loop (analytical, ideal): every lane event on one calendar, in date order, then posting order
/// (event_calendar.hpp); no SimGrid actor, context switch or activity behind an op.
class EventLoopDriver final : public replay_engine::Driver {
public:
  [[nodiscard]] double now() const override { return now_; }
  void post(double at, const LaneEvent& e) override { calendar_.post(at, e); }

  void run(Engine& engine)
  {
    engine.start();
    while (!calendar_.empty()) {
      now_ = calendar_.next_date();
      calendar_.run_next([&](const LaneEvent& e) { engine.handle(e); });
    }
  }

private:
  EventCalendar<LaneEvent> calendar_;
  double now_ = 0;
};

/// SimGrid actors (flows on either backend; analytical and ideal with ReplayOptions::discrete_events = false): one
/// actor per lane, which sleeps until its lane's next event and hands it to the engine, running the lane's network
/// work (its part of a collective's schedule, its sends) in its own context; and, with flows, one proxy actor per
/// receiving rank, as NCCL has a proxy thread, that posts a receive for every message the rank will get at the start
/// (in op order, so FIFO per connection pairs them right) and reports each arrival.
class ActorDriver final : public replay_engine::Driver {
public:
  ActorDriver(Engine& engine, Simulation& sim, bool flows) : engine_(engine), sim_(sim), flows_(flows) {}

  [[nodiscard]] double now() const override { return sg::Engine::get_clock(); }

  void post(double at, const LaneEvent& e) override
  {
    Slot& s = slot(e.rank, e.lane);
    if (s.pending) throw std::logic_error("replay: a lane was handed a second event while one is pending");
    s.pending = true;
    s.at = at;
    s.event = e;
    wake(s);
  }

  void lane_finished(int rank, std::uint32_t lane) override { wake(slot(rank, lane)); }

  void run()
  {
    const auto& ranks = engine_.ranks();
    first_slot_.resize(ranks.size());
    std::size_t slots = 0;
    for (const auto& rt : ranks) {
      first_slot_[rt.rank] = slots;
      slots += rt.prog->lanes.size();
    }
    slots_.resize(slots);
    for (const auto& rt : ranks) {
      const replay_engine::Program& p = *rt.prog;
      const int r = rt.rank;
      for (std::uint32_t l = 0; l < p.lanes.size(); ++l) {
        const std::string name = p.lane_stream[l] != workloads::kUnordered
                                     ? fmt::format("rank{}-stream{}", r, p.lane_stream[l])
                                     : fmt::format("rank{}-op{}", r, p.lanes[l].front());
        sim_.spawn(r, name, [this, r, l] { run_lane(r, l); });
      }
      if (!flows_) continue;
      bool receives = false;
      for (OpId op : p.p2p_ops)
        receives = receives || p.g->op(op).kind == OpKind::Recv;
      if (receives) sim_.spawn(r, fmt::format("rank{}-proxy", r), [this, r] { run_proxy(r); });
    }
    engine_.start(); // posts the first events; the actors take them up when the simulation runs
    try {
      sim_.run();
    } catch (const std::runtime_error&) {
      engine_.check_finished(); // actors left waiting: name the lane (an InputError), else rethrow
      throw;
    }
  }

private:
  struct Slot {
    sg::SemaphorePtr sem;
    bool waiting = false; ///< the lane's actor waits on `sem` for an event or the end of its lane
    bool pending = false;
    double at = 0;
    LaneEvent event{};
  };

  Slot& slot(int rank, std::uint32_t lane) { return slots_[first_slot_[rank] + lane]; }

  static void wake(Slot& s)
  {
    if (!s.waiting) return;
    s.waiting = false;
    s.sem->release();
  }

  void run_lane(int rank, std::uint32_t lane)
  {
    Slot& s = slot(rank, lane);
    s.sem = sg::Semaphore::create(0);
    while (true) {
      if (!s.pending) {
        if (engine_.lane_done(rank, lane)) return;
        s.waiting = true;
        s.sem->acquire();
        continue;
      }
      if (s.at > sg::Engine::get_clock()) sg::this_actor::sleep_until(s.at);
      const LaneEvent e = s.event;
      s.pending = false;
      engine_.handle(e);
    }
  }

  void run_proxy(int rank)
  {
    FlowNetwork& net = sim_.network();
    const auto& rt = engine_.ranks()[rank];
    const replay_engine::Program& p = *rt.prog;
    std::vector<RequestId> reqs;
    std::vector<std::uint32_t> which;
    for (std::size_t i = 0; i < p.p2p_ops.size(); ++i)
      if (p.g->op(p.p2p_ops[i]).kind == OpKind::Recv) {
        const replay_engine::Message& m = engine_.messages()[rt.msgs[i]];
        reqs.push_back(net.irecv(m.dst, m.src, m.net_tag));
        which.push_back(rt.msgs[i]);
      }
    while (!reqs.empty()) {
      const std::size_t k = net.wait_any(reqs);
      engine_.delivered(which[k]);
      reqs[k] = reqs.back();
      reqs.pop_back();
      which[k] = which.back();
      which.pop_back();
    }
  }

  Engine& engine_;
  Simulation& sim_;
  const bool flows_;
  std::vector<std::size_t> first_slot_;
  std::vector<Slot> slots_; ///< one per lane of every rank; never resized once the actors run
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
  Engine engine(workload, topology, config, profile, options);
  engine.prepare();
  // Coupled runs its network on the event loop's calendar: there is no actor-driven variant of it.
  if (options.comm == CommModel::Coupled || (options.comm != CommModel::Flows && options.discrete_events)) {
    EventLoopDriver driver;
    engine.attach(driver, nullptr);
    driver.run(engine);
    engine.check_finished();
    return engine.collect(FlowTotals{});
  }
  Simulation sim(topology, config);
  ActorDriver driver(engine, sim, options.comm == CommModel::Flows);
  engine.attach(driver, options.comm == CommModel::Flows ? &sim.network() : nullptr);
  driver.run();
  engine.check_finished();
  ReplayResult out = engine.collect(sim.network().totals());
  if (FluidNetwork* fluid = sim.fluid(); fluid && options.comm == CommModel::Flows)
    out.network = std::make_shared<const FluidReport>(fluid->take_report());
  return out;
}

} // namespace railyard::sim
