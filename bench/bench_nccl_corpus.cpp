// The published nccl-tests corpus (data/validation/nccl_tests/points.csv, every point with its source) run through
// `railyard nccl-tests`' simulation on the clusters of bench/nccl_corpus_systems.yaml, and the signed error of every
// point, per system, collective, communicator size and size band.
//
//   bench_nccl_corpus [--points FILE] [--systems FILE] [--seed N] [--only SUBSTRING] [--all-flags] [--csv FILE]
//
// The corpus is split once, at random with the seed, into a half on which any parameter may be chosen ("fit") and a
// half never used to choose one ("held-out"); the split depends only on each point's id and the seed. One thing is
// chosen on the fit half: the issuing thread's cost per call and per channel of each system whose source ran one
// thread for several GPUs (nccl-tests -g > 1), the measuring host's, which no other source gives. Both halves are
// reported; the held-out one is the one to quote.
//
// Error of a point: simulated time / measured time - 1 where the source prints a time; where it prints only the
// bus bandwidth, measured busbw / simulated busbw - 1 (the same ratio of times). Negative: Railyard is faster than
// the hardware. Summaries: the geometric-mean error exp(mean |ln(simulated/measured)|) - 1, the signed bias
// exp(mean ln(simulated/measured)) - 1, the worst point and the share within 15%.
//
// Beside the simulation, on the held-out half's time rows: the library's own cost model for the same algorithm and
// protocol (models::predict: NCCL's ncclTopoGetAlgoTime, RCCL's on AMD systems), and the measurement's repeatability:
// each row's out-of-place time against its in-place time (time_in_place_us), the same call timed twice in one run. No
// model that gives one time per row can come closer to both columns than they are to each other. --csv writes each
// point with the library model's time (nccl_model_us).
//
// Points are left out, with the reason counted, where the system is one Railyard cannot describe (the systems file
// says why), where the row's flag doubts the measurement itself (approx_prose_values, reported_below_expectation,
// issue_title_reports_failure; --all-flags keeps them), and where the source gives neither a time nor a busbw.
#include "railyard/common/csv.hpp"
#include "railyard/common/error.hpp"
#include "railyard/common/hash.hpp"
#include "railyard/common/yaml.hpp"
#include "railyard/models/nccl_tuning.hpp"
#include "railyard/scenario/nccl_tests.hpp"
#include "railyard/scenario/scenario.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/topologies/topology.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace scn = railyard::scenario;
using namespace railyard;

namespace {

const std::string kRoot = RAILYARD_SOURCE_DIR;

struct Point {
  std::map<std::string, std::string> f; ///< the row, by column name
  int line = 0;
  [[nodiscard]] const std::string& at(const std::string& k) const { return f.at(k); }
  [[nodiscard]] double num(const std::string& k) const { return f.at(k).empty() ? NAN : std::stod(f.at(k)); }
};

struct Result {
  const Point* point = nullptr;
  bool held_out = false;
  std::string algorithm; ///< NCCL's pick (or the forced one) as simulated
  double measured = 0, simulated = 0;
  bool by_time = true;
  double device = 0;       ///< simulated device value (time us or busbw) before the issuing thread
  int gpus_per_thread = 1; ///< nccl-tests -g of the source's command
  int channels = 1;        ///< NCCL's channels for the call
  double device_time_us = 0;
  double nccl_model_us = NAN; ///< the library's own cost model (NCCL's or RCCL's) for the call as simulated
  [[nodiscard]] double log_ratio() const
  {
    return by_time ? std::log(simulated / measured) : std::log(measured / simulated); // busbw: inverse of time
  }
};

std::vector<Point> read_points(const std::string& path)
{
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, ""}, "cannot read the corpus", "give the path of points.csv with --points");
  std::stringstream ss;
  ss << in.rdbuf();
  const auto records = parse_csv(ss.str(), path);
  if (records.empty()) throw InputError({path, 1, ""}, "the corpus is empty", "give points.csv");
  const auto& header = records.front().fields;
  std::vector<Point> out;
  for (std::size_t i = 1; i < records.size(); ++i) {
    const auto& r = records[i];
    if (r.fields.size() != header.size())
      throw InputError({path, r.line, ""},
                       fmt::format("{} fields where the header has {}", r.fields.size(), header.size()),
                       "run data/validation/nccl_tests/check_points.py");
    Point p;
    p.line = r.line;
    for (std::size_t c = 0; c < header.size(); ++c)
      p.f[header[c]] = r.fields[c];
    out.push_back(std::move(p));
  }
  return out;
}

// The half a point belongs to: a hash of its id and the seed (the split never depends on the results).
bool held_out(const std::string& id, std::uint64_t seed)
{
  std::uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : id)
    h = (h ^ c) * 1099511628211ULL;
  return (splitmix64(h ^ seed) & 1) == 1;
}

// NCCL_* settings of the row that change what NCCL runs, as the scenario and the sweep take them; the others
// (buffer sizes, transports' tuning) are not modelled and are listed in the report.
struct Env {
  std::optional<std::string> algo, proto;
  std::optional<int> min_channels, max_channels;
  std::vector<std::string> ignored;
};

Env parse_env(const Point& p)
{
  Env e;
  // NCCL_ALGO as the source forced it: NCCL reads the names without regard to case (Ring, NVLSTree, ...).
  if (!p.at("forced_algo").empty()) e.algo = p.at("forced_algo");
  if (!p.at("forced_proto").empty()) e.proto = p.at("forced_proto");
  // Notes in parentheses are the corpus's, not settings, wherever they stand ("X=1 (from the job definition);Y=0").
  std::string env;
  int depth = 0;
  for (char ch : p.at("other_env")) {
    if (ch == '(') ++depth;
    if (depth == 0) env += ch;
    if (ch == ')' && depth > 0) --depth;
  }
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ';')) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    if (k == "NCCL_NVLS_ENABLE" && v == "0" && !e.algo)
      e.algo = "^nvls,nvlstree";
    else if (k == "NCCL_MIN_NCHANNELS")
      e.min_channels = std::stoi(v);
    else if (k == "NCCL_MAX_NCHANNELS")
      e.max_channels = std::stoi(v);
    else if (k == "NCCL_ALGO" && !e.algo)
      e.algo = v;
    else if (k == "NCCL_PROTO" && !e.proto)
      e.proto = v;
    else if (k != "NCCL_NVLS_ENABLE")
      e.ignored.push_back(k);
  }
  return e;
}

struct Summary {
  int n = 0, within15 = 0;
  double sum_abs = 0, sum = 0, worst = 0;
  std::string worst_id;
  void add(const Result& r)
  {
    const double l = r.log_ratio();
    ++n;
    sum_abs += std::abs(l);
    sum += l;
    if (std::abs(std::exp(l) - 1) <= 0.15) ++within15;
    if (std::abs(l) > std::abs(worst)) {
      worst = l;
      worst_id = r.point->at("id");
    }
  }
  [[nodiscard]] std::string line() const
  {
    if (n == 0) return "-";
    return fmt::format("{:>4} {:>9.1f}% {:>+9.1f}% {:>+9.1f}% {:>6.0f}%  {}", n, 100 * (std::exp(sum_abs / n) - 1),
                       100 * (std::exp(sum / n) - 1), 100 * (std::exp(worst) - 1), 100.0 * within15 / n, worst_id);
  }
};

void print_table(const std::string& title, const std::map<std::string, std::pair<Summary, Summary>>& rows)
{
  std::size_t w = 36; // the key column fits the longest key (system / collective keys pass 36 characters)
  for (const auto& [k, v] : rows)
    w = std::max(w, k.size());
  fmt::print("\n{}\n{:<{}} {:>53} | {:>53}\n", title, "", w, "fit half", "held-out half");
  const std::string head =
      fmt::format("{:>4} {:>10} {:>10} {:>10} {:>7}  {}", "n", "geomean", "bias", "worst", "<=15%", "worst point");
  fmt::print("{:<{}} {:<53} | {}\n", "", w, head, head);
  for (const auto& [k, v] : rows)
    fmt::print("{:<{}} {:<53} | {}\n", k, w, v.first.line(), v.second.line());
}

// The simulation beside two references on the same points (held-out half): the library's own cost model for the
// algorithm and protocol simulated, and the measurement's repeatability, its out-of-place time against the in-place
// time of the same row (the same call timed twice in one run; no model that gives one time per row can match both).
struct Beside {
  int n = 0, rep_n = 0, rep_over15 = 0;
  double sim_abs = 0, sim = 0, model_abs = 0, model = 0, rep_abs = 0;
  void add(const Result& r)
  {
    if (!r.by_time) return;
    if (std::isfinite(r.nccl_model_us) && r.nccl_model_us > 0) {
      const double ls = r.log_ratio(), lm = std::log(r.nccl_model_us / r.measured);
      ++n;
      sim_abs += std::abs(ls);
      sim += ls;
      model_abs += std::abs(lm);
      model += lm;
    }
    const double ip = r.point->f.count("time_in_place_us") ? r.point->num("time_in_place_us") : NAN;
    if (std::isfinite(ip) && ip > 0) {
      const double l = std::abs(std::log(ip / r.measured));
      ++rep_n;
      rep_abs += l;
      if (std::exp(l) - 1 > 0.15) ++rep_over15;
    }
  }
  [[nodiscard]] std::string line() const
  {
    auto pct = [](double v) { return 100 * (std::exp(v) - 1); };
    std::string a = n ? fmt::format("{:>4} {:>8.1f}% {:>+8.1f}% {:>8.1f}% {:>+8.1f}%", n, pct(sim_abs / n),
                                    pct(sim / n), pct(model_abs / n), pct(model / n))
                      : fmt::format("{:>4} {:>9} {:>9} {:>9} {:>9}", 0, "-", "-", "-", "-");
    std::string b =
        rep_n ? fmt::format("{:>4} {:>8.1f}% {:>8.0f}%", rep_n, pct(rep_abs / rep_n), 100.0 * rep_over15 / rep_n)
              : fmt::format("{:>4} {:>9} {:>9}", 0, "-", "-");
    return a + " | " + b;
  }
};

void print_beside(const std::vector<std::map<std::string, Beside>>& blocks)
{
  std::size_t w = 36;
  fmt::print("{:<{}} {:>4} {:>9} {:>9} {:>9} {:>9} | {:>4} {:>9} {:>9}\n", "", w, "n", "sim geo", "sim bias",
             "model geo", "model bias", "n", "oop/ip", ">15%");
  for (const auto& rows : blocks)
    for (const auto& [k, v] : rows)
      if (v.n > 0 || v.rep_n > 0) fmt::print("{:<{}} {}\n", k, w, v.line());
}

std::string band(double bytes)
{
  if (bytes < 1024) return "a) < 1 KiB";
  if (bytes < 1024.0 * 1024) return "b) 1 KiB - 1 MiB";
  if (bytes < 1024.0 * 1024 * 1024) return "c) 1 MiB - 1 GiB";
  return "d) >= 1 GiB";
}

} // namespace

int main(int argc, char** argv)
{
  CLI::App app{"The published nccl-tests corpus against the simulation, with signed errors on a held-out half"};
  std::string points_path = kRoot + "/data/validation/nccl_tests/points.csv";
  std::string systems_path = kRoot + "/bench/nccl_corpus_systems.yaml";
  std::uint64_t seed = 1;
  std::string only, csv_path;
  bool all_flags = false;
  app.add_option("--points", points_path, "the corpus");
  app.add_option("--systems", systems_path, "the clusters of its systems");
  app.add_option("--seed", seed, "seed of the fit / held-out split");
  app.add_option("--only", only, "only points whose system contains this");
  app.add_option("--csv", csv_path, "write every simulated point here");
  app.add_flag("--all-flags", all_flags, "keep the rows whose flag doubts the measurement");
  CLI11_PARSE(app, argc, argv);
  try {
    // Refused before the simulations, not after them: an existing file is never overwritten.
    if (std::error_code ec; !csv_path.empty() && std::filesystem::exists(csv_path, ec))
      throw InputError({csv_path, 0, "--csv"}, "the file exists and would be overwritten",
                       "give a path that does not exist yet, or remove the file first");
    const std::vector<Point> points = read_points(points_path);
    const YamlNode systems_file = YamlNode::load_file(systems_path);
    const YamlNode systems = systems_file.at("systems");
    std::map<std::string, std::string> unsupported;
    if (auto u = systems_file.get("unsupported"))
      for (const auto& k : u->keys())
        unsupported[k] = u->at(k).as_string();
    std::map<std::string, scn::Scenario> scenarios;
    for (const auto& k : systems.keys())
      scenarios.emplace(
          k, scn::parse_scenario(YamlNode::load_string("name: " + k + "\n" + systems.at(k).at("scenario").as_string(),
                                                       systems_path + ": " + k),
                                 false));
    static const std::set<std::string> doubtful{"approx_prose_values", "reported_below_expectation",
                                                "issue_title_reports_failure"};
    std::map<std::string, int> left_out;
    std::vector<Result> results;
    std::map<std::string, topo::Topology> topologies; // per system, for the library's cost model
    std::set<std::string> ignored_env;
    for (const Point& p : points) {
      const std::string& system = p.at("system");
      if (!only.empty() && system.find(only) == std::string::npos) continue;
      if (!scenarios.count(system)) {
        ++left_out[unsupported.count(system) ? "system not described: " + unsupported.at(system)
                                             : "system missing from the systems file: " + system];
        continue;
      }
      bool doubted = false;
      for (const auto& d : doubtful)
        doubted |= p.at("flag").find(d) != std::string::npos;
      if (doubted && !all_flags) {
        ++left_out["flag doubts the measurement (" + p.at("flag") + ")"];
        continue;
      }
      const double time_us = p.num("time_us"), busbw = p.num("busbw_GBps");
      if (!(time_us > 0) && !(busbw > 0)) {
        ++left_out["neither a time nor a busbw above zero"];
        continue;
      }
      const auto kind = models::collective_from_string(p.at("collective"));
      if (!kind) {
        ++left_out["collective not simulated: " + p.at("collective")];
        continue;
      }
      scn::Scenario sc = scenarios.at(system);
      const Env env = parse_env(p);
      for (const auto& k : env.ignored)
        ignored_env.insert(k);
      if (env.min_channels) sc.nccl.channels.min = *env.min_channels;
      if (env.max_channels) sc.nccl.channels.max = *env.max_channels;
      scn::NcclTestsOptions o;
      o.kind = *kind;
      o.min_bytes = o.max_bytes = std::stoll(p.at("size_bytes"));
      o.step_factor = 2;
      const std::string dtype = p.at("dtype").empty() ? "float" : p.at("dtype");
      o.type = models::nccl_tests_type_bytes(dtype) > 0 ? dtype : "float";
      const int nodes = std::stoi(p.at("nodes")), per_node = std::stoi(p.at("gpus_per_node"));
      const int cluster_per_node = sc.cluster.gpus_per_node;
      if (nodes > sc.cluster.nodes || per_node > cluster_per_node) {
        ++left_out["more nodes or GPUs than the system's cluster"];
        continue;
      }
      for (int n = 0; n < nodes; ++n)
        for (int g = 0; g < per_node; ++g)
          o.ranks.push_back(n * cluster_per_node + g);
      // nccl-tests' process shape from the source's command: -g G GPUs per thread (one process per node when
      // G > 1, else one per GPU), -t threads.
      const std::string& flags = p.at("nccl_tests_flags");
      int g = 1, t = 1;
      if (std::smatch m; std::regex_search(flags, m, std::regex(R"((?:^|\s)(?:-g|--ngpus)\s+(\d+))")))
        g = std::stoi(m[1]);
      if (std::smatch m; std::regex_search(flags, m, std::regex(R"((?:^|\s)(?:-t|--nthreads)\s+(\d+))")))
        t = std::stoi(m[1]);
      o.process_per_gpu = g * t == 1;
      o.threads = t;
      // -G N: the calls captured into a graph (RCCL runs MSCCL++ only for those).
      if (std::smatch m; std::regex_search(flags, m, std::regex(R"((?:^|\s)(?:-G|--cudagraph)\s+(\d+))")))
        o.graph_launches = std::stoi(m[1]);
      scn::NcclTestsRun run;
      try {
        // As `railyard nccl-tests --algo/--proto` applies them.
        if (env.algo || env.proto) {
          const auto parsed = models::NcclOverrides::parse(env.algo, env.proto, {points_path, p.line, "forced_algo"});
          if (env.algo) {
            sc.nccl.algo = env.algo;
            sc.nccl.overrides.algorithms = parsed.algorithms;
          }
          if (env.proto) {
            sc.nccl.proto = env.proto;
            sc.nccl.overrides.protocols = parsed.protocols;
          }
        }
        run = scn::simulate_nccl_tests(sc, o);
      } catch (const InputError& e) {
        ++left_out["refused by the simulation: " + std::string(e.what()).substr(0, 120)];
        continue;
      }
      if (run.rows.size() != 1 || run.rows[0].counts.size_bytes != o.min_bytes) {
        ++left_out["size not reproduced (nccl-tests rounds it to whole elements per rank)"];
        continue;
      }
      // Rows the source prints in-place only are compared with the in-place column (RCCL may run it differently).
      const bool in_place = p.at("flag").find("in_place_only") != std::string::npos;
      const scn::NcclTestsColumn& row = in_place ? run.rows[0].in_place : run.rows[0];
      Result r;
      r.point = &p;
      r.held_out = held_out(p.at("id"), seed);
      // alltoall and sendrecv run as point-to-point transfers, whatever algorithm the call carries; named "p2p" as
      // `railyard nccl-tests` prints them. RCCL's MSCCL alltoall on one MI300X node is a kernel of its own.
      const bool p2p = (o.kind == models::CollectiveKind::AllToAll || o.kind == models::CollectiveKind::SendRecv) &&
                       row.call.algorithm != models::Algorithm::MscclAllPairs;
      r.algorithm = fmt::format("{}/{}", p2p ? std::string("p2p") : models::to_string(*row.call.algorithm),
                                models::to_string(*row.call.protocol));
      r.by_time = time_us > 0;
      r.measured = r.by_time ? time_us : busbw;
      r.simulated = r.by_time ? row.time.seconds() * 1e6 : row.busbw_GBps;
      r.device = r.simulated;
      r.device_time_us = row.time.seconds() * 1e6;
      r.gpus_per_thread = run.gpus_per_thread;
      r.channels = row.call.channels.value_or(1);
      if (!p2p) {
        // The library's own cost model for the same algorithm and protocol, beside the simulation (a diagnostic: where
        // the two part ways, the simulated schedule and the library's latency + bytes / bandwidth disagree).
        // The system's cluster, built once (a point's settings change its nccl section only).
        auto it = topologies.find(system);
        if (it == topologies.end())
          it = topologies.emplace(system, topo::build_topology(sc.cluster, sc.cluster_where)).first;
        const topo::Topology& topology = it->second;
        models::CollectiveCall call = row.call;
        call.ranks = o.ranks;
        if (const auto in = sim::nccl_input(call, topology, sc.nccl))
          if (const auto t = models::predict(*in, *row.call.algorithm, *row.call.protocol))
            r.nccl_model_us = t->seconds() * 1e6;
      }
      if (!(r.simulated > 0)) {
        ++left_out["simulated nothing (zero time or bandwidth)"];
        continue;
      }
      results.push_back(r);
    }

    // The issuing thread of the runs whose one thread drives several GPUs (-g > 1): its cost per call and per
    // channel is the measuring host's, which no other source gives, so it is chosen per system on the fit half
    // alone (least squares of ln(simulated / measured) over a grid) and then applied to both halves.
    std::map<std::string, models::HostIssueCost> host_of;
    for (const auto& [system, unused] : scenarios) {
      std::vector<Result*> fit;
      for (auto& r : results)
        if (r.point->at("system") == system && r.gpus_per_thread > 1 && !r.held_out) fit.push_back(&r);
      if (fit.empty()) continue;
      auto time_with = [](const Result& r, double call_us, double channel_us) {
        const double host = r.gpus_per_thread * (call_us + channel_us * r.channels);
        const double t = std::max(r.device_time_us, host);
        return r.by_time ? t : r.device * r.device_time_us / t;
      };
      double best = INFINITY, best_call = 0, best_channel = 0;
      for (int i = 0; i <= 200; ++i)
        for (int j = 0; j <= 100; ++j) {
          const double call_us = 0.1 * i, channel_us = 0.01 * j;
          double sse = 0;
          for (const Result* r : fit) {
            const double sim = time_with(*r, call_us, channel_us);
            const double l = r->by_time ? std::log(sim / r->measured) : std::log(r->measured / sim);
            sse += l * l;
          }
          if (sse < best - 1e-12) {
            best = sse;
            best_call = call_us;
            best_channel = channel_us;
          }
        }
      host_of[system] = {units::us(best_call), units::us(best_channel)};
      for (auto& r : results)
        if (r.point->at("system") == system && r.gpus_per_thread > 1)
          r.simulated = time_with(r, best_call, best_channel);
    }

    fmt::print("bench_nccl_corpus: {} of {} points simulated; split seed {}\n", results.size(), points.size(), seed);
    if (host_of.empty()) fmt::print("  nothing fitted to either half\n");
    for (const auto& [system, h] : host_of)
      fmt::print("  chosen on the fit half: {} issuing thread {:.1f} us per call + {:.2f} us per channel\n", system,
                 h.per_call.seconds() * 1e6, h.per_channel.seconds() * 1e6);
    for (const auto& [why, n] : left_out)
      fmt::print("  left out {:>4}: {}\n", n, why);
    if (!ignored_env.empty()) {
      std::string names;
      for (const auto& k : ignored_env)
        names += (names.empty() ? "" : ", ") + k;
      fmt::print("  NCCL settings of the sources not modelled (kept as NCCL's defaults): {}\n", names);
    }

    std::map<std::string, std::pair<Summary, Summary>> by_system, by_collective, by_system_collective, by_ranks,
        by_band, by_algo, all;
    for (const auto& r : results) {
      auto add = [&](std::map<std::string, std::pair<Summary, Summary>>& m, const std::string& k) {
        (r.held_out ? m[k].second : m[k].first).add(r);
      };
      add(by_system, r.point->at("system"));
      add(by_collective, r.point->at("collective"));
      add(by_system_collective, r.point->at("system") + " / " + r.point->at("collective"));
      add(by_ranks, fmt::format("{:>5} ranks on {:>3} node(s)", std::stoi(r.point->at("ranks")),
                                std::stoi(r.point->at("nodes"))));
      add(by_band, band(std::stod(r.point->at("size_bytes"))));
      add(by_algo, r.algorithm);
      add(all, "all");
    }
    fmt::print(
        "\nerror = simulated/measured time - 1 (busbw-only rows: measured/simulated busbw - 1); negative: "
        "Railyard faster than the hardware.\ngeomean = exp(mean |ln ratio|) - 1, bias = exp(mean ln ratio) - 1\n");
    print_table("by system", by_system);
    print_table("by collective", by_collective);
    print_table("by system and collective", by_system_collective);
    print_table("by communicator", by_ranks);
    print_table("by size", by_band);
    print_table("by NCCL algorithm/protocol as simulated", by_algo);
    print_table("whole corpus", all);

    // Held-out half: the simulation and the library's own cost model on the points both time (time rows, no p2p), and
    // the rows' out-of-place against in-place times.
    std::map<std::string, Beside> beside_all, beside_ranks, beside_band;
    for (const auto& r : results) {
      if (!r.held_out) continue;
      beside_all["all"].add(r);
      beside_ranks[fmt::format("{:>5} ranks on {:>3} node(s)", std::stoi(r.point->at("ranks")),
                               std::stoi(r.point->at("nodes")))]
          .add(r);
      beside_band[band(std::stod(r.point->at("size_bytes")))].add(r);
    }
    fmt::print(
        "\nheld-out half beside two references, on its time rows: the simulation and the library's own cost\n"
        "model (NCCL's ncclTopoGetAlgoTime, RCCL's on AMD systems, for the algorithm and protocol simulated; p2p\n"
        "rows and RCCL's MSCCL kernels have none) on the same points,\n"
        "geomean and bias as above; the measurement's repeatability: |out-of-place / in-place time - 1| of the\n"
        "same rows, geomean and share above 15% (no model giving one time per row can come closer to both)\n");
    print_beside({beside_all, beside_ranks, beside_band});

    if (!csv_path.empty()) {
      std::ofstream out(csv_path, std::ios::binary);
      if (!out) throw InputError({csv_path, 0, "--csv"}, "cannot write the file", "give a writable path");
      out << "id,system,ranks,nodes,collective,size_bytes,forced_algo,simulated_algo,metric,measured,simulated,"
             "error,half,nccl_model_us\n";
      for (const auto& r : results) {
        const Point& p = *r.point;
        out << fmt::format("{},{},{},{},{},{},{},{},{},{:.6g},{:.6g},{:+.4f},{},{:.6g}\n", p.at("id"), p.at("system"),
                           p.at("ranks"), p.at("nodes"), p.at("collective"), p.at("size_bytes"), p.at("forced_algo"),
                           r.algorithm, r.by_time ? "time_us" : "busbw_GBps", r.measured, r.simulated,
                           std::exp(r.log_ratio()) - 1, r.held_out ? "held_out" : "fit", r.nccl_model_us);
      }
      if (!out.flush()) throw InputError({csv_path, 0, "--csv"}, "the write failed", "free space and retry");
    }
  } catch (const InputError& e) {
    fmt::print(stderr, "bench_nccl_corpus: {}\n", e.what());
    return 2;
  }
  return 0;
}
