#include "railyard/sim/footprint.hpp"

#include "railyard/sim/fluid.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace railyard::sim {

namespace {

// Measured with `build/bench/bench_footprint --fit` (peak RSS of `railyard run` in a child process; bench/README.md):
// - the process with a one-node scenario: 38.3 to 39.9 MiB (binary, libraries, SimGrid's engine);
// - a topology and everything kept per link (Boost.Graph's vertices and edges, the routing tables, the summary's
//   max-flow graph, SimGrid's or the fluid network's link state): 734 to 971 B per directed link on rail-optimized
//   clusters of 64 to 4,096 nodes, growing slowly with size; rounded up to 1 KiB;
// - per GPU taking part in a lowered collective: 8.8 to 9.0 KiB with SimGrid actors (stack pages touched, actor,
//   mailboxes), 1.8 KiB on the fluid backend (the event-driven rank's state);
// - per op of every rank in a workload replay: 2.6 B on the two 1,024-GPU training examples (done flags; the op
//   graphs are shared by the ranks of one program), rounded up to 3 B.
constexpr double kBaselineBytes = 40.0 * 1024 * 1024;
constexpr double kBytesPerLink = 1024;
constexpr double kBytesPerSimGridActor = 9.0 * 1024;
constexpr double kBytesPerFluidRank = 2.0 * 1024;
constexpr double kBytesPerRankOp = 3;

// The longest GPU-to-GPU path of a topology, in links: GPU, PCIe, NIC, leaf, (aggregation, core, aggregation,) leaf,
// NIC, PCIe, GPU, plus the two NVLink hops of a PXN relay. A flow record stores its path's link ids.
std::size_t longest_path_links(const topo::TopologySize& size)
{
  if (size.switches == 0) return 2;
  return size.switches > size.leaves ? 12 : 8;
}

std::string gib(double bytes)
{
  return fmt::format("{:.3g} GiB", bytes / (1024.0 * 1024 * 1024));
}

double read_number_file(const char* path)
{
  std::ifstream in(path);
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  try {
    return std::stod(text);
  } catch (const std::exception&) {
    return 0;
  }
}

} // namespace

void Footprint::add(std::string what, double count, double bytes_each, std::string knob)
{
  parts.push_back({std::move(what), count, bytes_each, std::move(knob)});
}

double Footprint::total_bytes() const
{
  double t = 0;
  for (const auto& p : parts)
    t += p.bytes();
  return t;
}

std::string Footprint::table() const
{
  std::vector<const FootprintPart*> sorted;
  for (const auto& p : parts)
    sorted.push_back(&p);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->bytes() > b->bytes(); });
  std::string out;
  for (const auto* p : sorted)
    out += fmt::format("\n  {:>10}  {}: {:.0f} x {:.0f} B{}", gib(p->bytes()), p->what, p->count, p->bytes_each,
                       p->knob.empty() ? "" : "; to shrink it: " + p->knob);
  return out;
}

nlohmann::ordered_json footprint_json(const Footprint& f)
{
  nlohmann::ordered_json j;
  j["total_bytes"] = f.total_bytes();
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  for (const auto& p : f.parts)
    parts.push_back(
        {{"what", p.what}, {"count", p.count}, {"bytes_each", p.bytes_each}, {"bytes", p.bytes()}, {"knob", p.knob}});
  j["parts"] = parts;
  return j;
}

MemoryLimit machine_memory_limit()
{
  MemoryLimit limit;
  std::ifstream meminfo("/proc/meminfo");
  std::string key, unit;
  double kib = 0;
  while (meminfo >> key >> kib >> unit)
    if (key == "MemTotal:") {
      limit.bytes = kib * 1024;
      limit.source = "the machine's memory (MemTotal in /proc/meminfo)";
      break;
    }
  // A container's limit, where it is lower: cgroup v2, then v1.
  for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    const double cg = read_number_file(path);
    if (cg > 0 && (limit.bytes == 0 || cg < limit.bytes)) {
      limit.bytes = cg;
      limit.source = fmt::format("the container's memory limit ({})", path);
    }
  }
  return limit;
}

std::size_t RunLimits::step_budget(const Footprint& f) const
{
  double budget = 0;
  if (memory.bytes > 0) budget = std::max(1.0, (memory.bytes - f.total_bytes()) / sizeof(models::Step));
  if (max_transfers > 0)
    budget = budget > 0 ? std::min(budget, static_cast<double>(max_transfers)) : static_cast<double>(max_transfers);
  return static_cast<std::size_t>(std::min(budget, 1e18));
}

void check_footprint(const Footprint& f, const MemoryLimit& limit, const InputLocation& where)
{
  if (!(limit.bytes > 0) || f.total_bytes() <= limit.bytes) return;
  throw InputError(where,
                   fmt::format("this run needs about {} of memory, more than {} allows ({}); estimated before "
                               "running it, part by part:{}",
                               gib(f.total_bytes()), limit.source, gib(limit.bytes), f.table()),
                   "shrink the largest part with its knob above, or run it on a machine with more memory (--max-memory "
                   "sets the limit: it is a limit, not an allowance to use more than the machine has)");
}

void add_baseline(Footprint& f)
{
  f.add("the process (binary, libraries, SimGrid's engine)", 1, kBaselineBytes, "");
}

void add_topology(Footprint& f, const topo::TopologySize& size)
{
  f.add("topology and per-link state (directed links)", static_cast<double>(size.links), kBytesPerLink,
        "fewer nodes or a smaller fabric (cluster:)");
}

void add_engine(Footprint& f, const SimulationConfig& config, const topo::TopologySize&, std::size_t gpus,
                std::size_t actors)
{
  if (actors > 0)
    f.add("SimGrid actors (one per GPU or stream that runs on SimGrid)", static_cast<double>(actors),
          kBytesPerSimGridActor,
          config.backend == Backend::SimGrid ? "network: {backend: fluid} (event-driven ranks, no actor per GPU)"
                                             : "communication: analytical (no actors)");
  if (config.backend == Backend::Fluid)
    f.add("fluid network per-GPU state", static_cast<double>(gpus), kBytesPerFluidRank, "fewer GPUs (cluster:)");
}

RecordEstimate record_estimate(const std::vector<const models::Schedule*>& schedules, const std::vector<int>& copies,
                               const SimulationConfig& config, const topo::TopologySize& size, Seconds duration)
{
  double transfers = 0;
  for (std::size_t i = 0; i < schedules.size(); ++i)
    transfers += static_cast<double>(schedules[i]->num_transfers()) * copies[i];
  RecordEstimate e;
  e.flows = {"flow records of flows.csv (one per transfer)", transfers,
             static_cast<double>(sizeof(FlowRecord) + sizeof(std::uint32_t) * longest_path_links(size)),
             "network: {outputs: {flows: false}}"};
  const double intervals = std::ceil(duration.seconds() / config.fluid.sample_interval.seconds());
  e.links = {fmt::format("link samples of links.csv (every link over {:.0f} intervals of {}, the run's length "
                         "without contention; at least)",
                         intervals, format_seconds(config.fluid.sample_interval)),
             static_cast<double>(size.links) * intervals, static_cast<double>(sizeof(LinkSample)),
             "a longer network.outputs.sample_interval, or network: {outputs: {links: false}}"};
  return e;
}

void add_collectives(Footprint& f, const std::vector<const models::Schedule*>& schedules,
                     const std::vector<int>& copies, const SimulationConfig& config, const topo::TopologySize& size,
                     Seconds duration)
{
  double schedule_bytes = 0;
  for (std::size_t i = 0; i < schedules.size(); ++i)
    schedule_bytes += static_cast<double>(schedules[i]->memory_bytes()) * copies[i];
  f.add("lowered schedules (one copy per repeat)", schedule_bytes > 0 ? 1 : 0, schedule_bytes,
        "fewer channels, fewer ranks or fewer repeats (collectives:)");
  if (config.backend != Backend::Fluid) return;
  RecordEstimate e = record_estimate(schedules, copies, config, size, duration);
  if (config.fluid.record_flows) f.parts.push_back(std::move(e.flows));
  if (config.fluid.record_links) f.parts.push_back(std::move(e.links));
}

void add_workload(Footprint& f, std::size_t graph_ops, std::size_t ops, std::size_t traced_ops)
{
  // An op of a graph: the Op itself, a dependency or two, its name's share, the replay's per-program arrays.
  f.add("op graphs (ops of the distinct programs)", static_cast<double>(graph_ops),
        static_cast<double>(sizeof(workloads::Op)) + 64, "fewer micro-batches or layers (workload:)");
  f.add("workload replay state (ops of every rank)", static_cast<double>(ops), kBytesPerRankOp,
        "fewer micro-batches or layers (workload:), or a smaller world");
  f.add("timeline events of trace.json (ops of the traced ranks)", static_cast<double>(traced_ops), 40,
        "workload.replay.trace_ranks: fewer ranks, or none");
}

void check_actor_count(std::size_t actors, const InputLocation& where)
{
  // Each actor costs SimGrid two mappings (its stack and the guard page it protects below it); the process needs a
  // few thousand more for its libraries and heap.
  const double max_maps = read_number_file("/proc/sys/vm/max_map_count");
  if (!(max_maps > 0)) return;
  constexpr double kOtherMaps = 4096;
  const double allowed = std::max(0.0, (max_maps - kOtherMaps) / 2);
  if (static_cast<double>(actors) <= allowed) return;
  throw InputError(where,
                   fmt::format("this run needs {} SimGrid actors (one per GPU taking part, or per stream of a replayed "
                               "rank), and SimGrid maps two memory areas per actor: past this machine's "
                               "vm.max_map_count = {:.0f} it aborts (\"Failed to protect stack\"), so at most {:.0f} "
                               "actors fit",
                               actors, max_maps, allowed),
                   "use network: {backend: fluid} (its ranks are event-driven, no actor per GPU) or communication: "
                   "analytical for a workload, or raise the limit (sysctl -w vm.max_map_count=N)");
}

} // namespace railyard::sim
