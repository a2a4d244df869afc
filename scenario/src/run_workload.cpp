#include "railyard/scenario/run_workload.hpp"
#include "railyard/scenario/fluid_outputs.hpp"
#include "railyard/scenario/perfetto_trace.hpp"
#include "run_start.hpp"

#include "railyard/common/csv.hpp"
#include "railyard/common/hash.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/workloads/generator.hpp"
#include "railyard/workloads/readers.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>
#include <utility>

namespace railyard::scenario {

using namespace railyard::sim; // the simulator this layer drives

namespace {

workloads::Workload load_workload(const Scenario& sc, ReplayOptions& options)
{
  const WorkloadSpec& spec = *sc.workload;
  if (spec.kind == WorkloadSpec::Kind::Megatron) {
    options.model_flops = workloads::megatron_model_flops(spec.megatron);
    return workloads::generate_megatron(spec.megatron, sc.cluster.gpus());
  }
  const auto& f = spec.trace_format;
  if (f == "chakra") {
    workloads::ChakraOptions o;
    o.comm_group_file = spec.comm_group_file;
    return workloads::read_chakra(spec.trace_paths.front(), o);
  }
  if (f == "kineto") {
    workloads::KinetoOptions o;
    o.infer_cross_stream_deps = spec.infer_cross_stream_deps;
    o.host_et = spec.host_et;
    return workloads::read_kineto(spec.trace_paths, o);
  }
  if (f == "simai") return workloads::read_simai_workload(spec.trace_paths.front(), spec.layer);
  if (f == "astrasim1") return workloads::read_astrasim1_workload(spec.trace_paths.front(), spec.layer);
  return workloads::read_aicb_physical_workload(spec.trace_paths.front(), spec.layer);
}

// A Kineto or Chakra trace replayed at `world_size:` ranks: the traced job replicated along data parallelism
// (workloads::replicate_data_parallel). Its measured collectives (collectives: measured) ran at the traced group
// sizes: only recorded_on's model difference can move them to the new ones.
workloads::Workload at_world_size(const WorkloadSpec& spec, workloads::Workload w, const ReplayOptions& options)
{
  if (spec.kind != WorkloadSpec::Kind::Trace || (spec.trace_format != "kineto" && spec.trace_format != "chakra") ||
      spec.layer.world_size == 0)
    return w;
  const InputLocation where{spec.where.file, spec.where.line, "workload.world_size"};
  const int before = w.recorded_world > 0 ? w.recorded_world : w.world_size();
  w = workloads::replicate_data_parallel(w, spec.layer.world_size, where);
  if (options.measured_collectives && !spec.recorded_on && spec.layer.world_size != before)
    throw InputError(where,
                     fmt::format("collectives: measured keeps the times the traced job's groups took at {} ranks; at "
                                 "{} ranks they are larger, and only the model's difference can move them",
                                 before, spec.layer.world_size),
                     "add workload.recorded_on (the cluster the trace was recorded on), or remove collectives: "
                     "measured to time the collectives by the model");
  return w;
}

// The scenario's profile: load_scenario has read it; a Scenario made in code may name one without it. Null without one.
std::shared_ptr<const calibration::Profile> profile_of(const Scenario& scenario)
{
  if (scenario.profile_data || scenario.profile.empty()) return scenario.profile_data;
  return std::make_shared<const calibration::Profile>(calibration::read_profile(scenario.profile));
}

// A generated workload's ops carry FLOPs and bytes, which only a profile's kernel model turns into times.
void require_profile(const WorkloadSpec& w, const calibration::Profile* profile)
{
  if (w.kind == WorkloadSpec::Kind::Megatron && !profile)
    throw InputError(w.where,
                     "a generated workload is timed by a profile's kernel model, and the scenario names no profile",
                     "add 'profile: <path>/calibration/profiles/<system>.yaml' to the scenario");
}

// The default communication model when the scenario names none: collectives as coupled flows on a multi-node fabric
// (contention between everything in flight, with DCQCN and PFC where the network turns them on, in seconds at
// thousands of GPUs); per-step flows inside one node. Returns the note saying so, or "" when the scenario chose.
std::string default_communication(const Scenario& scenario, ReplayOptions& options)
{
  if (scenario.workload->communication_given) return {};
  if (options.measured_collectives) {
    options.comm = CommModel::Analytical;
    return "communication: analytical, the one collectives: measured adds the model's differences with";
  }
  const bool coupled = scenario.cluster.nodes > 1;
  options.comm = coupled ? CommModel::Coupled : CommModel::Flows;
  return coupled ? "communication: coupled, the default on a multi-node cluster (replay.communication names another: "
                   "flows, analytical or ideal)"
                 : "communication: flows, the default inside one node";
}

// The framework's host costs: the profile's fitted framework model on generated steps (replay.framework: false
// leaves the host out, the idealised device alone).
std::optional<calibration::FrameworkModel> framework_model(const Scenario& scenario,
                                                           const calibration::Profile* profile, ReplayOptions& options)
{
  if (!profile || !profile->framework || !scenario.workload->framework ||
      scenario.workload->kind != WorkloadSpec::Kind::Megatron)
    return std::nullopt;
  const auto& f = *profile->framework;
  options.host = host_model_of(f);
  return f;
}

/// The nodes each job of `jobs:` takes, in the order its ranks fill them (JobSpec::Placement).
std::vector<std::vector<int>> place_jobs(const Scenario& sc)
{
  const topo::ClusterSpec& c = sc.cluster;
  // A leaf group: the nodes whose NICs one leaf serves (a fat tree's leaf: its ports over the GPUs per node; a rail
  // kind's leaf: one NIC of each of its ports' nodes).
  int group = 1;
  if (c.kind == topo::ClusterKind::FatTree)
    group = std::max(1, (c.tiers == 3 ? c.radix / 2 : c.leaf_downlinks) / c.gpus_per_node);
  else if (c.kind == topo::ClusterKind::RailOptimized || c.kind == topo::ClusterKind::RailOnly)
    group = std::max(1, c.leaf_downlinks);
  std::vector<char> used(static_cast<std::size_t>(c.nodes), 0);
  std::vector<std::vector<int>> out;
  std::uint64_t draw = splitmix64(sc.sim.seed ^ 0x6a6f6273ULL); // "jobs"
  for (const JobSpec& job : sc.jobs) {
    const int n = job.gpus / c.gpus_per_node;
    std::vector<int> nodes;
    std::vector<int> free;
    for (int i = 0; i < c.nodes; ++i)
      if (!used[static_cast<std::size_t>(i)]) free.push_back(i);
    switch (job.placement) {
    case JobSpec::Placement::Contiguous:
      nodes.assign(free.begin(), free.begin() + n);
      break;
    case JobSpec::Placement::RailAligned:
      for (int start = 0; start + n <= c.nodes && nodes.empty(); start += group) {
        bool ok = true;
        for (int i = start; i < start + n && ok; ++i)
          ok = !used[static_cast<std::size_t>(i)];
        if (ok)
          for (int i = start; i < start + n; ++i)
            nodes.push_back(i);
      }
      if (nodes.empty())
        throw InputError(job.where,
                         fmt::format("job '{}' needs {} free nodes starting at a leaf group boundary (every {} "
                                     "nodes), and the jobs before it leave none",
                                     job.name, n, group),
                         "place it contiguous or scattered, or list it before the jobs that break the groups");
      break;
    case JobSpec::Placement::Scattered:
      // Fisher-Yates with the scenario's seed (splitmix64: the same draw on every platform).
      for (std::size_t i = free.size(); i > 1; --i) {
        draw = splitmix64(draw);
        std::swap(free[i - 1], free[draw % i]);
      }
      nodes.assign(free.begin(), free.begin() + n);
      std::sort(nodes.begin(), nodes.end());
      break;
    }
    for (int i : nodes)
      used[static_cast<std::size_t>(i)] = 1;
    out.push_back(std::move(nodes));
  }
  return out;
}

/// The cluster GPU of rank r of a job placed on `nodes` (its ranks fill them in order, g GPUs per node).
int job_gpu(const std::vector<int>& nodes, int gpus_per_node, int r)
{
  return nodes[static_cast<std::size_t>(r / gpus_per_node)] * gpus_per_node + r % gpus_per_node;
}

/// One workload of the cluster's GPUs from the jobs' own: job j's rank r runs on GPU nodes[j][r / g] x g + r % g
/// (g GPUs per node), its communicators and programs carried over; GPUs of no job (or of a job not in `include`)
/// run nothing.
workloads::Workload combine_jobs(const std::vector<workloads::Workload>& jobs,
                                 const std::vector<std::vector<int>>& nodes, const std::vector<std::string>& names,
                                 int gpus_per_node, int world, const std::vector<char>& include)
{
  workloads::Workload w;
  w.source = "jobs:";
  std::vector<workloads::Workload::Rank> at(static_cast<std::size_t>(world));
  std::vector<char> placed(static_cast<std::size_t>(world), 0);
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    if (!include[j]) continue;
    const workloads::Workload& job = jobs[j];
    w.source += fmt::format(" {} ({})", names[j], job.source);
    for (const auto& note : job.notes)
      w.notes.push_back(names[j] + ": " + note);
    auto gpu_of = [&](int r) { return job_gpu(nodes[j], gpus_per_node, r); };
    const auto comm0 = static_cast<std::int32_t>(w.communicators.size());
    for (const auto& c : job.communicators) {
      std::vector<int> ranks;
      ranks.reserve(c.ranks.size());
      for (int r : c.ranks)
        ranks.push_back(gpu_of(r));
      w.add_communicator(names[j] + "/" + c.name, c.kind, std::move(ranks));
    }
    const auto graph0 = static_cast<std::uint32_t>(w.graphs.size());
    w.graphs.insert(w.graphs.end(), job.graphs.begin(), job.graphs.end());
    for (int r = 0; r < job.world_size(); ++r) {
      const auto& src = job.ranks[static_cast<std::size_t>(r)];
      workloads::Workload::Rank& dst = at[static_cast<std::size_t>(gpu_of(r))];
      dst.graph = graph0 + src.graph;
      if (src.comm_map.empty()) {
        for (std::size_t k = 0; k < job.communicators.size(); ++k)
          dst.comm_map.push_back(comm0 + static_cast<std::int32_t>(k));
      } else {
        for (std::int32_t e : src.comm_map)
          dst.comm_map.push_back(e < 0 ? e : comm0 + e);
      }
      placed[static_cast<std::size_t>(gpu_of(r))] = 1;
    }
  }
  const auto idle = static_cast<std::uint32_t>(w.graphs.size());
  w.graphs.push_back(std::make_shared<const workloads::RankGraph>(workloads::RankGraphBuilder{}.finish()));
  for (int g = 0; g < world; ++g) {
    if (!placed[static_cast<std::size_t>(g)]) at[static_cast<std::size_t>(g)].graph = idle;
    w.ranks.push_back(std::move(at[static_cast<std::size_t>(g)]));
  }
  return w;
}

/// A job's step in a replay: its GPUs' first op start to last op end.
Seconds job_step(const ReplayResult& r, const std::vector<int>& nodes, int gpus_per_node)
{
  double start = std::numeric_limits<double>::infinity(), end = 0;
  for (int n : nodes)
    for (int g = n * gpus_per_node; g < (n + 1) * gpus_per_node; ++g) {
      const auto& rk = r.ranks[static_cast<std::size_t>(g)];
      if (rk.last_end.seconds() <= 0 && rk.first_start.seconds() <= 0) continue; // ran nothing
      start = std::min(start, rk.first_start.seconds());
      end = std::max(end, rk.last_end.seconds());
    }
  return Seconds(start < end ? end - start : 0.0);
}

const char* kKindNames[kGroupKinds] = {"tp", "pp", "dp", "ep", "cp", "other"};

nlohmann::ordered_json breakdown_json(const TimeBreakdown& b, double step)
{
  nlohmann::ordered_json j;
  auto frac = [&](double v) { return step > 0 ? v / step : 0.0; };
  j["compute_s"] = b.compute_s;
  nlohmann::ordered_json exposed, comm;
  for (std::size_t k = 0; k < kGroupKinds; ++k) {
    exposed[kKindNames[k]] = b.exposed_s[k];
    comm[kKindNames[k]] = b.comm_s[k];
  }
  j["exposed_communication_s"] = exposed;
  j["bubble_s"] = b.bubble_s;
  j["idle_s"] = b.idle_s;
  j["host_bound_s"] = b.host_bound_s; // part of idle_s: a stream waited for its host to launch the next op
  j["communication_incl_overlapped_s"] = comm;
  nlohmann::ordered_json f;
  f["compute"] = frac(b.compute_s);
  f["exposed_communication"] = frac(b.exposed_total());
  f["bubble"] = frac(b.bubble_s);
  f["idle"] = frac(b.idle_s);
  j["fractions_of_step"] = f;
  return j;
}

/// Congestion factor bins: a call's time over its time alone falls in [edge[i], edge[i + 1]).
constexpr std::array<double, 10> kFactorEdges{1.0, 1.01, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0};

/// The value at quantile q of sorted values (nearest rank).
double quantile(const std::vector<double>& sorted, double q)
{
  if (sorted.empty()) return 0;
  const auto i = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, i == 0 ? 0 : i - 1)];
}

/// Coupled: how much the collectives of each group kind were slowed by what else ran (summary.json "congestion").
nlohmann::ordered_json congestion_json(const std::vector<CollectiveRun>& runs)
{
  nlohmann::ordered_json j;
  j["what"] = "per collective call: its time (last member arrived to done) over the same call alone on the fabric";
  std::vector<std::string> edges;
  for (std::size_t i = 0; i < kFactorEdges.size(); ++i)
    edges.push_back(i + 1 < kFactorEdges.size() ? fmt::format("[{}, {})", kFactorEdges[i], kFactorEdges[i + 1])
                                                : fmt::format(">= {}", kFactorEdges[i]));
  j["histogram_bins"] = edges;
  nlohmann::ordered_json kinds = nlohmann::ordered_json::object();
  for (std::size_t k = 0; k < kGroupKinds; ++k) {
    std::vector<double> f;
    double time = 0, alone = 0;
    std::vector<std::uint64_t> hist(kFactorEdges.size(), 0);
    for (const auto& r : runs) {
      if (r.group != k) continue;
      const double x = r.factor();
      f.push_back(x);
      time += r.end_s - r.start_s;
      alone += r.alone_s;
      const auto bin = std::upper_bound(kFactorEdges.begin(), kFactorEdges.end(), x) - kFactorEdges.begin();
      ++hist[static_cast<std::size_t>(std::max<std::ptrdiff_t>(bin - 1, 0))];
    }
    if (f.empty()) continue;
    std::sort(f.begin(), f.end());
    kinds[kKindNames[k]] = {{"calls", f.size()},        {"time_s", time},
                            {"alone_s", alone},         {"factor", alone > 0 ? time / alone : 1.0},
                            {"p50", quantile(f, 0.5)},  {"p90", quantile(f, 0.9)},
                            {"p99", quantile(f, 0.99)}, {"max", f.back()},
                            {"histogram", hist}};
  }
  j["by_group"] = kinds;
  return j;
}

/// congestion.csv: one row per distinct (group kind, communicator size class: collective, bytes) of the step.
void write_congestion_csv(const std::vector<CollectiveRun>& runs, std::ostream& out)
{
  struct Agg {
    std::uint64_t calls = 0;
    double time = 0, alone = 0, max = 0;
  };
  std::map<std::tuple<std::uint8_t, int, double>, Agg> rows;
  for (const auto& r : runs) {
    Agg& a = rows[{r.group, static_cast<int>(r.kind), r.bytes}];
    ++a.calls;
    a.time += r.end_s - r.start_s;
    a.alone += r.alone_s;
    a.max = std::max(a.max, r.factor());
  }
  CsvWriter csv(out);
  for (const char* h : {"group", "collective", "bytes", "calls", "mean_time_s", "alone_s", "factor", "max_factor"})
    csv.field(h);
  csv.end_record();
  for (const auto& [key, a] : rows) {
    const auto& [group, kind, bytes] = key;
    csv.field(kKindNames[group]);
    csv.field(models::to_string(static_cast<models::CollectiveKind>(kind)));
    csv.field(bytes);
    csv.field(a.calls);
    csv.field(a.time / static_cast<double>(a.calls));
    csv.field(a.alone / static_cast<double>(a.calls));
    csv.field(a.alone > 0 ? a.time / a.alone : 1.0);
    csv.field(a.max);
    csv.end_record();
  }
}

nlohmann::ordered_json collective_model_json(const WorkloadRunResult& result)
{
  nlohmann::ordered_json j;
  if (!result.profile_collectives) {
    // What times a collective: its lowered schedule alone on the fabric (analytical), the same schedule's transfers
    // on the network with everything else in flight (flows), or nothing (ideal: free once every member arrived).
    switch (result.replay.comm) {
    case CommModel::Analytical:
      j["model"] = "schedule";
      break;
    case CommModel::Flows:
      j["model"] = "flows";
      break;
    case CommModel::Ideal:
      j["model"] = "none";
      break;
    case CommModel::Coupled:
      j["model"] = "coupled";
      break;
    }
    return j;
  }
  j["model"] = "profile";
  j["profile_file"] = result.scenario.profile;
  int fitted = 0;
  for (const auto& c : result.collective_costs)
    fitted += c.fitted ? 1 : 0;
  j["distinct_calls"] = result.collective_costs.size();
  j["timed_by_profile_fit"] = fitted;
  j["timed_by_schedule"] = static_cast<int>(result.collective_costs.size()) - fitted;
  nlohmann::ordered_json calls = nlohmann::ordered_json::array();
  for (const auto& c : result.collective_costs) {
    nlohmann::ordered_json e;
    e["op"] = models::to_string(c.call.kind);
    e["size_bytes"] = c.call.bytes.bytes();
    e["nranks"] = c.call.ranks.size();
    e["nodes"] = c.nodes;
    e["algorithm"] = models::to_string(*c.call.algorithm);
    e["protocol"] = models::to_string(*c.call.protocol);
    e["communicators"] = c.communicators;
    e["timed_by"] = c.fitted ? "profile_fit" : "schedule";
    e["profile_line"] = c.fitted ? nlohmann::ordered_json(c.entry_line) : nlohmann::ordered_json(nullptr);
    e["extrapolated"] = c.extrapolated;
    e["time_s"] = c.time.seconds();
    e["schedule_time_s"] = c.schedule_time.seconds();
    e["reason"] = c.reason;
    calls.push_back(e);
  }
  j["calls"] = calls;
  return j;
}

nlohmann::ordered_json gpu_memory_json(const std::vector<GpuMemoryReport>& reports)
{
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& g : reports) {
    nlohmann::ordered_json j;
    if (!g.job.empty()) j["job"] = g.job;
    j["capacity_bytes"] =
        g.capacity_bytes > 0 ? nlohmann::ordered_json(g.capacity_bytes) : nlohmann::ordered_json(nullptr);
    j["capacity_source"] = g.capacity_source;
    j["checked"] = g.checked;
    j["peak_stage"] = g.peak_stage;
    j["peak_bytes"] = g.peak_bytes();
    nlohmann::ordered_json stages = nlohmann::ordered_json::array();
    for (const auto& m : g.stages)
      stages.push_back({{"stage", m.stage},
                        {"parameters", m.parameters},
                        {"weight_bytes", m.weight_bytes},
                        {"gradient_bytes", m.gradient_bytes},
                        {"optimizer_bytes", m.optimizer_bytes},
                        {"activation_bytes", m.activation_bytes},
                        {"microbatches_in_flight", m.microbatches_in_flight},
                        {"nccl_buffer_bytes", m.nccl_buffer_bytes},
                        {"total_bytes", m.total_bytes()}});
    j["stages"] = stages;
    out.push_back(j);
  }
  return out;
}

} // namespace

nlohmann::ordered_json workload_memory_summary(const Scenario& scenario, const RunLimits& limits)
{
  if (!scenario.workload || scenario.workload->kind != WorkloadSpec::Kind::Megatron || !scenario.jobs.empty())
    throw InputError({scenario.file, 0, "workload"},
                     "--memory-only checks a generated training step (workload: generator: megatron, no jobs:)",
                     "drop --memory-only to simulate this scenario");
  RunStart start = start_run(scenario, limits.memory);
  const std::shared_ptr<const calibration::Profile> profile = profile_of(scenario);
  ReplayOptions options = scenario.workload->replay;
  WorkloadSpec spec = *scenario.workload;
  spec.memory_check = false; // report, never refuse: the summary says whether it fits
  const workloads::Workload w = load_workload(scenario, options);
  GpuMemoryReport report =
      check_gpu_memory(spec, w, start.topology, scenario.nccl, profile.get(), [](int r) { return r; });
  report.checked = report.capacity_bytes > 0;
  nlohmann::ordered_json j;
  j["status"] = "memory_only";
  j["railyard_version"] = "0.1.0";
  j["scenario"] = scenario.name;
  j["scenario_file"] = scenario.file;
  j["gpus"] = scenario.cluster.gpus();
  j["gpu_memory"] = gpu_memory_json({report});
  auto& g = j["gpu_memory"][0];
  g["fits"] = report.capacity_bytes > 0 ? nlohmann::ordered_json(report.peak_bytes() <= report.capacity_bytes)
                                        : nlohmann::ordered_json(nullptr);
  g["breakdown"] = report.stages.empty() ? std::string()
                                         : memory_breakdown(report.stages[static_cast<std::size_t>(report.peak_stage)]);
  return j;
}

WorkloadRunResult run_workload(const Scenario& scenario, const RunLimits& limits)
{
  const MemoryLimit& memory = limits.memory;
  if (!scenario.workload)
    throw InputError({scenario.file, 0, "workload"}, "the scenario has no workload section",
                     "add 'workload:' (generator or trace)");
  // Before anything is built: the topology (the workload's own size is known once it is generated or read).
  // Refusals point at the section that makes the run large: the cluster, then the workload.
  const InputLocation workload_where = scenario.workload->where;
  RunStart start = start_run(scenario, memory);
  const topo::TopologySize& size = start.size;
  Footprint& footprint = start.footprint;
  const topo::Topology& topology = start.topology;
  ProgressProbe* probe = scenario.sim.progress;
  if (probe) probe->phase = "generating or reading the workload";
  WorkloadRunResult result;
  result.scenario = scenario;
  result.topology = topology.summary();
  const std::shared_ptr<const calibration::Profile> profile = profile_of(scenario);
  if (profile) result.profile_system = profile->system;
  ReplayOptions options = scenario.workload->replay;
  // Straggler GPUs (cluster.failures.stragglers): rank r of the step runs on GPU r.
  for (const auto& g : scenario.cluster.failures.stragglers) {
    if (options.compute_slowdown.size() <= static_cast<std::size_t>(g.gpu))
      options.compute_slowdown.resize(static_cast<std::size_t>(g.gpu) + 1, 1.0);
    options.compute_slowdown[static_cast<std::size_t>(g.gpu)] = g.slowdown;
  }
  const std::string default_note = default_communication(scenario, options);
  result.framework = framework_model(scenario, profile.get(), options);
  const std::size_t max_steps = limits.step_budget(footprint);
  options.lower = nccl_lowering(topology, scenario.nccl, scenario.step_overhead, max_steps);
  // collectives: measured with recorded_on: a collective's measured time moves by the model's time of the call on this
  // cluster minus on the cluster the trace was recorded on, each alone on its fabric.
  if (options.measured_collectives && scenario.workload->recorded_on) {
    auto recorded = std::make_shared<const topo::Topology>(topo::build_topology(*scenario.workload->recorded_on));
    auto lower_recorded = nccl_lowering(*recorded, scenario.nccl, scenario.step_overhead, max_steps);
    const InputLocation rec_where = scenario.workload->recorded_on_where;
    options.collective_delta = [&scenario, &topology, recorded, lower_recorded, lower = options.lower,
                                rec_where](const models::CollectiveCall& call, const std::vector<int>& recorded_ranks,
                                           const InputLocation& where) {
      models::CollectiveCall was = call;
      was.ranks = recorded_ranks;
      for (const auto& [t, what, at, ranks] :
           {std::tuple{&topology, "cluster", InputLocation{scenario.file, 0, "cluster"}, &call.ranks},
            std::tuple{recorded.get(), "workload.recorded_on", rec_where, &std::as_const(was.ranks)}}) {
        const int highest = *std::max_element(ranks->begin(), ranks->end());
        if (highest >= t->num_gpus())
          throw InputError(
              at,
              fmt::format("{} has {} GPUs, but the collective at {} {} runs over ranks up to {} of the job", what,
                          t->num_gpus(), where.file, where.field, highest),
              fmt::format("give {} at least {} GPUs (rank r of the job runs on GPU r)", what, highest + 1));
      }
      const double now =
          isolated_collective_time(lower(call, where), topology, scenario.sim.pxn, scenario.sim.seed).seconds();
      const double before =
          isolated_collective_time(lower_recorded(was, where), *recorded, scenario.sim.pxn, scenario.sim.seed)
              .seconds();
      return now - before;
    };
  }
  // collective_model: profile: the fit where the profile covers the call, else the schedule; every distinct shape
  // is recorded once, with both times, for the summary.
  auto costs = std::make_shared<std::vector<CollectiveCostUse>>();
  if (scenario.workload->collective_model == WorkloadSpec::CollectiveModel::Profile) {
    if (!profile)
      throw InputError(scenario.workload->collective_model_where,
                       "collective_model: profile needs the profile's fitted collective costs, and the scenario names "
                       "no profile",
                       "add 'profile: <path>/calibration/profiles/<system>.yaml' to the scenario");
    result.profile_collectives = true;
    options.collective_time = [&scenario, &topology, profile, costs](const models::CollectiveCall& call,
                                                                     const InputLocation& where) {
      const models::CollectiveCall resolved = resolve_call(call, topology, scenario.nccl, where);
      const ProfileCollectiveCost cost = profile_collective_cost(*profile, resolved, topology);
      const Seconds schedule = isolated_collective_time(
          models::lower(lowering_input(resolved, topology, scenario.nccl, scenario.step_overhead)), topology,
          scenario.sim.pxn, scenario.sim.seed);
      const Seconds used = cost.fit ? cost.time : schedule;
      for (auto& c : *costs)
        if (c.call.kind == resolved.kind && c.call.bytes == resolved.bytes &&
            c.call.ranks.size() == resolved.ranks.size() && c.nodes == cost.nodes &&
            c.call.algorithm == resolved.algorithm && c.call.protocol == resolved.protocol && c.time == used &&
            c.reason == cost.reason) {
          ++c.communicators;
          return std::optional<Seconds>(used);
        }
      CollectiveCostUse u;
      u.call = resolved;
      u.nodes = cost.nodes;
      u.communicators = 1;
      u.fitted = cost.fit != nullptr;
      u.entry_line = cost.fit ? cost.fit->line : 0;
      u.extrapolated = cost.extrapolated;
      u.time = used;
      u.schedule_time = schedule;
      u.reason = cost.reason;
      costs->push_back(std::move(u));
      return std::optional<Seconds>(used);
    };
  }
  require_profile(*scenario.workload, profile.get());
  if (scenario.workload->kind == WorkloadSpec::Kind::Megatron && scenario.jobs.empty()) {
    // Before generating: ops per program are about 43 per (micro-batch, layer) on the examples (gpt3_175b_1024:
    // 49k ops per rank for 96 micro-batches x 12 layers); 100 bounds them, one program per pipeline stage.
    const workloads::MegatronLayout l = workloads::resolve_layout(scenario.workload->megatron, scenario.cluster.gpus());
    const double per_rank = 100.0 * l.microbatches * l.vpp * l.layers_per_chunk + 1000;
    Footprint before = footprint;
    add_workload(before, static_cast<std::size_t>(per_rank * l.pp), static_cast<std::size_t>(per_rank * l.world), 0);
    check_footprint(before, memory, workload_where);
  }
  std::vector<workloads::Workload> job_workloads;
  std::vector<std::vector<int>> job_nodes;
  std::vector<std::string> job_names;
  if (scenario.jobs.empty()) {
    result.workload = load_workload(scenario, options);
    result.workload = at_world_size(*scenario.workload, std::move(result.workload), options);
    if (scenario.workload->kind == WorkloadSpec::Kind::Megatron)
      result.gpu_memory.push_back(check_gpu_memory(*scenario.workload, result.workload, topology, scenario.nccl,
                                                   profile.get(), [](int r) { return r; }));
  } else {
    // Each job generated or read for its own GPUs, then placed on its nodes of the cluster.
    job_nodes = place_jobs(scenario);
    options.model_flops = 0;
    for (const JobSpec& job : scenario.jobs) {
      require_profile(job.workload, profile.get());
      Scenario one = scenario;
      one.cluster.nodes = job.gpus / scenario.cluster.gpus_per_node;
      one.workload = job.workload;
      ReplayOptions o = options;
      job_workloads.push_back(load_workload(one, o));
      if (job_workloads.back().world_size() != job.gpus)
        throw InputError(job.where,
                         fmt::format("job '{}' has {} ranks and takes {} GPUs", job.name,
                                     job_workloads.back().world_size(), job.gpus),
                         "give the job as many GPUs as its workload has ranks");
      if (job.workload.kind == WorkloadSpec::Kind::Megatron) {
        const std::vector<int>& nodes = job_nodes[result.jobs.size()];
        const int gpn = scenario.cluster.gpus_per_node;
        result.gpu_memory.push_back(check_gpu_memory(
            job.workload, job_workloads.back(), topology, scenario.nccl, profile.get(),
            [&nodes, gpn](int r) { return job_gpu(nodes, gpn, r); }, job.name));
      }
      result.jobs.push_back(JobResult{job.name, job.gpus, job.placement, job_nodes[result.jobs.size()], Seconds(0),
                                      Seconds(0), o.model_flops});
      options.model_flops += o.model_flops;
      job_names.push_back(job.name);
    }
    result.workload = combine_jobs(job_workloads, job_nodes, job_names, scenario.cluster.gpus_per_node,
                                   scenario.cluster.gpus(), std::vector<char>(job_workloads.size(), 1));
    workloads::validate(result.workload);
  }
  // Before it is replayed: its ops, and the actors SimGrid would need (flows: one per stream of every rank, one per
  // dependency-ordered op, one proxy per rank; the event loop of analytical and ideal needs none).
  const workloads::Workload& w = result.workload;
  for (const auto& c : w.communicators) // a node down (cluster.failures.nodes) in a communicator
    topology.check_communicator(c.ranks, "communicator " + c.name);
  std::vector<std::size_t> actors_of_graph(w.graphs.size(), 0);
  const bool actors = options.comm == CommModel::Flows || !options.discrete_events;
  if (actors)
    for (std::size_t gi = 0; gi < w.graphs.size(); ++gi) {
      const workloads::RankGraph& g = *w.graphs[gi];
      std::vector<workloads::StreamId> streams;
      std::size_t unordered = 0;
      for (workloads::OpId i = 0; i < static_cast<workloads::OpId>(g.size()); ++i) {
        const auto s = g.op(i).stream;
        if (s == workloads::kUnordered)
          ++unordered;
        else if (std::find(streams.begin(), streams.end(), s) == streams.end())
          streams.push_back(s);
      }
      actors_of_graph[gi] = streams.size() + unordered + 1;
    }
  std::size_t ops = 0, actor_count = 0;
  for (int r = 0; r < w.world_size(); ++r) {
    ops += w.graph_of(r).size();
    actor_count += actors_of_graph[w.ranks[static_cast<std::size_t>(r)].graph];
  }
  if (scenario.sim.backend == Backend::SimGrid) check_actor_count(actor_count, workload_where);
  add_engine(footprint, scenario.sim, size, static_cast<std::size_t>(w.world_size()), actor_count);
  std::size_t graph_ops = 0;
  for (const auto& g : w.graphs)
    graph_ops += g->size();
  add_workload(footprint, graph_ops, ops, traced_ops(w, options));
  check_footprint(footprint, memory, workload_where);
  result.footprint = footprint;
  // The fluid network's records of a flows replay (network.outputs): `auto` keeps the aggregates only, since a
  // training step moves millions of transfers; `true` records them all.
  SimulationConfig& sim_config = result.scenario.sim;
  if (options.comm == CommModel::Coupled) {
    // Coupled flows are collective channels, not transfers: no flow records. Links as a flows replay keeps them.
    sim_config.fluid.record_flows = false;
    result.records["flows.csv"] = "not produced: communication: coupled moves each collective channel as one flow, "
                                  "not transfers (communication: flows records them)";
    if (scenario.records.links == Record::Auto) {
      sim_config.fluid.record_links = false;
      result.records["links.csv"] = "not recorded: network.outputs.links: auto keeps only the aggregates of a "
                                    "workload run; set network.outputs.links: true (with a step-level "
                                    "sample_interval such as 1 ms) to record them";
    } else {
      result.records["links.csv"] =
          decide_record(scenario.records.links, FootprintPart{}, "links.csv", "links", sim_config.fluid.record_links);
    }
  }
  if (sim_config.backend == Backend::Fluid && options.comm == CommModel::Flows) {
    auto decide = [&](Record choice, const char* file, const char* key, bool& record) {
      if (choice != Record::Auto) return decide_record(choice, FootprintPart{}, file, key, record);
      record = false;
      return fmt::format("not recorded: network.outputs.{0}: auto keeps only the aggregates of a workload run (a "
                         "training step moves millions of transfers); set network.outputs.{0}: true to record them",
                         key);
    };
    result.records["flows.csv"] = decide(scenario.records.flows, "flows.csv", "flows", sim_config.fluid.record_flows);
    result.records["links.csv"] = decide(scenario.records.links, "links.csv", "links", sim_config.fluid.record_links);
  }
  if (probe) probe->phase = "replaying";
  result.replay = replay_workload(result.workload, topology, sim_config, profile.get(), options);
  if (!default_note.empty()) result.replay.notes.insert(result.replay.notes.begin(), default_note);
  if (result.framework)
    result.replay.notes.push_back(fmt::format(
        "the host is modelled with the profile's framework costs ({}{:.6g} us per kernel, {:.6g} us per communication "
        "call, {:.6g} us per micro-batch, {:.6g} us per "
        "step{}); an op starts no earlier than its host issues it (replay.framework: false times the device alone)",
        result.framework->name.empty() ? "" : result.framework->name + ": ", result.framework->launch.seconds() * 1e6,
        result.framework->collective.seconds() * 1e6, result.framework->microbatch.seconds() * 1e6,
        result.framework->step.seconds() * 1e6,
        result.framework->sync_after_p2p ? ", the device synchronised after each pipeline transfer" : ""));
  // Jobs: each one's step beside the others, and alone on the same nodes (the interference is their ratio).
  for (std::size_t j = 0; j < result.jobs.size(); ++j) {
    const int g = scenario.cluster.gpus_per_node;
    result.jobs[j].step_time = job_step(result.replay, job_nodes[j], g);
    std::vector<char> only(job_workloads.size(), 0);
    only[j] = 1;
    SimulationConfig quiet = sim_config; // the alone runs record nothing
    quiet.fluid.record_links = false;
    quiet.fluid.record_flows = false;
    ReplayOptions alone_options = options;
    alone_options.trace_ranks = std::vector<int>{};
    if (probe) probe->phase = "replaying each job alone";
    const ReplayResult alone =
        replay_workload(combine_jobs(job_workloads, job_nodes, job_names, g, scenario.cluster.gpus(), only), topology,
                        quiet, profile.get(), alone_options);
    result.jobs[j].alone = job_step(alone, job_nodes[j], g);
  }
  result.collective_costs = std::move(*costs);
  return result;
}

void write_workload_outputs(const WorkloadRunResult& result, const std::string& dir)
{
  OutputDir folder(dir, {false, "--out", "run", result.scenario.file, result.scenario.input_files()});
  write_workload_outputs(result, folder);
}

void write_workload_outputs(const WorkloadRunResult& result, OutputDir& folder)
{
  const ReplayResult& r = result.replay;
  const double step = r.step_time.seconds();

  folder.write("breakdown.csv", [&](std::ostream& out) {
    CsvWriter csv(out);
    for (const char* h : {"rank", "first_start_s", "last_end_s", "compute_s"})
      csv.field(h);
    for (const char* k : kKindNames)
      csv.field(fmt::format("exposed_{}_s", k));
    csv.field("bubble_s");
    csv.field("idle_s");
    csv.field("host_bound_s");
    for (const char* k : kKindNames)
      csv.field(fmt::format("comm_{}_s", k));
    csv.end_record();
    for (std::size_t i = 0; i < r.ranks.size(); ++i) {
      const auto& rk = r.ranks[i];
      const auto& b = rk.breakdown;
      csv.field(i);
      csv.field(rk.first_start.seconds());
      csv.field(rk.last_end.seconds());
      csv.field(b.compute_s);
      for (double v : b.exposed_s)
        csv.field(v);
      csv.field(b.bubble_s);
      csv.field(b.idle_s);
      csv.field(b.host_bound_s);
      for (double v : b.comm_s)
        csv.field(v);
      csv.end_record();
    }
  });
  folder.write("trace.json", [&](std::ostream& out) { write_chrome_trace(r, result.workload, out); });

  const auto& w = result.workload;
  std::size_t ops = 0;
  for (int rank = 0; rank < w.world_size(); ++rank)
    ops += w.graph_of(rank).size();
  nlohmann::ordered_json j;
  j["status"] = "complete";
  j["railyard_version"] = "0.1.0";
  j["scenario"] = result.scenario.name;
  j["scenario_file"] = result.scenario.file;
  j["seed"] = result.scenario.sim.seed;
  j["backend"] = to_string(result.scenario.sim.backend);
  j["pxn"] = result.scenario.sim.pxn;
  j["cluster_kind"] = topo::to_string(result.scenario.cluster.kind);
  j["gpus"] = result.topology.gpus;
  if (const auto& f = result.scenario.cluster.failures; f.any() || !f.stragglers.empty())
    j["failures"] = topo::failures_json(f); // what was down or slow: compare with a run without (a sweep)
  nlohmann::ordered_json wl;
  wl["source"] = w.source;
  wl["ranks"] = w.world_size();
  wl["programs"] = w.graphs.size();
  wl["communicators"] = w.communicators.size();
  wl["ops"] = ops;
  wl["notes"] = w.notes;
  j["workload"] = wl;
  j["profile"] = result.profile_system;
  j["profile_file"] = result.scenario.profile;
  j["links"] = cluster_links_json(result.scenario);
  j["nccl_system"] = nccl_system_json(result.scenario);
  j["communication"] = to_string(r.comm);
  j["collective_model"] = collective_model_json(result);
  j["step_time_s"] = step;
  j["memory_estimate"] = footprint_json(result.footprint);
  j["start_s"] = r.start.seconds();
  j["model_flops"] = r.model_flops;
  j["hardware_flops"] = r.hardware_flops;
  j["peak_flops_per_gpu"] = r.peak_flops;
  j["mfu"] = r.mfu ? nlohmann::ordered_json(*r.mfu) : nlohmann::ordered_json(nullptr);
  j["hfu"] = r.hfu ? nlohmann::ordered_json(*r.hfu) : nlohmann::ordered_json(nullptr);
  // TFLOP/s per GPU as papers quote them (1e12 FLOP per second per GPU): model FLOPs, and hardware FLOPs (with
  // recomputation).
  auto tflops = [](const std::optional<double>& v) {
    return v ? nlohmann::ordered_json(*v / 1e12) : nlohmann::ordered_json(nullptr);
  };
  j["model_tflops_per_gpu"] = tflops(r.model_flops_per_gpu_per_s);
  j["hardware_tflops_per_gpu"] = tflops(r.hardware_flops_per_gpu_per_s);
  j["breakdown_mean_over_ranks"] = breakdown_json(r.mean, step);
  if (result.scenario.workload && result.scenario.workload->kind == WorkloadSpec::Kind::Trace)
    j["host"] = {{"host_launch", to_string(result.scenario.workload->replay.host_launch)},
                 {"host_bound_s_mean_over_ranks", r.mean.host_bound_s},
                 {"host_bound_fraction_of_step", step > 0 ? r.mean.host_bound_s / step : 0.0}};
  if (result.framework) {
    const auto& f = *result.framework;
    j["framework"] = {{"name", f.name},
                      {"launch_us", f.launch.seconds() * 1e6},
                      {"collective_us", f.collective.seconds() * 1e6},
                      {"microbatch_us", f.microbatch.seconds() * 1e6},
                      {"step_us", f.step.seconds() * 1e6},
                      {"sync_after_p2p", f.sync_after_p2p},
                      {"host_busy_s_mean_over_ranks", r.host_busy_s},
                      {"host_busy_fraction_of_step", step > 0 ? r.host_busy_s / step : 0.0}};
  }
  if (!result.gpu_memory.empty()) j["gpu_memory"] = gpu_memory_json(result.gpu_memory);
  j["traced_ranks"] = r.traced_ranks;
  j["ops_executed"] = r.ops_executed;
  j["flows"] = {{"sent", r.flows.flows_sent},
                {"received", r.flows.flows_received},
                {"wire_bytes_sent", r.flows.bytes_sent},
                {"wire_bytes_received", r.flows.bytes_received}};
  if (r.network) j["network"] = write_network_outputs(*r.network, result.scenario.sim.fluid, result.records, folder);
  if (!result.jobs.empty()) {
    nlohmann::ordered_json jobs = nlohmann::ordered_json::array();
    for (const auto& job : result.jobs) {
      const double t = job.step_time.seconds(), alone = job.alone.seconds();
      jobs.push_back({{"name", job.name},
                      {"gpus", job.gpus},
                      {"placement", to_string(job.placement)},
                      {"nodes", job.nodes},
                      {"step_time_s", t},
                      {"alone_step_time_s", alone},
                      {"slowdown", alone > 0 ? t / alone : 1.0},
                      {"model_flops", job.model_flops},
                      {"model_tflops_per_gpu", t > 0 && job.model_flops > 0
                                                   ? nlohmann::ordered_json(job.model_flops / (t * job.gpus) / 1e12)
                                                   : nlohmann::ordered_json(nullptr)},
                      {"mfu", r.peak_flops > 0 && t > 0 && job.model_flops > 0
                                  ? nlohmann::ordered_json(job.model_flops / (t * job.gpus * r.peak_flops))
                                  : nlohmann::ordered_json(nullptr)}});
    }
    j["jobs"] = jobs;
  }
  if (r.comm == CommModel::Coupled) {
    j["congestion"] = congestion_json(r.collectives);
    folder.write("congestion.csv", [&](std::ostream& out) { write_congestion_csv(r.collectives, out); });
  }
  j["notes"] = r.notes;
  // Last, so that a summary.json saying "complete" is never beside a missing file even inside the staging folder.
  folder.write("summary.json", [&](std::ostream& out) { out << j.dump(2) << "\n"; });
  folder.commit();
}

struct PreparedStep::State {
  // Built in place (a prvalue, never moved: the topology is not moved once built).
  State(const Scenario& scenario, const RunLimits& limits) : start(start_run(scenario, limits.memory)) {}
  RunStart start;
  std::shared_ptr<const calibration::Profile> profile;
  SimulationConfig sim;
  ReplayOptions options;
  workloads::Workload workload;
};

PreparedStep::PreparedStep(const Scenario& scenario)
{
  if (!scenario.workload || !scenario.jobs.empty())
    throw InputError({scenario.file, 0, "workload"}, "a prepared step needs one workload section and no jobs",
                     "give the scenario a 'workload:' section");
  const RunLimits limits;
  s_ = std::make_unique<State>(scenario, limits);
  s_->profile = profile_of(scenario);
  require_profile(*scenario.workload, s_->profile.get());
  s_->options = scenario.workload->replay;
  (void)default_communication(scenario, s_->options); // each replay brings its own host model
  s_->options.trace_ranks = std::vector<int>{};
  s_->options.lower =
      nccl_lowering(s_->start.topology, scenario.nccl, scenario.step_overhead, limits.step_budget(s_->start.footprint));
  s_->sim = scenario.sim;
  s_->sim.fluid.record_flows = false;
  s_->sim.fluid.record_links = false;
  s_->workload = load_workload(scenario, s_->options);
}

PreparedStep::~PreparedStep() = default;

ReplayResult PreparedStep::replay(const HostModel& host) const
{
  ReplayOptions o = s_->options;
  o.host = host;
  return replay_workload(s_->workload, s_->start.topology, s_->sim, s_->profile.get(), o);
}

} // namespace railyard::scenario
