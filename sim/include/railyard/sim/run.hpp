// `railyard run`: a scenario in, results and output files out.
#pragma once

#include "railyard/models/lowering.hpp"
#include "railyard/sim/flow_network.hpp"
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
};

/// Fills in what the call leaves open (algorithm, protocol, channels) with NCCL's choice on this cluster and checks
/// that NCCL can run it; an impossible request is an InputError at `where`. Uses the default `nccl:` settings; see
/// nccl_resolve.hpp for the form that takes a scenario's.
models::CollectiveCall resolve_call(const models::CollectiveCall& call, const topo::Topology& topology,
                                    const InputLocation& where);

/// Builds the topology, lowers every call and simulates them in order.
RunResult run_scenario(const Scenario& scenario);

/// Writes summary.json and collectives.csv into `dir`. The files are first written to "<dir>.partial" and the folder
/// is renamed at the end, so a folder named `dir` is always complete.
void write_outputs(const RunResult& result, const std::string& dir);

} // namespace railyard::sim
