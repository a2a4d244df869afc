#include "railyard/scenario/run.hpp"
#include "railyard/scenario/fluid_outputs.hpp"
#include "railyard/scenario/lowering.hpp"
#include "run_start.hpp"

#include "railyard/sim/collective_runner.hpp"
#include "railyard/sim/nccl_resolve.hpp"

#include "railyard/common/csv.hpp"
#include "railyard/common/output_dir.hpp"

#include <boost/range/iterator_range.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>

namespace railyard::scenario {

using namespace railyard::sim; // the simulator this layer drives

BytesPerSec CollectiveResult::algbw() const
{
  return time().seconds() > 0 ? BytesPerSec(call.bytes.bytes() / time().seconds()) : BytesPerSec(0);
}

BytesPerSec CollectiveResult::busbw() const
{
  return algbw() * models::busbw_factor(call.kind, static_cast<int>(call.ranks.size()));
}

RunResult run_scenario(const Scenario& scenario, const RunLimits& limits)
{
  const MemoryLimit& memory = limits.memory;
  // Refusals point at the section that makes the run large: the cluster, then the calls.
  const InputLocation where = scenario.cluster_where;
  // Before anything is built: the topology, and the engine for the GPUs the calls name.
  std::vector<char> taking_part(static_cast<std::size_t>(scenario.cluster.gpus()), 0);
  for (const auto& spec : scenario.collectives)
    for (int g : spec.call.ranks)
      if (g >= 0 && g < scenario.cluster.gpus()) taking_part[static_cast<std::size_t>(g)] = 1;
  const auto gpus = static_cast<std::size_t>(std::count(taking_part.begin(), taking_part.end(), 1));
  const std::size_t actors = scenario.sim.backend == Backend::SimGrid ? gpus : 0;
  check_actor_count(actors, where);
  RunStart start = start_run(scenario, memory, [&](Footprint& f, const topo::TopologySize& size) {
    add_engine(f, scenario.sim, size, gpus, actors);
  });
  Footprint& footprint = start.footprint;
  const topo::Topology& topology = start.topology;
  for (std::size_t i = 0; i < scenario.collectives.size(); ++i) // a node down (cluster.failures.nodes) in a call
    topology.check_communicator(scenario.collectives[i].call.ranks, fmt::format("collectives[{}]", i));
  ProgressProbe* probe = scenario.sim.progress;
  if (probe) probe->phase = "lowering the calls";
  RunResult result;
  result.scenario = scenario;
  result.topology = topology.summary();

  std::vector<models::Schedule> schedules;
  std::vector<LoweredSpec> lowered_specs;
  // Steps the schedules may hold: what memory and --max-transfers leave, shared by the calls in order (a call
  // repeated k times is kept k times).
  std::size_t budget = limits.step_budget(footprint);
  for (const auto& spec : scenario.collectives) {
    const std::size_t per_copy =
        budget > 0 ? std::max<std::size_t>(1, budget / static_cast<std::size_t>(spec.repeat)) : 0;
    lowered_specs.push_back(lower_spec(spec, topology, scenario, per_copy));
    const LoweredSpec& lowered = lowered_specs.back();
    if (budget > 0) budget -= std::min(budget, lowered.schedule.num_steps() * static_cast<std::size_t>(spec.repeat));
    for (int it = 0; it < spec.repeat; ++it) {
      CollectiveResult r;
      r.call = lowered.call;
      r.iteration = it;
      result.collectives.push_back(r);
    }
  }
  // Before anything is simulated: the schedules as run_schedules gets them (a copy per repeat), and what the fluid
  // network records of them. Link samples follow the run's length, bounded below by what a call's first rank sends
  // over all its GPU's outgoing links at once (cheap; the contention-free schedule time would cost a pass over every
  // flow of every round).
  std::vector<const models::Schedule*> distinct;
  std::vector<int> copies;
  Seconds duration{0};
  const bool samples = scenario.sim.backend == Backend::Fluid;
  for (std::size_t i = 0; i < lowered_specs.size(); ++i) {
    distinct.push_back(&lowered_specs[i].schedule);
    copies.push_back(scenario.collectives[i].repeat);
    if (samples) {
      const auto& sch = lowered_specs[i].schedule;
      const int first = sch.gpus.empty() ? 0 : sch.gpus.front();
      double out_capacity = 0;
      for (const auto& e : boost::make_iterator_range(boost::out_edges(topology.gpu_vertex(first), topology.graph())))
        out_capacity += topology.graph()[e].bandwidth.bytes_per_sec();
      if (out_capacity > 0 && !sch.gpus.empty())
        duration += Seconds(sch.bytes_sent_by(0).bytes() / out_capacity) * scenario.collectives[i].repeat;
    }
  }
  SimulationConfig& sim_config = result.scenario.sim; // with the records decided
  if (sim_config.backend == Backend::Fluid) {
    const RecordEstimate records = record_estimate(distinct, copies, sim_config, start.size, duration);
    result.records["flows.csv"] =
        decide_record(scenario.records.flows, records.flows, "flows.csv", "flows", sim_config.fluid.record_flows);
    result.records["links.csv"] =
        decide_record(scenario.records.links, records.links, "links.csv", "links", sim_config.fluid.record_links);
  }
  add_collectives(footprint, distinct, copies, sim_config, start.size, duration);
  const InputLocation calls_where = scenario.collectives.empty() ? where : scenario.collectives.front().where;
  check_footprint(footprint, memory, calls_where);
  if (limits.max_transfers > 0) {
    std::size_t transfers = 0;
    for (std::size_t i = 0; i < distinct.size(); ++i)
      transfers += distinct[i]->num_transfers() * static_cast<std::size_t>(copies[i]);
    if (transfers > limits.max_transfers)
      throw InputError(calls_where,
                       fmt::format("the lowered calls start {} transfers, more than --max-transfers {}", transfers,
                                   limits.max_transfers),
                       "raise --max-transfers, or run fewer, smaller or fewer-channel calls");
  }
  result.footprint = footprint;
  // run_schedules takes a schedule per call: the repeats are copies, the last one is moved (no second copy of a large
  // schedule at any time).
  for (std::size_t i = 0; i < lowered_specs.size(); ++i) {
    for (int it = 1; it < scenario.collectives[i].repeat; ++it)
      schedules.push_back(lowered_specs[i].schedule);
    schedules.push_back(std::move(lowered_specs[i].schedule));
  }
  lowered_specs.clear();

  if (probe) {
    probe->phase = "simulating";
    std::size_t transfers = 0;
    for (const auto& s : schedules)
      transfers += s.num_transfers();
    probe->total.store(transfers, std::memory_order_relaxed);
  }
  Simulation sim(topology, sim_config);
  const auto timings = run_schedules(sim, schedules);
  for (std::size_t i = 0; i < timings.size(); ++i) {
    // From the moment every member has begun: a rank that finished its previous entry early waits for the others.
    result.collectives[i].start = timings[i].last_start;
    result.collectives[i].end = timings[i].end;
  }
  result.simulated_time = sim.now();
  result.flows = sim.network().totals();
  if (FluidNetwork* fluid = sim.fluid()) result.network = std::make_shared<const FluidReport>(fluid->take_report());
  return result;
}

void write_outputs(const RunResult& result, const std::string& dir)
{
  OutputDir folder(dir, {false, "--out", "run", result.scenario.file, result.scenario.input_files()});
  write_outputs(result, folder);
}

void write_outputs(const RunResult& result, OutputDir& folder)
{
  folder.write("collectives.csv", [&](std::ostream& out) {
    CsvWriter csv(out);
    csv.record("index", "iteration", "label", "op", "size_bytes", "nranks", "algorithm", "protocol", "channels",
               "start_s", "end_s", "time_s", "algbw_GBps", "busbw_GBps");
    for (std::size_t i = 0; i < result.collectives.size(); ++i) {
      const auto& c = result.collectives[i];
      csv.record(i, c.iteration, c.call.label, models::to_string(c.call.kind), c.call.bytes.bytes(),
                 c.call.ranks.size(), models::to_string(*c.call.algorithm), models::to_string(*c.call.protocol),
                 *c.call.channels, c.start.seconds(), c.end.seconds(), c.time().seconds(),
                 c.algbw().bytes_per_sec() / units::kGB, c.busbw().bytes_per_sec() / units::kGB);
    }
  });

  nlohmann::ordered_json j;
  j["status"] = "complete";
  j["railyard_version"] = "0.1.0";
  j["scenario"] = result.scenario.name;
  j["scenario_file"] = result.scenario.file;
  j["seed"] = result.scenario.sim.seed;
  j["backend"] = to_string(result.scenario.sim.backend);
  j["pxn"] = result.scenario.sim.pxn;
  j["cluster_kind"] = topo::to_string(result.scenario.cluster.kind);
  j["topology"] = topo::summary_json(result.scenario.cluster, result.topology);
  const auto& prof = result.scenario.profile_data;
  j["profile"] = prof ? nlohmann::ordered_json(prof->system) : nlohmann::ordered_json(nullptr);
  j["profile_file"] = prof ? nlohmann::ordered_json(prof->file) : nlohmann::ordered_json(nullptr);
  j["links"] = cluster_links_json(result.scenario);
  j["nccl_system"] = nccl_system_json(result.scenario);
  j["simulated_time_s"] = result.simulated_time.seconds();
  j["memory_estimate"] = footprint_json(result.footprint);
  j["flows"] = {{"sent", result.flows.flows_sent},
                {"received", result.flows.flows_received},
                {"wire_bytes_sent", result.flows.bytes_sent},
                {"wire_bytes_received", result.flows.bytes_received}};
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const auto& c : result.collectives) {
    nlohmann::ordered_json e;
    e["op"] = models::to_string(c.call.kind);
    e["label"] = c.call.label;
    e["iteration"] = c.iteration;
    e["size_bytes"] = c.call.bytes.bytes();
    e["nranks"] = c.call.ranks.size();
    e["algorithm"] = models::to_string(*c.call.algorithm);
    e["protocol"] = models::to_string(*c.call.protocol);
    e["channels"] = *c.call.channels;
    e["time_s"] = c.time().seconds();
    e["algbw_GBps"] = c.algbw().bytes_per_sec() / units::kGB;
    e["busbw_GBps"] = c.busbw().bytes_per_sec() / units::kGB;
    list.push_back(e);
  }
  j["collectives"] = list;
  if (result.network)
    j["network"] = write_network_outputs(*result.network, result.scenario.sim.fluid, result.records, folder);
  // Last, so that a summary.json saying "complete" is never beside a missing file even inside the staging folder.
  folder.write("summary.json", [&](std::ostream& out) { out << j.dump(2) << "\n"; });
  folder.commit();
}

} // namespace railyard::scenario
