#include "railyard/scenario/workload_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

namespace railyard::scenario {

using namespace railyard::sim; // the simulator this layer drives

namespace fs = std::filesystem;

namespace {

// fs::exists(p) throws filesystem_error when the system cannot look the name up at all (a name too long, a loop of
// links); that is the user's path, refused here with the system's reason.
bool path_exists(const YamlNode& where, const fs::path& p)
{
  std::error_code ec;
  const bool found = fs::exists(p, ec);
  if (ec)
    where.fail(fmt::format("'{}' cannot be looked up: {}", p.string(), ec.message()),
               "give the path of an existing file");
  return found;
}

} // namespace

std::string resolve_scenario_path(const YamlNode& where, const std::string& path, const std::string& scenario_file)
{
  if (path.empty()) where.fail("the path is empty", "give a file name");
  const fs::path p(path);
  if (p.is_absolute()) {
    if (!path_exists(where, p))
      where.fail(fmt::format("'{}' does not exist", path), "give the path of an existing file");
    return path;
  }
  const fs::path beside = fs::path(scenario_file).parent_path() / p;
  if (!scenario_file.empty() && path_exists(where, beside)) return beside.lexically_normal().string();
  if (path_exists(where, p)) return path;
  where.fail(fmt::format("'{}' exists neither beside the scenario ({}) nor in the working directory", path,
                         beside.lexically_normal().string()),
             "give a path relative to the scenario file, or an absolute one");
}

namespace {

int positive_int(const YamlNode& parent, std::string_view key, int fallback, int min = 1)
{
  auto n = parent.get(key);
  if (!n) return fallback;
  return static_cast<int>(n->as_int(min, 1'000'000'000));
}

// Records where each generator field was given, for the generator's messages ("parallel.tp" -> file:line).
void note_where(workloads::MegatronConfig& c, const YamlNode& section, const std::string& prefix)
{
  for (const auto& k : section.keys())
    c.where[prefix + "." + k] = section.at(k).where();
}

int dtype_bytes(const YamlNode& n, calibration::DType& out)
{
  const std::string s = n.as_string();
  const auto t = calibration::dtype_from_string(s);
  if (!t || *t == calibration::DType::Tf32)
    n.fail(fmt::format("unknown training dtype '{}'", s), "use bf16, fp16, fp8 or fp32");
  out = *t;
  switch (*t) {
  case calibration::DType::Fp8:
    return 1;
  case calibration::DType::Fp32:
    return 4;
  default:
    return 2;
  }
}

void parse_megatron(const YamlNode& node, WorkloadSpec& w)
{
  node.expect_keys({"generator", "model", "parallel", "training", "replay"});
  auto& c = w.megatron;
  c.where[""] = node.where();
  const YamlNode model = node.at("model");
  model.expect_keys({"layers", "hidden", "heads", "kv_heads", "ffn_hidden", "gated_mlp", "seq_length", "vocab",
                     "experts", "top_k", "moe_ffn_hidden", "flash_attention", "tied_embeddings", "name"});
  note_where(c, model, "model");
  c.model.layers = positive_int(model, "layers", 0);
  c.model.hidden = positive_int(model, "hidden", 0);
  c.model.heads = positive_int(model, "heads", 0);
  c.model.kv_heads = positive_int(model, "kv_heads", 0, 0);
  c.model.ffn_hidden = positive_int(model, "ffn_hidden", 0, 0);
  c.model.gated_mlp = model.bool_or("gated_mlp", false);
  c.model.seq_length = positive_int(model, "seq_length", 0);
  c.model.vocab = positive_int(model, "vocab", 0);
  c.model.experts = positive_int(model, "experts", 0, 0);
  c.model.top_k = positive_int(model, "top_k", 0, 0);
  c.model.moe_ffn_hidden = positive_int(model, "moe_ffn_hidden", 0, 0);
  c.model.flash_attention = model.bool_or("flash_attention", true);
  c.model.tied_embeddings = model.bool_or("tied_embeddings", false);
  for (const char* k : {"layers", "hidden", "heads", "seq_length", "vocab"})
    (void)model.at(k);
  if (auto p = node.get("parallel")) {
    p->expect_keys({"tp", "pp", "dp", "cp", "ep", "virtual_stages", "sequence_parallel", "zero", "bucket_params",
                    "overlap_param_gather", "blocking_p2p", "scatter_gather_p2p", "first_stage_layers",
                    "last_stage_layers"});
    note_where(c, *p, "parallel");
    if (auto z = p->get("zero")) c.where["parallel.zero"] = z->where();
    c.parallel.tp = positive_int(*p, "tp", 1);
    c.parallel.pp = positive_int(*p, "pp", 1);
    c.parallel.dp = positive_int(*p, "dp", 0, 0);
    c.parallel.cp = positive_int(*p, "cp", 1);
    c.parallel.ep = positive_int(*p, "ep", 1);
    c.parallel.virtual_stages = positive_int(*p, "virtual_stages", 1);
    c.parallel.first_stage_layers = positive_int(*p, "first_stage_layers", 0);
    c.parallel.last_stage_layers = positive_int(*p, "last_stage_layers", 0);
    c.parallel.sequence_parallel = p->bool_or("sequence_parallel", true);
    c.parallel.zero_stage = positive_int(*p, "zero", 1, 0);
    if (auto b = p->get("bucket_params")) c.parallel.bucket_params = b->as_double();
    c.parallel.overlap_param_gather = p->bool_or("overlap_param_gather", false);
    c.parallel.blocking_p2p = p->bool_or("blocking_p2p", true);
    c.parallel.scatter_gather_p2p = p->bool_or("scatter_gather_p2p", true);
  }
  const YamlNode t = node.at("training");
  t.expect_keys(
      {"micro_batch", "global_batch", "recompute", "dtype", "grad_dtype", "memory_check", "memory_limit_GiB"});
  note_where(c, t, "training");
  w.memory_where = t.where();
  w.memory_check = t.bool_or("memory_check", true);
  if (auto m = t.get("memory_limit_GiB")) {
    w.memory_limit_GiB = m->as_double();
    if (!(*w.memory_limit_GiB > 0) || !std::isfinite(*w.memory_limit_GiB))
      m->fail("memory_limit_GiB must be a positive number of GiB", "give the memory one GPU offers, e.g. 75");
  }
  c.training.micro_batch = positive_int(t, "micro_batch", 1);
  c.training.global_batch = positive_int(t, "global_batch", 0);
  (void)t.at("global_batch");
  if (auto r = t.get("recompute")) {
    const std::string s = r->as_string();
    if (s == "none")
      c.training.recompute = workloads::Recompute::None;
    else if (s == "selective")
      c.training.recompute = workloads::Recompute::Selective;
    else if (s == "full")
      c.training.recompute = workloads::Recompute::Full;
    else
      r->fail(fmt::format("unknown recompute '{}'", s), "use none, selective or full");
  }
  if (auto d = t.get("dtype")) c.training.bytes_per_element = dtype_bytes(*d, w.replay.dtype);
  if (auto g = t.get("grad_dtype")) {
    calibration::DType unused{};
    c.training.grad_bytes_per_element = dtype_bytes(*g, unused);
  }
  w.replay.model_flops = 0; // filled in by run_workload once the step is generated
}

void parse_trace(const YamlNode& node, const std::string& scenario_file, WorkloadSpec& w)
{
  node.expect_keys({"trace", "path", "comm_group", "world_size", "model_parallel", "tick", "infer_cross_stream_deps",
                    "recorded_on", "replay", "host_et"});
  const YamlNode fmt_node = node.at("trace");
  w.trace_format = fmt_node.as_string();
  if (std::find(kTraceFormats.begin(), kTraceFormats.end(), w.trace_format) == kTraceFormats.end())
    fmt_node.fail(fmt::format("unknown trace format '{}'", w.trace_format),
                  "use chakra, kineto, simai, astrasim1 or aicb");
  const YamlNode path = node.at("path");
  if (path.is_sequence()) {
    for (const auto& p : path.items())
      w.trace_paths.push_back(resolve_scenario_path(p, p.as_string(), scenario_file));
  } else {
    // A Chakra prefix names no file itself: resolve its folder.
    const std::string p = path.as_string();
    if (w.trace_format == "chakra" && !path_exists(path, fs::path(scenario_file).parent_path() / p) &&
        !path_exists(path, p)) {
      const fs::path rel(p);
      const std::string folder =
          resolve_scenario_path(path, rel.parent_path().empty() ? "." : rel.parent_path().string(), scenario_file);
      w.trace_paths.push_back((fs::path(folder) / rel.filename()).string());
    } else {
      w.trace_paths.push_back(resolve_scenario_path(path, p, scenario_file));
    }
  }
  if (w.trace_paths.empty()) path.fail("no trace files", "give a path or a list of paths");
  if (auto cg = node.get("comm_group")) w.comm_group_file = resolve_scenario_path(*cg, cg->as_string(), scenario_file);
  w.layer.world_size = positive_int(node, "world_size", 0, 0);
  w.layer.model_parallel = positive_int(node, "model_parallel", 0, 0);
  if (auto t = node.get("tick")) {
    w.layer.tick = t->as_seconds();
    if (!(w.layer.tick.seconds() > 0))
      t->fail("tick must be positive", "give the length of one time unit, e.g. '1 ns'");
  }
  w.infer_cross_stream_deps = node.bool_or("infer_cross_stream_deps", true);
  if (auto h = node.get("host_et")) {
    if (w.trace_format != "kineto")
      h->fail(fmt::format("host_et pairs PyTorch host execution traces with Kineto traces; this workload's trace is {}",
                          w.trace_format),
              "remove host_et, or give the ranks' Kineto traces with trace: kineto and their host traces as host_et");
    if (h->is_sequence()) {
      for (const auto& p : h->items())
        w.host_et.push_back(resolve_scenario_path(p, p.as_string(), scenario_file));
    } else {
      w.host_et.push_back(resolve_scenario_path(*h, h->as_string(), scenario_file));
    }
    if (w.host_et.empty()) h->fail("no host execution trace files", "give a path or a list of paths");
  }
  if (auto rec = node.get("recorded_on")) {
    w.recorded_on = topo::parse_cluster(*rec);
    w.recorded_on_where = rec->where();
  }
}

void parse_replay(const YamlNode& node, WorkloadSpec& w)
{
  auto r = node.get("replay");
  if (!r) return;
  r->expect_keys({"communication", "collective_model", "collectives", "measured_durations", "host_launch",
                  "trace_ranks", "nccl_sms", "framework"});
  if (auto c = r->get("communication")) {
    const std::string s = c->as_string();
    const auto* m =
        std::find_if(kCommModels.begin(), kCommModels.end(), [&](CommModel x) { return to_string(x) == s; });
    if (m != kCommModels.end()) {
      w.replay.comm = *m;
      w.communication_given = true;
    } else
      c->fail(fmt::format("unknown communication model '{}'", s),
              "use coupled (each collective channel one fluid flow, sharing the fabric with everything in flight), "
              "flows (every transfer on the network), analytical (each collective alone on the fabric) or ideal");
  }
  if (auto m = r->get("collective_model")) {
    const std::string s = m->as_string();
    w.collective_model_where = m->where();
    if (s == "schedule")
      w.collective_model = WorkloadSpec::CollectiveModel::Schedule;
    else if (s == "profile")
      w.collective_model = WorkloadSpec::CollectiveModel::Profile;
    else
      m->fail(fmt::format("unknown collective model '{}'", s),
              "use schedule (each collective's lowered schedule alone on the fabric) or profile (the profile's fitted "
              "collective costs where it has them, the schedule elsewhere)");
    if (w.collective_model == WorkloadSpec::CollectiveModel::Profile && w.replay.comm != CommModel::Analytical)
      m->fail(fmt::format("collective_model: profile times collectives by a fitted formula, which only the analytical "
                          "communication model uses; this replay's communication is {}",
                          to_string(w.replay.comm)),
              "add 'communication: analytical' to replay:, or remove collective_model");
  }
  if (auto c = r->get("collectives")) {
    const std::string v = c->as_string();
    if (v == "measured")
      w.replay.measured_collectives = true;
    else if (v != "modelled")
      c->fail(fmt::format("unknown collectives mode '{}'", v),
              "use modelled (the communication model times every collective) or measured (a trace's collectives "
              "take their measured time, plus the model's difference between the cluster and workload.recorded_on)");
    if (w.replay.measured_collectives && w.kind != WorkloadSpec::Kind::Trace)
      c->fail("collectives: measured needs a trace, whose collectives have measured times; a generated step has none",
              "remove collectives: measured, or replay a trace");
    if (w.replay.measured_collectives && w.communication_given && w.replay.comm != CommModel::Analytical)
      c->fail(fmt::format("collectives: measured adds the difference of two collectives alone on their clusters, which "
                          "only the analytical communication model times; this replay's communication is {}",
                          to_string(w.replay.comm)),
              "write 'communication: analytical' (or leave communication out), or remove collectives: measured");
  }
  w.replay.measured_durations = r->bool_or("measured_durations", true);
  if (auto h = r->get("host_launch")) {
    // true and false as before this key took a mode: true is the host model, false the GPU alone.
    const std::string v = h->as_string();
    if (v == "model" || v == "true")
      w.replay.host_launch = sim::HostLaunch::Model;
    else if (v == "recorded")
      w.replay.host_launch = sim::HostLaunch::Recorded;
    else if (v == "off" || v == "false")
      w.replay.host_launch = sim::HostLaunch::Off;
    else
      h->fail(fmt::format("unknown host_launch mode '{}'", v),
              "use model (the trace's host threads as a dependency graph: launches and synchronisations), recorded "
              "(every op waits for its recorded launch time) or off (the GPU alone)");
  }
  w.replay.nccl_sms = r->bool_or("nccl_sms", true);
  w.framework = r->bool_or("framework", true);
  if (auto t = r->get("trace_ranks")) {
    std::vector<int> ranks;
    if (t->is_scalar() && t->as_string() == "none") {
      w.replay.trace_ranks = ranks;
    } else {
      for (const auto& item : t->items()) {
        ranks.push_back(static_cast<int>(item.as_int(0, std::numeric_limits<int>::max(), "ranks count from 0")));
      }
      w.replay.trace_ranks = ranks;
    }
  }
}

} // namespace

WorkloadSpec parse_workload(const YamlNode& node, const std::string& scenario_file)
{
  WorkloadSpec w;
  w.where = node.where();
  if (!node.is_map())
    node.fail("workload is a map", "write 'workload: {generator: megatron, ...}' or 'workload: {trace: ...}'");
  if (node.has("generator")) {
    const YamlNode g = node.at("generator");
    if (g.as_string() != "megatron")
      g.fail(fmt::format("unknown generator '{}'", g.as_string()), "use generator: megatron");
    if (node.has("trace"))
      node.at("trace").fail("a workload is generated or read, not both", "keep generator or trace");
    w.kind = WorkloadSpec::Kind::Megatron;
    parse_megatron(node, w);
  } else if (node.has("trace")) {
    w.kind = WorkloadSpec::Kind::Trace;
    parse_trace(node, scenario_file, w);
  } else {
    node.fail("the workload names neither a generator nor a trace",
              "add 'generator: megatron' with model, parallel and training, or 'trace: kineto' with a path");
  }
  parse_replay(node, w);
  return w;
}

} // namespace railyard::scenario
