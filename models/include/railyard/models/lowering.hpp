// Collective lowering: a pure function from (collective, bytes, communicator, node layout, algorithm, protocol,
// channels) to an explicit schedule of steps of point-to-point transfers. The simulator executes schedules; it never
// decides what a collective does.
#pragma once

#include "railyard/common/units.hpp"
#include "railyard/models/collective.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace railyard::models {

/// Who sends to whom in a step, as compressed rows over communicator ranks.
class Pattern {
public:
  Pattern() = default;
  /// Builds rows from per-rank peer lists (communicator ranks).
  Pattern(std::string name, const std::vector<std::vector<int>>& send_to, const std::vector<std::vector<int>>& recv_from);
  /// The ring r -> order[(i+1) % n] for the rank at position i of `order`.
  static Pattern ring(std::string name, const std::vector<int>& order);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] int nranks() const { return static_cast<int>(send_offsets_.size()) - 1; }
  [[nodiscard]] std::span<const std::int32_t> sends(int rank) const
  {
    return {send_peers_.data() + send_offsets_[rank], send_peers_.data() + send_offsets_[rank + 1]};
  }
  [[nodiscard]] std::span<const std::int32_t> recvs(int rank) const
  {
    return {recv_peers_.data() + recv_offsets_[rank], recv_peers_.data() + recv_offsets_[rank + 1]};
  }

private:
  std::string name_;
  std::vector<std::uint32_t> send_offsets_{0}, recv_offsets_{0};
  std::vector<std::int32_t> send_peers_, recv_peers_;
};

/// One step on one channel. Every rank posts its receives from pattern.recvs(rank) and sends `wire_bytes` to each
/// of pattern.sends(rank); it moves on to its next step once all of this step's receives have arrived and
/// `overhead` has passed. A rank with nothing to receive moves on at once. Sends never wait for their own
/// completion, but a transfer starts only once its receiver has posted the matching receive (one step of
/// buffering per connection, like NCCL's FIFO credits).
struct Step {
  std::uint32_t pattern = 0;
  Bytes bytes{0};      ///< payload per send
  Bytes wire_bytes{0}; ///< bytes on the wire per send: payload / protocol efficiency (LL: 2x, LL128: 128/120)
  Seconds overhead{0}; ///< fixed per-step cost added after the receives arrive (protocol / kernel step latency)
};

struct Schedule {
  CollectiveKind kind = CollectiveKind::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  Bytes bytes{0};              ///< the call's size (nccl-tests convention)
  std::vector<int> gpus;       ///< communicator rank -> global GPU id
  std::vector<Pattern> patterns;
  std::vector<std::vector<Step>> channels; ///< per channel, its steps in order

  [[nodiscard]] int nranks() const { return static_cast<int>(gpus.size()); }
  [[nodiscard]] std::size_t num_steps() const;
  /// Payload bytes every rank sends in total (sum over channels and steps of bytes x sends(rank)).
  [[nodiscard]] Bytes bytes_sent_by(int rank) const;
};

/// What a protocol costs on the wire and how NCCL cuts data into steps.
struct ProtocolSpec {
  Protocol protocol;
  double wire_per_payload; ///< wire bytes per payload byte
  Bytes step_payload;      ///< payload one ring step of one channel moves at most (chunk)
  const char* source;
};
const ProtocolSpec& protocol_spec(Protocol p);

struct LoweringInput {
  CollectiveCall call;      ///< kind, bytes, ranks (global GPU ids); algorithm/protocol/channels must be set
  int gpus_per_node = 8;    ///< node of GPU g is g / gpus_per_node
  Seconds step_overhead{0}; ///< added to every step (see Step::overhead)
};

/// Lowers a call. Throws std::invalid_argument for a combination this lowering does not implement; callers that take
/// user input check first with the NCCL model's refusal rules so users see an InputError instead.
Schedule lower(const LoweringInput& in);

/// The ring order NCCL builds on channel `channel` for these GPUs: nodes in order; inside each node the GPUs present,
/// rotated so that channel c enters the node at its (c mod k)-th GPU and leaves at the one before it, so with PXN the
/// edge between nodes leaves and enters on one rail. Returns communicator ranks in ring order.
std::vector<int> ring_order(const std::vector<int>& gpus, int gpus_per_node, int channel);

} // namespace railyard::models
