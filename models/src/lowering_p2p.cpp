// Grouped point-to-point transfers: alltoall, sendrecv and explicit send/recv groups, scheduled as NCCL schedules
// p2p operations (src/enqueue.cc scheduleP2pTasksToPlan; src/init.cc p2pSchedule): in round r every rank sends to
// the rank r ahead and receives from the rank r behind, rounds run on the p2p channels concurrently, and a channel
// runs the rounds given to it one after the other. Routes across rails take PXN in the network layer
// (Topology::route), as NCCL's PXN moves them over NVLink to the GPU on the destination's rail.
#include "railyard/models/lowering.hpp"

#include "lowering_internal.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace railyard::models {

Schedule lower_p2p(const std::vector<P2pTransfer>& transfers, int lanes, int gpus_per_node, const LoweringCosts& costs,
                   Seconds step_overhead)
{
  if (gpus_per_node < 1) throw std::invalid_argument("lower_p2p: gpus_per_node must be positive");
  Schedule s;
  s.kind = CollectiveKind::SendRecv;
  s.algorithm = Algorithm::Ring;
  s.launch = costs.launch;
  std::map<int, int> rank_of;
  double largest = 0;
  for (const auto& t : transfers) {
    if (t.bytes.bytes() < 0) throw std::invalid_argument("lower_p2p: negative size");
    rank_of.emplace(t.src, 0);
    rank_of.emplace(t.dst, 0);
    largest = std::max(largest, t.bytes.bytes());
    s.bytes += t.bytes;
  }
  for (auto& [gpu, rank] : rank_of) {
    rank = static_cast<int>(s.gpus.size());
    s.gpus.push_back(gpu);
  }
  s.protocol = p2p_protocol(Bytes(largest));
  const double wire = protocol_spec(s.protocol).wire_per_payload;
  const int n = static_cast<int>(s.gpus.size());

  // Transfers by round, self-copies and empty transfers left out (they do not touch the network).
  std::map<int, std::vector<const P2pTransfer*>> rounds;
  for (const auto& t : transfers) {
    if (t.src == t.dst || t.bytes.bytes() <= 0) continue;
    const int si = rank_of.at(t.src), di = rank_of.at(t.dst);
    rounds[((di - si) % n + n) % n].push_back(&t);
  }
  const int used = std::max(1, std::min(lanes, static_cast<int>(rounds.size())));
  s.channels.resize(static_cast<std::size_t>(used));
  LoweringInput costs_in;
  costs_in.gpus_per_node = gpus_per_node;
  costs_in.costs = costs;
  costs_in.step_overhead = step_overhead;
  int index = 0;
  for (const auto& [round, members] : rounds) {
    double step_bytes = 0;
    for (const auto* t : members)
      step_bytes = std::max(step_bytes, t->bytes.bytes());
    std::vector<std::vector<int>> send_to(n), recv_from(n);
    std::vector<std::vector<double>> weights(n);
    for (const auto* t : members) {
      const int si = rank_of.at(t->src), di = rank_of.at(t->dst);
      send_to[si].push_back(di);
      weights[si].push_back(step_bytes > 0 ? t->bytes.bytes() / step_bytes : 1.0);
      recv_from[di].push_back(si);
    }
    const auto idx =
        detail::add_pattern(s, Pattern(fmt::format("p2p-round{}", round), send_to, weights, recv_from), gpus_per_node);
    s.channels[static_cast<std::size_t>(index % used)].push_back(
        detail::make_step(idx, Bytes(step_bytes), wire, costs_in));
    ++index;
  }
  return s;
}

} // namespace railyard::models
