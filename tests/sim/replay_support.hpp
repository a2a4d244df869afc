// What the sim and scenario tests share: a single NVSwitch node, DGX H100 nodes, the first n ranks, a kernel model that
// times a kernel by its FLOPs alone, and NCCL's lowering for a replay.
#pragma once

#include "railyard/calibration/profile.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/sim/replay.hpp"
#include "railyard/topologies/topology.hpp"

#include <numeric>
#include <vector>

namespace railyard::test {

inline topo::ClusterSpec one_node(int gpus, double nvlink_GBps = 100, double hop_us = 0.5)
{
  topo::ClusterSpec s;
  s.kind = topo::ClusterKind::SingleNode;
  s.nodes = 1;
  s.gpus_per_node = gpus;
  s.nvlink_bandwidth = units::GBps(nvlink_GBps);
  s.nvlink_latency = units::us(hop_us);
  return s;
}

/// DGX H100 nodes as a scenario writes them: 18 NVLink4 links x 20.6 GB/s (NCCL's SM90_NVLINK_BW), one ConnectX-7
/// 400 Gb/s NIC per GPU; one node alone, more on a rail-optimized fabric.
inline topo::ClusterSpec h100_nodes(int nodes)
{
  topo::ClusterSpec s;
  s.kind = nodes == 1 ? topo::ClusterKind::SingleNode : topo::ClusterKind::RailOptimized;
  s.nodes = nodes;
  s.gpus_per_node = 8;
  s.nvlink_bandwidth = units::GBps(18 * 20.6);
  s.nic_bandwidth = units::Gbps(400);
  s.fabric_bandwidth = units::Gbps(400);
  s.leaf_downlinks = 32;
  return s;
}

/// 4 leaves of 4 single-GPU nodes under ONE spine (4:1 port oversubscription leaves one uplink per leaf): every
/// cross-leaf path is fixed, so who shares which egress port is known without hashing. NICs run at 400 Gb/s; the
/// switch-to-switch links at 3.2 Tb/s carry eight NICs at once, so an incast of eight congests only the receiver's
/// port and every pause upstream of it comes from PFC.
inline topo::ClusterSpec one_spine()
{
  topo::ClusterSpec s;
  s.kind = topo::ClusterKind::FatTree;
  s.nodes = 16;
  s.gpus_per_node = 1;
  s.leaf_downlinks = 4;
  s.oversubscription = 4;
  s.fabric_bandwidth = units::Gbps(3200);
  return s;
}

/// Ranks 0..n-1.
inline std::vector<int> first_ranks(int n)
{
  std::vector<int> r(static_cast<std::size_t>(n));
  std::iota(r.begin(), r.end(), 0);
  return r;
}

/// A roofline with no launch overhead and no memory limit worth the name: a kernel takes flops / peak.
inline calibration::Profile flops_only_profile(double peak_flops)
{
  calibration::Profile p;
  p.system = "test";
  calibration::KernelModel k;
  k.launch_overhead = Seconds(0);
  k.memory_bandwidth = BytesPerSec(1e30);
  k.memory_efficiency = 1;
  calibration::ComputeParams c;
  c.dtype = calibration::DType::Bf16;
  c.peak_flops = peak_flops;
  c.efficiency = 1;
  k.compute.push_back(c);
  p.kernel = k;
  return p;
}

/// `options` with NCCL's lowering under the default `nccl:` settings and no step overhead (ReplayOptions::lower has
/// no default of its own). `topology` must outlive the replay.
inline sim::ReplayOptions with_nccl(const topo::Topology& topology, sim::ReplayOptions options = {})
{
  options.lower = sim::nccl_lowering(topology, sim::NcclSettings{}, Seconds(0));
  return options;
}

} // namespace railyard::test
