// What every run does first, spelled once: the topology's size, the memory it and the engine take checked against the
// limit (a refusal points at the cluster section), and then the topology built.
#pragma once

#include "railyard/scenario/scenario.hpp"

#include "railyard/sim/footprint.hpp"
#include "railyard/topologies/topology.hpp"

#include <functional>

namespace railyard::scenario {

struct RunStart {
  topo::TopologySize size;
  sim::Footprint footprint; ///< the baseline, the topology, and what `add_engine` added
  topo::Topology topology;
};

/// Decides one kind of record (flows.csv or links.csv, `file`) from what the scenario asks (`choice`) and what the
/// records would take (`estimate`): `record` says whether the fluid network keeps them; the result is summary.json's
/// line for it ("recorded", or why not and how to ask for them).
std::string decide_record(Record choice, const sim::FootprintPart& estimate, const char* file, const char* key,
                          bool& record);

/// `add_engine` adds what the run's engine will take once it knows the topology's size (nothing when empty).
RunStart start_run(const Scenario& scenario, const sim::MemoryLimit& memory,
                   const std::function<void(sim::Footprint&, const topo::TopologySize&)>& add_engine = {});

} // namespace railyard::scenario
