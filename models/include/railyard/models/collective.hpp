// Names shared by every collective model: the operation, NCCL's algorithms and protocols, and one call.
#pragma once

#include "railyard/common/units.hpp"

#include <optional>
#include <string>
#include <vector>

namespace railyard::models {

enum class CollectiveKind { AllReduce, AllGather, ReduceScatter, Broadcast, Reduce, AllToAll, SendRecv };
/// NCCL's algorithms (src/include/device.h NCCL_ALGO_*), CollNet kept in its place for later; then the kernels RCCL
/// runs on one MI300X node before its cost model is asked (models/rccl_tuning.hpp rccl_default_kernel), which are not
/// NCCL_ALGO values and sit outside NCCL's tables (kNcclAlgorithms counts the first seven):
///  - MscclAllPairs: MSCCL's XML algorithms of tools/msccl-algorithms (allreduce-allpairs-8n-*: every rank sends each
///    peer its eighth, reduces its own eighth, sends it to every peer; alltoall-8n-*: one step of direct sends);
///  - Mscclpp: MSCCL++'s kernels of its NCCL shim (allreduce7: the same two phases in LL8 packets; allgather6: every
///    rank writes its block into every peer's output), taken only by calls captured in a HIP graph.
enum class Algorithm { Tree, Ring, CollNetDirect, CollNetChain, Nvls, NvlsTree, Pat, MscclAllPairs, Mscclpp };
/// NCCL's protocols (NCCL_PROTO_*).
enum class Protocol { LL, LL128, Simple };

std::string to_string(CollectiveKind k);
std::string to_string(Algorithm a);
std::string to_string(Protocol p);
/// Accepts NCCL's spellings, case-insensitive: "allreduce"/"all_reduce", "ring", "nvlstree", "ll128", ...
std::optional<CollectiveKind> collective_from_string(const std::string& s);
std::optional<Algorithm> algorithm_from_string(const std::string& s);
std::optional<Protocol> protocol_from_string(const std::string& s);

/// One collective call as a user or a trace states it. `bytes` follows nccl-tests' convention: the size of the
/// per-rank buffer that nccl-tests prints in its "size" column (for all_gather the whole output buffer, for
/// reduce_scatter the whole input buffer).
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::AllReduce;
  Bytes bytes{0};
  std::vector<int> ranks;             ///< GPU ids taking part, in communicator rank order
  int root = 0;                       ///< communicator rank of the root (broadcast, reduce)
  std::optional<Algorithm> algorithm; ///< forced, as NCCL_ALGO; empty: chosen by the cost model
  std::optional<Protocol> protocol;   ///< forced, as NCCL_PROTO
  std::optional<int> channels;        ///< forced, as NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS
  std::string label;                  ///< free text carried into the outputs
};

/// Element size in bytes of an nccl-tests type name (nccl-tests src/common.cu test_typenames and wordSize(): int8,
/// uint8, int32, uint32, int64, uint64, half, float, double, bfloat16); 0 for an unknown name.
int nccl_tests_type_bytes(const std::string& type);

/// nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md): busbw = algbw * factor.
double busbw_factor(CollectiveKind k, int nranks);

} // namespace railyard::models
