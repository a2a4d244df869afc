#include "names.hpp"

#include <cctype>

namespace railyard::workloads::detail {

using models::CollectiveKind;

std::string lower(std::string_view s)
{
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::optional<CollectiveKind> parse_collective(std::string_view s)
{
  std::string k;
  for (char c : s)
    if (c != '_' && c != '-' && c != ' ') k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (k == "allreduce") return CollectiveKind::AllReduce;
  if (k == "allgather" || k == "allgatherbase" || k == "allgatherintobase") return CollectiveKind::AllGather;
  if (k == "reducescatter" || k == "reducescatterbase" || k == "reducescattertensor")
    return CollectiveKind::ReduceScatter;
  if (k == "broadcast" || k == "bcast") return CollectiveKind::Broadcast;
  if (k == "reduce") return CollectiveKind::Reduce;
  if (k == "alltoall" || k == "alltoallv" || k == "alltoallbase" || k == "alltoallsingle")
    return CollectiveKind::AllToAll;
  if (k == "sendrecv") return CollectiveKind::SendRecv;
  return std::nullopt;
}

} // namespace railyard::workloads::detail
