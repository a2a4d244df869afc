// The per-rank operation graph: what every GPU of a training step does, as the replay engine (sim/) consumes it.
//
// A Workload is a set of communicators (process groups) plus one program per global rank. A program (RankGraph) is
// a list of ops with explicit dependencies and CUDA-stream ordering:
//   - ops with the same stream id run in increasing op id order (one CUDA stream executes in issue order);
//   - an op also waits for every op in its dependency list (data and control dependencies);
//   - ops on stream kUnordered are ordered by their dependencies only;
//   - a Send completes when its bytes are delivered, without waiting for the peer to issue the matching Recv (as in
//     ASTRA-sim; Chakra's MSCCL ring traces issue each step's receive after its send); the k-th Send a->b with a tag
//     matches the k-th Recv on b from a with that tag;
//   - the members of a communicator issue its collectives in op id order, the same sequence on every member.
// Producers: the trace readers (readers.hpp) and the Megatron-style generator.
//
// Memory: one Op is 40 bytes, plus 4 bytes of CSR offset and 4 bytes per dependency; trace-only data (measured
// times, source node ids) lives in side arrays that generated graphs leave empty, and GEMM shapes in one that graphs
// without GEMM shapes (traces) leave empty. Programs are shared between ranks
// that run the same thing (all ranks of one pipeline stage, say): an op names a communicator *slot* and a peer *by
// its rank inside that communicator*, and each rank maps slots to global communicator ids. Readers give every rank
// its own program and the identity map.
#pragma once

#include "railyard/common/error.hpp"
#include "railyard/common/units.hpp"
#include "railyard/models/collective.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace railyard::workloads {

using models::CollectiveKind;
using OpId = std::uint32_t;
using StreamId = std::uint16_t;

/// Stream id of ops ordered only by their explicit dependencies (Chakra nodes, which carry no stream).
inline constexpr StreamId kUnordered = 0xFFFF;

/// What a process group is for; the replay engine breaks exposed communication down by this.
enum class GroupKind : std::uint8_t { TP, PP, DP, EP, CP, Other };
std::string_view to_string(GroupKind k);
/// "tp", "TP", "pp", "dp", "ep", "cp", anything else -> Other.
GroupKind group_kind_from_string(std::string_view s);

/// A process group (NCCL communicator): global ranks in group-rank order (ranks[i] is group rank i).
struct Communicator {
  int id = 0; ///< equals its index in Workload::communicators
  std::string name;
  GroupKind kind = GroupKind::Other;
  std::vector<int> ranks;
  /// A trace that holds only some ranks of its job: the group's ranks in the traced job (ranks of the job, not of the
  /// workload), so a replay can time its collectives at their recorded size. Empty: `ranks` is the whole group.
  std::vector<int> recorded_ranks;
};

enum class OpKind : std::uint8_t {
  Compute,    ///< a kernel: flops and bytes accessed (generator) or a measured duration (traces)
  Collective, ///< a collective on a communicator
  Send,       ///< point-to-point send to `peer`
  Recv,       ///< point-to-point receive from `peer`
  Memcpy,     ///< a local copy (H2D/D2H/D2D, Chakra MEM_LOAD/MEM_STORE): `bytes` moved
};
std::string_view to_string(OpKind k);

/// One op. Which fields mean something depends on `kind`; the rest keep their defaults.
struct Op {
  /// Collective: nccl-tests "size" convention (models::CollectiveCall: the per-rank buffer, for all_gather the
  /// whole output, for reduce_scatter the whole input). Send/Recv/Memcpy: bytes moved. Compute: bytes accessed.
  Bytes bytes{0};
  double flops = 0.0;     ///< Compute: floating-point operations
  std::uint32_t name = 0; ///< index into RankGraph::names()
  std::int32_t comm = -1; ///< Collective/Send/Recv: communicator slot of the rank (see Workload::communicator_of)
  std::int32_t peer = -1; ///< Send/Recv: the peer's rank in `comm`. Collective: the root's rank in `comm` (or -1)
  std::int32_t tag = 0;   ///< Send/Recv: matching tag
  StreamId stream = 0;    ///< CUDA stream; kUnordered for dependency-only ordering
  OpKind kind = OpKind::Compute;
  std::uint8_t collective_code = 0; ///< Collective: CollectiveKind in one byte; use collective()

  [[nodiscard]] CollectiveKind collective() const { return static_cast<CollectiveKind>(collective_code); }
  void set_collective(CollectiveKind k) { collective_code = static_cast<std::uint8_t>(k); }

  static Op make_compute(double flops, Bytes bytes_accessed, StreamId stream);
  static Op make_collective(CollectiveKind k, Bytes bytes, int comm, int root, StreamId stream);
  static Op make_send(int comm, int peer, Bytes bytes, int tag, StreamId stream);
  static Op make_recv(int comm, int peer, Bytes bytes, int tag, StreamId stream);
  static Op make_memcpy(Bytes bytes, StreamId stream);
};

/// The shape of a compute op that is a (batched) matrix multiplication C[m x n] = A[m x k] B[k x n], `batch` times
/// (attention's per-head products). A kernel model times it by its output tiles and waves over the SMs
/// (calibration::KernelModel::gemm); its FLOPs are 2 m n k batch.
struct GemmShape {
  std::uint32_t m = 0, n = 0, k = 0;
  std::uint32_t batch = 0; ///< 0: not a GEMM
  [[nodiscard]] bool valid() const { return batch > 0; }
  [[nodiscard]] double flops() const { return 2.0 * m * n * k * batch; }
};

/// What the framework's host thread does around an op, for a replay that models the host (sim::HostModel): bits of
/// RankGraph::host_marks. Generated programs set them; traces leave them empty.
enum HostMark : std::uint8_t {
  kHostMicrobatch = 1, ///< before issuing this op the host does one micro-batch's bookkeeping (the op opens it)
  kHostStep = 2,       ///< before issuing this op the host does the step's once-per-step work (optimizer, logging)
  kHostSync = 4,       ///< after issuing this op the host waits for the device to finish all it issued (`.item()`)
  kHostSyncP2p = 8,    ///< same, after a pipeline transfer, where the framework synchronises (Megatron's
                       ///< batch_p2p_sync: torch.cuda.synchronize() after batch_isend_irecv)
};

/// No op (HostCall::waits of a call that did not wait, RankGraph::launch_call of an op no traced call launched).
inline constexpr std::uint32_t kNone = 0xFFFFFFFFU;

/// One call of a host thread into the GPU runtime, as a trace recorded it (Kineto's cuda_runtime events): a launch
/// (cudaLaunchKernel, cudaMemcpyAsync, ...) or a synchronisation (cudaStreamSynchronize, cudaDeviceSynchronize,
/// cudaEventSynchronize, a blocking cudaMemcpy). A replay that models the host (sim: `host_launch: model`) runs each
/// thread's calls in order: a call starts `gap_s` after the previous one ended (the host's own work between them, as
/// measured), a launch releases its ops at its start, and a synchronisation that waited in the trace ends when the op
/// that released it ends, plus `tail_s`. Times are on the clock of RankGraph::measured_start.
struct HostCall {
  double start_s = 0;    ///< recorded start
  double duration_s = 0; ///< recorded duration
  double gap_s = 0;      ///< recorded start minus the end of the thread's previous call (0 for its first; < 0: nested)
  std::uint32_t waits = kNone; ///< a synchronisation that waited: the op whose end released it (kNone: none)
  double tail_s = 0;           ///< `waits`: recorded end minus that op's recorded end (the host's wake-up), >= 0
  std::uint32_t thread = 0;    ///< host thread, 0, 1, ... (calls of one thread are consecutive, in start order)
};

/// What the per-op source ids of a program are, for error messages.
enum class SourceKind : std::uint8_t {
  Generated,  ///< no source file: the op id is the id
  NodeId,     ///< Chakra node id
  Line,       ///< 1-based line of a text workload
  EventIndex, ///< index in the trace's traceEvents array
};

/// One rank's program. Immutable once built (RankGraphBuilder::finish()); shareable between ranks.
class RankGraph {
public:
  [[nodiscard]] std::size_t size() const { return ops_.size(); }
  [[nodiscard]] std::span<const Op> ops() const { return ops_; }
  [[nodiscard]] const Op& op(OpId id) const { return ops_[id]; }
  [[nodiscard]] std::span<const OpId> deps(OpId id) const
  {
    return {dep_ids_.data() + dep_offsets_[id], dep_ids_.data() + dep_offsets_[id + 1]};
  }
  [[nodiscard]] const std::string& name(OpId id) const { return names_[ops_[id].name]; }
  [[nodiscard]] const std::vector<std::string>& names() const { return names_; }

  /// The GEMM shape of a compute op, when it is a GEMM whose shape is known (the generator's); nullopt otherwise.
  [[nodiscard]] std::optional<GemmShape> gemm(OpId id) const
  {
    if (gemm_.empty() || !gemm_[id].valid()) return std::nullopt;
    return gemm_[id];
  }

  /// Measured by the trace (Kineto start relative to the rank's first event; Chakra/text runtimes).
  [[nodiscard]] std::optional<Seconds> measured_duration(OpId id) const;
  [[nodiscard]] std::optional<Seconds> measured_start(OpId id) const;
  /// The trace's own span of this rank (first start to last end of GPU activity), when it has one.
  [[nodiscard]] std::optional<Seconds> measured_span() const { return measured_span_; }
  /// When the host issued the op (Kineto: the CUDA runtime call that launched it), on the clock of measured_start
  /// (so it may be negative). A replay can hold the op until then: the host timeline is taken from the trace.
  [[nodiscard]] std::optional<Seconds> issue_time(OpId id) const;
  /// Origin of this rank's measured times relative to the earliest traced rank's, when the traces share a clock
  /// (ranks of one host, or clocks synchronised as Kineto's are within a job).
  [[nodiscard]] std::optional<Seconds> clock_offset() const { return clock_offset_; }

  /// Where op `id` came from: file, and the id in the kind's terms (Chakra node id, line, event index).
  [[nodiscard]] const std::string& source_file() const { return source_file_; }
  [[nodiscard]] SourceKind source_kind() const { return source_kind_; }
  [[nodiscard]] std::uint64_t source_id(OpId id) const { return source_ids_.empty() ? id : source_ids_[id]; }
  /// "node 17", "line 4", "event 230", "op 5" for messages.
  [[nodiscard]] std::string describe(OpId id) const;

  /// HostMark bits of op `id` (0 for programs without them: traces).
  [[nodiscard]] std::uint8_t host_marks(OpId id) const { return host_marks_.empty() ? 0 : host_marks_[id]; }
  [[nodiscard]] bool has_host_marks() const { return !host_marks_.empty(); }

  /// The host threads' runtime calls (traces with launch events): sorted by thread, then start. Empty otherwise.
  [[nodiscard]] std::span<const HostCall> host_calls() const { return host_calls_; }
  /// The host call that launched op `id` (an index into host_calls()), or kNone.
  [[nodiscard]] std::uint32_t launch_call(OpId id) const { return launch_call_.empty() ? kNone : launch_call_[id]; }
  /// Labels of the host threads ("thread 4037"), indexed by HostCall::thread.
  [[nodiscard]] const std::vector<std::string>& host_threads() const { return host_threads_; }

  /// Labels of streams for timelines ("compute", "stream 7", "nccl"); streams without one have none.
  [[nodiscard]] const std::map<StreamId, std::string>& stream_labels() const { return stream_labels_; }

private:
  friend class RankGraphBuilder;
  std::vector<Op> ops_;
  std::vector<std::uint32_t> dep_offsets_{0}; // CSR: deps of op i are dep_ids_[dep_offsets_[i], dep_offsets_[i+1])
  std::vector<OpId> dep_ids_;
  std::vector<std::string> names_;
  std::vector<double> measured_duration_s_; // empty, or one per op with NaN where not measured
  std::vector<double> measured_start_s_;    // same
  std::optional<Seconds> measured_span_;
  std::vector<double> issue_s_; // empty, or one per op with NaN where unknown
  std::optional<Seconds> clock_offset_;
  std::string source_file_;
  SourceKind source_kind_ = SourceKind::Generated;
  std::vector<std::uint64_t> source_ids_; // empty, or one per op
  std::vector<GemmShape> gemm_;           // empty, or one per op (batch 0 where the op is no GEMM)
  std::vector<std::uint8_t> host_marks_;  // empty, or one per op (HostMark bits)
  std::map<StreamId, std::string> stream_labels_;
  std::vector<HostCall> host_calls_;
  std::vector<std::uint32_t> launch_call_; // empty, or one per op (kNone where no call launched it)
  std::vector<std::string> host_threads_;
};

/// Builds a RankGraph: add ops in any order, add dependencies at any time (also forward ones), then finish().
class RankGraphBuilder {
public:
  explicit RankGraphBuilder(std::string source_file = {}, SourceKind source_kind = SourceKind::Generated);

  /// Appends `op` named `name` (interned: equal names share storage); returns its id (0, 1, 2, ...).
  OpId add(Op op, std::string_view name);
  /// `op` waits for `dep`. Ids are checked by validate(), not here, so readers can report them with context.
  void add_dep(OpId op, OpId dep) { edges_.emplace_back(op, dep); }
  void set_source_id(OpId op, std::uint64_t id);
  void set_measured(OpId op, std::optional<Seconds> start, std::optional<Seconds> duration);
  void set_measured_span(Seconds span) { graph_.measured_span_ = span; }
  void set_issue_time(OpId op, Seconds at);
  /// Marks compute op `op` as a GEMM of this shape (its flops should be shape.flops()).
  void set_gemm(OpId op, GemmShape shape);
  /// Adds HostMark bits to op `op`.
  void add_host_marks(OpId op, std::uint8_t marks);
  void set_clock_offset(Seconds offset) { graph_.clock_offset_ = offset; }
  void set_stream_label(StreamId s, std::string label) { graph_.stream_labels_[s] = std::move(label); }
  /// Sets the host threads' calls (sorted by thread, then start; see HostCall) and their thread labels.
  void set_host_calls(std::vector<HostCall> calls, std::vector<std::string> threads);
  /// Op `op` was launched by host call `call` (an index into the calls set_host_calls gives).
  void set_launch_call(OpId op, std::uint32_t call);
  [[nodiscard]] std::size_t size() const { return graph_.ops_.size(); }
  [[nodiscard]] Op& op(OpId id) { return graph_.ops_[id]; }

  /// Builds the dependency arrays (duplicates removed) and hands the graph over; the builder is empty afterwards.
  RankGraph finish();

private:
  RankGraph graph_;
  std::vector<std::pair<OpId, OpId>> edges_;
  std::unordered_map<std::string, std::uint32_t> name_index_;
};

/// Everything one training step does on every rank.
struct Workload {
  std::string source;             ///< what it was read or generated from, for reports
  std::vector<std::string> notes; ///< what a reader assumed or left out (unknown sizes, partial rank sets, ...)
  std::vector<Communicator> communicators;
  std::vector<std::shared_ptr<const RankGraph>> graphs; ///< distinct programs
  struct Rank {
    std::uint32_t graph = 0;            ///< index into graphs
    std::vector<std::int32_t> comm_map; ///< slot -> communicator id; empty: slot is the communicator id
  };
  std::vector<Rank> ranks; ///< indexed by global rank
  /// A trace of some ranks of a job: the job's size, and each workload rank's rank in the job (a reader renumbers the
  /// traced ranks 0..n-1). 0 and empty: the workload is the whole job, rank r is job rank r.
  int recorded_world = 0;
  std::vector<int> recorded_ranks;

  [[nodiscard]] int world_size() const { return static_cast<int>(ranks.size()); }
  [[nodiscard]] const RankGraph& graph_of(int rank) const { return *graphs[ranks[rank].graph]; }
  /// Global communicator id of `op` as rank `rank` runs it (-1 when the op has none or the slot is unknown).
  [[nodiscard]] int communicator_of(int rank, const Op& op) const;
  /// Global rank of a Send/Recv peer (-1 when out of range).
  [[nodiscard]] int peer_global_rank(int rank, const Op& op) const;

  /// Adds a communicator and returns its id.
  int add_communicator(std::string name, GroupKind kind, std::vector<int> ranks);
  /// Adds a program for one rank (identity slot map); ranks are added in order 0, 1, 2, ...
  void add_rank(RankGraph graph);
};

/// A traced job replayed at `world_size` ranks, a multiple m of the job's size J (Workload::recorded_world, else its
/// world size): m replicas of the job along data parallelism, rank k J + r running job rank r's program. Every
/// data-parallel group (GroupKind::DP) and every group of the whole job becomes one group over its members in all
/// replicas; every other group (TP, PP, EP, CP, other) is copied into each replica. Sizes stay per rank in nccl-tests
/// terms (an all-reduce's buffer, an all-gather's whole output), so a ZeRO shard is the group's share of them at the
/// new size. Job ranks missing from a partial trace run the program of traced rank (r mod traced), which needs every
/// group of the trace to span the whole job (a data-parallel job); otherwise the job's other ranks cannot be placed
/// and it is an InputError at `where` naming the group. Notes say what was assumed.
Workload replicate_data_parallel(const Workload& w, int world_size, const InputLocation& where);

/// Checks a workload: dependency ids in range, no cycles (through dependencies and stream order), communicators
/// and peers that exist, ranks that are members of the communicators they use, non-negative sizes, sends matched
/// by receives, and every member rank of a communicator issuing the same collectives (kind, size, root) in the same
/// order (all-to-all sizes may differ between ranks: alltoallv). Returns every problem found (at most `max_problems`),
/// each naming file, rank and node.
std::vector<InputError> find_problems(const Workload& w, std::size_t max_problems = 32);
/// Throws the first problem find_problems() reports.
void validate(const Workload& w);

/// Summary counts, for reports and tests.
struct OpCounts {
  std::size_t compute = 0, collective = 0, send = 0, recv = 0, memcpy = 0, deps = 0;
  [[nodiscard]] std::size_t total() const { return compute + collective + send + recv + memcpy; }
};
OpCounts count_ops(const RankGraph& g);

} // namespace railyard::workloads
