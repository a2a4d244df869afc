// `railyard run` with a `workload:` section: build or read the step, replay it, write summary.json, breakdown.csv and
// trace.json.
#pragma once

#include "railyard/sim/replay.hpp"
#include "railyard/sim/scenario.hpp"
#include "railyard/workloads/op_graph.hpp"

#include <string>

namespace railyard::sim {

struct WorkloadRunResult {
  Scenario scenario;
  topo::TopologySummary topology;
  workloads::Workload workload;
  std::string profile_system; ///< empty without a profile
  ReplayResult replay;
};

/// Builds the topology, reads the profile, generates or reads the workload and replays it. Bad input (a layout that
/// does not fit the cluster, a malformed trace, a workload larger than the cluster) is an InputError.
WorkloadRunResult run_workload(const Scenario& scenario);

/// Writes summary.json (step time, breakdown, MFU), breakdown.csv (one row per rank) and trace.json (Chrome trace of
/// the traced ranks) into "<dir>.partial", then renames it to `dir`, so a folder named `dir` is always complete.
void write_workload_outputs(const WorkloadRunResult& result, const std::string& dir);

} // namespace railyard::sim
