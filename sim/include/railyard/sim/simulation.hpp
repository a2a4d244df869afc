// A simulation: SimGrid's engine, one host and one actor per GPU, and the FlowNetwork backend that moves their data.
// SimGrid keeps its engine in process-wide state, so a process holds at most one Simulation at a time and runs it
// once; tests run each case in its own process (CTest does).
#pragma once

#include "railyard/sim/flow_network.hpp"
#include "railyard/topologies/topology.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace railyard::sim {

enum class Backend { SimGrid };

struct SimulationConfig {
  Backend backend = Backend::SimGrid;
  std::uint64_t seed = 1;     ///< ECMP hashing seed
  bool pxn = true;            ///< NCCL's PXN: cross-rail inter-node flows cross NVLink first (NCCL_PXN_DISABLE=0)
  double time_precision = 1e-9; ///< SimGrid surf/precision (seconds); see DESIGN.md for the speed trade-off
};

std::string to_string(Backend b);

class Simulation {
public:
  Simulation(const topo::Topology& topology, SimulationConfig config);
  ~Simulation();
  Simulation(const Simulation&) = delete;
  Simulation& operator=(const Simulation&) = delete;

  [[nodiscard]] FlowNetwork& network();
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
