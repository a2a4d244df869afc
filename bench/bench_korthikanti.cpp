// Validation against Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
// (arXiv 2205.05198; MLSys 2023): the end-to-end iteration times of its Table 5 and the per-layer times of its Table 4,
// on Selene (DGX A100 80GB nodes: 8 GPUs on NVSwitch, 8x 200 Gb/s HDR InfiniBand per node), with full activation
// recomputation (tensor parallelism without sequence parallelism) and with the paper's method (sequence parallelism +
// selective recomputation).
//
// Every number below was checked against the paper's full text (arXiv 2205.05198):
//  - Table 3: heads / hidden / layers / TP / PP / GPUs / global batch / micro-batch:
//      22B 64 / 6144 / 48 / 8 / 1 / 8 / 4 / 4;       175B 96 / 12288 / 96 / 8 / 8 / 64 / 64 / 1;
//      530B 128 / 20480 / 105 / 8 / 35 / 280 / 280 / 1; 1T 160 / 25600 / 128 / 8 / 64 / 512 / 512 / 1;
//    "no data parallelism is used in our evaluations".
//  - Section 6: "We use the interleaving schedule with three interleaving stages (m = 3) for the 175B and 530B
//    models", sequence 2048, vocabulary 51200, mixed precision, Selene nodes with 8 A100 80GB on NVLink/NVSwitch
//    and eight 200 Gb/s HDR InfiniBand HCAs. Section 3: word-embedding and output-layer weights are shared.
//  - Table 4 (one transformer layer of the 22B model, forward / backward ms): baseline no recompute 7.7 / 11.9,
//    sequence parallelism 7.2 / 11.8, baseline with recompute 7.7 / 19.5, selective recompute 7.7 / 13.2,
//    selective + sequence 7.2 / 13.1.
//  - Table 5 (iteration time s, full recompute / present work; MFU, HFU of the present work): 22B 1.42 / 1.10
//    (41.5%, 43.7%), 175B 18.13 / 13.75 (51.4%, 52.8%), 530B 49.05 / 37.83 (56.0%, 57.0%), 1T 94.42 / 71.49 (56.3%,
//    57.0%).
// Independent copies of the same numbers: calculon-ai/calculon (Isaev et al., SC'23) calculon/llm/validation.py
// (seqsel_tab5) and validation/seqsel/tab5/*.json (the same times, micro-batch 4 for 22B, interleaving 3 for 175B and
// 530B); NVIDIA/Megatron-LM's README of 2022-2023 (the MFU/HFU table). The present-work times also follow from the
// MFU: 72 B s l h^2 (1 + s/6h + V/12lh) / (MFU x GPUs x 312 TFLOPS), printed at the end.
// Not stated by the paper: fp16 or bf16 (the same 312 TFLOPS peak; fp16's loss-scale passes are not modelled).
//
// The prediction: the generated step (workloads/generator.hpp; tied embeddings, blocking pipeline p2p with Megatron's
// scatter/gather, no distributed optimizer) replayed on a rail-optimized DGX A100 cluster with the shipped DGX A100
// profile (calibration/profiles/dgx_a100_ib_hdr.yaml: 312 TFLOPS at an assumed 80% large-GEMM efficiency, every GEMM
// timed by whole waves of 256x128 output tiles over the 108 SMs (NVIDIA's Matrix Multiplication Background guide),
// 2039 GB/s HBM at an assumed 90%), GEMMs that overlap a collective of their GPU running on the SMs NCCL's channels
// leave (one SM per channel), and NCCL's own algorithm choice and fixed costs for every collective (analytical model:
// each collective alone on the fabric). Nothing here is fitted to the tables (Table 4 included). Target: within 10%.
//
// Usage: bench_korthikanti [--profile FILE] [--no-nccl-sms] [--flows]
//          --profile: another profile's kernel model (default: the shipped DGX A100 one; without its `gemm:` block,
//                     GEMMs are timed by the roofline of their FLOPs)
//          --no-nccl-sms: GEMMs keep every SM while collectives run
//          --flows: every transfer on the network for the 8- and 64-GPU cases (slow)
//        bench_korthikanti [--profile FILE] --detail 22B  (rank 0's time by op kind, full recompute then present work)
#include "railyard/common/child_process.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/sim/replay.hpp"
#include "railyard/workloads/generator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

using namespace railyard;
using workloads::Recompute;

namespace {

struct Case {
  const char* name;
  int layers, hidden, heads, tp, pp, gpus, batch, micro_batch, vpp; ///< Table 3; vpp: section 6
  double full_s, present_s;                                         ///< Table 5
  double mfu;                                                       ///< Table 5 (and Megatron-LM's README)
};

const Case kCases[] = {
    {"22B", 48, 6144, 64, 8, 1, 8, 4, 4, 1, 1.42, 1.10, 0.415},
    {"175B", 96, 12288, 96, 8, 8, 64, 64, 1, 3, 18.13, 13.75, 0.514},
    {"530B", 105, 20480, 128, 8, 35, 280, 280, 1, 3, 49.05, 37.83, 0.560},
    {"1T", 128, 25600, 160, 8, 64, 512, 512, 1, 1, 94.42, 71.49, 0.563},
};

// Table 4: one 22B layer (micro-batch 4, TP 8), forward and backward in ms.
struct LayerRow {
  const char* name;
  Recompute recompute;
  bool sp;
  double fwd_ms, bwd_ms;
};
const LayerRow kTable4[] = {{"baseline no recompute", Recompute::None, false, 7.7, 11.9},
                            {"sequence parallelism", Recompute::None, true, 7.2, 11.8},
                            {"baseline with recompute", Recompute::Full, false, 7.7, 19.5},
                            {"selective recompute", Recompute::Selective, false, 7.7, 13.2},
                            {"selective + sequence", Recompute::Selective, true, 7.2, 13.1}};

// The kernel and link profile: the shipped DGX A100 one unless --profile names another (e.g. one measured with
// calibration/run_on_gpu.sh). Set once in main before any replay.
std::string g_profile;
bool g_nccl_sms = true;

const std::string& profile_path()
{
  if (g_profile.empty())
    g_profile =
        (std::filesystem::path(__FILE__).parent_path().parent_path() / "calibration/profiles/dgx_a100_ib_hdr.yaml")
            .string();
  return g_profile;
}

workloads::MegatronConfig config_of(const Case& c, Recompute recompute, bool sp)
{
  workloads::MegatronConfig m;
  m.model.layers = c.layers;
  m.model.hidden = c.hidden;
  m.model.heads = c.heads;
  m.model.seq_length = 2048;
  m.model.vocab = 51200;
  m.model.flash_attention = false; // 2022: softmax and dropout over the b x heads x s x s scores
  m.model.tied_embeddings = true;
  m.parallel.tp = c.tp;
  m.parallel.pp = c.pp;
  m.parallel.virtual_stages = c.vpp;
  m.parallel.sequence_parallel = sp;
  m.parallel.zero_stage = 0; // no distributed optimizer in 2022 (and dp = 1)
  m.training.micro_batch = c.micro_batch;
  m.training.global_batch = c.batch;
  m.training.recompute = recompute;
  return m;
}

workloads::MegatronConfig config_of(const Case& c, bool present)
{
  return present ? config_of(c, Recompute::Selective, true) : config_of(c, Recompute::Full, false);
}

topo::ClusterSpec selene(int gpus)
{
  topo::ClusterSpec s;
  s.kind = gpus <= 8 ? topo::ClusterKind::SingleNode : topo::ClusterKind::RailOptimized;
  s.nodes = (gpus + 7) / 8;
  s.gpus_per_node = gpus <= 8 ? gpus : 8;
  // What NCCL sees of NVLink3: SM80_NVLINK_BW = 20 GB/s per link x 12 links (NVIDIA/nccl src/graph/topo.h), not the
  // 25 GB/s line rate; as bench_nccl_validation, where it reproduces the published 8x A100 all-reduce times.
  s.nvlink_bandwidth = units::GBps(12 * 20.0);
  s.nvlink_latency = units::us(0.5);
  s.pcie_bandwidth = units::GBps(32); // PCIe Gen4 x16
  s.nic_bandwidth = units::Gbps(200); // ConnectX-6 HDR
  s.nic_latency = units::us(1);
  s.leaf_downlinks = 20; // Selene's scalable units: 20 nodes per rail leaf
  s.fabric_bandwidth = units::Gbps(200);
  s.fabric_latency = units::us(0.6);
  return s;
}

struct Replayed {
  workloads::Workload workload;
  sim::ReplayResult result;
};

// The step of `cfg` on `gpus` GPUs of Selene; `trace_rank0` records rank 0's ops.
Replayed replay(const workloads::MegatronConfig& cfg, int gpus, sim::CommModel comm, bool trace_rank0)
{
  const topo::Topology t = topo::build_topology(selene(gpus));
  const calibration::Profile prof = calibration::read_profile(profile_path());
  sim::NcclSettings nccl;
  nccl.system = "dgx_a100";
  sim::ReplayOptions o;
  o.comm = comm;
  o.trace_ranks = trace_rank0 ? std::vector<int>{0} : std::vector<int>{};
  o.model_flops = workloads::megatron_model_flops(cfg);
  o.nccl_sms = g_nccl_sms;
  if (prof.framework) o.host = sim::host_model_of(*prof.framework); // the profile's framework costs, when it has them
  o.lower = [&](const models::CollectiveCall& call, const InputLocation& where) {
    return models::lower(sim::lowering_input(sim::resolve_call(call, t, nccl, where), t, nccl, Seconds(0)));
  };
  Replayed out{workloads::generate_megatron(cfg, gpus), {}};
  out.result = sim::replay_workload(out.workload, t, {}, &prof, o);
  return out;
}

// Step time, MFU and the mean shares of compute, exposed TP, other exposed communication and bubble (in a child
// process, so that each case's peak memory is its own).
std::vector<double> predict(const Case& c, bool present, sim::CommModel comm)
{
  return run_in_child([&] {
           const auto r = replay(config_of(c, present), c.gpus, comm, false).result;
           const double step = r.step_time.seconds();
           const auto& b = r.mean;
           const auto tp = static_cast<std::size_t>(workloads::GroupKind::TP);
           return std::vector<double>{step,
                                      r.mfu.value_or(0),
                                      b.compute_s / step,
                                      b.exposed_s[tp] / step,
                                      (b.exposed_total() - b.exposed_s[tp]) / step,
                                      b.bubble_s / step};
         })
      .values;
}

// "L12 fwd qkv" -> layer 12; -1 for ops outside the layers.
int layer_of(const std::string& name)
{
  if (name.size() < 2 || name[0] != 'L' || !std::isdigit(static_cast<unsigned char>(name[1]))) return -1;
  return std::stoi(name.substr(1));
}

// Forward and backward time of layer `l` on rank 0 of a one-stage pipeline, as Table 4 times them: from the first op
// of the layer's forward (backward, recomputation included) to the first op of the next layer's; and the step time.
struct LayerTimes {
  double fwd_s = 0, bwd_s = 0, step_s = 0;
};
LayerTimes layer_times(const workloads::MegatronConfig& cfg, int gpus, int l)
{
  const auto r = replay(cfg, gpus, sim::CommModel::Analytical, true);
  const auto& g = *r.workload.graphs[r.workload.ranks[0].graph];
  std::map<std::pair<int, bool>, double> first; // (layer, forward) -> earliest op start
  for (const auto& e : r.result.events) {
    const std::string& n = g.name(e.op);
    const int layer = layer_of(n);
    if (layer < 0) continue;
    const bool fwd = n.compare(n.find(' ') + 1, 4, "fwd ") == 0;
    auto [it, fresh] = first.emplace(std::pair{layer, fwd}, e.start_s);
    if (!fresh) it->second = std::min(it->second, e.start_s);
  }
  return {first.at({l + 1, true}) - first.at({l, true}), first.at({l - 1, false}) - first.at({l, false}),
          r.result.step_time.seconds()};
}

// Rank 0's time by op kind (the op name without its layer and chunk), with the stream.
void detail(const Case& c, bool present)
{
  const auto r = replay(config_of(c, present), c.gpus, sim::CommModel::Analytical, true);
  const auto& g = *r.workload.graphs[r.workload.ranks[0].graph];
  std::map<std::string, std::pair<double, int>> by;
  for (const auto& e : r.result.events) {
    std::string n = g.name(e.op);
    if (layer_of(n) >= 0) n = n.substr(n.find(' ') + 1);
    if (auto k = n.find(" chunk"); k != std::string::npos) n = n.substr(0, k);
    auto& v = by[fmt::format("stream {} {}", e.stream, n)];
    v.first += e.end_s - e.start_s;
    ++v.second;
  }
  fmt::print("{} {}: step {:.4f} s; rank 0, summed op durations:\n", c.name,
             present ? "SP + selective" : "full recompute", r.result.step_time.seconds());
  for (const auto& [n, v] : by)
    fmt::print("  {:<56} {:>9.4f} s {:>7} ops\n", n, v.first, v.second);
}

} // namespace

int main(int argc, char** argv)
{
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() >= 2 && args[0] == "--profile") {
    g_profile = args[1];
    args.erase(args.begin(), args.begin() + 2);
  }
  if (!args.empty() && args[0] == "--no-nccl-sms") {
    g_nccl_sms = false;
    args.erase(args.begin());
  }
  if (args.size() >= 2 && args[0] == "--detail") {
    for (const Case& c : kCases)
      if (c.name == args[1]) {
        detail(c, false);
        detail(c, true);
      }
    return 0;
  }
  const bool flows = !args.empty() && args[0] == "--flows";
  const calibration::Profile prof = calibration::read_profile(profile_path());
  const auto& gemm = prof.kernel ? prof.kernel->gemm : std::nullopt;
  fmt::print("Korthikanti et al. 2022 (arXiv 2205.05198), Table 5 (Selene, A100): predicted vs published iteration "
             "time\nprofile {}; communication {}\nGEMMs: {}; {}\nnothing fitted to Table 4 or Table 5\n\n",
             profile_path(), flows ? "flows (8 and 64 GPUs)" : "analytical",
             gemm ? fmt::format("waves of {}x{} tiles over {} SMs", gemm->tile_m, gemm->tile_n, gemm->sms)
                  : std::string("roofline of their FLOPs"),
             !(gemm && g_nccl_sms) ? "no SMs taken by NCCL"
             : flows               ? "SMs shared with NCCL's channels in the analytical cases (flows keep every SM)"
                                   : "SMs shared with NCCL's channels while collectives run");
  fmt::print("{:>5} {:>5} {:>18} {:>10} {:>10} {:>8}   {:>6} {:>6} {:>6} {:>6} {:>6}   {:>8}\n", "model", "GPUs",
             "method", "published", "predicted", "error", "MFU", "comp", "TP", "other", "bubble", "wall(s)");
  double worst = 0, sum_sq = 0;
  int n = 0, within = 0;
  std::map<std::string, std::array<double, 2>> predicted; // model -> {full recompute, present work}
  for (const Case& c : kCases) {
    for (bool present : {false, true}) {
      const sim::CommModel comm = flows && c.gpus <= 64 ? sim::CommModel::Flows : sim::CommModel::Analytical;
      const auto start = std::chrono::steady_clock::now();
      const auto v = predict(c, present, comm);
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double published = present ? c.present_s : c.full_s;
      const double err = (v[0] - published) / published;
      worst = std::max(worst, std::abs(err));
      sum_sq += err * err;
      ++n;
      within += std::abs(err) <= 0.10;
      predicted[c.name][present] = v[0];
      fmt::print("{:>5} {:>5} {:>18} {:>9.2f}s {:>9.2f}s {:>+7.1f}%   {:>5.1f}% {:>5.1f}% {:>5.1f}% {:>5.1f}% "
                 "{:>5.1f}%   {:>8.2f}\n",
                 c.name, c.gpus, present ? "SP + selective" : "full recompute", published, v[0], 100 * err, 100 * v[1],
                 100 * v[2], 100 * v[3], 100 * v[4], 100 * v[5], wall);
    }
  }
  fmt::print("\n{} of {} points within 10%; worst |error| {:.1f}%, rms {:.1f}%\n", within, n, 100 * worst,
             100 * std::sqrt(sum_sq / n));
  fmt::print("columns: MFU = model FLOPs / (step x GPUs x 312 TFLOPS); comp, TP, other, bubble = mean share of the "
             "step per rank: compute, exposed TP communication, other exposed communication, pipeline bubble\n");
  // Table 5's "throughput increase" column: full recompute time / present-work time - 1.
  fmt::print("\nthroughput increase of the present work over full recompute (Table 5 column):\n");
  for (const Case& c : kCases) {
    const double pub = c.full_s / c.present_s - 1, pred = predicted[c.name][0] / predicted[c.name][1] - 1;
    fmt::print("  {:>5}: predicted {:5.1f}%, published {:5.1f}%\n", c.name, 100 * pred, 100 * pub);
  }

  // Table 4: where the 22B step goes. The step of a one-stage pipeline is 48 layers plus what is outside them
  // (embedding, LM head and loss, optimizer); the published rest is Table 5 minus 48 x Table 4.
  const Case& c22 = kCases[0];
  fmt::print("\nTable 4, one 22B layer (micro-batch 4, TP 8), predicted vs published:\n");
  double layer_ms[2] = {0, 0}; // full recompute, selective + sequence
  for (const LayerRow& row : kTable4) {
    const auto lt = layer_times(config_of(c22, row.recompute, row.sp), c22.gpus, c22.layers / 2);
    const double f = 1e3 * lt.fwd_s, b = 1e3 * lt.bwd_s;
    fmt::print("  {:<24} forward {:5.2f} ms (published {:4.1f}, {:+6.1f}%)  backward {:5.2f} ms (published {:4.1f}, "
               "{:+6.1f}%)\n",
               row.name, f, row.fwd_ms, 100 * (f - row.fwd_ms) / row.fwd_ms, b, row.bwd_ms,
               100 * (b - row.bwd_ms) / row.bwd_ms);
    if (row.recompute == Recompute::Full) layer_ms[0] = f + b;
    if (row.recompute == Recompute::Selective && row.sp) layer_ms[1] = f + b;
  }
  const double published_layer_ms[2] = {7.7 + 19.5, 7.2 + 13.1};
  fmt::print("22B step = {} layers + the rest:\n", c22.layers);
  for (int present = 0; present < 2; ++present) {
    const double published = present ? c22.present_s : c22.full_s;
    fmt::print("  {:<15} layers {:6.3f} s (published {:6.3f} s), rest {:6.3f} s (published {:6.3f} s)\n",
               present ? "SP + selective" : "full recompute", c22.layers * layer_ms[present] / 1e3,
               c22.layers * published_layer_ms[present] / 1e3,
               predicted[c22.name][present] - c22.layers * layer_ms[present] / 1e3,
               published - c22.layers * published_layer_ms[present] / 1e3);
  }

  fmt::print("\ncross-check of the published present-work times against their MFU (Table 5, Megatron-LM README):\n");
  for (const Case& c : kCases) {
    const double flops = workloads::megatron_model_flops(config_of(c, true));
    fmt::print("  {:>5}: 72Bslh^2(1+s/6h+V/12lh) / (MFU {:.1f}% x {} x 312 TFLOPS) = {:.2f} s (Table 5: {:.2f} s)\n",
               c.name, 100 * c.mfu, c.gpus, flops / (c.mfu * c.gpus * 312e12), c.present_s);
  }
  return 0;
}
