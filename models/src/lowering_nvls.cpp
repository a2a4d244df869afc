// NVLS and NVLSTree (NCCL src/device/all_reduce.h RunWorkColl<..., NCCL_ALGO_NVLS / NCCL_ALGO_NVLS_TREE>).
//
// NVLink SHARP reduces and multicasts inside the NVSwitch: a GPU's multimem.ld_reduce pulls one slice from every GPU
// and gets the sum back; its multimem.st sends one slice that the switch copies to every GPU. The simulator's flows
// run between GPUs, so the switch's work is modelled by an equivalent step structure instead of flows that end in
// the switch: per NCCL loop, each GPU sends one flow through the NVSwitch to the next GPU of the channel's ring,
// sized so that every GPU's NVLink port carries in each direction exactly the bytes the multimem operations put on
// it. The NVSwitch does not block (it has a port per GPU link), so which port pair carries the bytes does not change
// the time; the ring keeps every GPU's loop k waiting for loop k of the others, as the reduction does. Multimem
// operations reach only part of the NVLink bandwidth (NCCL's nvlsEfficiency); the flows carry bytes / efficiency.
#include "lowering_internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace railyard::models::detail {

namespace {

int count_nodes(const std::vector<int>& gpus, int gpus_per_node)
{
  std::set<int> nodes;
  for (int g : gpus)
    nodes.insert(g / gpus_per_node);
  return static_cast<int>(nodes.size());
}

} // namespace

// One node. A loop covers nHeads x chunk bytes of a channel's data, nHeads = n GPUs each heading one chunk. Per GPU
// and loop of D bytes:
//  - all_reduce: ld_reduce sends D (its part of every head's chunk) and receives D/n (its own chunk, reduced); st
//    sends D/n and the switch delivers D (every head's result): D (n+1)/n each way, one flow of that size;
//  - all_gather: st sends D/n, every GPU receives D: a flow of D (the larger direction);
//  - reduce_scatter: ld_reduce sends D, receives D/n: a flow of D.
Schedule lower_nvls(const LoweringInput& in)
{
  const auto& call = in.call;
  const int n = static_cast<int>(call.ranks.size());
  const int channels = std::max(1, call.channels.value_or(1));
  if (call.kind != CollectiveKind::AllReduce && call.kind != CollectiveKind::AllGather &&
      call.kind != CollectiveKind::ReduceScatter)
    throw std::invalid_argument("NCCL implements NVLS only for all_reduce, all_gather and reduce_scatter");
  if (count_nodes(call.ranks, in.gpus_per_node) > 1)
    throw std::invalid_argument("NVLS spans one node (NVLSTree joins nodes)");
  Schedule s = make_schedule(in, Algorithm::Nvls, channels);
  if (n == 1 || call.bytes.bytes() <= 0) return s;

  const double per_channel = call.bytes.bytes() / channels;
  const double chunk = nccl_chunk(call.kind, Algorithm::Nvls, Protocol::Simple, call.bytes, channels, n, 1, n).bytes();
  const std::int64_t loops = chunks_for(per_channel, n * chunk);
  check_steps(s, static_cast<double>(loops) * channels, in);
  const double loop_bytes = per_channel / static_cast<double>(loops);
  const double flow = call.kind == CollectiveKind::AllReduce ? loop_bytes * (n + 1) / n : loop_bytes;
  const double wire = 1.0 / in.costs.nvls_efficiency;
  for (int c = 0; c < channels; ++c) {
    const auto idx = add_pattern(
        s,
        Pattern::ring(fmt::format("nvls-ch{}", c),
                      ring_order(call.ranks, in.gpus_per_node, c, &in.intra_rings, in.intra_rings_reverse_odd_nodes)),
        in.gpus_per_node);
    const Step st = make_step(idx, Bytes(flow), wire, in);
    s.channels[c].insert(s.channels[c].end(), static_cast<std::size_t>(loops), st);
  }
  return s;
}

// Several nodes: inside each node NVLS reduces every loop's chunks onto their heads (one head per GPU); the heads of
// one chunk, one per node, run a tree all-reduce across nodes (NCCL's double binary tree over nodes, split into
// reduce-up and broadcast-down like Tree); then NVLS multicasts the result inside each node. As a pipeline over
// loops (node v of height h(v) and depth d(v) in the node tree of height H):
//  - the intra-node reduction of loop k reaches every GPU in its step h(v) + k (flow to the next GPU of the node);
//  - the GPU sends its head chunk up to the same-position GPU of the parent node in step h(v) + 1 + k;
//  - the root node's GPUs turn it around in step H + 1 + k; a node at depth d receives it in step H + d + k and
//    multicasts it (and passes it down) in step H + d + 1 + k.
// The NVLS legs carry half of the loop's (n+1)/n per port each (reduce before the tree, multicast after it), the
// network legs one chunk.
Schedule lower_nvls_tree(const LoweringInput& in)
{
  const auto& call = in.call;
  const int n = static_cast<int>(call.ranks.size());
  const int channels = std::max(1, call.channels.value_or(1));
  if (call.kind != CollectiveKind::AllReduce)
    throw std::invalid_argument("NCCL implements NVLSTree only for all_reduce");
  Schedule s = make_schedule(in, Algorithm::NvlsTree, channels);
  if (n == 1 || call.bytes.bytes() <= 0) return s;
  const auto first = nodes_in_ring_order(call.ranks, 0, in);
  const int nnodes = static_cast<int>(first.size());
  const int local = static_cast<int>(first.front().size());
  for (const auto& node : first)
    if (static_cast<int>(node.size()) != local)
      throw std::invalid_argument("NVLSTree needs the same number of ranks on every node");

  const double per_channel = call.bytes.bytes() / channels;
  const double chunk = nccl_chunk(CollectiveKind::AllReduce, Algorithm::NvlsTree, Protocol::Simple, call.bytes,
                                  channels, n, nnodes, local)
                           .bytes();
  const std::int64_t loops = chunks_for(per_channel, local * chunk);
  const Bytes head_chunk(per_channel / static_cast<double>(loops) / local);
  const double intra_weight = (local + 1) / 2.0 / in.costs.nvls_efficiency;

  for (int c = 0; c < channels; ++c) {
    const auto nodes = nodes_in_ring_order(call.ranks, c, in);
    std::vector<int> parent(nnodes, -1), depth(nnodes, 0), height(nnodes, 0);
    std::vector<std::vector<int>> kids(nnodes);
    int root = -1;
    for (int v = 0; v < nnodes; ++v) {
      const TreeLinks links = nccl_dtree(nnodes, v, c % 2);
      parent[v] = links.parent;
      kids[v] = links.children;
      if (links.parent < 0) root = v;
    }
    std::vector<int> order{root};
    for (std::size_t i = 0; i < order.size(); ++i)
      for (int k : kids[order[i]]) {
        depth[k] = depth[order[i]] + 1;
        order.push_back(k);
      }
    for (auto it = order.rbegin(); it != order.rend(); ++it)
      for (int k : kids[*it])
        height[*it] = std::max(height[*it], height[k] + 1);
    const std::int64_t top = height[root];

    std::vector<PipeEdge> edges;
    for (int v = 0; v < nnodes; ++v) {
      const auto& g = nodes[v];
      for (int i = 0; i < local; ++i) {
        const int prev = g[(i + local - 1) % local];
        if (local > 1) {
          edges.push_back({prev, g[i], 0, height[v], intra_weight});
          edges.push_back({prev, g[i], top + depth[v] + 1, top + depth[v] + 1, intra_weight});
        }
        if (parent[v] >= 0) {
          const int up = nodes[parent[v]][i];
          edges.push_back({g[i], up, height[v] + 1, height[parent[v]], 1.0});
          edges.push_back({up, g[i], top + depth[parent[v]] + 1, top + depth[parent[v]] + 1, 1.0});
        }
      }
    }
    append_pipeline(s, c, "nvlstree", edges, loops, head_chunk, 1.0, in);
  }
  return s;
}

} // namespace railyard::models::detail
