// railyard report (report.hpp): an output folder's files read into the page's data, and the page written around it.
#include "railyard/studies/report.hpp"

#include "report_assets.hpp"

#include "railyard/common/csv.hpp"
#include "railyard/common/error.hpp"
#include "railyard/common/input_file.hpp"
#include "railyard/common/output_dir.hpp"
#include "railyard/common/output_file.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace railyard::studies {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

/// The page's first line: what is_report_page looks for before a page is replaced.
constexpr std::string_view kPageMarker = "<!DOCTYPE html><!-- railyard report page -->";
constexpr const char* kVersion = "railyard 0.1.0";
/// The largest table, links.csv or trace.json read. A results table of the largest sweep (100,000 points) is tens of
/// MiB; beyond this the page would not open in a browser anyway.
constexpr std::uint64_t kMaxDataBytes = 256ULL << 20;
/// The heatmap's rows (the most used network links, as notebooks/link_heatmap.py draws them) and most columns
/// (sampling intervals beyond this are averaged in bins of whole intervals).
constexpr std::size_t kHeatmapLinks = 32;
constexpr std::size_t kHeatmapColumns = 600;

struct Table {
  std::string file; ///< the name inside the folder
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  [[nodiscard]] int column(std::string_view name) const
  {
    const auto it = std::find(header.begin(), header.end(), name);
    return it == header.end() ? -1 : static_cast<int>(it - header.begin());
  }
};

/// A CSV file of the folder: the header and every row as text. A row whose width differs from the header's is
/// refused: the table was cut short or edited, and its cells would land under the wrong columns.
Table read_table(const fs::path& dir, const std::string& name)
{
  const fs::path path = dir / name;
  const std::string text = read_input_file(path.string(), kMaxDataBytes);
  Table t;
  t.file = name;
  bool first = true;
  for (CsvRecord& r : parse_csv(text, path.string())) {
    if (first) {
      t.header = std::move(r.fields);
      first = false;
      continue;
    }
    if (r.fields.size() != t.header.size())
      throw InputError({path.string(), r.line, ""},
                       fmt::format("the row has {} fields and the header {}", r.fields.size(), t.header.size()),
                       "the file was cut short or edited: write it again with the command that made it");
    t.rows.push_back(std::move(r.fields));
  }
  if (t.header.empty())
    throw InputError({path.string(), 1, ""}, "the file is empty (no header)",
                     "write it again with the command that made it");
  return t;
}

Json table_json(const Table& t)
{
  return Json{{"file", t.file}, {"header", t.header}, {"rows", t.rows}};
}

Json read_json(const fs::path& path)
{
  Json j = Json::parse(read_input_file(path.string(), kMaxDataBytes), nullptr, false);
  if (j.is_discarded() || !j.is_object())
    throw InputError({path.string(), 0, ""}, "not a JSON object (cut short or edited?)",
                     "write it again with the command that made it");
  return j;
}

/// A value of summary.json as the page shows it: a number as the file has it (nlohmann's shortest round trip, which
/// is how the file was written), text as it is.
std::string text_of(const Json& v)
{
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return "";
  return v.dump();
}

/// The value at a dotted path (lists by index: gpu_memory.0.peak_bytes), or nullptr.
const Json* at_path(const Json& root, std::string_view path)
{
  const Json* node = &root;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t dot = std::min(path.find('.', start), path.size());
    const std::string part(path.substr(start, dot - start));
    if (node->is_object()) {
      const auto it = node->find(part);
      if (it == node->end()) return nullptr;
      node = &*it;
    } else if (node->is_array()) {
      std::size_t i = 0;
      if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) return nullptr;
      i = std::stoul(part);
      if (i >= node->size()) return nullptr;
      node = &(*node)[i];
    } else {
      return nullptr;
    }
    start = dot + 1;
  }
  return node;
}

/// Rows of (what, summary.json key, value) for the keys present and not null.
Json key_numbers(const Json& summary, const std::vector<std::pair<std::string, std::string>>& keys)
{
  Json rows = Json::array();
  for (const auto& [label, key] : keys)
    if (const Json* v = at_path(summary, key); v != nullptr && !v->is_null() && !v->is_structured())
      rows.push_back({label, key, text_of(*v)});
  return rows;
}

bool is_file(const fs::path& p)
{
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

/// trace.json (Chrome trace events): per stream (a thread of a traced rank: compute, tp async, dp grads, ...) the
/// ranks that have it, its events, and the time it is busy (the union of its events' spans) averaged over those ranks.
Json timeline_json(const fs::path& dir, double step_s)
{
  const fs::path path = dir / "trace.json";
  std::error_code ec;
  if (!is_file(path)) return Json{{"note", "no trace.json in the folder"}};
  if (fs::file_size(path, ec) > kMaxDataBytes)
    return Json{{"note", fmt::format("trace.json is larger than {} MiB; the timeline summary was left out (trace fewer "
                                     "ranks: workload.replay.trace_ranks)",
                                     kMaxDataBytes >> 20)}};
  const Json trace = read_json(path);
  const auto events = trace.find("traceEvents");
  if (events == trace.end() || !events->is_array())
    throw InputError({path.string(), 0, "traceEvents"}, "no list of trace events", "write it again with railyard run");
  std::map<std::pair<long long, long long>, std::string> names;
  std::map<std::pair<long long, long long>, std::vector<std::pair<double, double>>> spans;
  for (const Json& e : *events) {
    if (!e.is_object()) continue;
    const std::string ph = e.value("ph", "");
    const auto key = std::make_pair(e.value("pid", 0LL), e.value("tid", 0LL));
    if (ph == "M" && e.value("name", "") == "thread_name" && e.contains("args"))
      names[key] = e["args"].value("name", "");
    else if (ph == "X") {
      const double ts = e.value("ts", 0.0), dur = e.value("dur", 0.0);
      spans[key].emplace_back(ts, ts + dur);
    }
  }
  struct Stream {
    long long first_tid = 0;
    std::set<long long> ranks;
    std::size_t events = 0;
    double busy_us = 0;
  };
  std::map<std::string, Stream> streams;
  std::set<long long> ranks;
  for (auto& [key, list] : spans) {
    std::sort(list.begin(), list.end());
    double busy = 0, open = list.front().first, close = list.front().second;
    for (const auto& [a, b] : list) {
      if (a > close) {
        busy += close - open;
        open = a;
        close = b;
      } else {
        close = std::max(close, b);
      }
    }
    busy += close - open;
    const auto n = names.find(key);
    const std::string name = n != names.end() ? n->second : fmt::format("thread {}", key.second);
    auto [it, fresh] = streams.try_emplace(name);
    if (fresh) it->second.first_tid = key.second;
    it->second.first_tid = std::min(it->second.first_tid, key.second);
    it->second.ranks.insert(key.first);
    it->second.events += list.size();
    it->second.busy_us += busy;
    ranks.insert(key.first);
  }
  std::vector<std::pair<std::string, const Stream*>> order;
  for (const auto& [name, s] : streams)
    order.emplace_back(name, &s);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second->first_tid != b.second->first_tid ? a.second->first_tid < b.second->first_tid : a.first < b.first;
  });
  Json rows = Json::array();
  for (const auto& [name, s] : order) {
    const double mean_s = s->busy_us / static_cast<double>(s->ranks.size()) / 1e6;
    rows.push_back({name, std::to_string(s->ranks.size()), std::to_string(s->events), shortest_number(mean_s),
                    step_s > 0 ? shortest_number(mean_s / step_s) : ""});
  }
  return Json{{"file", "trace.json"},
              {"traced_ranks", ranks.size()},
              {"header", {"stream", "ranks", "events", "busy_s_mean_over_ranks", "busy_fraction_of_step"}},
              {"rows", rows}};
}

/// summary.json's network.hottest_links as a table (one row per link, the fields as columns).
Json hottest_links_json(const Json& summary)
{
  const Json* hot = at_path(summary, "network.hottest_links");
  if (hot == nullptr || !hot->is_array() || hot->empty()) return nullptr;
  std::vector<std::string> header;
  for (const auto& [k, v] : (*hot)[0].items())
    header.push_back(k);
  Json rows = Json::array();
  for (const Json& link : *hot) {
    Json row = Json::array();
    for (const auto& k : header)
      row.push_back(link.contains(k) ? text_of(link[k]) : "");
    rows.push_back(row);
  }
  return Json{{"file", "summary.json"}, {"key", "network.hottest_links"}, {"header", header}, {"rows", rows}};
}

/// links.csv as a heatmap: the kHeatmapLinks most used network links (bytes over capacity; NVLink and PCIe are the
/// node's), one column per sampling interval (sample k covers [k x interval, (k + 1) x interval)), idle intervals 0.
Json heatmap_json(const fs::path& dir, const Json& summary)
{
  if (!is_file(dir / "links.csv")) return nullptr;
  std::error_code ec;
  if (fs::file_size(dir / "links.csv", ec) > kMaxDataBytes)
    return Json{{"note", fmt::format("links.csv is larger than {} MiB; the heatmap was left out (notebooks/"
                                     "link_heatmap.py draws it)",
                                     kMaxDataBytes >> 20)}};
  const Table t = read_table(dir, "links.csv");
  const int c_time = t.column("time_s"), c_interval = t.column("interval_s"), c_name = t.column("name"),
            c_kind = t.column("kind"), c_cap = t.column("capacity_Bps"), c_bytes = t.column("bytes"),
            c_util = t.column("utilisation");
  for (const int c : {c_time, c_interval, c_name, c_kind, c_cap, c_bytes, c_util})
    if (c < 0)
      throw InputError({(dir / "links.csv").string(), 1, ""},
                       "the header lacks one of time_s, interval_s, name, kind, capacity_Bps, bytes, utilisation",
                       "write it again with railyard run");
  auto num = [&](const std::vector<std::string>& row, int c, std::size_t line) {
    try {
      return std::stod(row[static_cast<std::size_t>(c)]);
    } catch (const std::exception&) {
      throw InputError({(dir / "links.csv").string(), static_cast<int>(line), t.header[static_cast<std::size_t>(c)]},
                       fmt::format("'{}' is not a number", row[static_cast<std::size_t>(c)]),
                       "write it again with railyard run");
    }
  };
  double interval = 0;
  if (const Json* i = at_path(summary, "network.sample_interval_s"); i != nullptr && i->is_number())
    interval = i->get<double>();
  if (interval <= 0) { // outputs older than network.sample_interval_s: the most common interval
    std::map<double, std::size_t> counts;
    for (std::size_t r = 0; r < t.rows.size(); ++r)
      ++counts[num(t.rows[r], c_interval, r + 2)];
    std::size_t best = 0;
    for (const auto& [v, n] : counts)
      if (n >= best) {
        best = n;
        interval = v;
      }
  }
  if (interval <= 0) return nullptr;
  struct Link {
    std::string kind;
    double capacity = 0, bytes = 0;
    std::map<long long, double> util;
  };
  std::map<std::string, Link> links;
  for (std::size_t r = 0; r < t.rows.size(); ++r) {
    const auto& row = t.rows[r];
    const std::string& kind = row[static_cast<std::size_t>(c_kind)];
    if (kind == "nvlink" || kind == "pcie") continue;
    Link& l = links[row[static_cast<std::size_t>(c_name)]];
    l.kind = kind;
    l.capacity = num(row, c_cap, r + 2);
    l.bytes += num(row, c_bytes, r + 2);
    // Samples are due on the grid k x interval, each up to one queue step late (docs/congestion.md).
    const auto k = static_cast<long long>(std::floor(num(row, c_time, r + 2) / interval + 1e-9));
    l.util[k] = num(row, c_util, r + 2);
  }
  std::vector<std::string> names;
  for (const auto& [name, l] : links)
    if (!l.util.empty() && l.capacity > 0) names.push_back(name);
  if (names.empty()) return nullptr;
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    const double ua = links[a].bytes / links[a].capacity, ub = links[b].bytes / links[b].capacity;
    return ua != ub ? ua > ub : a < b;
  });
  const std::size_t total = names.size();
  if (names.size() > kHeatmapLinks) names.resize(kHeatmapLinks);
  long long first = links[names[0]].util.begin()->first, last = first;
  for (const auto& n : names) {
    first = std::min(first, links[n].util.begin()->first);
    last = std::max(last, links[n].util.rbegin()->first);
  }
  const auto span = static_cast<std::size_t>(last - first + 1);
  const std::size_t bin = (span + kHeatmapColumns - 1) / kHeatmapColumns;
  const std::size_t columns = (span + bin - 1) / bin;
  Json times = Json::array(), values = Json::array();
  for (std::size_t c = 0; c < columns; ++c)
    times.push_back(static_cast<double>(first + static_cast<long long>(c * bin)) * interval);
  for (std::size_t y = 0; y < names.size(); ++y) {
    std::vector<double> sum(columns, 0.0);
    for (const auto& [k, u] : links[names[y]].util)
      sum[static_cast<std::size_t>(k - first) / bin] += u;
    for (std::size_t c = 0; c < columns; ++c) {
      const std::size_t width = std::min(bin, span - c * bin); // the last bin may be short
      values.push_back({c, y, sum[c] / static_cast<double>(width)});
    }
  }
  Json kinds = Json::array();
  for (const auto& n : names)
    kinds.push_back(links[n].kind);
  return Json{{"file", "links.csv"},    {"interval_s", interval * static_cast<double>(bin)},
              {"links", names},         {"kinds", kinds},
              {"network_links", total}, {"times_s", times},
              {"values", values},       {"binned_intervals", bin}};
}

std::vector<std::pair<std::string, std::string>> common_facts()
{
  return {{"scenario", "scenario"},
          {"scenario file", "scenario_file"},
          {"Railyard", "railyard_version"},
          {"GPUs", "gpus"},
          {"cluster", "cluster_kind"},
          {"backend", "backend"},
          {"profile", "profile"},
          {"communication", "communication"},
          {"workload", "workload.source"},
          {"seed", "seed"},
          {"ECMP", "network.ecmp"},
          {"QPs per connection", "network.qps_per_connection"},
          {"congestion control", "network.cc"}};
}

std::vector<std::pair<std::string, std::string>> network_numbers()
{
  return {{"network span (s)", "network.span_s"},
          {"deepest queue (bytes)", "network.max_queue_bytes"},
          {"deepest queue's link", "network.max_queue_link"},
          {"pause time (s)", "network.pause_time_s"},
          {"ECN marks", "network.ecn_marks"},
          {"CNPs", "network.cnps"},
          {"host link peak load", "network.host_link_peak_load"},
          {"ECMP: max uplink over even split", "network.ecmp_balance.max_uplink_over_even"}};
}

Json run_data(const fs::path& dir)
{
  const Json summary = read_json(dir / "summary.json");
  Json d;
  d["title"] = fmt::format("railyard run: {}", text_of(summary.value("scenario", Json("?"))));
  d["facts"] = key_numbers(summary, common_facts());
  std::vector<std::pair<std::string, std::string>> keys = {
      {"step time (s)", "step_time_s"},
      {"MFU", "mfu"},
      {"HFU", "hfu"},
      {"model TFLOP/s per GPU", "model_tflops_per_gpu"},
      {"hardware TFLOP/s per GPU", "hardware_tflops_per_gpu"},
      {"model FLOPs per step", "model_flops"},
      {"peak FLOP/s per GPU", "peak_flops_per_gpu"},
      {"peak GPU memory (bytes)", "gpu_memory.0.peak_bytes"},
      {"GPU memory (bytes)", "gpu_memory.0.capacity_bytes"},
      {"host busy, fraction of step", "framework.host_busy_fraction_of_step"}};
  for (auto& k : network_numbers())
    keys.push_back(k);
  d["key_numbers"] = key_numbers(summary, keys);

  const Json* step = at_path(summary, "step_time_s");
  const double step_s = step != nullptr && step->is_number() ? step->get<double>() : 0;
  // The step's mean breakdown over ranks: compute, exposed communication by parallelism, bubble, idle.
  Json parts = Json::array();
  if (const Json* b = at_path(summary, "breakdown_mean_over_ranks"); b != nullptr && b->is_object()) {
    auto part = [&](const std::string& name, const std::string& key) {
      const Json* v = at_path(summary, "breakdown_mean_over_ranks." + key);
      if (v == nullptr || !v->is_number()) return;
      parts.push_back({name, "breakdown_mean_over_ranks." + key, text_of(*v),
                       step_s > 0 ? shortest_number(v->get<double>() / step_s) : ""});
    };
    part("compute", "compute_s");
    if (const auto e = b->find("exposed_communication_s"); e != b->end() && e->is_object())
      for (const auto& [k, v] : e->items())
        part("exposed " + k, "exposed_communication_s." + k);
    part("bubble", "bubble_s");
    part("idle", "idle_s");
  }
  d["breakdown"] = parts;
  const Table per_rank = read_table(dir, "breakdown.csv");
  d["tables"]["breakdown.csv"] = table_json(per_rank);
  d["timeline"] = timeline_json(dir, step_s);
  d["hottest_links"] = hottest_links_json(summary);
  d["heatmap"] = heatmap_json(dir, summary);
  if (is_file(dir / "congestion.csv")) d["tables"]["congestion.csv"] = table_json(read_table(dir, "congestion.csv"));
  if (const Json* jobs = at_path(summary, "jobs"); jobs != nullptr && jobs->is_array() && !jobs->empty()) {
    Json rows = Json::array();
    const std::vector<std::string> header = {"name",     "gpus", "placement", "step_time_s", "alone_step_time_s",
                                             "slowdown", "mfu"};
    for (const Json& job : *jobs) {
      Json row = Json::array();
      for (const auto& h : header)
        row.push_back(job.contains(h) ? text_of(job[h]) : "");
      rows.push_back(row);
    }
    d["jobs"] = Json{{"file", "summary.json"}, {"key", "jobs"}, {"header", header}, {"rows", rows}};
  }
  return d;
}

Json collectives_data(const fs::path& dir)
{
  const Json summary = read_json(dir / "summary.json");
  Json d;
  d["title"] = fmt::format("railyard run: {}", text_of(summary.value("scenario", Json("?"))));
  d["facts"] = key_numbers(summary, common_facts());
  std::vector<std::pair<std::string, std::string>> keys = {{"simulated time (s)", "simulated_time_s"}};
  for (auto& k : network_numbers())
    keys.push_back(k);
  d["key_numbers"] = key_numbers(summary, keys);
  d["tables"]["collectives.csv"] = table_json(read_table(dir, "collectives.csv"));
  d["hottest_links"] = hottest_links_json(summary);
  d["heatmap"] = heatmap_json(dir, summary);
  return d;
}

/// The sweep's dimensions (an axis's key, or a zip's keys) and derived keys, from the sweep file its marker names.
/// Null when the file is gone or its keys are not the table's (it was edited since): the page then takes every dotted
/// column as an axis of its own, as notebooks/railyard_results.py does.
Json sweep_axes(const fs::path& dir, const Table& results, std::string& note)
{
  std::string file;
  try {
    const Json marker = Json::parse(read_input_file((dir / ".railyard-sweep").string()), nullptr, false);
    if (marker.is_object()) file = marker.value("sweep_file", "");
  } catch (const InputError&) {
  }
  Json dims = Json::array(), derived = Json::array();
  bool ok = !file.empty();
  if (ok) {
    try {
      const YAML::Node root = YAML::LoadFile(file);
      for (const YAML::Node& axis : root["axes"]) {
        Json keys = Json::array();
        if (axis["zip"])
          for (const YAML::Node& z : axis["zip"])
            keys.push_back(z["key"].as<std::string>());
        else
          keys.push_back(axis["key"].as<std::string>());
        dims.push_back(keys);
      }
      if (root["derived"])
        for (const YAML::Node& k : root["derived"])
          derived.push_back(k["key"].as<std::string>());
    } catch (const std::exception&) {
      ok = false;
    }
  }
  auto in_table = [&](const Json& keys) {
    for (const auto& k : keys)
      if (results.column(k.get<std::string>()) < 0) return false;
    return true;
  };
  if (ok) {
    for (const Json& d : dims)
      ok = ok && in_table(d);
    ok = ok && in_table(derived);
  }
  if (ok) return Json{{"file", file}, {"dimensions", dims}, {"derived", derived}};
  note = file.empty() ? "the sweep's marker names no sweep file"
                      : fmt::format("the sweep file {} could not be read or no longer matches the table", file);
  dims = Json::array();
  for (const auto& h : results.header)
    if (h.find('.') != std::string::npos) dims.push_back(Json::array({h}));
  return Json{{"file", file}, {"dimensions", dims}, {"derived", Json::array()}};
}

Json sweep_data(const fs::path& dir)
{
  const Table results = read_table(dir, "results.csv");
  for (const char* c : {"point", "status"})
    if (results.column(c) < 0)
      throw InputError({(dir / "results.csv").string(), 1, ""}, fmt::format("the header has no '{}' column", c),
                       "give the folder of a railyard sweep (its results.csv)");
  Json d;
  d["title"] = fmt::format("railyard sweep: {}", dir.filename().string());
  d["tables"]["results.csv"] = table_json(results);
  std::string note;
  d["axes"] = sweep_axes(dir, results, note);
  if (!note.empty()) d["axes_note"] = note;
  return d;
}

Json search_data(const fs::path& dir)
{
  const Table search = read_table(dir, "search.csv");
  for (const char* c : {"rank", "status", "gpus", "dp", "step_time_s", "pareto", "reason"})
    if (search.column(c) < 0)
      throw InputError({(dir / "search.csv").string(), 1, ""}, fmt::format("the header has no '{}' column", c),
                       "give the folder of a railyard search (its search.csv)");
  Json d;
  d["title"] = fmt::format("railyard search: {}", dir.filename().string());
  d["tables"]["search.csv"] = table_json(search);
  // The searched keys sit between gpus and dp (studies/README.md).
  Json keys = Json::array();
  for (int c = search.column("gpus") + 1; c <= search.column("dp"); ++c)
    keys.push_back(search.header[static_cast<std::size_t>(c)]);
  d["layout_keys"] = keys;
  return d;
}

Json plan_data(const fs::path& dir)
{
  const Table plan = read_table(dir, "plan.csv");
  const Table bom = read_table(dir, "bom.csv");
  if (plan.column("cluster") != 0)
    throw InputError({(dir / "plan.csv").string(), 1, ""}, "the first column is not 'cluster'",
                     "give the folder of a railyard plan (its plan.csv)");
  if (bom.column("cluster") < 0)
    throw InputError({(dir / "bom.csv").string(), 1, ""}, "the header has no 'cluster' column",
                     "give the folder of a railyard plan (its bom.csv)");
  Json d;
  std::string name = dir.filename().string();
  if (is_file(dir / "plan.json")) {
    const Json p = read_json(dir / "plan.json");
    for (const char* key : {"plan", "name"}) // the plan's name, else its file
      if (p.contains(key) && p[key].is_string()) name = p[key].get<std::string>();
    Json scenarios = Json::object();
    if (p.contains("clusters") && p["clusters"].is_array())
      for (const Json& c : p["clusters"])
        if (c.is_object() && c.contains("name") && c.contains("scenario"))
          scenarios[text_of(c["name"])] = text_of(c["scenario"]);
    d["scenarios"] = scenarios;
  }
  d["title"] = fmt::format("railyard plan: {}", name);
  d["tables"]["plan.csv"] = table_json(plan);
  d["tables"]["bom.csv"] = table_json(bom);
  return d;
}

/// `text` safe inside a <script> element: JSON escapes '<' as \u003c, so no "</script" or "<!--" can appear.
std::string script_safe_json(const Json& data)
{
  const std::string text = data.dump(-1, ' ', false, Json::error_handler_t::replace);
  std::string out;
  out.reserve(text.size() + 64);
  for (const char c : text) {
    if (c == '<')
      out += "\\u003c";
    else
      out += c;
  }
  return out;
}

/// Text inlined in a <script> or <style> element must not close it; the embedded files are checked here rather than
/// trusted (a library update could bring the sequence in).
std::string_view inline_checked(std::string_view text, std::string_view element, std::string_view what)
{
  std::string lower(text);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.find(fmt::format("</{}", element)) != std::string::npos)
    throw std::logic_error(fmt::format("{} holds '</{}' and cannot be inlined in the page", what, element));
  return text;
}

/// The note inside an HTML comment: "--" sequences kept from closing it.
std::string comment_safe(std::string_view text)
{
  std::string out(text);
  for (std::size_t at = out.find("--"); at != std::string::npos; at = out.find("--", at + 2))
    out.replace(at, 2, "- -");
  return out;
}

std::string html_escape(std::string_view text)
{
  std::string out;
  for (const char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

/// Adds `name` to the list of files of a railyard run folder's marker (output_dir.hpp), so that a later run into the
/// folder takes the page for its own (and replaces it with the rest) instead of refusing a file it did not write.
void list_in_run_marker(const fs::path& dir, const std::string& name)
{
  const fs::path marker = dir / OutputDir::kMarker;
  if (!is_file(marker)) return;
  Json j = Json::parse(read_input_file(marker.string()), nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("files") || !j["files"].is_array()) return;
  for (const Json& f : j["files"])
    if (f == name) return;
  j["files"].push_back(name);
  write_file_replacing(marker, [&](std::ostream& o) { o << j.dump(2) << "\n"; });
}

} // namespace

std::string_view to_string(ReportKind kind)
{
  switch (kind) {
  case ReportKind::Run:
    return "run";
  case ReportKind::Collectives:
    return "collectives";
  case ReportKind::Sweep:
    return "sweep";
  case ReportKind::Search:
    return "search";
  case ReportKind::Plan:
    return "plan";
  }
  return "?";
}

ReportKind detect_report_kind(const fs::path& dir)
{
  const std::string where = dir.string();
  const std::string kinds =
      "railyard report reads a folder holding search.csv (railyard search), results.csv (railyard sweep), plan.csv "
      "and bom.csv (railyard plan), or summary.json with breakdown.csv (railyard run of a training step) or with "
      "collectives.csv (railyard run of collectives)";
  const std::string fix = "give the folder one of those commands wrote (its --out or -o)";
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw InputError({where, 0, ""}, "no such folder; " + kinds, fix);
  if (!fs::is_directory(dir, ec)) throw InputError({where, 0, ""}, "not a folder; " + kinds, fix);
  auto has = [&](const char* name) { return is_file(dir / name); };
  if (has("search.csv")) return ReportKind::Search;
  if (has("results.csv")) return ReportKind::Sweep;
  if (has("plan.csv") && has("bom.csv")) return ReportKind::Plan;
  if (has("summary.json") && has("breakdown.csv")) return ReportKind::Run;
  if (has("summary.json") && has("collectives.csv")) return ReportKind::Collectives;
  if (has(".railyard-sweep"))
    throw InputError({where, 0, ""},
                     "a sweep's or search's folder without its table (results.csv, search.csv): the study has not "
                     "finished, or its Slurm gather job has not run",
                     "wait for it, or write the table from the points that finished: railyard sweep SWEEP.yaml --out "
                     "DIR --gather");
  if (has("plan.json") || has("plan.csv") || has("bom.csv"))
    throw InputError({where, 0, ""}, "a plan's folder needs both plan.csv and bom.csv; " + kinds,
                     "write the plan again: railyard plan PLAN.yaml -o DIR");
  if (has("summary.json"))
    throw InputError({where, 0, ""},
                     "summary.json without breakdown.csv or collectives.csv (a railyard run --memory-only simulates "
                     "nothing to report); " +
                         kinds,
                     fix);
  const bool empty = fs::is_empty(dir, ec);
  throw InputError({where, 0, ""}, (empty ? "the folder is empty; " : "none of the files expected is there; ") + kinds,
                   fix);
}

nlohmann::ordered_json report_data(const fs::path& dir, ReportKind kind)
{
  Json d;
  switch (kind) {
  case ReportKind::Run:
    d = run_data(dir);
    break;
  case ReportKind::Collectives:
    d = collectives_data(dir);
    break;
  case ReportKind::Sweep:
    d = sweep_data(dir);
    break;
  case ReportKind::Search:
    d = search_data(dir);
    break;
  case ReportKind::Plan:
    d = plan_data(dir);
    break;
  }
  Json page;
  page["kind"] = to_string(kind);
  page["folder"] = fs::absolute(dir).lexically_normal().string();
  page["generated_by"] = kVersion;
  page["chart_library"] = report_chart_library();
  for (auto& [k, v] : d.items())
    page[k] = v;
  return page;
}

std::string_view report_chart_library()
{
  static const std::string name = fmt::format("Apache ECharts {} (npm package {})",
                                              report_assets::chart_library_version, report_assets::chart_library_name);
  return name;
}

void write_report_html(const nlohmann::ordered_json& data, std::ostream& out)
{
  const std::string title = data.value("title", "railyard report");
  out << kPageMarker << "\n"
      << "<!-- Written by " << kVersion << " (railyard report) from " << comment_safe(data.value("folder", ""))
      << ". One file: the data, the chart library and the page's script are inlined; it needs no network. -->\n"
      << "<!-- Third-party software inlined in this page:\n"
      << comment_safe(report_assets::notice) << "\n-->\n"
      << "<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      << "<meta name=\"generator\" content=\"" << kVersion << " report\">\n"
      << "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      << "<title>" << html_escape(title) << "</title>\n"
      << "<style>\n"
      << inline_checked(report_assets::page_style, "style", "studies/report/report.css") << "\n</style>\n"
      << "<script type=\"application/json\" id=\"railyard-data\">" << script_safe_json(data) << "</script>\n"
      << "<script>\n"
      << inline_checked(report_assets::chart_library, "script", "the chart library") << "\n</script>\n"
      << "</head><body>\n<main id=\"page\"><h1>" << html_escape(title) << "</h1></main>\n"
      << "<script>\n"
      << inline_checked(report_assets::page_script, "script", "studies/report/report.js") << "\n</script>\n"
      << "</body></html>\n";
}

bool is_report_page(const fs::path& file)
{
  std::ifstream in(file, std::ios::binary);
  std::string head(kPageMarker.size(), '\0');
  if (!in.read(head.data(), static_cast<std::streamsize>(head.size()))) return false;
  return head == kPageMarker;
}

ReportOutcome write_report(const fs::path& dir, const fs::path& out)
{
  ReportOutcome r;
  r.kind = detect_report_kind(dir);
  r.file = out.empty() ? dir / kReportFileName : out;
  std::error_code ec;
  const fs::file_status st = fs::status(r.file, ec);
  if (fs::exists(st)) {
    if (fs::is_directory(st))
      throw InputError({r.file.string(), 0, "-o"}, "a folder of that name is in the way",
                       "choose another file with -o");
    if (!fs::is_regular_file(st) || !is_report_page(r.file))
      throw InputError({r.file.string(), 0, "-o"},
                       "the file exists and is not a page railyard report wrote; a report never replaces a file it "
                       "did not write",
                       "choose another file with -o, or remove this one");
  }
  const Json data = report_data(dir, r.kind);
  write_file_replacing(r.file, [&](std::ostream& o) { write_report_html(data, o); });
  // A page inside a run's folder is listed among the run's files (a sweep's or search's folder has no such list).
  if (fs::equivalent(fs::absolute(r.file).parent_path(), fs::absolute(dir), ec))
    list_in_run_marker(dir, r.file.filename().string());
  return r;
}

} // namespace railyard::studies
