// Spellings shared by the op graph and the readers (internal to workloads/).
#pragma once

#include "railyard/models/collective.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace railyard::workloads::detail {

std::string lower(std::string_view s);
/// Accepts the spellings traces use, case-insensitive, with or without '_' / '-':
/// allreduce, all_reduce, AllReduce, ALL_REDUCE, allgather, reducescatter, reduce_scatter, broadcast, reduce,
/// alltoall, all_to_all, alltoallv, sendrecv.
std::optional<models::CollectiveKind> parse_collective(std::string_view s);

} // namespace railyard::workloads::detail
