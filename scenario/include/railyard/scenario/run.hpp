// `railyard run`: a scenario in, results and output files out.
#pragma once

#include "railyard/common/output_dir.hpp"
#include "railyard/models/lowering.hpp"
#include "railyard/scenario/scenario.hpp"
#include "railyard/sim/flow_network.hpp"
#include "railyard/sim/footprint.hpp"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace railyard::scenario {

struct CollectiveResult {
  models::CollectiveCall call; ///< as run: algorithm, protocol and channels filled in
  int iteration = 0;           ///< 0..repeat-1
  Seconds start{0}, end{0};
  [[nodiscard]] Seconds time() const { return end - start; }
  /// nccl-tests' algbw = size / time and busbw = algbw x factor (doc/PERFORMANCE.md), in bytes per second.
  [[nodiscard]] BytesPerSec algbw() const;
  [[nodiscard]] BytesPerSec busbw() const;
};

struct RunResult {
  Scenario scenario;
  topo::TopologySummary topology;
  std::vector<CollectiveResult> collectives;
  Seconds simulated_time{0};
  sim::FlowTotals flows;
  std::shared_ptr<const sim::FluidReport>
      network;              ///< the fluid backend's flows, link samples and statistics; else null
  sim::Footprint footprint; ///< the memory the run was estimated to need (summary.json)
  /// flows.csv, links.csv (fluid backend): "recorded", or why not (network.outputs; summary.json "network.records")
  std::map<std::string, std::string> records;
};

/// Builds the topology, lowers every call and simulates them in order. Before building the topology, and again once
/// the calls are lowered and before anything is simulated, the run's memory is estimated (footprint.hpp) and a run
/// that would exceed `limits` is refused with an InputError naming the parts and their knobs; a SimGrid run whose
/// actors this machine cannot map is refused too.
RunResult run_scenario(const Scenario& scenario, const sim::RunLimits& limits = {});

/// Writes collectives.csv, with the fluid backend flows.csv and links.csv, and summary.json (last) into `folder`, then
/// commits it (common/output_dir.hpp: staged, checked, swapped in whole). A write that fails is an OutputError.
void write_outputs(const RunResult& result, OutputDir& folder);
/// Same into `dir`, with OutputDir's checks and no --force (an existing folder that is not an earlier Railyard output
/// is refused); the scenario's input_files() may not lie in it.
void write_outputs(const RunResult& result, const std::string& dir);

} // namespace railyard::scenario
