#include "run_start.hpp"

#include <fmt/format.h>

namespace railyard::scenario {

std::string decide_record(Record choice, const sim::FootprintPart& estimate, const char* file, const char* key,
                          bool& record)
{
  switch (choice) {
  case Record::On:
    record = true;
    return "recorded (network.outputs." + std::string(key) + ": true)";
  case Record::Off:
    record = false;
    return "not recorded (network.outputs." + std::string(key) + ": false)";
  case Record::Auto:
    break;
  }
  record = estimate.bytes() <= kAutoRecordBytes;
  if (record) return "recorded";
  return fmt::format("not recorded: {:.0f} rows of {} would take {:.0f} MiB, more than network.outputs.{}: auto keeps "
                     "({:.0f} MiB); the summary keeps the aggregates. Set network.outputs.{}: true to record them",
                     estimate.count, file, estimate.bytes() / (1024.0 * 1024.0), key, kAutoRecordBytes / (1024.0 * 1024.0),
                     key);
}

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
