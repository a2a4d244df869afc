// What a run will hold in memory, estimated before it is built, and the limit it must stay under. A run that would not
// fit is refused up front (exit 2) with the estimate part by part and the knob that shrinks each part, instead of
// being killed by the kernel or aborting inside SimGrid hours later.
//
// Each part is a count the run knows before it allocates (topology_size's vertices and links, the lowered schedules'
// transfers, the workload's ops) times bytes per item: the size of the structure that holds it (sizeof, vector
// growth) where Railyard owns it, and a measured figure for Boost.Graph's and SimGrid's objects
// (bench/bench_footprint.cpp measures them and checks the estimate against peak RSS on cases not used to choose them).
#pragma once

#include "railyard/common/error.hpp"
#include "railyard/models/lowering.hpp"
#include "railyard/sim/simulation.hpp"
#include "railyard/topologies/topology.hpp"
#include "railyard/workloads/op_graph.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace railyard::sim {

struct FootprintPart {
  std::string what; ///< "topology links", "flow records (flows.csv)", ...
  double count = 0; ///< items
  double bytes_each = 0;
  std::string knob; ///< what to change to shrink it
  [[nodiscard]] double bytes() const { return count * bytes_each; }
};

struct Footprint {
  std::vector<FootprintPart> parts;
  void add(std::string what, double count, double bytes_each, std::string knob);
  [[nodiscard]] double total_bytes() const;
  /// One line per part, largest first: bytes, count x bytes each, knob.
  [[nodiscard]] std::string table() const;
};

/// summary.json's "memory_estimate": total_bytes and the parts (what, count, bytes_each, bytes, knob).
nlohmann::ordered_json footprint_json(const Footprint& f);

/// The most memory a run may use: `--max-memory`, or the machine's (MemTotal of /proc/meminfo, or the cgroup's
/// memory.max when that is lower), as it was when the run started.
struct MemoryLimit {
  double bytes = 0;
  std::string source; ///< "--max-memory 8 GiB", "the machine's memory (MemTotal)", ...
};
MemoryLimit machine_memory_limit();

/// What a run may take: memory, and optionally work (transfers of the lowered schedules; 0: no limit).
struct RunLimits {
  MemoryLimit memory = machine_memory_limit();
  std::uint64_t max_transfers = 0;
  /// Steps the lowered schedules may still hold once `f` is allocated: the memory left at sizeof(Step) each, and no
  /// more than max_transfers (a step starts at least one transfer); 0 when neither limit is set.
  [[nodiscard]] std::size_t step_budget(const Footprint& f) const;
};

/// Throws InputError at `where` (exit 2) when the footprint exceeds the limit, listing its parts and their knobs.
void check_footprint(const Footprint& f, const MemoryLimit& limit, const InputLocation& where);

/// The process before anything is built: the binary, its libraries and SimGrid's engine (measured).
void add_baseline(Footprint& f);
/// The topology of `spec` as build_topology makes it (topology_size's counts).
void add_topology(Footprint& f, const topo::TopologySize& size);
/// The engine of `config`'s backend for `gpus` GPUs on a topology of `size`, with `actors` SimGrid actors.
void add_engine(Footprint& f, const SimulationConfig& config, const topo::TopologySize& size, std::size_t gpus,
                std::size_t actors);
/// Lowered schedules as run_scenario keeps them (one copy per repeat), and, on the fluid backend, the flow records
/// of flows.csv (one per transfer) and the link samples of links.csv (one per link and sampling interval of
/// `duration`, the run's contention-free length: a lower bound).
void add_collectives(Footprint& f, const std::vector<const models::Schedule*>& schedules,
                     const std::vector<int>& copies, const SimulationConfig& config, const topo::TopologySize& size,
                     Seconds duration);
/// What the fluid backend's records of these schedules take, whether or not `config` records them: flows.csv's (one
/// per transfer) and links.csv's (one per link and sampling interval of `duration`), as add_collectives counts them.
struct RecordEstimate {
  FootprintPart flows, links;
};
RecordEstimate record_estimate(const std::vector<const models::Schedule*>& schedules, const std::vector<int>& copies,
                               const SimulationConfig& config, const topo::TopologySize& size, Seconds duration);
/// A workload's op graphs (`graph_ops` ops over its distinct programs) and its replay: per op of every rank its replay
/// state, per traced op a timeline event.
void add_workload(Footprint& f, std::size_t graph_ops, std::size_t ops, std::size_t traced_ops);

/// SimGrid maps two memory areas per actor (its stack and a guard page); past the kernel's vm.max_map_count it aborts
/// ("Failed to protect stack"). Throws InputError at `where` when `actors` would exceed what this machine allows,
/// naming the fluid backend as the fix.
void check_actor_count(std::size_t actors, const InputLocation& where);

} // namespace railyard::sim
