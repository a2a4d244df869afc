#include "railyard/sim/simulation.hpp"

#include "simgrid_network.hpp"

#include <fmt/format.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace railyard::sim {
namespace sg = simgrid;

std::string to_string(Backend b)
{
  switch (b) {
  case Backend::SimGrid: return "simgrid";
  case Backend::Fluid: return "fluid";
  }
  return "?";
}

struct Simulation::Impl {
  std::unique_ptr<sg::s4u::Engine> engine;
  std::vector<sg::s4u::Host*> hosts; // one per GPU, owned by SimGrid's engine
  std::unique_ptr<FlowNetwork> network;
  FluidNetwork* fluid = nullptr; // the same object as network when the backend is fluid
  std::vector<sg::s4u::ActorPtr> actors;
  int finished = 0;
};

Simulation::Simulation(const topo::Topology& topology, SimulationConfig config)
    : topology_(topology), config_(config), impl_(std::make_unique<Impl>())
{
  // SimGrid reads its settings from argv; these keep its log quiet and its network model exact for RDMA flows:
  // CM02 without TCP cross-traffic, no bandwidth or latency factors (DESIGN.md, measured on SimGrid 3.32).
  std::vector<std::string> args = {"railyard",
                                   "--log=root.thres:critical",
                                   "--cfg=network/model:CM02",
                                   "--cfg=network/crosstraffic:0",
                                   "--cfg=network/weight-S:0",
                                   "--cfg=contexts/stack-size:128",
                                   fmt::format("--cfg=surf/precision:{}", config_.time_precision)};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  impl_->engine = std::make_unique<sg::s4u::Engine>(&argc, argv.data());
  if (config_.backend == Backend::SimGrid) {
    auto* zone = new EcmpZone(topology_, config_.seed, config_.pxn);
    zone->build();
    impl_->hosts = zone->hosts();
    impl_->network = std::make_unique<SimGridNetwork>(topology_, config_.pxn, *zone);
  } else {
    // The fluid network moves the bytes itself: SimGrid only needs a host per GPU for the actors, no links, no routes.
    auto* zone = sg::s4u::create_empty_zone("railyard");
    impl_->hosts.reserve(static_cast<std::size_t>(topology_.num_gpus()));
    for (int g = 0; g < topology_.num_gpus(); ++g)
      impl_->hosts.push_back(zone->create_host(topology_.vertex(topology_.gpu_vertex(g)).name, 1e15)->seal());
    zone->seal();
    auto fluid = std::make_unique<FluidNetwork>(topology_, config_.fluid, config_.seed, config_.pxn);
    fluid->set_progress(config_.progress);
    impl_->fluid = fluid.get();
    impl_->network = std::move(fluid);
  }
  if (ProgressProbe* probe = config_.progress) {
    // SimGrid's signals are process-wide, as its engine is: one Simulation per process (see the header).
    FlowNetwork* net = impl_->network.get();
    sg::s4u::Engine::on_time_advance_cb(
        [probe, net](double) { probe->publish_transfers(sg::s4u::Engine::get_clock(), net->totals().flows_received); });
  }
}

Simulation::~Simulation() = default;

FlowNetwork& Simulation::network() { return *impl_->network; }

FluidNetwork* Simulation::fluid() { return impl_->fluid; }

void Simulation::spawn(int gpu, const std::string& name, std::function<void()> body)
{
  impl_->actors.push_back(sg::s4u::Actor::create(name, impl_->hosts.at(static_cast<std::size_t>(gpu)),
                                                  [this, b = std::move(body)] {
    b();
    impl_->network->wait_sends();
    ++impl_->finished;
  }));
}

void Simulation::run()
{
  impl_->engine->run();
  const int expected = static_cast<int>(impl_->actors.size());
  if (impl_->finished != expected)
    throw std::runtime_error(fmt::format("simulation deadlocked: {} of {} GPU actors never finished (a schedule posts "
                                         "a receive that no send matches)",
                                         expected - impl_->finished, expected));
}

Seconds Simulation::now() const { return Seconds(sg::s4u::Engine::get_clock()); }

} // namespace railyard::sim
