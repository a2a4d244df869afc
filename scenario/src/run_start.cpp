#include "run_start.hpp"

namespace railyard::scenario {

RunStart start_run(const Scenario& scenario, const sim::MemoryLimit& memory,
                   const std::function<void(sim::Footprint&, const topo::TopologySize&)>& add_engine)
{
  const topo::TopologySize size = topo::topology_size(scenario.cluster, scenario.cluster_where);
  sim::Footprint footprint;
  sim::add_baseline(footprint);
  sim::add_topology(footprint, size);
  if (add_engine) add_engine(footprint, size);
  sim::check_footprint(footprint, memory, scenario.cluster_where);
  if (sim::ProgressProbe* probe = scenario.sim.progress) probe->phase = "building the topology";
  return RunStart{size, std::move(footprint), topo::build_topology(scenario.cluster, scenario.cluster_where)};
}

} // namespace railyard::scenario
