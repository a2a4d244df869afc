// A scenario file: the cluster, the network settings and what to run on it. Everything is validated here, before
// anything runs or any output is written.
#pragma once

#include "railyard/common/yaml.hpp"
#include "railyard/models/collective.hpp"
#include "railyard/sim/simulation.hpp"
#include "railyard/topologies/topology.hpp"

#include <string>
#include <vector>

namespace railyard::sim {

struct CollectiveSpec {
  models::CollectiveCall call;
  int repeat = 1;
  InputLocation where; ///< the list entry, for messages about this call
};

struct Scenario {
  std::string file;
  std::string name;
  topo::ClusterSpec cluster;
  InputLocation cluster_where;
  SimulationConfig sim;
  Seconds step_overhead{0}; ///< `nccl.step_overhead`: fixed cost added to every collective step
  std::vector<CollectiveSpec> collectives;
};

/// Parses a scenario file. Top-level keys: name, seed, cluster, network, nccl, collectives.
Scenario load_scenario(const std::string& path);
/// Same, from text held in memory (`name` stands for the file in messages).
Scenario parse_scenario(const YamlNode& root);

/// Parses a `ranks:` value: "all", a list of GPU ids, or a range "a-b" (inclusive). Errors name the field.
std::vector<int> parse_ranks(const YamlNode& node, int gpus);

} // namespace railyard::sim
