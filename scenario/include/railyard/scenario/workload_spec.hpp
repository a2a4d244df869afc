// The `workload:` section of a scenario: a generated training step or a trace to replay, and how to replay it.
// Field by field in sim/README.md, "Workload replay".
#pragma once

#include "railyard/common/yaml.hpp"
#include "railyard/sim/replay.hpp"
#include "railyard/topologies/topology.hpp"
#include "railyard/workloads/generator.hpp"
#include "railyard/workloads/readers.hpp"

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace railyard::scenario {

/// Every trace format `workload.trace` accepts; the CLI tests replay one real trace of each through the binary.
inline constexpr std::array<std::string_view, 5> kTraceFormats{"chakra", "kineto", "simai", "astrasim1", "aicb"};

struct WorkloadSpec {
  enum class Kind { Megatron, Trace };
  Kind kind = Kind::Megatron;
  workloads::MegatronConfig megatron;
  std::string trace_format;              ///< chakra, kineto, simai, astrasim1, aicb
  std::vector<std::string> trace_paths;  ///< resolved paths
  std::string comm_group_file;           ///< chakra: comm_group.json (resolved), empty: next to the traces
  workloads::LayerWorkloadOptions layer; ///< text formats: world_size, model_parallel, tick
  bool infer_cross_stream_deps = true;   ///< kineto
  std::vector<std::string> host_et;      ///< kineto: PyTorch host execution traces (resolved paths), `host_et:`
  /// `recorded_on:` the cluster the trace was recorded on (a `cluster:` block). With `replay.collectives: measured`
  /// each collective takes its measured time plus the model's difference between the scenario's cluster and this
  /// one (the what-if); without it, its measured time as is.
  std::optional<topo::ClusterSpec> recorded_on;
  InputLocation recorded_on_where;
  sim::ReplayOptions replay;
  /// `replay.communication` was written; else run_workload picks: coupled on a multi-node cluster (flows when the
  /// network turns on DCQCN or PFC, which coupled does not model yet), flows inside one node.
  bool communication_given = false;
  /// `replay.collective_model` (analytical communication only): time each collective by its lowered schedule
  /// (`schedule`, the default), or by the profile's fitted collective cost where the profile covers the call and by
  /// the schedule elsewhere (`profile`; sim::profile_collective_cost says what "covers" means).
  enum class CollectiveModel { Schedule, Profile };
  CollectiveModel collective_model = CollectiveModel::Schedule;
  InputLocation collective_model_where;
  /// `training.memory_check` (generated workloads): a layout whose memory model exceeds the GPU's memory is refused
  /// (true, the default) or run with a note (false). `training.memory_limit_GiB` replaces the GPU's capacity.
  bool memory_check = true;
  std::optional<double> memory_limit_GiB;
  /// `replay.framework` (generated workloads): model the framework's host thread with the profile's `framework:`
  /// costs when it has them (true, the default), or time the device alone (false).
  bool framework = true;
  InputLocation memory_where; ///< the training section, where the refusal points
  InputLocation where;        ///< the section
};

/// Parses `workload:`. Relative paths are resolved against the scenario file's folder, then the working directory.
WorkloadSpec parse_workload(const YamlNode& node, const std::string& scenario_file);

/// A path named in a scenario: absolute as is; relative, the first that exists of <scenario folder>/path and
/// ./path. A path that exists nowhere is an InputError at `where` listing both places.
std::string resolve_scenario_path(const YamlNode& where, const std::string& path, const std::string& scenario_file);

} // namespace railyard::scenario
