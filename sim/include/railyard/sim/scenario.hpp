// A scenario file: the cluster, the network settings and what to run on it. Everything is validated here, before
// anything runs or any output is written.
#pragma once

#include "railyard/common/yaml.hpp"
#include "railyard/models/collective.hpp"
#include "railyard/models/lowering.hpp"
#include "railyard/models/nccl_tuning.hpp"
#include "railyard/sim/simulation.hpp"
#include "railyard/sim/workload_spec.hpp"
#include "railyard/topologies/topology.hpp"

#include <optional>
#include <string>
#include <vector>

namespace railyard::sim {

struct CollectiveSpec {
  models::CollectiveCall call; ///< the call; for a group, a summary (first member's op, total size, all ranks)
  int repeat = 1;
  InputLocation where; ///< the list entry, for messages about this call
  /// A group (`group:` list, or a single `op: send`): calls and one-way sends issued together, as between
  /// ncclGroupStart and ncclGroupEnd. Empty for a plain call.
  std::vector<models::CollectiveCall> group;
  std::vector<InputLocation> group_where;
  std::vector<models::P2pTransfer> sends;
  [[nodiscard]] bool is_group() const { return !group.empty() || !sends.empty(); }
};

/// The `nccl:` section: the system NCCL's cost model assumes, and NCCL_ALGO / NCCL_PROTO as NCCL reads them.
struct NcclSettings {
  std::string system; ///< dgx_a100, dgx_h100, hgx_h200 or hgx_b200; empty: chosen from the NVLink bandwidth
  std::optional<std::string> algo, proto; ///< NCCL_ALGO / NCCL_PROTO text
  models::NcclOverrides overrides;        ///< parsed from algo and proto
  bool latencies = true;                  ///< NCCL's base and per-hop latencies (false: bytes and links only)
  InputLocation where;                    ///< the section, for messages
};

struct Scenario {
  std::string file;
  std::string name;
  topo::ClusterSpec cluster;
  InputLocation cluster_where;
  SimulationConfig sim;
  Seconds step_overhead{0}; ///< `nccl.step_overhead`: fixed cost added to every collective step
  NcclSettings nccl;        ///< the rest of `nccl:`
  std::vector<CollectiveSpec> collectives;
  /// `profile:` the calibration profile (resolved path; empty: none), and where the scenario names it.
  std::string profile;
  InputLocation profile_where;
  /// `workload:` a training step to generate or a trace to replay (instead of `collectives:`).
  std::optional<WorkloadSpec> workload;
};

/// Parses a scenario file. Top-level keys: name, seed, cluster, network, nccl, collectives.
Scenario load_scenario(const std::string& path);
/// Same, from text held in memory (`name` stands for the file in messages).
Scenario parse_scenario(const YamlNode& root);
/// Same, with `collectives:` optional when `collectives_required` is false: for commands that bring their own calls
/// and use the scenario for its cluster, network and nccl sections (railyard nccl-tests).
Scenario parse_scenario(const YamlNode& root, bool collectives_required);
Scenario load_scenario_cluster(const std::string& path);

/// Parses a `ranks:` value: "all", a list of GPU ids, or a range "a-b" (inclusive). Errors name the field.
std::vector<int> parse_ranks(const YamlNode& node, int gpus);

} // namespace railyard::sim
