// The ring all-reduce case the large-scale benchmarks share: a rail-optimized cluster of 8-GPU nodes with leaves of
// 32 ports, and one all-reduce over every GPU of size-per-gpu x GPUs (one chunk loop), Ring/Simple on `channels`.
#pragma once

#include "railyard/models/lowering.hpp"
#include "railyard/topologies/topology.hpp"

#include <numeric>

namespace railyard::bench {

inline topo::ClusterSpec ring_cluster(int gpus)
{
  topo::ClusterSpec spec;
  spec.kind = topo::ClusterKind::RailOptimized;
  spec.gpus_per_node = 8;
  spec.nodes = gpus / 8;
  spec.leaf_downlinks = 32;
  return spec;
}

inline models::Schedule ring_all_reduce(int gpus, Bytes per_gpu, int channels)
{
  models::CollectiveCall call;
  call.kind = models::CollectiveKind::AllReduce;
  call.bytes = per_gpu * static_cast<double>(gpus);
  call.ranks.resize(static_cast<std::size_t>(gpus));
  std::iota(call.ranks.begin(), call.ranks.end(), 0);
  call.algorithm = models::Algorithm::Ring;
  call.protocol = models::Protocol::Simple;
  call.channels = channels;
  return models::lower({call, 8, Seconds(0)});
}

} // namespace railyard::bench
