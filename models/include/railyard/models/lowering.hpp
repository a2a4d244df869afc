// Collective lowering: a pure function from (collective, bytes, communicator, node layout, algorithm, protocol,
// channels) to an explicit schedule of steps of point-to-point transfers. The simulator executes schedules; it never
// decides what a collective does. See models/README.md, "Collective lowering", for each algorithm's step structure.
#pragma once

#include "railyard/common/units.hpp"
#include "railyard/models/collective.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace railyard::models {

/// Who sends to whom in a step, as compressed rows over communicator ranks. A send may carry a weight: it moves
/// weight x the step's bytes (steps whose transfers differ in size, such as NVLSTree's intra-node and network legs).
class Pattern {
public:
  Pattern() = default;
  /// Builds rows from per-rank peer lists (communicator ranks).
  Pattern(std::string name, const std::vector<std::vector<int>>& send_to,
          const std::vector<std::vector<int>>& recv_from);
  /// Same, with one weight per send (send_weights[r][i] belongs to send_to[r][i]).
  Pattern(std::string name, const std::vector<std::vector<int>>& send_to,
          const std::vector<std::vector<double>>& send_weights, const std::vector<std::vector<int>>& recv_from);
  /// The ring r -> order[(i+1) % n] for the rank at position i of `order`.
  static Pattern ring(std::string name, const std::vector<int>& order);
  /// Builds rows from (src, dst, weight) sends over `nranks` ranks, each rank's peers in the order of `sends`; every
  /// send is also a receive of its dst, in the same order. Linear in nranks + sends (no list per rank).
  struct Send {
    int src = 0, dst = 0;
    double weight = 1.0;
  };
  static Pattern from_sends(std::string name, int nranks, const std::vector<Send>& sends,
                            const std::vector<Send>& recvs);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] int nranks() const { return static_cast<int>(send_offsets_.size()) - 1; }
  /// Sends of all ranks together: the transfers one step with this pattern starts.
  [[nodiscard]] std::size_t num_sends() const { return send_peers_.size(); }
  /// Bytes its arrays hold (their capacities), for memory estimates.
  [[nodiscard]] std::size_t memory_bytes() const;
  [[nodiscard]] std::span<const std::int32_t> sends(int rank) const
  {
    return {send_peers_.data() + send_offsets_[rank], send_peers_.data() + send_offsets_[rank + 1]};
  }
  [[nodiscard]] std::span<const std::int32_t> recvs(int rank) const
  {
    return {recv_peers_.data() + recv_offsets_[rank], recv_peers_.data() + recv_offsets_[rank + 1]};
  }
  /// Weight of the i-th send of `rank` (1 when the pattern has no weights).
  [[nodiscard]] double send_weight(int rank, std::size_t i) const
  {
    return send_weights_.empty() ? 1.0 : send_weights_[send_offsets_[rank] + i];
  }
  /// Whether `rank` receives from another node in this pattern (set by mark_inter_node; false before).
  [[nodiscard]] bool receives_inter_node(int rank) const { return !recv_inter_.empty() && recv_inter_[rank] != 0; }
  /// Records, for every rank, whether one of its receives comes from another node (node of GPU g: g / gpus_per_node).
  void mark_inter_node(const std::vector<int>& gpus, int gpus_per_node);

private:
  std::string name_;
  std::vector<std::uint32_t> send_offsets_{0}, recv_offsets_{0};
  std::vector<std::int32_t> send_peers_, recv_peers_;
  std::vector<double> send_weights_;
  std::vector<std::uint8_t> recv_inter_;
};

/// One step on one channel. Every rank posts the receives of pattern.recvs(rank) and sends wire_bytes x weight to
/// each of pattern.sends(rank). Timing (sim/src/collective_runner.cpp):
///  - a rank posts the receives of step s+d as soon as all receives of step s have arrived and its sends of step s
///    are posted, d the channel's depth (Schedule::depth_of: the steps a connection's FIFO holds in flight; a
///    transfer starts only once its receiver has posted the matching receive), the receives of its first d steps at
///    the start;
///  - it posts the sends of step s+1 `overhead` after the receives of step s arrived (the per-hop latency of
///    forwarding what it received; NCCL's hwLat), and never before the sends of step s. A rank that receives nothing
///    in step s pays no overhead for it. Sends never wait for their own completion.
/// So the overhead delays what a rank forwards, but not the transfers already under way towards it.
struct Step {
  std::uint32_t pattern = 0;
  Bytes bytes{0};      ///< payload per send (x weight)
  Bytes wire_bytes{0}; ///< bytes on the wire per send (x weight): payload / protocol efficiency
  Seconds overhead{0}; ///< per-hop latency of a rank whose receives in this step all come from its own node
  /// Per-hop latency of a rank with a receive from another node in this step; empty: `overhead` for every rank.
  std::optional<Seconds> overhead_inter;
};

struct Schedule {
  CollectiveKind kind = CollectiveKind::AllReduce;
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  Bytes bytes{0};        ///< the call's size (nccl-tests convention)
  std::vector<int> gpus; ///< communicator rank -> global GPU id
  std::vector<Pattern> patterns;
  std::vector<std::vector<Step>> channels; ///< per channel, its steps in order
  /// Fixed cost before a rank's first sends (NCCL's per-call base latency: kernel launch and setup). Receives are
  /// posted at once, so data from ranks that started earlier can arrive meanwhile.
  Seconds launch{0};
  /// Per channel, the steps of it a connection holds in flight (connection_depth()). A channel without an entry (a
  /// hand-built schedule, a p2p group) has depth 1: a sender waits for its previous step to arrive.
  std::vector<std::uint8_t> depth;

  [[nodiscard]] int depth_of(std::size_t channel) const
  {
    return channel < depth.size() && depth[channel] > 0 ? depth[channel] : 1;
  }

  [[nodiscard]] int nranks() const { return static_cast<int>(gpus.size()); }
  [[nodiscard]] std::size_t num_steps() const;
  /// Point-to-point transfers the schedule starts: over channels and steps, the sends of the step's pattern.
  [[nodiscard]] std::size_t num_transfers() const;
  /// Bytes the schedule holds: its patterns' arrays and its steps (capacities), for memory estimates.
  [[nodiscard]] std::size_t memory_bytes() const;
  /// Bytes every rank sends in total: sum over channels and steps of bytes x weight of each send.
  [[nodiscard]] Bytes bytes_sent_by(int rank) const;
};

/// NCCL_STEPS (NCCL src/include/device.h): the slots of a connection's buffer, each one protocol step.
inline constexpr int kNcclSteps = 8;

/// What a protocol costs on the wire and how NCCL sizes its buffers (src/include/device.h, src/init.cc buffSizes).
struct ProtocolSpec {
  Protocol protocol;
  double wire_per_payload; ///< wire bytes per payload byte: LL 16/8, LL128 128/120, Simple 1
  Bytes step_wire;         ///< buffSize / NCCL_STEPS: bytes one NCCL step occupies in a connection's buffer
  Bytes step_payload;      ///< payload one ring all-reduce step of one channel moves at most (NCCL's chunk)
  const char* source;
  /// buffSize: a connection's whole buffer, what its sender may have in flight ahead of the receiver.
  [[nodiscard]] Bytes connection_buffer() const { return Bytes(kNcclSteps * step_wire.bytes()); }
};
const ProtocolSpec& protocol_spec(Protocol p);

/// How many steps of a lowered collective a connection holds in flight: NCCL_STEPS over the NCCL steps one schedule
/// step occupies. A sender writes a slice into slot `step % NCCL_STEPS` of its peer's FIFO once the peer has freed it
/// (prims_simple.h waitPeer: connStepCache + NCCL_STEPS >= step + StepPerSlice; prims_ll.h, prims_ll128.h alike), so
/// a connection runs NCCL_STEPS / steps-per-chunk chunks ahead of its receiver. Ring Simple all_reduce, all_gather
/// and reduce_scatter take ALLREDUCE_CHUNKSTEPS = 4 steps per chunk (ProtoSimple<2, 2>, collectives.h): depth 2.
/// Every other collective chunk is one NCCL step (LL and LL128, ProtoSimple<1, 1> of Tree, NVLS, NVLSTree and PAT,
/// BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1): depth 8. P2p groups are not collectives here: their steps are
/// rounds, which one channel runs one after another (depth 1).
int connection_depth(CollectiveKind kind, Algorithm a, Protocol p);

/// NCCL's chunk (payload bytes one step of one channel moves) for a call, following calcCollChunking in
/// src/enqueue.cc (NCCL 2.26.2): ring Simple all_reduce/all_gather/reduce_scatter take 4 NCCL steps per chunk,
/// every other case one; LL halves it, LL128 keeps 120 of 128 bytes; NVLS, NVLSTree, Tree/LL128 and PAT shrink it
/// for small messages. `nheads` is the NVLS head count (GPUs per node), `nnodes` the nodes of the communicator.
Bytes nccl_chunk(CollectiveKind kind, Algorithm a, Protocol p, Bytes total, int channels, int nranks, int nnodes,
                 int nheads);

/// RCCL's chunk for the same call: computeCollChunkInfo in src/enqueue.cc of ROCm/rccl at 0cbce2a7 (RCCL 2.21.5),
/// which keeps two rules NCCL 2.26.2's calcCollChunking no longer has. Tree/Simple all_reduce (ncclPatternTreeUpDown)
/// halves the chunk while a channel gets fewer than depth x 8 chunks (down to 128 KiB), depth x 4 (64 KiB) and depth
/// (32 KiB), with RCCL's tree depth nranks / nnodes - 1 + log2(nnodes) (src/graph/connect.cc); Ring/Simple broadcast
/// and reduce (ncclPatternPipelineFrom / To) while fewer than 64, 32, 16 and 8 (down to 256, 128, 64 and 32 KiB).
/// Every other case is NCCL's (nccl_chunk).
Bytes rccl_chunk(CollectiveKind kind, Algorithm a, Protocol p, Bytes total, int channels, int nranks, int nnodes,
                 int nheads);

/// NCCL's fixed costs for an algorithm and protocol: per-call base latency and per-hop latencies, and the NVLS
/// bandwidth efficiency. Built by nccl_lowering_costs() from NCCL's tuning constants.
struct LoweringCosts {
  Seconds launch{0};            ///< once per call (Schedule::launch)
  Seconds intra_hop{0};         ///< per step, receiving inside a node (Step::overhead)
  Seconds inter_hop{0};         ///< per step, receiving across nodes (Step::overhead_inter)
  double nvls_efficiency = 1.0; ///< fraction of NVLink bandwidth multimem loads and stores reach
  /// Fraction of a link's bandwidth the sends of RCCL's MSCCL and MSCCL++ kernels reach (rccl_lowering_costs: fitted);
  /// their flows carry bytes / link_efficiency. 1 for every other algorithm.
  double link_efficiency = 1.0;
};

/// The costs NCCL 2.26.2's model assigns (src/graph/tuning.cc baseLat, hwLat; see models/README.md for how each
/// algorithm uses them), for GPUs of `compute_capability` whose intra-node hops are NVLink; `nranks` enters PAT's
/// latency. With `one_rank_per_node` (a communicator of one GPU on each of several nodes) a ring's network hop takes
/// Tree's hwLat[NET], as NCCL's model prices it ("with ppn=1 latencies are fully exposed"). NVLS efficiency:
/// nvlsEfficiency of NCCL's tuning.cc at commit 766bffee (0.85 Hopper, 0.74 Blackwell).
LoweringCosts nccl_lowering_costs(Algorithm a, Protocol p, int compute_capability, int nranks,
                                  bool one_rank_per_node = false);

struct LoweringInput {
  CollectiveCall call;      ///< kind, bytes, ranks (global GPU ids); algorithm/protocol/channels must be set
  int gpus_per_node = 8;    ///< node of GPU g is g / gpus_per_node
  Seconds step_overhead{0}; ///< added to every step's overhead (scenario `nccl.step_overhead`)
  LoweringCosts costs{};    ///< NCCL's fixed costs; zero: bytes and link latencies only
  /// Most steps (over all channels) the schedule may hold; 0: no limit. The lowering counts a call's steps before it
  /// appends them and throws ScheduleTooLarge instead of building more, so a call that is too large for memory (or
  /// for a run's work budget) is refused before it is allocated.
  std::size_t max_steps = 0;
  /// Per channel, the order in which its ring (and its trees' chains) visit a node's local GPUs (0 ..
  /// gpus_per_node - 1): channel c takes intra_rings[c % size], entering the node at element (c / size) mod k of the
  /// GPUs present. A fully connected node needs it (RCCL's rings on MI300X: each ring over other direct links, so k
  /// rings use k times one link's bandwidth); empty: local GPU order rotated by the channel, as on an NVSwitch node,
  /// where every order crosses the same links.
  std::vector<std::vector<int>> intra_rings;
  /// With intra_rings: the communicator's odd nodes (1, 3, ... in node order) run every order reversed, so a ring
  /// leaves one node and enters the next on the same GPU index, one rail (RCCL's parseGraph: reverse = hostIdx % 2).
  bool intra_rings_reverse_odd_nodes = false;
  /// Chunks as RCCL sizes them (rccl_chunk) instead of NCCL (nccl_chunk): set for a call on AMD GPUs.
  bool rccl_chunking = false;
};

/// A call whose schedule would hold more than LoweringInput::max_steps steps.
class ScheduleTooLarge : public std::length_error {
public:
  ScheduleTooLarge(double steps, std::size_t limit);
  [[nodiscard]] double steps() const { return steps_; } ///< at least this many
  [[nodiscard]] std::size_t limit() const { return limit_; }

private:
  double steps_;
  std::size_t limit_;
};

/// Lowers a call. Throws std::invalid_argument for a combination this lowering does not implement (CollNet, Tree
/// outside all_reduce, ...); callers that take user input check first with the NCCL model's refusal rules
/// (check_request) so users see an InputError instead.
Schedule lower(const LoweringInput& in);

/// One point-to-point transfer of a group: communicator-free, in global GPU ids.
struct P2pTransfer {
  int src = 0;
  int dst = 0;
  Bytes bytes{0};
};

/// A group of sends and receives issued together (ncclGroupStart/End), scheduled as NCCL schedules them
/// (scheduleP2pTasksToPlan, src/enqueue.cc): round r pairs each rank with the peer r ranks ahead, rounds spread over
/// `lanes` concurrent p2p channels, each lane running its rounds in order. Protocol LL when every transfer is at
/// most 16 KiB (NCCL_P2P_LL_THRESHOLD), else Simple.
Schedule lower_p2p(const std::vector<P2pTransfer>& transfers, int lanes, int gpus_per_node, const LoweringCosts& costs,
                   Seconds step_overhead);
/// The protocol NCCL uses for p2p transfers: LL up to NCCL_P2P_LL_THRESHOLD (16 KiB), else Simple.
Protocol p2p_protocol(Bytes largest_transfer);

/// Runs several schedules as one (a group of collectives launched together): every member keeps its own channels,
/// the result has the union of the members' GPUs, and one launch (the largest member's).
Schedule merge_group(const std::vector<Schedule>& members, int gpus_per_node);

/// The ring order NCCL builds on channel `channel` for these GPUs: nodes in order; inside each node the GPUs present,
/// rotated so that channel c enters the node at its (c mod k)-th GPU and leaves at the one before it, so with PXN the
/// edge between nodes leaves and enters on one rail. Returns communicator ranks in ring order.
/// `intra_rings` (LoweringInput::intra_rings): the orders of a fully connected node's rings; null or empty: local GPU
/// order.
std::vector<int> ring_order(const std::vector<int>& gpus, int gpus_per_node, int channel,
                            const std::vector<std::vector<int>>* intra_rings = nullptr, bool reverse_odd_nodes = false);

/// NCCL's binary tree over `nranks` (src/graph/trees.cc ncclGetBtree): parent (-1 for the root 0) and children.
struct TreeLinks {
  int parent = -1;
  std::vector<int> children;
};
TreeLinks nccl_btree(int nranks, int rank);
/// NCCL's double binary tree (ncclGetDtree): tree 0 is the btree; tree 1 mirrors it (even nranks) or shifts it by
/// one (odd nranks), so that leaves of one tree are inner nodes of the other.
TreeLinks nccl_dtree(int nranks, int rank, int tree);

} // namespace railyard::models
