// Rules a ClusterSpec must satisfy, shared by parse_cluster (which knows YAML lines) and build_topology (which is
// also called on specs made in code). Private to topologies/src.
#pragma once

#include "railyard/topologies/topology.hpp"

#include <optional>
#include <string>

namespace railyard::topo::detail {

/// One broken rule: `field` is relative to the `cluster:` section ("nic.bandwidth", "fabric.radix", "nodes").
struct SpecProblem {
  std::string field;
  std::string rule;
  std::string fix;
};

/// The first rule `spec` breaks (value ranges, then whether the fabric can hold every NIC), or nothing.
std::optional<SpecProblem> find_problem(const ClusterSpec& spec);

/// Integer ceiling of a / b for positive a and b.
constexpr long long ceil_div(long long a, long long b)
{
  return (a + b - 1) / b;
}

/// Leaf (3-tier: edge) uplinks: the leaf's downlink ports divided by the oversubscription, rounded up.
int leaf_uplinks(const ClusterSpec& spec);
/// Core uplinks each aggregation switch of a 3-tier fat tree keeps: radix/2 / core_oversubscription.
int aggregation_uplinks(const ClusterSpec& spec);

/// Downlink ports of one leaf: k/2 in a 3-tier k-ary fat tree, leaf_downlinks otherwise.
int leaf_downlink_ports(const ClusterSpec& spec);

/// Largest cluster accepted, so that counts stay far from int overflow and graphs fit in memory.
inline constexpr long long kMaxGpus = 1LL << 20;
/// Most GPUs of one fully connected node: a mesh of n GPUs has n - 1 links per GPU (MI300X platforms: 8).
inline constexpr int kMaxMeshGpus = 16;

} // namespace railyard::topo::detail
