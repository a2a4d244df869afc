// Pieces the lowering files share: schedule skeletons, step construction and the pipeline builder.
#pragma once

#include "railyard/models/lowering.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace railyard::models::detail {

/// A schedule with the call's fields filled in and `channels` empty channels.
Schedule make_schedule(const LoweringInput& in, Algorithm a, int channels);

/// Throws ScheduleTooLarge when `s` plus `more` steps would pass in.max_steps (checked before the steps are appended).
void check_steps(const Schedule& s, double more, const LoweringInput& in);

/// A step of `bytes` payload per send for the protocol, with the input's per-hop costs.
Step make_step(std::uint32_t pattern, Bytes bytes, double wire_per_payload, const LoweringInput& in);

/// Adds a pattern to the schedule (marking which ranks receive across nodes) and returns its index.
std::uint32_t add_pattern(Schedule& s, Pattern p, int gpus_per_node);

/// One edge of a pipeline: chunk k leaves `src` in its step send_at + k and is received by `dst` in its step
/// recv_at + k. recv_at >= send_at for every edge keeps the schedule free of waiting cycles.
struct PipeEdge {
  int src = 0, dst = 0;
  std::int64_t send_at = 0, recv_at = 0;
  double weight = 1.0;
};

/// Appends to channel `channel` the steps of a pipeline of `chunks` chunks of `chunk` payload bytes over `edges`.
/// Steps between two points where an edge starts or stops share one pattern, so a pipeline of depth D has O(D)
/// patterns however many chunks it moves.
void append_pipeline(Schedule& s, int channel, const std::string& name, const std::vector<PipeEdge>& edges,
                     std::int64_t chunks, Bytes chunk, double wire_per_payload, const LoweringInput& in);

/// Communicator ranks grouped by node (nodes in ascending order), each group in the node's ring order for `channel`
/// (ring_order's rotation): element 0 of a group is where the channel enters the node.
/// With `intra_rings` (LoweringInput::intra_rings), a node's GPUs follow the channel's ring order instead.
std::vector<std::vector<int>> nodes_in_ring_order(const std::vector<int>& gpus, int gpus_per_node, int channel,
                                                  const std::vector<std::vector<int>>* intra_rings = nullptr,
                                                  bool reverse_odd_nodes = false);
/// nodes_in_ring_order with the lowering input's intra-node rings.
inline std::vector<std::vector<int>> nodes_in_ring_order(const std::vector<int>& gpus, int channel,
                                                         const LoweringInput& in)
{
  return nodes_in_ring_order(gpus, in.gpus_per_node, channel, &in.intra_rings, in.intra_rings_reverse_odd_nodes);
}

/// ceil(a / b) for positive values, at least 1.
std::int64_t chunks_for(double bytes, double chunk);

/// The chunk of a call as its library sizes it: RCCL's (rccl_chunk) where the input says so
/// (LoweringInput::rccl_chunking), NCCL's (nccl_chunk) otherwise.
inline Bytes library_chunk(const LoweringInput& in, CollectiveKind kind, Algorithm a, Protocol p, Bytes total,
                           int channels, int nranks, int nnodes, int nheads)
{
  return in.rccl_chunking ? rccl_chunk(kind, a, p, total, channels, nranks, nnodes, nheads)
                          : nccl_chunk(kind, a, p, total, channels, nranks, nnodes, nheads);
}

Schedule lower_ring(const LoweringInput& in);       // all_reduce, all_gather, reduce_scatter
Schedule lower_ring_chain(const LoweringInput& in); // broadcast, reduce
Schedule lower_tree(const LoweringInput& in);       // all_reduce
Schedule lower_nvls(const LoweringInput& in);       // all_reduce, all_gather, reduce_scatter on one node
Schedule lower_nvls_tree(const LoweringInput& in);  // all_reduce across nodes
Schedule lower_pat(const LoweringInput& in);        // all_gather, reduce_scatter, one GPU per node
Schedule lower_msccl(const LoweringInput& in);      // RCCL's MSCCL all_reduce / alltoall, 8 ranks
Schedule lower_mscclpp(const LoweringInput& in);    // RCCL's MSCCL++ all_reduce / all_gather, 8 ranks

} // namespace railyard::models::detail
