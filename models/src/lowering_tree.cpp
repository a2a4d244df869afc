// Tree all-reduce (NCCL src/device/all_reduce.h runTreeSplit; trees from src/graph/trees.cc and connect.cc).
#include "lowering_internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace railyard::models::detail {

namespace {

struct Tree {
  std::vector<int> parent;
  std::vector<std::vector<int>> children;
  int root = -1;
  std::vector<int> depth, height;
};

// The tree of channel `channel`: inside each node a chain in the channel's ring order, whose first GPU (where the
// channel enters the node, so its NIC is the channel's rail) links the node into NCCL's double binary tree over
// nodes; even channels use tree 0, odd ones tree 1 (NCCL gives each tree half the channels).
Tree channel_tree(const std::vector<int>& gpus, int channel, const LoweringInput& in)
{
  const auto nodes = nodes_in_ring_order(gpus, channel, in);
  const int n = static_cast<int>(gpus.size());
  const int nnodes = static_cast<int>(nodes.size());
  Tree t;
  t.parent.assign(n, -1);
  t.children.resize(n);
  for (const auto& chain : nodes)
    for (std::size_t i = 1; i < chain.size(); ++i) {
      t.parent[chain[i]] = chain[i - 1];
      t.children[chain[i - 1]].push_back(chain[i]);
    }
  for (int v = 0; v < nnodes; ++v) {
    const TreeLinks links = nccl_dtree(nnodes, v, channel % 2);
    const int head = nodes[v].front();
    if (links.parent >= 0) t.parent[head] = nodes[links.parent].front();
    for (int c : links.children)
      t.children[head].push_back(nodes[c].front());
  }
  for (int r = 0; r < n; ++r)
    if (t.parent[r] < 0) {
      if (t.root >= 0) throw std::logic_error("channel tree has two roots");
      t.root = r;
    }
  // Depths top-down (breadth first), heights bottom-up (the same order reversed).
  std::vector<int> order{t.root};
  t.depth.assign(n, 0);
  for (std::size_t i = 0; i < order.size(); ++i)
    for (int c : t.children[order[i]]) {
      t.depth[c] = t.depth[order[i]] + 1;
      order.push_back(c);
    }
  if (static_cast<int>(order.size()) != n) throw std::logic_error("channel tree does not reach every rank");
  t.height.assign(n, 0);
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    for (int c : t.children[*it])
      t.height[*it] = std::max(t.height[*it], t.height[c] + 1);
  return t;
}

} // namespace

// runTreeSplit: the reduction up the tree and the broadcast down it run at once on separate connections, chunk by
// chunk (one NCCL step per chunk), and the root turns each reduced chunk around at once. As a pipeline: a rank of
// height h receives chunk k from its children in step h - 1 + k and sends it up in step h + k; the root (height H)
// sends it down in step H + k; a rank at depth d receives it from its parent in step H + d - 1 + k and passes it on
// in step H + d + k.
Schedule lower_tree(const LoweringInput& in)
{
  const auto& call = in.call;
  if (call.kind != CollectiveKind::AllReduce) throw std::invalid_argument("NCCL implements Tree only for all_reduce");
  const int n = static_cast<int>(call.ranks.size());
  const int channels = std::max(1, call.channels.value_or(1));
  Schedule s = make_schedule(in, Algorithm::Tree, channels);
  if (n == 1 || call.bytes.bytes() <= 0) return s;

  const int nnodes = static_cast<int>(nodes_in_ring_order(call.ranks, 0, in).size());
  const double per_channel = call.bytes.bytes() / channels;
  const double chunk =
      library_chunk(in, CollectiveKind::AllReduce, Algorithm::Tree, *call.protocol, call.bytes, channels, n, nnodes, 1)
          .bytes();
  const std::int64_t chunks = chunks_for(per_channel, chunk);
  const Bytes chunk_bytes(per_channel / static_cast<double>(chunks));
  const double wire = protocol_spec(*call.protocol).wire_per_payload;

  for (int c = 0; c < channels; ++c) {
    const Tree t = channel_tree(call.ranks, c, in);
    const std::int64_t top = t.height[t.root];
    std::vector<PipeEdge> edges;
    for (int x = 0; x < n; ++x) {
      const int p = t.parent[x];
      if (p < 0) continue;
      edges.push_back({x, p, t.height[x], t.height[p] - 1, 1.0});
      edges.push_back({p, x, top + t.depth[p], top + t.depth[p], 1.0});
    }
    append_pipeline(s, c, "tree", edges, chunks, chunk_bytes, wire, in);
  }
  return s;
}

} // namespace railyard::models::detail
