#include "railyard/models/collective.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>

namespace railyard::models {
namespace {

std::string normalize(std::string s)
{
  std::string out;
  for (char c : s)
    if (c != '_' && c != '-' && c != ' ') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

template <class E, size_t N>
std::optional<E> lookup(const std::array<std::pair<const char*, E>, N>& table, const std::string& s)
{
  const std::string key = normalize(s);
  for (const auto& [name, value] : table)
    if (key == name) return value;
  return std::nullopt;
}

constexpr std::array<std::pair<const char*, CollectiveKind>, 9> kCollectives{{
    {"allreduce", CollectiveKind::AllReduce},
    {"allgather", CollectiveKind::AllGather},
    {"reducescatter", CollectiveKind::ReduceScatter},
    {"broadcast", CollectiveKind::Broadcast},
    {"reduce", CollectiveKind::Reduce},
    {"alltoall", CollectiveKind::AllToAll},
    {"sendrecv", CollectiveKind::SendRecv},
    {"send", CollectiveKind::SendRecv},
    {"recv", CollectiveKind::SendRecv},
}};
constexpr std::array<std::pair<const char*, Algorithm>, 8> kAlgorithms{{
    {"tree", Algorithm::Tree},
    {"ring", Algorithm::Ring},
    {"collnetdirect", Algorithm::CollNetDirect},
    {"collnet", Algorithm::CollNetDirect},
    {"collnetchain", Algorithm::CollNetChain},
    {"nvls", Algorithm::Nvls},
    {"nvlstree", Algorithm::NvlsTree},
    {"pat", Algorithm::Pat},
}};
constexpr std::array<std::pair<const char*, Protocol>, 3> kProtocols{{
    {"ll", Protocol::LL},
    {"ll128", Protocol::LL128},
    {"simple", Protocol::Simple},
}};

} // namespace

std::string to_string(CollectiveKind k)
{
  switch (k) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::Reduce:
    return "reduce";
  case CollectiveKind::AllToAll:
    return "alltoall";
  case CollectiveKind::SendRecv:
    return "sendrecv";
  }
  return "?";
}

std::string to_string(Algorithm a)
{
  switch (a) {
  case Algorithm::Tree:
    return "Tree";
  case Algorithm::Ring:
    return "Ring";
  case Algorithm::CollNetDirect:
    return "CollNetDirect";
  case Algorithm::CollNetChain:
    return "CollNetChain";
  case Algorithm::Nvls:
    return "NVLS";
  case Algorithm::NvlsTree:
    return "NVLSTree";
  case Algorithm::Pat:
    return "PAT";
  case Algorithm::MscclAllPairs:
    return "MSCCL";
  case Algorithm::Mscclpp:
    return "MSCCL++";
  }
  return "?";
}

std::string to_string(Protocol p)
{
  switch (p) {
  case Protocol::LL:
    return "LL";
  case Protocol::LL128:
    return "LL128";
  case Protocol::Simple:
    return "Simple";
  }
  return "?";
}

std::optional<CollectiveKind> collective_from_string(const std::string& s)
{
  return lookup(kCollectives, s);
}
std::optional<Algorithm> algorithm_from_string(const std::string& s)
{
  return lookup(kAlgorithms, s);
}
std::optional<Protocol> protocol_from_string(const std::string& s)
{
  return lookup(kProtocols, s);
}

double busbw_factor(CollectiveKind k, int nranks)
{
  const double n = nranks;
  switch (k) {
  case CollectiveKind::AllReduce:
    return 2.0 * (n - 1) / n;
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
  case CollectiveKind::AllToAll:
    return (n - 1) / n;
  case CollectiveKind::Broadcast:
  case CollectiveKind::Reduce:
  case CollectiveKind::SendRecv:
    return 1.0;
  }
  return 1.0;
}

int nccl_tests_type_bytes(const std::string& type)
{
  static const std::pair<const char*, int> kTypes[] = {{"int8", 1},   {"uint8", 1},   {"int32", 4}, {"uint32", 4},
                                                       {"int64", 8},  {"uint64", 8},  {"half", 2},  {"float", 4},
                                                       {"double", 8}, {"bfloat16", 2}};
  for (const auto& [name, size] : kTypes)
    if (type == name) return size;
  return 0;
}

} // namespace railyard::models
