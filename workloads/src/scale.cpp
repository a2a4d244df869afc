// A traced job replayed at a larger data-parallel size (op_graph.hpp, replicate_data_parallel).
#include "railyard/workloads/op_graph.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace railyard::workloads {

Workload replicate_data_parallel(const Workload& w, int world_size, const InputLocation& where)
{
  const int traced = w.world_size();
  const int job = w.recorded_world > 0 ? w.recorded_world : traced;
  if (world_size == traced && w.recorded_world == 0) return w;
  if (world_size < job || world_size % job != 0)
    throw InputError(where,
                     fmt::format("world_size {} is not a multiple of the traced job's {} ranks: the job is replayed "
                                 "as whole replicas along data parallelism",
                                 world_size, job),
                     fmt::format("give world_size as {} x the number of data-parallel replicas", job));
  const int replicas = world_size / job;
  // Job rank of each workload rank, and the workload rank that runs job rank r (-1: not traced).
  std::vector<int> job_rank(static_cast<std::size_t>(traced));
  std::vector<int> runs(static_cast<std::size_t>(job), -1);
  for (int i = 0; i < traced; ++i) {
    job_rank[i] = w.recorded_ranks.empty() ? i : w.recorded_ranks[static_cast<std::size_t>(i)];
    runs[static_cast<std::size_t>(job_rank[i])] = i;
  }
  const bool partial = traced < job;

  Workload out;
  out.source = w.source;
  out.notes = w.notes;
  out.graphs = w.graphs;
  // Each communicator: its job ranks, then one spanning group or a copy per replica.
  std::vector<std::vector<int>> copies(w.communicators.size()); // per replica: new communicator id
  std::string spanning, copied;
  for (const auto& c : w.communicators) {
    std::vector<int> members = c.recorded_ranks;
    if (members.empty())
      for (int r : c.ranks)
        members.push_back(job_rank[static_cast<std::size_t>(r)]);
    const bool whole = static_cast<int>(members.size()) == job;
    if (partial && !whole)
      throw InputError(where,
                       fmt::format("the trace holds {} of the job's {} ranks and its group '{}' spans {} of them: the "
                                   "ranks not traced cannot be placed in groups like it",
                                   traced, job, c.name, members.size()),
                       "trace every rank of one data-parallel replica (all ranks of its tensor, pipeline and expert "
                       "groups), or replay a data-parallel job whose groups span the whole job");
    auto& ids = copies[static_cast<std::size_t>(c.id)];
    if (whole || c.kind == GroupKind::DP) {
      std::vector<int> all;
      for (int k = 0; k < replicas; ++k)
        for (int r : members)
          all.push_back(k * job + r);
      std::sort(all.begin(), all.end());
      const bool grew = all.size() != members.size();
      const int id = out.add_communicator(c.name, c.kind, std::move(all));
      if (grew) out.communicators[static_cast<std::size_t>(id)].recorded_ranks = members; // as traced
      ids.assign(static_cast<std::size_t>(replicas), id);
      spanning += (spanning.empty() ? "'" : ", '") + c.name + "'";
    } else {
      for (int k = 0; k < replicas; ++k) {
        std::vector<int> mine;
        for (int r : members)
          mine.push_back(k * job + r);
        ids.push_back(out.add_communicator(fmt::format("{} (replica {})", c.name, k), c.kind, std::move(mine)));
      }
      copied += (copied.empty() ? "'" : ", '") + c.name + "'";
    }
  }
  for (int k = 0; k < replicas; ++k)
    for (int r = 0; r < job; ++r) {
      const int src = runs[static_cast<std::size_t>(r)] >= 0 ? runs[static_cast<std::size_t>(r)] : r % traced;
      Workload::Rank rank;
      rank.graph = w.ranks[static_cast<std::size_t>(src)].graph;
      // Slot s of the program: the communicator rank `src` runs it on, then that communicator's copy here.
      const std::size_t slots = w.ranks[static_cast<std::size_t>(src)].comm_map.empty()
                                    ? w.communicators.size()
                                    : w.ranks[static_cast<std::size_t>(src)].comm_map.size();
      for (std::size_t s = 0; s < slots; ++s) {
        Op probe;
        probe.comm = static_cast<std::int32_t>(s);
        const int c = w.communicator_of(src, probe);
        rank.comm_map.push_back(c < 0 ? -1 : copies[static_cast<std::size_t>(c)][static_cast<std::size_t>(k)]);
      }
      out.ranks.push_back(std::move(rank));
    }
  out.notes.push_back(fmt::format(
      "the traced job of {} ranks is replayed at {} ranks: {} replica{} along data parallelism, rank k x {} + r "
      "running job rank r's program{}; groups over all replicas: {}; groups copied into each replica: {}; collective "
      "sizes "
      "are per rank as traced (an all-reduce's buffer, an all-gather's whole output: a ZeRO shard shrinks with the "
      "group), so the step assumes weak scaling: the same per-GPU batch and model",
      job, world_size, replicas, replicas == 1 ? "" : "s", job,
      partial ? fmt::format(" (job ranks not traced: {} of them, run the program of traced rank r mod {})",
                            job - traced, traced)
              : "",
      spanning.empty() ? "none" : spanning, copied.empty() ? "none" : copied));
  validate(out);
  return out;
}

} // namespace railyard::workloads
