// PAT, "Parallel Aggregated Trees" (NCCL 2.23+, src/include/collectives.h PatAGAlgorithm / PatRSAlgorithm), for
// all_gather and reduce_scatter with one GPU per node.
//
// PAT runs a binomial tree from every rank at once, in log2(n) steps whose data doubles while the distance halves:
// in all_gather step i a rank sends the 2^i blocks it holds to the rank nrPow2 / 2^(i+1) ahead (the farthest peer
// first, with the least data), so after the last step it holds all n blocks; reduce_scatter runs the mirror image
// (distance 2^i backwards, 2^(L-1-i) partial blocks). NCCL works through each block in chunks (calcCollChunking),
// so every chunk of the channel's share repeats the log2(n) steps. For n not a power of two NCCL skips the missing
// peers; here step i moves min(2^i, n - 2^i) blocks, which keeps the total at n - 1 blocks per rank, exactly what
// every rank must receive.
#include "lowering_internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <stdexcept>

namespace railyard::models::detail {

Schedule lower_pat(const LoweringInput& in)
{
  const auto& call = in.call;
  const int n = static_cast<int>(call.ranks.size());
  const int channels = std::max(1, call.channels.value_or(1));
  if (call.kind != CollectiveKind::AllGather && call.kind != CollectiveKind::ReduceScatter)
    throw std::invalid_argument("NCCL implements PAT only for all_gather and reduce_scatter");
  std::set<int> nodes;
  for (int g : call.ranks)
    nodes.insert(g / in.gpus_per_node);
  if (static_cast<int>(nodes.size()) != n) throw std::invalid_argument("PAT needs one GPU per node");
  Schedule s = make_schedule(in, Algorithm::Pat, channels);
  if (n == 1 || call.bytes.bytes() <= 0) return s;

  int levels = 0;
  while ((1 << levels) < n)
    ++levels;
  const int pow2 = 1 << levels;
  const bool gather = call.kind == CollectiveKind::AllGather;
  // One block is a rank's share of the call (size / n); a channel moves 1/channels of every block.
  const double block_per_channel = call.bytes.bytes() / n / channels;
  const double chunk = nccl_chunk(call.kind, Algorithm::Pat, Protocol::Simple, call.bytes, channels, n, n, 1).bytes();
  const std::int64_t pieces = chunks_for(block_per_channel, chunk);
  const double piece = block_per_channel / static_cast<double>(pieces);
  check_steps(s, static_cast<double>(pieces) * levels * channels, in);
  for (auto& ch : s.channels)
    ch.reserve(ch.size() + static_cast<std::size_t>(pieces) * static_cast<std::size_t>(levels));

  for (int c = 0; c < channels; ++c) {
    std::vector<std::uint32_t> pattern(levels);
    std::vector<double> blocks(levels);
    for (int i = 0; i < levels; ++i) {
      const int distance = gather ? pow2 >> (i + 1) : 1 << i;
      const int held = gather ? 1 << i : 1 << (levels - 1 - i);
      blocks[i] = std::min(held, n - held);
      std::vector<std::vector<int>> send_to(n), recv_from(n);
      for (int r = 0; r < n; ++r) {
        const int to = gather ? (r + distance) % n : ((r - distance) % n + n) % n;
        send_to[r].push_back(to);
        recv_from[to].push_back(r);
      }
      pattern[i] = add_pattern(s, Pattern(fmt::format("pat-ch{}-step{}", c, i), send_to, recv_from), in.gpus_per_node);
    }
    for (std::int64_t k = 0; k < pieces; ++k)
      for (int i = 0; i < levels; ++i)
        s.channels[c].push_back(make_step(pattern[i], Bytes(blocks[i] * piece), 1.0, in));
  }
  return s;
}

} // namespace railyard::models::detail
