// A scenario file: the cluster, the network settings and what to run on it. Everything is validated here, before
// anything runs or any output is written.
#pragma once

#include "railyard/calibration/profile.hpp"
#include "railyard/common/yaml.hpp"
#include "railyard/models/collective.hpp"
#include "railyard/models/lowering.hpp"
#include "railyard/models/nccl_tuning.hpp"
#include "railyard/scenario/network_section.hpp"
#include "railyard/scenario/workload_spec.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/sim/simulation.hpp"
#include "railyard/topologies/topology.hpp"

#include <nlohmann/json.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace railyard::scenario {

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

/// Where one link parameter of the cluster came from: the scenario's `cluster:` section, the profile the scenario
/// names (one of its `links:` entries, converted from the profile's GPU-to-GPU number to the topology's per-link
/// one where they differ), or, when neither gives it, topo::ClusterSpec's built-in default.
struct LinkParamOrigin {
  enum class From { Scenario, Profile, Default };
  From from = From::Default;
  InputLocation where;    ///< scenario: the value's line and field; profile: the profile file and the entry's line
  std::string entry;      ///< profile: the number used, e.g. "links[nvlink].latency_us"
  std::string source;     ///< profile: that number's source, as the profile states it
  std::string derivation; ///< how the value follows from the profile's numbers, or why it is a default
};

/// The origin of each link parameter of Scenario::cluster (the values themselves are in the ClusterSpec).
struct ClusterLinkOrigins {
  LinkParamOrigin nvlink_bandwidth, nvlink_latency, pcie_bandwidth, pcie_latency, nic_bandwidth, nic_latency,
      fabric_bandwidth, fabric_latency;
  LinkParamOrigin xgmi_bandwidth, xgmi_latency; ///< fully connected nodes only
};

/// One entry of `jobs:`: a workload on whole nodes of the cluster, beside the other jobs.
struct JobSpec {
  enum class Placement {
    Contiguous,  ///< the next free nodes in node order
    RailAligned, ///< like contiguous, starting at a leaf group boundary (the nodes one leaf, or one rail's leaf,
                 ///< serves)
    Scattered,   ///< free nodes drawn at random (the scenario's seed), in node order
  };
  std::string name;
  int gpus = 0; ///< a multiple of the cluster's GPUs per node
  Placement placement = Placement::Contiguous;
  WorkloadSpec workload;
  InputLocation where;
};
std::string to_string(JobSpec::Placement p);

struct Scenario {
  std::string file;
  std::string name;
  topo::ClusterSpec cluster;
  InputLocation cluster_where;
  sim::SimulationConfig sim;
  RecordChoice records;     ///< network.outputs: flows.csv and links.csv on, off or auto (run.cpp, run_workload.cpp)
  Seconds step_overhead{0}; ///< `nccl.step_overhead`: fixed cost added to every collective step
  sim::NcclSettings nccl;   ///< the rest of `nccl:`
  std::vector<CollectiveSpec> collectives;
  /// `profile:` the calibration profile (resolved path; empty: none), and where the scenario names it.
  std::string profile;
  InputLocation profile_where;
  std::shared_ptr<const calibration::Profile> profile_data; ///< the profile as read; null without one
  /// Where each link parameter of `cluster` came from. With a profile, every parameter the `cluster:` section leaves
  /// out comes from the profile's `links:` (calibration/README.md, "The simulator and the profile").
  ClusterLinkOrigins link_origins;
  /// `workload:` a training step to generate or a trace to replay (instead of `collectives:`).
  std::optional<WorkloadSpec> workload;
  /// `jobs:` several workloads on one cluster (then `workload` is the first job's, whose replay settings every job
  /// shares): each with its own step time and its slowdown against running alone on its nodes.
  std::vector<JobSpec> jobs;

  /// Every file and folder the run reads, as resolved: the scenario file, the profile, the trace files or folders
  /// (a Chakra trace: its prefix, whose folder holds the per-rank files) and the comm_group file. An output folder
  /// may not hold any of them (common/output_dir.hpp).
  [[nodiscard]] std::vector<std::string> input_files() const;
};

/// Parses a scenario file. Top-level keys: name, seed, cluster, network, nccl, collectives. Relative paths in it
/// (profile, traces, comm_group) resolve beside `paths_from` when given, else beside the file (railyard run
/// --paths-from: a sweep's point, written under the sweep's output folder, keeps its base scenario's paths).
Scenario load_scenario(const std::string& path, const std::string& paths_from = {});
/// Same, from text held in memory (`name` stands for the file in messages).
Scenario parse_scenario(const YamlNode& root);
/// Same, with `collectives:` optional when `collectives_required` is false: for commands that bring their own calls
/// and use the scenario for its cluster, network and nccl sections (railyard nccl-tests).
Scenario parse_scenario(const YamlNode& root, bool collectives_required);
/// Same, relative paths resolved beside `paths_from` (empty: beside the file `root` came from).
Scenario parse_scenario(const YamlNode& root, bool collectives_required, const std::string& paths_from);
Scenario load_scenario_cluster(const std::string& path);

/// The NCCL system (sim::NcclSettings::system) of a GPU model as CUDA names it ("NVIDIA H100 80GB HBM3" -> dgx_h100);
/// empty for a GPU NCCL's cost model here does not know.
std::string nccl_system_of_gpu(const std::string& gpu_model);

/// summary.json's "nccl_system": the system NCCL's cost model assumed and where it came from.
nlohmann::ordered_json nccl_system_json(const Scenario& scenario);

/// summary.json's "links": per link kind (nvlink, pcie, nic, fabric) the bandwidth (bytes/s, per direction) and
/// latency (s, per link) the topology was built with, and where each came from.
nlohmann::ordered_json cluster_links_json(const Scenario& scenario);

/// Parses a `ranks:` value: "all", a list of GPU ids, or a range "a-b" (inclusive). Errors name the field.
std::vector<int> parse_ranks(const YamlNode& node, int gpus);

} // namespace railyard::scenario
