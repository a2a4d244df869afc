// `railyard run` with a `workload:` section: build or read the step, replay it, write summary.json, breakdown.csv and
// trace.json.
#pragma once

#include "railyard/calibration/profile.hpp"
#include "railyard/common/output_dir.hpp"
#include "railyard/scenario/gpu_memory.hpp"
#include "railyard/scenario/scenario.hpp"
#include "railyard/sim/footprint.hpp"
#include "railyard/sim/replay.hpp"
#include "railyard/workloads/op_graph.hpp"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace railyard::scenario {

/// One distinct collective of an analytical replay with `collective_model: profile`: how it was timed, and why.
struct CollectiveCostUse {
  models::CollectiveCall call; ///< resolved: NCCL's algorithm and protocol filled in
  int nodes = 0;
  int communicators = 0; ///< distinct communicators that ran it with this shape
  bool fitted = false;   ///< timed by the profile's fit; false: by the lowered schedule
  int entry_line = 0;    ///< the profile entry's line, when fitted
  bool extrapolated = false;
  Seconds time{0};          ///< the time the replay used
  Seconds schedule_time{0}; ///< the lowered schedule's time, for comparison
  std::string reason;
};

/// One job of a `jobs:` scenario, as it ran beside the others and alone on the same nodes.
struct JobResult {
  std::string name;
  int gpus = 0;
  JobSpec::Placement placement = JobSpec::Placement::Contiguous;
  std::vector<int> nodes; ///< the nodes it ran on, in the order its ranks use them
  Seconds step_time{0};   ///< beside the other jobs: its last op end minus its first op start
  Seconds alone{0};       ///< the same job on the same nodes with the others absent
  double model_flops = 0; ///< the generator's model FLOPs of its step (0 for a trace)
};

struct WorkloadRunResult {
  Scenario scenario;
  topo::TopologySummary topology;
  workloads::Workload workload;
  std::string profile_system; ///< empty without a profile
  sim::ReplayResult replay;
  bool profile_collectives = false;                ///< replay.collective_model: profile
  std::vector<CollectiveCostUse> collective_costs; ///< with profile_collectives, in order of first use
  sim::Footprint footprint;                        ///< the memory the run was estimated to need (summary.json)
  /// flows.csv, links.csv of a flows replay on the fluid backend: "recorded", or why not (summary.json
  /// "network.records")
  std::map<std::string, std::string> records;
  std::vector<JobResult> jobs; ///< a `jobs:` scenario: each job's step beside the others and alone
  /// The memory model of each generated workload (one per generated job), per pipeline stage (summary.json
  /// "gpu_memory"); a layout that does not fit was refused before the replay.
  std::vector<GpuMemoryReport> gpu_memory;
  /// The profile's framework model, when the replay modelled the host with it (summary.json "framework").
  std::optional<calibration::FrameworkModel> framework;
};

/// Builds the topology, reads the profile, generates or reads the workload and replays it. Bad input (a layout that
/// does not fit the cluster, a malformed trace, a workload larger than the cluster) is an InputError.
/// Its memory is estimated before the topology is built and again once the workload is loaded, before it is replayed
/// (footprint.hpp); a run that would exceed `memory`, or whose SimGrid actors this machine cannot map, is refused.
WorkloadRunResult run_workload(const Scenario& scenario, const sim::RunLimits& limits = {});
/// railyard run --memory-only: the memory model's report of a generated step (weights, gradients, optimizer states,
/// activations, NCCL buffers per pipeline stage) against the GPU's capacity, without simulating it; summary.json's
/// gpu_memory[0] says whether it fits ("fits", null when the capacity is unknown) and the peak stage's breakdown.
/// Never refuses for memory; InputError for a scenario that is not a generated step.
nlohmann::ordered_json workload_memory_summary(const Scenario& scenario, const sim::RunLimits& limits = {});

/// A generated or traced step built once (topology, profile, workload, NCCL lowering) and replayed as often as asked
/// with other host models: railyard calibrate --steps replays each measured configuration many times while it fits
/// the framework's costs. Replays record no timeline. No memory check is made (the steps were measured, so they ran).
class PreparedStep {
public:
  explicit PreparedStep(const Scenario& scenario);
  ~PreparedStep();
  PreparedStep(const PreparedStep&) = delete;
  PreparedStep& operator=(const PreparedStep&) = delete;
  /// The replay with `host` in place of the profile's framework model (HostModel{} : the device alone).
  [[nodiscard]] sim::ReplayResult replay(const sim::HostModel& host) const;

private:
  struct State;
  std::unique_ptr<State> s_;
};

/// Writes breakdown.csv (one row per rank), trace.json (Chrome trace of the traced ranks), for a flows replay on the
/// fluid backend flows.csv and links.csv when recorded, for a coupled replay congestion.csv (and links.csv when
/// recorded), and summary.json (step time, breakdown, MFU, the network's aggregates, each job of a `jobs:` scenario,
/// the congestion factors of a coupled replay; last) into `folder`, then commits it (common/output_dir.hpp: staged,
/// checked, swapped in whole).
void write_workload_outputs(const WorkloadRunResult& result, OutputDir& folder);
/// Same into `dir`, with OutputDir's checks and no --force.
void write_workload_outputs(const WorkloadRunResult& result, const std::string& dir);

} // namespace railyard::scenario
