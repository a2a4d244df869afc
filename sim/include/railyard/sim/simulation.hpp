// A simulation: SimGrid's engine, one host and one actor per GPU, and the FlowNetwork backend that moves their data.
// SimGrid keeps its engine in process-wide state, so a process holds at most one Simulation at a time and runs it
// once; tests run each case in its own process (CTest does).
#pragma once

#include "railyard/sim/flow_network.hpp"
#include "railyard/sim/fluid.hpp"
#include "railyard/sim/progress.hpp"
#include "railyard/topologies/topology.hpp"

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace railyard::sim {

/// `simgrid`: SimGrid comms over the platform built from the topology, the max-min reference. `fluid`: Railyard's own
/// flow-level network (fluid.hpp), the fast path at scale and the only one with congestion control.
enum class Backend { SimGrid, Fluid };

struct SimulationConfig {
  Backend backend = Backend::SimGrid;
  std::uint64_t seed = 1;       ///< ECMP hashing seed
  bool pxn = true;              ///< NCCL's PXN: cross-rail inter-node flows cross NVLink first (NCCL_PXN_DISABLE=0)
  double time_precision = 1e-9; ///< SimGrid surf/precision (seconds); see DESIGN.md for the speed trade-off
  FluidConfig fluid;            ///< ECMP mode, QPs, congestion control and outputs of the fluid backend
  /// Not part of a scenario: where the engine publishes its progress (transfers delivered, simulated time) for
  /// `railyard run --progress`; null for none. Only written, never read, by the simulation.
  ProgressProbe* progress = nullptr;
};

std::string to_string(Backend b);
/// Every backend a scenario can name (`to_string` of each is its name), as kCommModels.
inline constexpr std::array kBackends{Backend::SimGrid, Backend::Fluid};

class Simulation {
public:
  Simulation(const topo::Topology& topology, SimulationConfig config);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  [[nodiscard]] FlowNetwork& network();
  /// The fluid backend's own interface (priorities, queue observers, report); null with the simgrid backend.
  [[nodiscard]] FluidNetwork* fluid();
  [[nodiscard]] const topo::Topology& topology() const { return topology_; }
  [[nodiscard]] const SimulationConfig& config() const { return config_; }

  /// Starts `body` as the actor of GPU `gpu` (one actor per GPU).
  void spawn(int gpu, const std::string& name, std::function<void()> body);
  /// Runs until every actor has finished. Throws std::runtime_error if actors remain blocked (a deadlock).
  void run();
  [[nodiscard]] Seconds now() const;

private:
  struct Impl;
  const topo::Topology& topology_;
  SimulationConfig config_;
  std::unique_ptr<Impl> impl_;
};

} // namespace railyard::sim
