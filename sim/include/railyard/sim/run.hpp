// `railyard run`: a scenario in, results and output files out.
#pragma once

#include "railyard/common/output_dir.hpp"
#include "railyard/models/lowering.hpp"
#include "railyard/sim/flow_network.hpp"
#include "railyard/sim/footprint.hpp"
#include "railyard/sim/scenario.hpp"

#include <memory>
#include <string>
#include <vector>

namespace railyard::sim {

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
  FlowTotals flows;
  std::shared_ptr<const FluidReport> network; ///< the fluid backend's flows, link samples and statistics; else null
  Footprint footprint;                        ///< the memory the run was estimated to need (summary.json)
};

/// Fills in what the call leaves open (algorithm, protocol, channels) with NCCL's choice on this cluster and checks
/// that NCCL can run it; an impossible request is an InputError at `where`. Uses the default `nccl:` settings; see
/// nccl_resolve.hpp for the form that takes a scenario's.
models::CollectiveCall resolve_call(const models::CollectiveCall& call, const topo::Topology& topology,
                                    const InputLocation& where);

/// Builds the topology, lowers every call and simulates them in order. Before building the topology, and again once
/// the calls are lowered and before anything is simulated, the run's memory is estimated (footprint.hpp) and a run
/// that would exceed `limits` is refused with an InputError naming the parts and their knobs; a SimGrid run whose
/// actors this machine cannot map is refused too.
RunResult run_scenario(const Scenario& scenario, const RunLimits& limits = {});

/// Writes collectives.csv, with the fluid backend flows.csv and links.csv, and summary.json (last) into `folder`, then
/// commits it (common/output_dir.hpp: staged, checked, swapped in whole). A write that fails is an OutputError.
void write_outputs(const RunResult& result, OutputDir& folder);
/// Same into `dir`, with OutputDir's checks and no --force (an existing folder that is not an earlier Railyard output
/// is refused); the scenario's input_files() may not lie in it.
void write_outputs(const RunResult& result, const std::string& dir);

} // namespace railyard::sim
