// flows.csv, links.csv and the summary.json "network" object of the fluid backend. Numbers are printed in their
// shortest exact form (common/csv.hpp), so the same run writes the same bytes.
#include "railyard/scenario/fluid_outputs.hpp"

#include "railyard/common/csv.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <ostream>

namespace railyard::scenario {

using namespace railyard::sim; // the simulator this layer drives

namespace {

/// Nearest-rank percentile of sorted values (Hyndman and Fan definition 1).
double percentile(const std::vector<double>& sorted, double p)
{
  if (sorted.empty()) return 0;
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size() - 1, rank == 0 ? 0 : rank - 1)];
}

} // namespace

void write_flows_csv(const FluidReport& r, std::ostream& out)
{
  CsvWriter csv(out);
  csv.record("id", "src", "dst", "tag", "qp", "bytes", "start_s", "end_s", "arrival_s", "fct_s", "hops", "links");
  std::string path;
  for (const FlowRecord& f : r.flows) {
    path.clear();
    for (std::uint32_t h = 0; h < f.hops; ++h) {
      if (h) path += ' ';
      path += std::to_string(r.paths[f.path_offset + h]);
    }
    csv.record(f.id, f.src, f.dst, f.tag, f.qp, f.bytes, f.start, f.end, f.arrival, f.fct(), f.hops, path);
  }
}

void write_links_csv(const FluidReport& r, std::ostream& out)
{
  CsvWriter csv(out);
  csv.record("time_s", "interval_s", "link", "name", "kind", "capacity_Bps", "bytes", "utilisation", "max_queue_bytes",
             "ecn_marks", "pause_s", "max_flows");
  for (const LinkSample& s : r.links) {
    const LinkInfo& info = r.link_info[s.link];
    csv.record(s.time, s.interval, s.link, info.name, info.kind, info.capacity, s.bytes, s.utilisation, s.max_queue,
               s.marks, s.paused, s.max_flows);
  }
}

nlohmann::ordered_json write_network_outputs(const FluidReport& report, const FluidConfig& config,
                                             const std::map<std::string, std::string>& records, OutputDir& folder)
{
  nlohmann::ordered_json j = fluid_summary(report, config);
  j["records"] = records;
  if (config.record_flows) folder.write("flows.csv", [&](std::ostream& out) { write_flows_csv(report, out); });
  if (config.record_links) folder.write("links.csv", [&](std::ostream& out) { write_links_csv(report, out); });
  return j;
}

double span_of(const FluidReport& r)
{
  return r.stats.first_start >= 0 ? r.stats.last_end - r.stats.first_start : 0;
}

std::vector<std::size_t> hottest_links(const FluidReport& r, std::size_t n)
{
  const FluidStats& st = r.stats;
  std::vector<std::size_t> net;
  for (std::size_t l = 0; l < r.link_info.size(); ++l)
    if (r.link_info[l].kind != "nvlink" && r.link_info[l].kind != "pcie" && st.links[l].bytes > 0) net.push_back(l);
  // Most used first (bytes over capacity: the span is common to all); ties (symmetric fabrics) by link id, so the list
  // is the same from run to run.
  auto load = [&](std::size_t l) { return st.links[l].bytes / r.link_info[l].capacity; };
  std::sort(net.begin(), net.end(), [&](std::size_t a, std::size_t b) {
    const double ua = load(a), ub = load(b);
    return ua != ub ? ua > ub : a < b;
  });
  if (net.size() > n) net.resize(n);
  return net;
}

nlohmann::ordered_json fluid_summary(const FluidReport& r, const FluidConfig& c)
{
  nlohmann::ordered_json j;
  j["ecmp"] = to_string(c.ecmp);
  j["qps_per_connection"] = c.qps_per_connection;
  j["cc"] = to_string(c.cc);
  if (c.cc == CongestionControl::Dcqcn) {
    const auto& d = c.dcqcn;
    j["dcqcn"] = {{"preset", d.preset},
                  {"k_min_bytes", d.k_min.bytes()},
                  {"k_max_bytes", d.k_max.bytes()},
                  {"p_max", d.p_max},
                  {"cnp_interval_s", d.cnp_interval.seconds()},
                  {"g", d.g},
                  {"alpha_period_s", d.alpha_period.seconds()},
                  {"increase_timer_s", d.increase_timer.seconds()},
                  {"byte_counter_bytes", d.byte_counter.bytes()},
                  {"fast_recovery_steps", d.fast_recovery_steps},
                  {"rate_ai_Bps", d.rate_ai.bytes_per_sec()},
                  {"rate_hai_Bps", d.rate_hai.bytes_per_sec()}};
  }
  j["pfc"] = c.pfc.enabled ? nlohmann::ordered_json{{"xoff_bytes", c.pfc.xoff.bytes()},
                                                    {"xon_bytes", c.pfc.xon.bytes()},
                                                    {"headroom_bytes", c.pfc.headroom.bytes()},
                                                    {"priority", c.pfc.priority}}
                           : nlohmann::ordered_json(false);
  if (c.queues()) j["time_step_s"] = c.time_step.seconds();
  if (c.record_links) j["sample_interval_s"] = c.sample_interval.seconds();

  const FluidStats& st = r.stats;
  j["flows"] = st.flows;
  j["transfers"] = st.messages;
  if (!r.flows.empty()) {
    std::vector<double> fct;
    fct.reserve(r.flows.size());
    double sum = 0;
    for (const FlowRecord& f : r.flows) {
      fct.push_back(f.fct());
      sum += f.fct();
    }
    std::sort(fct.begin(), fct.end());
    j["fct_s"] = {{"mean", sum / static_cast<double>(fct.size())},
                  {"p50", percentile(fct, 0.50)},
                  {"p90", percentile(fct, 0.90)},
                  {"p99", percentile(fct, 0.99)},
                  {"p999", percentile(fct, 0.999)},
                  {"max", fct.back()}};
  }
  j["max_queue_bytes"] = st.max_queue;
  j["max_queue_link"] = st.max_queue_link >= 0 ? r.link_info[static_cast<std::size_t>(st.max_queue_link)].name : "";
  j["pause_time_s"] = st.pause_time;
  j["pause_events"] = st.pause_events;
  j["ecn_marks"] = st.ecn_marks;
  j["cnps"] = st.cnps;
  j["rate_decreases"] = st.rate_decreases;
  j["overflow_bytes"] = st.overflow_bytes;
  if (st.host_peak_load >= 0) j["host_link_peak_load"] = st.host_peak_load;

  // ECMP balance: per switch, its uplinks' bytes against an even split of what the switch sent up (what spraying
  // would give); max over switches of max / even, and the most flows one fabric link carried at once.
  struct Group {
    double total = 0, max = 0;
    int links = 0;
    std::uint32_t worst = 0;
  };
  std::map<std::uint32_t, Group> up;
  std::uint32_t max_flows = 0;
  std::int64_t max_flows_link = -1;
  for (std::size_t l = 0; l < r.link_info.size(); ++l) {
    const LinkInfo& info = r.link_info[l];
    const LinkTotals& t = st.links[l];
    if (info.from_switch && t.max_flows > max_flows) {
      max_flows = t.max_flows;
      max_flows_link = static_cast<std::int64_t>(l);
    }
    if (!info.from_switch || !info.up) continue;
    Group& g = up[info.from];
    g.total += t.bytes;
    g.links++;
    if (t.bytes > g.max) {
      g.max = t.bytes;
      g.worst = static_cast<std::uint32_t>(l);
    }
  }
  double worst_ratio = 0, ratio_sum = 0;
  int groups = 0;
  std::int64_t worst_link = -1;
  for (const auto& [v, g] : up) {
    if (g.total <= 0 || g.links < 2) continue;
    const double ratio = g.max / (g.total / g.links);
    ratio_sum += ratio;
    ++groups;
    if (ratio > worst_ratio) {
      worst_ratio = ratio;
      worst_link = g.worst;
    }
  }
  j["ecmp_balance"] = {
      {"switches", groups},
      {"max_uplink_over_even", groups ? worst_ratio : 0.0},
      {"mean_max_uplink_over_even", groups ? ratio_sum / groups : 0.0},
      {"worst_uplink", worst_link >= 0 ? r.link_info[static_cast<std::size_t>(worst_link)].name : ""},
      {"max_flows_on_a_fabric_link", max_flows},
      {"max_flows_link", max_flows_link >= 0 ? r.link_info[static_cast<std::size_t>(max_flows_link)].name : ""}};

  // The hottest network links (NIC ports and switch links; NVLink and PCIe are the node's): utilisation over the span
  // from the first transfer's start to the last flow's end, with their deepest queue, marks and pause time.
  const double span = span_of(r);
  if (span > 0) {
    auto util = [&](std::size_t l) { return st.links[l].bytes / (r.link_info[l].capacity * span); };
    nlohmann::ordered_json hot = nlohmann::ordered_json::array();
    for (std::size_t l : hottest_links(r, kHottestLinks)) {
      const LinkTotals& t = st.links[l];
      hot.push_back({{"name", r.link_info[l].name},
                     {"kind", r.link_info[l].kind},
                     {"utilisation", util(l)},
                     {"bytes", t.bytes},
                     {"max_queue_bytes", t.max_queue},
                     {"ecn_marks", t.marks},
                     {"pause_s", t.paused},
                     {"max_flows", t.max_flows}});
    }
    j["span_s"] = span;
    j["hottest_links"] = hot;
  }
  return j;
}

} // namespace railyard::scenario
