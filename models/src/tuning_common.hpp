// What NCCL's and RCCL's cost models share (nccl_tuning.cpp, rccl_tuning.cpp): ncclFunc_t rows, the graph an
// algorithm uses, unit helpers, the network post overhead by CPU vendor and the refusal message. Private to models/src.
#pragma once

#include "railyard/common/error.hpp"
#include "railyard/models/nccl_tuning.hpp"

#include <fmt/format.h>

#include <optional>
#include <string>

namespace railyard::models::detail {

/// Row of NCCL's per-function tables (ncclFunc_t: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce); none for
/// the point-to-point operations.
inline std::optional<int> function_index(CollectiveKind kind)
{
  switch (kind) {
  case CollectiveKind::Broadcast:
    return 0;
  case CollectiveKind::Reduce:
    return 1;
  case CollectiveKind::AllGather:
    return 2;
  case CollectiveKind::ReduceScatter:
    return 3;
  case CollectiveKind::AllReduce:
    return 4;
  case CollectiveKind::AllToAll:
  case CollectiveKind::SendRecv:
    return std::nullopt;
  }
  return std::nullopt;
}

inline bool is_allgather_or_reducescatter(CollectiveKind kind)
{
  return kind == CollectiveKind::AllGather || kind == CollectiveKind::ReduceScatter;
}
inline bool is_nvls(Algorithm a)
{
  return a == Algorithm::Nvls || a == Algorithm::NvlsTree;
}
inline bool is_collnet(Algorithm a)
{
  return a == Algorithm::CollNetDirect || a == Algorithm::CollNetChain;
}

inline double gbps(BytesPerSec b)
{
  return b.bytes_per_sec() / units::kGB;
}
inline double us(Seconds s)
{
  return s.seconds() * 1e6;
}

/// src/init.cc initTransportsRank: graphs[] = { tree, ring, collnetDirect, collnetChain, nvls, nvls, tree } (RCCL's
/// has no PAT entry): Ring its ring graph, NVLS and NVLSTree the NVLS graph, every other algorithm the tree graph.
inline const NcclGraph& graph_for(const NcclTuningInput& in, Algorithm a)
{
  switch (a) {
  case Algorithm::Ring:
    return in.ring;
  case Algorithm::Nvls:
  case Algorithm::NvlsTree:
    return in.nvls;
  default:
    return in.tree;
  }
}

/// getNetOverhead (src/graph/tuning.cc) from a constants table with net_overhead_{intel,amd,other}_us.
template <class Constants>
double net_overhead_us(const Constants& k, CpuVendor cpu)
{
  switch (cpu) {
  case CpuVendor::Intel:
    return k.net_overhead_intel_us;
  case CpuVendor::Amd:
    return k.net_overhead_amd_us;
  case CpuVendor::Other:
    return k.net_overhead_other_us;
  }
  return k.net_overhead_other_us;
}

/// `where`, with `sub` as its field when it names none.
inline InputLocation field_of(const InputLocation& where, const std::string& sub)
{
  InputLocation w = where;
  if (w.field.empty()) w.field = sub;
  return w;
}

/// The refusal of a request the library cannot run ("NCCL cannot run all_reduce with algorithm NVLS: ...").
[[noreturn]] inline void refuse(const char* library, const InputLocation& where, CollectiveKind kind, Algorithm a,
                                std::optional<Protocol> p, const std::string& why, const std::string& fix)
{
  const std::string what =
      p ? fmt::format("{} with algorithm {} and protocol {}", to_string(kind), nccl_name(a), nccl_name(*p))
        : fmt::format("{} with algorithm {}", to_string(kind), nccl_name(a));
  throw InputError(where, fmt::format("{} cannot run {}: {}", library, what, why), fix);
}

} // namespace railyard::models::detail
