#include "railyard/models/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

namespace railyard::models {

Pattern::Pattern(std::string name, const std::vector<std::vector<int>>& send_to,
                 const std::vector<std::vector<int>>& recv_from)
    : name_(std::move(name))
{
  for (const auto& peers : send_to) {
    send_peers_.insert(send_peers_.end(), peers.begin(), peers.end());
    send_offsets_.push_back(static_cast<std::uint32_t>(send_peers_.size()));
  }
  for (const auto& peers : recv_from) {
    recv_peers_.insert(recv_peers_.end(), peers.begin(), peers.end());
    recv_offsets_.push_back(static_cast<std::uint32_t>(recv_peers_.size()));
  }
}

Pattern Pattern::ring(std::string name, const std::vector<int>& order)
{
  const int n = static_cast<int>(order.size());
  std::vector<std::vector<int>> send_to(n), recv_from(n);
  for (int i = 0; i < n; ++i) {
    const int me = order[i];
    send_to[me] = {order[(i + 1) % n]};
    recv_from[me] = {order[(i + n - 1) % n]};
  }
  return Pattern(std::move(name), send_to, recv_from);
}

std::size_t Schedule::num_steps() const
{
  std::size_t total = 0;
  for (const auto& ch : channels)
    total += ch.size();
  return total;
}

Bytes Schedule::bytes_sent_by(int rank) const
{
  Bytes total{0};
  for (const auto& ch : channels)
    for (const auto& s : ch)
      total += s.bytes * static_cast<double>(patterns[s.pattern].sends(rank).size());
  return total;
}

const ProtocolSpec& protocol_spec(Protocol p)
{
  // Chunk sizes follow NCCL's defaults (src/include/collectives.h, src/enqueue.cc, NCCL 2.19-2.27): Simple has a
  // 4 MiB buffer per connection cut into NCCL_STEPS = 8 steps of 512 KiB, and ring all-reduce moves
  // ALLREDUCE_CHUNKSTEPS = 4 of them per chunk (2 MiB). LL sends 8-byte flags with every 8 data bytes: its 512 KiB
  // buffer (NCCL_LL_LINES_PER_THREAD 8 x 512 threads x 8 steps x 16 B) holds 32 KiB of payload per step. LL128 packs
  // 120 data bytes per 128-byte line: buffer 120 x 640 x 8 x 8 B = 4,915,200 B, 614,400 B per step, 576,000 payload.
  static const ProtocolSpec kSpecs[] = {
      {Protocol::LL, 2.0, Bytes(32.0 * 1024), "NCCL src/include/device.h: LL line = 8 B data + 8 B flags"},
      {Protocol::LL128, 128.0 / 120.0, Bytes(576000), "NCCL src/include/device.h: NCCL_LL128_DATAELEMS 15 of 16"},
      {Protocol::Simple, 1.0, Bytes(2.0 * 1024 * 1024), "NCCL src/include/collectives.h: ALLREDUCE_CHUNKSTEPS 4"},
  };
  for (const auto& s : kSpecs)
    if (s.protocol == p)
      return s;
  throw std::invalid_argument("unknown protocol");
}

std::vector<int> ring_order(const std::vector<int>& gpus, int gpus_per_node, int channel)
{
  // Group communicator ranks by node, keeping node order and, inside a node, local GPU order.
  std::map<int, std::vector<std::pair<int, int>>> by_node; // node -> (local gpu, comm rank)
  for (int r = 0; r < static_cast<int>(gpus.size()); ++r)
    by_node[gpus[r] / gpus_per_node].emplace_back(gpus[r] % gpus_per_node, r);
  std::vector<int> order;
  order.reserve(gpus.size());
  for (auto& [node, members] : by_node) {
    std::sort(members.begin(), members.end());
    const int k = static_cast<int>(members.size());
    const int entry = channel % k;
    for (int i = 0; i < k; ++i)
      order.push_back(members[(entry + i) % k].second);
  }
  return order;
}

namespace {

// Ring all-reduce, all-gather and reduce-scatter (NCCL src/device/all_reduce.h runRing and friends): the data is cut
// into loops of channels x nranks x chunk; in each loop every channel moves one slice per step around its ring.
// All-reduce takes 2(n-1) steps per loop (reduce-scatter then all-gather), the other two n-1.
Schedule lower_ring(const LoweringInput& in)
{
  const auto& call = in.call;
  const int n = static_cast<int>(call.ranks.size());
  const int channels = call.channels.value_or(1);
  const ProtocolSpec& proto = protocol_spec(*call.protocol);

  Schedule s;
  s.kind = call.kind;
  s.algorithm = Algorithm::Ring;
  s.protocol = *call.protocol;
  s.bytes = call.bytes;
  s.gpus = call.ranks;
  s.channels.resize(channels);
  if (n == 1)
    return s;

  int steps_per_loop = 0;
  switch (call.kind) {
  case CollectiveKind::AllReduce: steps_per_loop = 2 * (n - 1); break;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter: steps_per_loop = n - 1; break;
  default: throw std::invalid_argument(fmt::format("ring lowering does not handle {}", to_string(call.kind)));
  }

  for (int c = 0; c < channels; ++c)
    s.patterns.push_back(Pattern::ring(fmt::format("ring-ch{}", c), ring_order(call.ranks, in.gpus_per_node, c)));

  const double total = call.bytes.value();
  const double loop_size = static_cast<double>(channels) * n * proto.step_payload.value();
  const auto loops = static_cast<std::int64_t>(std::ceil(total / loop_size));
  for (std::int64_t l = 0; l < loops; ++l) {
    const double loop_bytes = std::min(loop_size, total - static_cast<double>(l) * loop_size);
    const Bytes slice(loop_bytes / (static_cast<double>(channels) * n));
    const Bytes wire(std::ceil(slice.value() * proto.wire_per_payload));
    for (int c = 0; c < channels; ++c)
      for (int k = 0; k < steps_per_loop; ++k)
        s.channels[c].push_back(Step{static_cast<std::uint32_t>(c), slice, wire, in.step_overhead});
  }
  return s;
}

} // namespace

Schedule lower(const LoweringInput& in)
{
  const auto& call = in.call;
  if (!call.algorithm || !call.protocol)
    throw std::invalid_argument("lower(): algorithm and protocol must be chosen before lowering");
  if (call.ranks.empty())
    throw std::invalid_argument("lower(): a collective needs at least one rank");
  if (call.bytes.value() < 0)
    throw std::invalid_argument("lower(): negative size");
  switch (*call.algorithm) {
  case Algorithm::Ring: return lower_ring(in);
  default:
    throw std::invalid_argument(
        fmt::format("{} with algorithm {} is not lowered yet", to_string(call.kind), to_string(*call.algorithm)));
  }
}

} // namespace railyard::models
