#include "railyard/sim/run.hpp"

#include "railyard/sim/collective_runner.hpp"
#include "railyard/sim/nccl_resolve.hpp"

#include "railyard/common/csv.hpp"
#include "railyard/common/output_dir.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace railyard::sim {

BytesPerSec CollectiveResult::algbw() const
{
  return time().value() > 0 ? BytesPerSec(call.bytes.value() / time().value()) : BytesPerSec(0);
}

BytesPerSec CollectiveResult::busbw() const
{
  return algbw() * models::busbw_factor(call.kind, static_cast<int>(call.ranks.size()));
}

models::CollectiveCall resolve_call(const models::CollectiveCall& call, const topo::Topology& topology,
                                    const InputLocation& where)
{
  return resolve_call(call, topology, NcclSettings{}, where);
}

RunResult run_scenario(const Scenario& scenario)
{
  const topo::Topology topology = topo::build_topology(scenario.cluster, scenario.cluster_where);
  RunResult result;
  result.scenario = scenario;
  result.topology = topology.summary();

  std::vector<models::Schedule> schedules;
  for (const auto& spec : scenario.collectives) {
    const LoweredSpec lowered = lower_spec(spec, topology, scenario);
    for (int it = 0; it < spec.repeat; ++it) {
      schedules.push_back(lowered.schedule);
      CollectiveResult r;
      r.call = lowered.call;
      r.iteration = it;
      result.collectives.push_back(r);
    }
  }

  if (ProgressProbe* probe = scenario.sim.progress) {
    std::size_t transfers = 0;
    for (const auto& s : schedules)
      transfers += s.num_transfers();
    probe->total.store(transfers, std::memory_order_relaxed);
  }
  Simulation sim(topology, scenario.sim);
  const auto timings = run_schedules(sim, schedules);
  for (std::size_t i = 0; i < timings.size(); ++i) {
    // From the moment every member has begun: a rank that finished its previous entry early waits for the others.
    result.collectives[i].start = timings[i].last_start;
    result.collectives[i].end = timings[i].end;
  }
  result.simulated_time = sim.now();
  result.flows = sim.network().totals();
  if (FluidNetwork* fluid = sim.fluid())
    result.network = std::make_shared<const FluidReport>(fluid->take_report());
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
      csv.record(i, c.iteration, c.call.label, models::to_string(c.call.kind), c.call.bytes.value(),
                 c.call.ranks.size(), models::to_string(*c.call.algorithm), models::to_string(*c.call.protocol),
                 *c.call.channels, c.start.value(), c.end.value(), c.time().value(), c.algbw().value() / units::kGB,
                 c.busbw().value() / units::kGB);
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
  j["simulated_time_s"] = result.simulated_time.value();
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
    e["size_bytes"] = c.call.bytes.value();
    e["nranks"] = c.call.ranks.size();
    e["algorithm"] = models::to_string(*c.call.algorithm);
    e["protocol"] = models::to_string(*c.call.protocol);
    e["channels"] = *c.call.channels;
    e["time_s"] = c.time().value();
    e["algbw_GBps"] = c.algbw().value() / units::kGB;
    e["busbw_GBps"] = c.busbw().value() / units::kGB;
    list.push_back(e);
  }
  j["collectives"] = list;
  if (result.network) {
    const FluidConfig& fc = result.scenario.sim.fluid;
    j["network"] = fluid_summary(*result.network, fc);
    if (fc.record_flows) folder.write("flows.csv", [&](std::ostream& out) { write_flows_csv(*result.network, out); });
    if (fc.record_links)
      folder.write("links.csv", [&](std::ostream& out) { write_links_csv(*result.network, fc.sample_interval, out); });
  }
  // Last, so that a summary.json saying "complete" is never beside a missing file even inside the staging folder.
  folder.write("summary.json", [&](std::ostream& out) { out << j.dump(2) << "\n"; });
  folder.commit();
}

} // namespace railyard::sim
