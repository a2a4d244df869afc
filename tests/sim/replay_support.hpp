// What the replay tests share: a single NVSwitch node and a kernel model that times a kernel by its FLOPs alone.
#pragma once

#include "railyard/calibration/profile.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/sim/replay.hpp"
#include "railyard/topologies/topology.hpp"

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
