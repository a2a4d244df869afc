// The kernels RCCL runs on one 8x MI300X node before its cost model is asked (rccl_tuning.hpp rccl_default_kernel),
// as their sources move data. Every step is all-pairs: each rank sends to each of its 7 peers over their direct xGMI
// link, so a step loads every directed link once.
//
// MSCCL (src/device/msccl_kernel_impl.h running tools/msccl-algorithms/*.xml): the buffer is cut into nchunksperloop
// chunks and every call of the installed algorithms runs one loop (the largest chunk, maxBytes / nchunksperloop, is
// within one step's chunk: 16 KiB of LL data, or MSCCL_CHUNKSTEPS = 4 steps of 512 KiB for Simple), so each thread
// block of a GPU sends its peer one message per phase:
//   - allreduce-allpairs-8n-*: phase 1, rank r sends peer q the chunks of q's eighth; q reduces its eighth of all 8
//     ranks; phase 2, q sends its reduced eighth to every peer. Per directed link 2 x bytes / 8, spread over the
//     XML's nchannels blocks per peer (channels here), each phase one step.
//   - alltoall-8n-*: one step, rank r sends peer q the eighth meant for q, over the blocks the XML gives each peer.
// The local copy of out-of-place algorithms (cpy) and the reductions are memory work this lowering does not time.
//
// MSCCL++ (microsoft/mscclpp apps/nccl/src at 1e82dd44, the version RCCL builds), one kernel, one channel here:
//   - allreduce7 (all_reduce of 32 B to 1 MiB: ncclAllReduce falls back to it without execution plans): step 1, every
//     rank writes each peer's eighth into that peer's scratch as LL8 packets (4 data bytes and a 4-byte flag); step 2,
//     every rank reduces its eighth and writes it to every peer likewise. Per directed link 2 x bytes / 8 of payload,
//     twice that on the wire.
//   - allgather6: every block signals and waits on a semaphore with each peer (step 1: 8 bytes to each peer), then
//     every rank writes its block of bytes / 8 into each peer's output with plain 16-byte stores (step 2).
#include "lowering_internal.hpp"
#include "railyard/models/rccl_tuning.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace railyard::models::detail {

namespace {

constexpr int kMscclRanks = 8; // every algorithm and kernel here is written for 8 GPUs

/// Every rank sends to every other rank, peers in ring distance order (rank r + 1 first), as MSCCL's blocks and
/// MSCCL++'s channels are laid out.
Pattern all_pairs(const std::string& name, int n)
{
  std::vector<std::vector<int>> send_to(n), recv_from(n);
  for (int r = 0; r < n; ++r)
    for (int d = 1; d < n; ++d) {
      send_to[r].push_back((r + d) % n);
      recv_from[r].push_back((r - d + n) % n);
    }
  return Pattern(name, send_to, recv_from);
}

void check_ranks(const LoweringInput& in, const char* what)
{
  if (static_cast<int>(in.call.ranks.size()) != kMscclRanks)
    throw std::invalid_argument(fmt::format("{} is written for {} GPUs, and this communicator has {}", what,
                                            kMscclRanks, in.call.ranks.size()));
  if (in.costs.link_efficiency <= 0 || in.costs.link_efficiency > 1)
    throw std::invalid_argument(fmt::format("{}: link efficiency {} is not in (0, 1]", what, in.costs.link_efficiency));
}

} // namespace

Schedule lower_msccl(const LoweringInput& in)
{
  check_ranks(in, "MSCCL");
  const auto& call = in.call;
  const Protocol p = *call.protocol;
  const int channels = call.channels.value_or(0);
  const MscclAlgorithmSpec* spec = msccl_algorithm(call.kind, p, channels);
  if (!spec)
    throw std::invalid_argument(fmt::format("RCCL installs no MSCCL algorithm for {} with protocol {} and {} channels",
                                            to_string(call.kind), to_string(p), channels));
  const int blocks = spec->peer_channels;
  const int phases = call.kind == CollectiveKind::AllReduce ? 2 : 1;
  Schedule s = make_schedule(in, Algorithm::MscclAllPairs, blocks);
  check_steps(s, static_cast<double>(blocks) * phases, in);
  const std::uint32_t pattern = add_pattern(s, all_pairs(spec->file, kMscclRanks), in.gpus_per_node);
  const Bytes per_send = call.bytes / (kMscclRanks * blocks);
  const double wire = protocol_spec(p).wire_per_payload / in.costs.link_efficiency;
  for (auto& ch : s.channels)
    for (int phase = 0; phase < phases; ++phase)
      ch.push_back(make_step(pattern, per_send, wire, in));
  return s;
}

Schedule lower_mscclpp(const LoweringInput& in)
{
  check_ranks(in, "MSCCL++");
  const auto& call = in.call;
  const Protocol p = *call.protocol;
  const bool all_reduce = call.kind == CollectiveKind::AllReduce;
  if (p != (all_reduce ? Protocol::LL : Protocol::Simple))
    throw std::invalid_argument(fmt::format("MSCCL++ runs {} with {} (protocol {} asked)", to_string(call.kind),
                                            all_reduce ? "LL8 packets (LL)" : "plain stores (Simple)", to_string(p)));
  Schedule s = make_schedule(in, Algorithm::Mscclpp, 1);
  check_steps(s, 2, in);
  const double wire = protocol_spec(p).wire_per_payload / in.costs.link_efficiency;
  const Bytes eighth = call.bytes / kMscclRanks;
  auto& steps = s.channels.front();
  if (all_reduce) {
    const std::uint32_t pattern = add_pattern(s, all_pairs("mscclpp-allreduce7", kMscclRanks), in.gpus_per_node);
    steps.push_back(make_step(pattern, eighth, wire, in));
    steps.push_back(make_step(pattern, eighth, wire, in));
  } else {
    const std::uint32_t signal = add_pattern(s, all_pairs("mscclpp-allgather6-signal", kMscclRanks), in.gpus_per_node);
    const std::uint32_t data = add_pattern(s, all_pairs("mscclpp-allgather6", kMscclRanks), in.gpus_per_node);
    steps.push_back(make_step(signal, Bytes(8), 1.0, in)); // SmDevice2DeviceSemaphore: one 64-bit flag per peer
    steps.push_back(make_step(data, eighth, wire, in));
  }
  return s;
}

} // namespace railyard::models::detail
