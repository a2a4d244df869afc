// railyard search (search.hpp): candidates as a sweep, pruned by the memory model, ranked by step time.
#include "railyard/studies/search.hpp"
#include "railyard/studies/plan.hpp"

#include "railyard/common/csv.hpp"
#include "railyard/common/output_file.hpp"
#include "railyard/common/yaml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

namespace railyard::studies {

namespace fs = std::filesystem;

namespace {

/// The layout keys a search may vary, and where each sits in the scenario.
const std::vector<std::pair<std::string, std::string>>& layout_keys()
{
  static const std::vector<std::pair<std::string, std::string>> k = {
      {"tp", "workload.parallel.tp"},
      {"pp", "workload.parallel.pp"},
      {"virtual_stages", "workload.parallel.virtual_stages"},
      {"cp", "workload.parallel.cp"},
      {"ep", "workload.parallel.ep"},
      {"zero", "workload.parallel.zero"},
      {"sequence_parallel", "workload.parallel.sequence_parallel"},
      {"micro_batch", "workload.training.micro_batch"},
      {"recompute", "workload.training.recompute"},
  };
  return k;
}

double number(const std::string& s)
{
  if (s.empty()) return 0;
  try {
    return std::stod(s);
  } catch (...) {
    return 0;
  }
}

} // namespace

SearchSpec load_search(const std::string& path)
{
  const YamlNode root = YamlNode::load_file(path);
  root.expect_keys({"name", "base", "gpus", "space", "top", "description", "parts", "catalogue", "depreciation_years"});
  SearchSpec s;
  s.file = path;
  s.name = root.string_or("name", fs::path(path).stem().string());
  s.top = static_cast<int>(root.int_in("top", 1, 1000, 5));
  // The base, read as a sweep reads it (an axis is added below for each searched key).
  SweepSpec& sw = s.sweep;
  sw.file = path;
  sw.name = s.name;
  const YamlNode base = root.at("base");
  read_sweep_base(base, path, sw);
  const YAML::Node wl = sw.base["workload"];
  if (!wl || !wl["generator"] || wl["generator"].as<std::string>() != "megatron")
    base.fail("the base scenario has no generated training step (workload: generator: megatron)",
              "search a scenario whose workload is generated: a trace's layout is fixed");
  const YAML::Node cl = sw.base["cluster"];
  int gpn = 0;
  try {
    gpn = cl && cl["gpus_per_node"] ? cl["gpus_per_node"].as<int>() : 0;
  } catch (const YAML::Exception&) {
  }
  if (gpn <= 0) base.fail("the base scenario's cluster gives no gpus_per_node", "give cluster.gpus_per_node");

  SweepAxis nodes;
  nodes.keys = {"cluster.nodes"};
  nodes.names = {"nodes"};
  nodes.values.emplace_back();
  if (auto g = root.get("gpus")) {
    if (!g->is_sequence() || g->items().empty()) g->fail("gpus must be a list of GPU counts", "write gpus: [512]");
    for (const YamlNode& v : g->items()) {
      const auto n = static_cast<int>(v.as_int(1, 10'000'000));
      if (n % gpn != 0)
        v.fail(fmt::format("{} GPUs is not a whole number of {}-GPU nodes", n, gpn),
               fmt::format("give a multiple of {}", gpn));
      s.gpus.push_back(n);
      nodes.values[0].push_back(YAML::Node(n / gpn));
      nodes.where.push_back(v.where());
    }
    nodes.where.resize(1);
  } else {
    int n = 0;
    try {
      n = cl["nodes"].as<int>();
    } catch (const YAML::Exception&) {
    }
    if (n <= 0) base.fail("the base scenario's cluster gives no nodes", "give cluster.nodes, or gpus: in the search");
    s.gpus.push_back(n * gpn);
    nodes.values[0].push_back(YAML::Node(n));
    nodes.where.push_back(base.where());
  }
  sw.axes.push_back(std::move(nodes));

  const YamlNode space = root.at("space");
  if (!space.is_map() || space.keys().empty())
    space.fail("space must map layout keys to their values", "write space: {tp: [2, 4, 8], pp: [1, 2, 4]}");
  std::vector<std::string> allowed;
  for (const auto& [k, v] : layout_keys())
    allowed.push_back(k);
  std::size_t total = s.gpus.size();
  for (const std::string& key : space.keys()) {
    const auto it =
        std::find_if(layout_keys().begin(), layout_keys().end(), [&](const auto& kv) { return kv.first == key; });
    const YamlNode v = space.at(key);
    if (it == layout_keys().end()) {
      const std::string near = closest_spelling(key, allowed);
      v.fail(fmt::format("'{}' is not a layout key a search varies", key),
             near.empty() ? fmt::format("use some of: {}", fmt::join(allowed, ", "))
                          : fmt::format("did you mean '{}'? The keys: {}", near, fmt::join(allowed, ", ")));
    }
    if (!v.is_sequence() || v.items().empty()) v.fail("give a list of values", fmt::format("write {}: [1, 2]", key));
    SweepAxis a;
    a.keys = {it->second};
    a.names = {key};
    a.values.emplace_back();
    for (const YamlNode& x : v.items())
      a.values[0].push_back(YAML::Clone(x.raw()));
    a.where = {v.where()};
    total *= a.size();
    if (total > kMaxSweepPoints)
      v.fail(fmt::format("the search has more than {} layouts", kMaxSweepPoints), "search fewer values");
    s.keys.push_back(key);
    sw.axes.push_back(std::move(a));
  }
  // dp = gpus / (tp x pp x cp); ep divides dp (Megatron's expert parallelism inside the data-parallel group).
  const bool has_cp = std::find(s.keys.begin(), s.keys.end(), "cp") != s.keys.end() ||
                      (sw.base["workload"]["parallel"] && sw.base["workload"]["parallel"]["cp"]);
  sw.derived.push_back(
      {"workload.parallel.dp",
       std::string("gpus / (workload.parallel.tp * workload.parallel.pp") + (has_cp ? " * workload.parallel.cp)" : ")"),
       space.where()});
  s.gpus_per_node = gpn;
  s.sweep.cost = read_cost_spec(root, path);
  return s;
}

SearchOutcome run_search(const SearchSpec& spec, const SweepRunOptions& options)
{
  SearchSpec s = spec;
  const fs::path out = fs::absolute(options.out).lexically_normal();
  claim_study_folder(out, spec.file); // the two passes' folders inside it are claimed by their sweeps

  // Pass 1: the memory model of every layout.
  SweepRunOptions mem = options;
  mem.out = (out / "memory").string();
  mem.run_args.push_back("--memory-only");
  mem.mode = SweepRunOptions::Mode::Local;
  s.sweep.name = spec.name + " (memory pass)";
  const SweepOutcome m = run_sweep(s.sweep, mem);
  const std::vector<SweepPoint> points = expand_sweep(s.sweep);

  // Pass 2: the layouts that fit, simulated.
  SweepRunOptions step = options;
  step.out = (out / "steps").string();
  step.mode = SweepRunOptions::Mode::Local;
  step.skip.assign(points.size(), "");
  for (std::size_t i = 0; i < points.size(); ++i) {
    const PointResult& r = m.rows[i];
    if (r.status != "ok")
      step.skip[i] = r.status;
    else if (r.metric("memory_fits") == "no")
      step.skip[i] = "does not fit";
  }
  SweepOutcome st;
  s.sweep.name = spec.name + " (simulation pass)";
  if (std::any_of(step.skip.begin(), step.skip.end(), [](const std::string& x) { return x.empty(); }))
    st = run_sweep(s.sweep, step);

  SearchOutcome o;
  const std::size_t nkeys = s.keys.size();
  for (std::size_t i = 0; i < points.size(); ++i) {
    const SweepPoint& p = points[i];
    const PointResult& r = m.rows[i];
    Candidate c;
    c.point = i;
    c.gpus = static_cast<int>(number(p.values[0])) * s.gpus_per_node;
    for (std::size_t k = 0; k < nkeys; ++k)
      c.layout.push_back(p.values[1 + k]);
    c.layout.push_back(p.values[1 + nkeys]); // dp
    c.peak_memory_bytes = number(r.metric("peak_gpu_memory_bytes"));
    c.capacity_bytes = number(r.metric("gpu_memory_capacity_bytes"));
    c.memory_breakdown = r.metric("memory_breakdown");
    if (const std::string capex = r.metric("capex_usd"); !capex.empty()) {
      c.capex_usd = number(capex);
      c.usd_per_gpu_hour = number(r.metric("usd_per_gpu_hour"));
    }
    if (r.status != "ok") {
      // Pass 1 only generates the step and sizes its memory: bad input there (exit 2: a batch that dp x micro_batch
      // does not divide, heads that tp does not divide, ...) means the combination is no layout of this model.
      c.status = r.status == "invalid" || r.exit_code == 2 ? "not_a_layout" : "failed";
      c.reason = r.error;
    } else if (r.metric("memory_fits") == "no") {
      c.status = "does_not_fit";
      c.reason = fmt::format("needs {:.1f} GiB per GPU of {:.1f} GiB: {}", c.peak_memory_bytes / (1 << 30),
                             c.capacity_bytes / (1 << 30), c.memory_breakdown);
    } else {
      const PointResult& t = st.rows.at(i);
      if (t.status == "ok") {
        c.status = "ok";
        c.step_time_s = number(t.metric("step_time_s"));
        c.mfu = number(t.metric("mfu"));
        c.model_tflops_per_gpu = number(t.metric("model_tflops_per_gpu"));
      } else {
        c.status = "failed";
        c.reason = t.error;
      }
    }
    o.candidates.push_back(std::move(c));
  }
  // Rank by step time (ties: point order); the Pareto front of step time against GPUs.
  std::stable_sort(o.candidates.begin(), o.candidates.end(), [](const Candidate& a, const Candidate& b) {
    const bool ra = a.status == "ok", rb = b.status == "ok";
    if (ra != rb) return ra;
    if (!ra) return a.point < b.point;
    return a.step_time_s < b.step_time_s;
  });
  for (Candidate& c : o.candidates) {
    if (c.status == "ok") c.rank = static_cast<int>(++o.ranked);
    o.does_not_fit += c.status == "does_not_fit";
    o.not_a_layout += c.status == "not_a_layout";
    o.failed += c.status == "failed";
  }
  // On the Pareto front of step time against `cost` (GPUs, or capex where the layouts are priced): no other ranked
  // layout is as fast and as cheap, and better in one.
  const auto on_front = [&](const Candidate& c, auto cost) {
    return std::none_of(o.candidates.begin(), o.candidates.end(), [&](const Candidate& d) {
      return d.status == "ok" && &d != &c && cost(d) > 0 && cost(d) <= cost(c) && d.step_time_s <= c.step_time_s &&
             (cost(d) < cost(c) || d.step_time_s < c.step_time_s);
    });
  };
  for (Candidate& c : o.candidates) {
    if (c.status != "ok") continue;
    c.pareto = on_front(c, [](const Candidate& x) { return static_cast<double>(x.gpus); });
    if (s.sweep.cost && c.capex_usd > 0) c.pareto_cost = on_front(c, [](const Candidate& x) { return x.capex_usd; });
  }
  o.table = (out / "search.csv").string();
  write_file_replacing(out / "search.csv", [&](std::ostream& os) {
    std::vector<std::string> header = {"rank", "point", "status", "gpus"};
    header.insert(header.end(), s.keys.begin(), s.keys.end());
    header.insert(header.end(), {"dp", "step_time_s", "mfu", "model_tflops_per_gpu", "peak_gpu_memory_bytes",
                                 "gpu_memory_capacity_bytes", "pareto"});
    const bool priced = s.sweep.cost != nullptr;
    if (priced) header.insert(header.end(), {"capex_usd", "usd_per_gpu_hour", "pareto_cost"});
    header.push_back("reason");
    CsvWriter csv(os);
    csv.record(header);
    for (const Candidate& c : o.candidates) {
      std::vector<std::string> cells = {c.rank ? std::to_string(c.rank) : "", std::to_string(c.point), c.status,
                                        std::to_string(c.gpus)};
      cells.insert(cells.end(), c.layout.begin(), c.layout.end());
      const auto num = [](double v, bool show) { return show ? shortest_number(v) : std::string(); };
      cells.insert(cells.end(),
                   {num(c.step_time_s, c.status == "ok"), num(c.mfu, c.status == "ok"),
                    num(c.model_tflops_per_gpu, c.status == "ok"), num(c.peak_memory_bytes, c.peak_memory_bytes > 0),
                    num(c.capacity_bytes, c.capacity_bytes > 0), c.status == "ok" ? (c.pareto ? "yes" : "no") : ""});
      if (priced)
        cells.insert(cells.end(), {num(c.capex_usd, c.capex_usd > 0), num(c.usd_per_gpu_hour, c.capex_usd > 0),
                                   c.status == "ok" && c.capex_usd > 0 ? (c.pareto_cost ? "yes" : "no") : ""});
      cells.push_back(c.reason);
      csv.record(cells);
    }
  });
  return o;
}

} // namespace railyard::studies
