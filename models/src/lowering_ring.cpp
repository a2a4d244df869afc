// Ring algorithms (NCCL src/device/all_reduce.h runRing, all_gather.h, reduce_scatter.h, broadcast.h, reduce.h).
#include "lowering_internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace railyard::models::detail {

// All-reduce, all-gather and reduce-scatter: the data is cut into loops of channels x nranks x chunk; in each loop
// every channel moves one slice per step around its ring. All-reduce takes 2(n-1) steps per loop (reduce-scatter
// then all-gather), the other two n-1. The last loop is split evenly over ranks and channels, as NCCL does.
Schedule lower_ring(const LoweringInput& in)
{
  const auto& call = in.call;
  const int n = static_cast<int>(call.ranks.size());
  const int channels = std::max(1, call.channels.value_or(1));
  const ProtocolSpec& proto = protocol_spec(*call.protocol);

  Schedule s = make_schedule(in, Algorithm::Ring, channels);
  if (n == 1 || call.bytes.bytes() <= 0) return s;

  int steps_per_loop = 0;
  switch (call.kind) {
  case CollectiveKind::AllReduce:
    steps_per_loop = 2 * (n - 1);
    break;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
    steps_per_loop = n - 1;
    break;
  default:
    throw std::invalid_argument(fmt::format("ring lowering does not handle {}", to_string(call.kind)));
  }

  for (int c = 0; c < channels; ++c)
    add_pattern(s,
                Pattern::ring(fmt::format("ring-ch{}", c), ring_order(call.ranks, in.gpus_per_node, c, &in.intra_rings,
                                                                      in.intra_rings_reverse_odd_nodes)),
                in.gpus_per_node);

  const double chunk =
      library_chunk(in, call.kind, Algorithm::Ring, *call.protocol, call.bytes, channels, n, 1, n).bytes();
  const double total = call.bytes.bytes();
  const double loop_size = static_cast<double>(channels) * n * chunk;
  const auto loops = static_cast<std::int64_t>(std::ceil(total / loop_size));
  check_steps(s, static_cast<double>(loops) * channels * steps_per_loop, in);
  // Exactly what follows: a schedule's memory is its steps, and growth by doubling would hold up to twice as much.
  for (auto& ch : s.channels)
    ch.reserve(ch.size() + static_cast<std::size_t>(loops) * static_cast<std::size_t>(steps_per_loop));
  for (std::int64_t l = 0; l < loops; ++l) {
    const double loop_bytes = std::min(loop_size, total - static_cast<double>(l) * loop_size);
    const Bytes slice(loop_bytes / (static_cast<double>(channels) * n));
    for (int c = 0; c < channels; ++c) {
      const Step st = make_step(static_cast<std::uint32_t>(c), slice, proto.wire_per_payload, in);
      for (int k = 0; k < steps_per_loop; ++k)
        s.channels[c].push_back(st);
    }
  }
  return s;
}

// Broadcast and reduce: a pipeline along the channel's ring. Broadcast starts at the root and ends at the rank
// before it; reduce starts after the root and ends at it. Each channel moves its share of the data in chunks of one
// NCCL step (BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1); the rank at position p of the chain forwards chunk k
// in its step p + k, once it has received it in step p - 1 + k.
Schedule lower_ring_chain(const LoweringInput& in)
{
  const auto& call = in.call;
  const int n = static_cast<int>(call.ranks.size());
  const int channels = std::max(1, call.channels.value_or(1));
  const ProtocolSpec& proto = protocol_spec(*call.protocol);
  if (call.root < 0 || call.root >= n)
    throw std::invalid_argument(fmt::format("root {} is not a rank of a communicator of {}", call.root, n));

  Schedule s = make_schedule(in, Algorithm::Ring, channels);
  if (n == 1 || call.bytes.bytes() <= 0) return s;
  const double per_channel = call.bytes.bytes() / channels;
  const double chunk =
      library_chunk(in, call.kind, Algorithm::Ring, *call.protocol, call.bytes, channels, n, 1, n).bytes();
  const std::int64_t chunks = chunks_for(per_channel, chunk);
  const Bytes chunk_bytes(per_channel / static_cast<double>(chunks));
  const bool broadcast = call.kind == CollectiveKind::Broadcast;

  for (int c = 0; c < channels; ++c) {
    std::vector<int> order =
        ring_order(call.ranks, in.gpus_per_node, c, &in.intra_rings, in.intra_rings_reverse_odd_nodes);
    const auto root_at = static_cast<std::size_t>(std::find(order.begin(), order.end(), call.root) - order.begin());
    // Broadcast: root first. Reduce: root last.
    std::rotate(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(broadcast ? root_at : (root_at + 1) % n),
                order.end());
    std::vector<PipeEdge> edges;
    for (int p = 0; p + 1 < n; ++p)
      edges.push_back({order[p], order[p + 1], p, p, 1.0});
    append_pipeline(s, c, broadcast ? "bcast" : "reduce", edges, chunks, chunk_bytes, proto.wire_per_payload, in);
  }
  return s;
}

} // namespace railyard::models::detail
