// railyard plan: the plan file, each cluster's bill of materials and simulated step, and the side-by-side table of
// time, energy and cost to train.
#include "railyard/studies/plan.hpp"

#include "railyard/common/csv.hpp"
#include "railyard/common/output_file.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <set>

namespace railyard::studies {
namespace fs = std::filesystem;

namespace {

constexpr double kSecondsPerYear = 365.25 * 86400;

bool good_name(const std::string& s)
{
  if (s.empty() || s.size() > 64 || s == "." || s == "..") return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.')) return false;
  return true;
}

std::optional<double> positive(const YamlNode& n, const char* what)
{
  const double v = n.as_double();
  if (!std::isfinite(v) || v <= 0)
    n.fail(fmt::format("{} must be a number greater than zero (got {})", what, v), "give a positive number");
  return v;
}

ClusterParts read_parts(const std::optional<YamlNode>& p, const InputLocation& cluster_where)
{
  ClusterParts parts;
  parts.where = cluster_where;
  if (!p) return parts;
  parts.where = p->where();
  p->expect_keys({"gpu", "host", "switch", "transceiver_short", "transceiver_long", "dac", "fiber", "nodes_per_rack",
                  "merge_spines"});
  parts.gpu = p->string_or("gpu", parts.gpu);
  parts.host = p->string_or("host", parts.host);
  parts.transceiver_short = p->string_or("transceiver_short", parts.transceiver_short);
  parts.transceiver_long = p->string_or("transceiver_long", parts.transceiver_long);
  parts.dac = p->string_or("dac", parts.dac);
  parts.fiber = p->string_or("fiber", parts.fiber);
  parts.nodes_per_rack = static_cast<int>(p->int_in("nodes_per_rack", 1, 1024, parts.nodes_per_rack));
  parts.merge_spines = p->bool_or("merge_spines", parts.merge_spines);
  if (auto s = p->get("switch")) {
    if (s->is_scalar()) {
      parts.switches["*"] = s->as_string();
    } else if (s->is_map()) {
      s->expect_keys({"leaf", "spine", "agg", "core"});
      for (const std::string& tier : s->keys())
        parts.switches[tier] = s->at(tier).as_string();
    } else {
      s->fail("switch must name a part, or map tiers to parts",
              "write switch: quantum2_qm9700 or switch: {leaf: ..., spine: ...}");
    }
  }
  return parts;
}

/// The point's scenario (the cluster's scenario with its `set:` keys) as YAML.
YAML::Node point_yaml(const SweepSpec& s)
{
  const std::vector<SweepPoint> points = expand_sweep(s);
  if (points.empty() || !points.front().invalid.empty())
    throw InputError({s.file, 0, "clusters"}, points.empty() ? "the cluster has no scenario" : points.front().invalid,
                     "fix the cluster's set: keys");
  return YAML::Load(points.front().yaml);
}

/// The cluster of a scenario as bought: without its failures (parts that are down are still bought).
topo::Topology cluster_as_bought(const YamlNode& scenario)
{
  const YamlNode c = scenario.at("cluster");
  topo::ClusterSpec spec = topo::parse_cluster(c);
  spec.failures = {};
  return topo::build_topology(spec, c.where());
}

/// A plan cluster's scenario as bought. Messages name the scenario file and its lines when no `set:` key changed it.
topo::Topology cluster_as_bought(const PlanCluster& pc, const YAML::Node& scenario)
{
  return cluster_as_bought(
      pc.scenario.axes.empty()
          ? YamlNode::load_file(pc.scenario.base_file)
          : YamlNode::load_string(YAML::Dump(scenario), pc.scenario.base_file + " with the plan's set: keys"));
}

/// IT power at nameplate x the share drawn while training x PUE.
double facility_power_w(const Bom& bom, const Facility& fac)
{
  return bom.it_power_w * fac.power_fraction * fac.pue;
}

nlohmann::ordered_json opt_json(const std::optional<double>& v)
{
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
}

std::optional<double> generated_tokens_per_step(const YAML::Node& scenario)
{
  try {
    const YAML::Node w = scenario["workload"];
    if (!w || !w["generator"] || w["generator"].as<std::string>() != "megatron") return std::nullopt;
    const double batch = w["training"]["global_batch"].as<double>();
    const double seq = w["model"]["seq_length"].as<double>();
    if (batch > 0 && seq > 0) return batch * seq;
  } catch (const YAML::Exception&) {
  }
  return std::nullopt;
}

std::string opt_number(const std::optional<double>& v)
{
  return v ? shortest_number(*v) : std::string();
}

std::string joined(const std::vector<std::string>& v)
{
  std::string s;
  for (const auto& x : v)
    s += (s.empty() ? "" : " ") + x;
  return s;
}

/// The catalogue a study file names (`catalogue:`, relative to it) laid over the built-in one.
Catalogue study_catalogue(const YamlNode& root, const std::string& path)
{
  Catalogue c = builtin_catalogue();
  if (auto f = root.get("catalogue")) {
    const fs::path file = fs::path(path).parent_path() / f->as_string();
    std::error_code ec;
    if (!fs::is_regular_file(file, ec))
      f->fail(fmt::format("the catalogue file {} does not exist", file.string()),
              "name a catalogue YAML file relative to this file (data/catalogue/parts.yaml shows the format)");
    c = overlay_catalogue(c, file.string());
  }
  return c;
}

double usd_per_gpu_hour(const Bom& bom, const Facility& fac, double depreciation_years)
{
  return (bom.capex_usd / (depreciation_years * kSecondsPerYear / 3600) +
          facility_power_w(bom, fac) / 1000 * fac.electricity_usd_per_kwh) /
         static_cast<double>(bom.gpus);
}

} // namespace

std::shared_ptr<const CostSpec> read_cost_spec(const YamlNode& root, const std::string& file)
{
  const auto parts = root.get("parts");
  if (!parts) {
    for (const char* k : {"catalogue", "depreciation_years"})
      if (auto v = root.get(k))
        v->fail(fmt::format("{} prices the points, which needs parts:", k),
                "give parts: (at least {}) or leave it out");
    return nullptr;
  }
  auto c = std::make_shared<CostSpec>();
  c->catalogue = study_catalogue(root, file);
  c->parts = read_parts(parts, parts->where());
  if (auto d = root.get("depreciation_years")) c->depreciation_years = *positive(*d, "depreciation_years");
  return c;
}

std::vector<std::pair<std::string, std::string>> cost_metrics(const CostSpec& cost, const std::string& scenario_yaml,
                                                              const std::string& name)
{
  const Bom bom =
      bill_of_materials(cluster_as_bought(YamlNode::load_string(scenario_yaml, name)), cost.catalogue, cost.parts);
  const Facility& fac = cost.catalogue.facility;
  return {{"capex_usd", shortest_number(bom.capex_usd)},
          {"it_power_kw", shortest_number(bom.it_power_w / 1000)},
          {"facility_power_kw", shortest_number(facility_power_w(bom, fac) / 1000)},
          {"usd_per_gpu_hour", shortest_number(usd_per_gpu_hour(bom, fac, cost.depreciation_years))}};
}

PlanSpec load_plan(const std::string& path)
{
  const YamlNode root = YamlNode::load_file(path);
  root.expect_keys({"name", "description", "catalogue", "tokens", "depreciation_years", "clusters"});
  PlanSpec s;
  s.file = path;
  s.name = root.string_or("name", fs::path(path).stem().string());
  s.catalogue = study_catalogue(root, path);
  if (auto t = root.get("tokens")) s.tokens = *positive(*t, "tokens");
  if (auto d = root.get("depreciation_years")) s.depreciation_years = *positive(*d, "depreciation_years");
  const YamlNode clusters = root.at("clusters");
  if (!clusters.is_sequence() || clusters.items().empty())
    clusters.fail("clusters must be a list of clusters", "write clusters: [{name: h100, scenario: cluster.yaml}]");
  std::set<std::string> names;
  for (const YamlNode& e : clusters.items()) {
    e.expect_keys({"name", "scenario", "set", "parts", "step_time_s", "tokens_per_step"});
    PlanCluster pc;
    pc.where = e.where();
    pc.name = e.at("name").as_string();
    if (!good_name(pc.name))
      e.at("name").fail(fmt::format("'{}' is not a cluster name", pc.name),
                        "use letters, digits, '_', '-' and '.' (it names a folder)");
    if (!names.insert(pc.name).second)
      e.at("name").fail(fmt::format("two clusters are named {}", pc.name), "give each cluster its own name");
    SweepSpec& sw = pc.scenario;
    sw.file = path;
    sw.name = pc.name;
    read_sweep_base(e.at("scenario"), path, sw);
    if (auto set = e.get("set")) {
      if (!set->is_map())
        set->fail("set must map dotted scenario keys to values", "write set: {cluster.kind: fat_tree}");
      for (const std::string& key : set->keys()) {
        SweepAxis a;
        a.keys = {key};
        a.names = {""};
        a.values = {{YAML::Clone(set->at(key).raw())}};
        a.where = {set->at(key).where()};
        sw.axes.push_back(std::move(a));
      }
    }
    pc.parts = read_parts(e.get("parts"), e.where());
    if (auto v = e.get("step_time_s")) pc.step_time_s = positive(*v, "step_time_s");
    if (auto v = e.get("tokens_per_step")) pc.tokens_per_step = positive(*v, "tokens_per_step");
    if (s.tokens > 0 && !pc.tokens_per_step && !generated_tokens_per_step(point_yaml(sw)))
      e.fail("the scenario's workload is not a generated training step, so its tokens per step are unknown",
             "give tokens_per_step: (global batch x sequence length) for this cluster");
    s.clusters.push_back(std::move(pc));
  }
  return s;
}

PlanOutcome run_plan(const PlanSpec& spec, const SweepRunOptions& options, bool bom_only)
{
  const fs::path out = options.out;
  claim_study_folder(out, spec.file);
  PlanOutcome outcome;
  const Facility& fac = spec.catalogue.facility;
  for (const PlanCluster& pc : spec.clusters) {
    PlanRow row;
    row.cluster = pc.name;
    row.scenario = pc.scenario.base_file;
    const YAML::Node scenario = point_yaml(pc.scenario);
    row.bom = bill_of_materials(cluster_as_bought(pc, scenario), spec.catalogue, pc.parts);
    row.facility_power_w = facility_power_w(row.bom, fac);
    row.tokens_per_step = pc.tokens_per_step ? pc.tokens_per_step : generated_tokens_per_step(scenario);
    row.step_time_s = pc.step_time_s;
    if (!row.step_time_s && !bom_only) {
      SweepRunOptions o = options;
      o.out = (out / "clusters" / pc.name).string();
      o.mode = SweepRunOptions::Mode::Local;
      const SweepOutcome r = run_sweep(pc.scenario, o);
      const PointResult& p = r.rows.at(0);
      if (p.status != "ok") {
        row.status = "failed";
        row.error = p.error;
        ++outcome.failed;
      } else {
        const std::string t = p.metric("step_time_s"), m = p.metric("mfu");
        if (t.empty()) {
          row.status = "failed";
          row.error = "the run wrote no step time (a scenario of collectives, not a training step)";
          ++outcome.failed;
        } else {
          row.step_time_s = std::stod(t);
          if (!m.empty()) row.mfu = std::stod(m);
        }
      }
    }
    row.usd_per_gpu_hour = usd_per_gpu_hour(row.bom, fac, spec.depreciation_years);
    if (spec.tokens > 0 && row.step_time_s && row.tokens_per_step) {
      row.steps = std::ceil(spec.tokens / *row.tokens_per_step);
      row.train_s = row.steps * *row.step_time_s;
      row.energy_kwh = row.facility_power_w / 1000 * row.train_s / 3600;
      row.energy_cost_usd = row.energy_kwh * fac.electricity_usd_per_kwh;
      row.capex_share_usd = row.bom.capex_usd * row.train_s / (spec.depreciation_years * kSecondsPerYear);
      row.cost_usd = row.energy_cost_usd + row.capex_share_usd;
    }
    outcome.rows.push_back(std::move(row));
  }

  // plan.csv: one row per cluster.
  const bool training = spec.tokens > 0;
  outcome.plan_csv = (out / "plan.csv").string();
  write_file_replacing(out / "plan.csv", [&](std::ostream& os) {
    CsvWriter csv(os);
    csv.record("cluster", "status", "gpus", "nodes", "gpu", "switches", "transceivers", "dac_cables", "fiber_cables",
               "capex_usd", "it_power_kw", "facility_power_kw", "usd_per_gpu_hour", "step_time_s", "mfu",
               "tokens_per_step", "tokens", "steps", "train_days", "energy_mwh", "energy_cost_usd", "capex_share_usd",
               "cost_usd", "unpriced_parts", "unpowered_parts", "error");
    for (std::size_t i = 0; i < outcome.rows.size(); ++i) {
      const PlanRow& r = outcome.rows[i];
      const bool trained = training && r.train_s > 0;
      const auto t = [&](double v) { return trained ? shortest_number(v) : std::string(); };
      csv.record(r.cluster, r.status, r.bom.gpus, r.bom.nodes, spec.clusters[i].parts.gpu, r.bom.switches,
                 r.bom.transceivers, r.bom.dac_cables, r.bom.fiber_cables, shortest_number(r.bom.capex_usd),
                 shortest_number(r.bom.it_power_w / 1000), shortest_number(r.facility_power_w / 1000),
                 shortest_number(r.usd_per_gpu_hour), opt_number(r.step_time_s), opt_number(r.mfu),
                 opt_number(r.tokens_per_step), training ? shortest_number(spec.tokens) : std::string(), t(r.steps),
                 t(r.train_s / 86400), t(r.energy_kwh / 1000), t(r.energy_cost_usd), t(r.capex_share_usd),
                 t(r.cost_usd), joined(r.bom.unpriced), joined(r.bom.unpowered), r.error);
    }
  });

  // bom.csv: every line of every cluster.
  outcome.bom_csv = (out / "bom.csv").string();
  write_file_replacing(out / "bom.csv", [&](std::ostream& os) {
    CsvWriter csv(os);
    csv.record("cluster", "category", "part", "description", "count", "unit_price_usd", "unit_power_w", "price_usd",
               "power_w", "note");
    for (const PlanRow& r : outcome.rows)
      for (const BomLine& l : r.bom.lines)
        csv.record(r.cluster, l.category, l.part, l.description, l.count, opt_number(l.unit_price_usd),
                   opt_number(l.unit_power_w), opt_number(l.price_usd()), opt_number(l.power_w()), l.note);
  });

  // plan.json: the same, with the catalogue's sources for every figure used.
  nlohmann::ordered_json j;
  j["plan"] = spec.file;
  j["name"] = spec.name;
  j["catalogue"] = {{"version", spec.catalogue.version}, {"files", spec.catalogue.files}};
  j["facility"] = {{"pue", fac.pue},
                   {"electricity_usd_per_kwh", fac.electricity_usd_per_kwh},
                   {"power_fraction", fac.power_fraction},
                   {"depreciation_years", spec.depreciation_years}};
  std::set<std::string> used_sources = {fac.pue_source, fac.electricity_source, fac.power_fraction_source};
  nlohmann::ordered_json clusters = nlohmann::ordered_json::array();
  for (const PlanRow& r : outcome.rows) {
    nlohmann::ordered_json c;
    c["name"] = r.cluster;
    c["scenario"] = r.scenario;
    c["status"] = r.status;
    if (!r.error.empty()) c["error"] = r.error;
    nlohmann::ordered_json bom = nlohmann::ordered_json::array();
    for (const BomLine& l : r.bom.lines) {
      nlohmann::ordered_json b;
      b["category"] = l.category;
      b["part"] = l.part;
      b["description"] = l.description;
      b["count"] = l.count;
      b["unit_price_usd"] = opt_json(l.unit_price_usd);
      b["unit_power_w"] = opt_json(l.unit_power_w);
      b["price_usd"] = opt_json(l.price_usd());
      b["power_w"] = opt_json(l.power_w());
      b["note"] = l.note;
      const Part& p = spec.catalogue.parts.at(l.part);
      if (l.unit_price_usd) used_sources.insert(p.price_source);
      if (l.unit_power_w) used_sources.insert(p.power_source);
      b["price_source"] = l.unit_price_usd ? p.price_source : "";
      b["power_source"] = l.unit_power_w ? p.power_source : "";
      bom.push_back(b);
    }
    c["bom"] = bom;
    c["totals"] = {{"capex_usd", r.bom.capex_usd},           {"it_power_w", r.bom.it_power_w},
                   {"facility_power_w", r.facility_power_w}, {"usd_per_gpu_hour", r.usd_per_gpu_hour},
                   {"unpriced_parts", r.bom.unpriced},       {"unpowered_parts", r.bom.unpowered}};
    nlohmann::ordered_json tr;
    tr["step_time_s"] = opt_json(r.step_time_s);
    tr["mfu"] = opt_json(r.mfu);
    tr["tokens_per_step"] = opt_json(r.tokens_per_step);
    if (training && r.train_s > 0) {
      tr["tokens"] = spec.tokens;
      tr["steps"] = r.steps;
      tr["time_s"] = r.train_s;
      tr["energy_kwh"] = r.energy_kwh;
      tr["energy_cost_usd"] = r.energy_cost_usd;
      tr["capex_share_usd"] = r.capex_share_usd;
      tr["cost_usd"] = r.cost_usd;
    }
    c["training"] = tr;
    clusters.push_back(c);
  }
  j["clusters"] = clusters;
  nlohmann::ordered_json sources = nlohmann::ordered_json::object();
  for (const std::string& id : used_sources) {
    const auto it = spec.catalogue.sources.find(id);
    if (it == spec.catalogue.sources.end()) continue;
    const CatalogueSource& src = it->second;
    sources[id] = {{"title", src.title},
                   {"url", src.url},
                   {"published", src.published},
                   {"accessed", src.accessed},
                   {"says", src.says}};
  }
  j["sources"] = sources;
  outcome.plan_json = (out / "plan.json").string();
  write_file_replacing(out / "plan.json", [&](std::ostream& os) { os << j.dump(2) << "\n"; });
  return outcome;
}

} // namespace railyard::studies
