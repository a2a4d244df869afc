// Wall time and peak memory to simulate one training step: the two 1,024-GPU examples (examples/gpt3_175b_1024.yaml,
// examples/llama3_70b_1024.yaml) and an 8,192-GPU Llama-3-405B-class step, each in its own child process
// (railyard::run_in_child: SimGrid keeps one engine per process, and each row's peak memory is its own). Every row is
// also given as a ratio to a baseline measured in the same invocation (GPT-3 175B on 64 A100s, Korthikanti et al.
// 2022's configuration), so runs on machines of different speed or load compare.
//
// What is timed: generating the step (or nothing more than reading the scenario), and replaying it (run_workload);
// writing summary.json, breakdown.csv and trace.json is not included.
//
// Usage: bench_training_step [--flows | --coupled | --coupled-cc [--with-8192]]
//   --flows adds the 64-GPU step with every transfer on the network, with 8 micro-batches, on the fluid and the
//   SimGrid backends (the latter ~2 min); --coupled adds the 1,024-GPU examples and the 8,192-GPU step (rail-optimized
//   and 2:1 fat tree, per-QP ECMP) with communication: coupled, each also as a ratio to the same step analytical;
//   --coupled-cc the llama3_70b_1024 example coupled with DCQCN and PFC on, on its rail-optimized fabric and on a 2:1
//   fat tree, and the MoE example moe_mixtral_1024_dcqcn, each as a ratio to the same step analytical (--with-8192
//   adds the 8,192-GPU step so, which takes many minutes).
#include "railyard/common/child_process.hpp"
#include "railyard/scenario/run_workload.hpp"

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace scn = railyard::scenario;

using namespace railyard;

namespace {

const std::filesystem::path kRoot = std::filesystem::path(__FILE__).parent_path().parent_path();

std::string profile(const char* name)
{
  return (kRoot / "calibration/profiles" / name).string();
}

// GPT-3 175B as Korthikanti et al. 2022 ran it on 64 A100s (tp 8, pp 8, 64 micro-batches).
std::string baseline_yaml(const std::string& communication, int global_batch, const std::string& backend)
{
  return fmt::format(R"(name: baseline_gpt3_175b_64
cluster:
  kind: rail_optimized
  nodes: 8
  gpus_per_node: 8
  node: {{nvlink_bandwidth: 240 GB/s, nvlink_latency: 0.5 us, pcie_bandwidth: 32 GB/s}}
  nic: {{bandwidth: 200 Gb/s, latency: 1 us}}
  fabric: {{leaf_downlinks: 20, oversubscription: 1, link_bandwidth: 200 Gb/s, link_latency: 0.6 us}}
network: {{backend: {}}}
nccl: {{system: dgx_a100}}
profile: {}
workload:
  generator: megatron
  model: {{layers: 96, hidden: 12288, heads: 96, seq_length: 2048, vocab: 51200, flash_attention: false}}
  parallel: {{tp: 8, pp: 8}}
  training: {{micro_batch: 1, global_batch: {}, recompute: selective}}
  replay: {{communication: {}, trace_ranks: none}}
)",
                     backend, profile("dgx_a100_ib_hdr.yaml"), global_batch, communication);
}

// Llama 3 405B-class on 8,192 H100s as Meta describes its run (Dubey et al. 2024, section 3.3.2: tp 8, pp 16, dp 64;
// 16M tokens per step = 2048 sequences of 8192), with 128 layers instead of 126 so the 16 stages hold 8 layers each,
// interleaved with 2 chunks per stage. Not memory-checked, as examples/llama3_405b_8192_rail.yaml says why.
std::string llama405_yaml(const std::string& communication = "analytical", bool fat_tree = false)
{
  return fmt::format(R"(name: llama3_405b_8192
cluster:
  kind: {}
  nodes: 1024
  gpus_per_node: 8
  node: {{nvlink_bandwidth: 370.8 GB/s, nvlink_latency: 0.5 us, pcie_bandwidth: 64 GB/s}}
  nic: {{bandwidth: 400 Gb/s, latency: 1 us}}
  fabric: {{leaf_downlinks: 32, oversubscription: {}, link_bandwidth: 400 Gb/s, link_latency: 0.6 us}}
network: {{backend: fluid, ecmp: per_qp}}
nccl: {{system: dgx_h100}}
profile: {}
workload:
  generator: megatron
  model: {{layers: 128, hidden: 16384, heads: 128, kv_heads: 8, ffn_hidden: 53248, gated_mlp: true, seq_length: 8192,
          vocab: 128256}}
  parallel: {{tp: 8, pp: 16, virtual_stages: 2, dp: 64, zero: 1}}
  training: {{micro_batch: 1, global_batch: 2048, recompute: selective, memory_check: false}}
  replay: {{communication: {}, trace_ranks: none}}
)",
                     fat_tree ? "fat_tree" : "rail_optimized", fat_tree ? 2 : 1, profile("dgx_h100_ib_ndr.yaml"),
                     communication);
}

struct Row {
  std::string name;
  std::function<scn::Scenario()> scenario;
  int against = -1; ///< the row this one is also given as a ratio to (the same step, analytical), or -1
};

scn::Scenario from_text(const std::string& text, const std::string& name)
{
  return scn::parse_scenario(YamlNode::load_string(text, name));
}

scn::Scenario from_file(const std::string& path, std::optional<sim::CommModel> comm = {})
{
  scn::Scenario s = scn::load_scenario(path);
  s.workload->replay.trace_ranks = std::vector<int>{};
  if (comm) {
    s.workload->replay.comm = *comm;
    s.workload->communication_given = true;
  }
  return s;
}

/// The same scenario with DCQCN and PFC on (coupled communication), optionally on a 2:1 fat tree.
scn::Scenario with_cc(scn::Scenario s, bool fat_tree)
{
  s.sim.fluid.cc = sim::CongestionControl::Dcqcn;
  s.sim.fluid.pfc.enabled = true;
  s.sim.fluid.ecmp = sim::EcmpMode::PerQp;
  if (fat_tree) {
    s.cluster.kind = topo::ClusterKind::FatTree;
    s.cluster.oversubscription = 2;
  }
  return s;
}

scn::Scenario analytical_on(scn::Scenario s, bool fat_tree)
{
  s.workload->replay.comm = sim::CommModel::Analytical;
  s.workload->communication_given = true;
  if (fat_tree) {
    s.cluster.kind = topo::ClusterKind::FatTree;
    s.cluster.oversubscription = 2;
  }
  return s;
}

} // namespace

int main(int argc, char** argv)
{
  const bool flows = argc > 1 && std::strcmp(argv[1], "--flows") == 0;
  const bool coupled = argc > 1 && std::strcmp(argv[1], "--coupled") == 0;
  const bool coupled_cc = argc > 1 && std::strcmp(argv[1], "--coupled-cc") == 0;
  const bool with_8192 = argc > 2 && std::strcmp(argv[2], "--with-8192") == 0;
  std::vector<Row> rows = {
      {"baseline: GPT-3 175B, 64 A100, analytical",
       [] { return from_text(baseline_yaml("analytical", 64, "simgrid"), "baseline"); }},
      {"examples/gpt3_175b_1024.yaml (1,024 H100)",
       [] { return from_file((kRoot / "examples/gpt3_175b_1024.yaml").string()); }},
      {"examples/llama3_70b_1024.yaml (1,024 H100)",
       [] { return from_file((kRoot / "examples/llama3_70b_1024.yaml").string()); }},
      {"Llama-3-405B-class, 8,192 H100, analytical", [] { return from_text(llama405_yaml(), "llama405"); }},
  };
  if (coupled) {
    // Each coupled row beside the same step timed analytical (each collective alone), in this invocation.
    const std::string g = (kRoot / "examples/gpt3_175b_1024.yaml").string();
    const std::string l = (kRoot / "examples/llama3_70b_1024.yaml").string();
    rows.push_back({"gpt3_175b_1024, coupled", [g] { return from_file(g, sim::CommModel::Coupled); }, 1});
    rows.push_back({"llama3_70b_1024, coupled", [l] { return from_file(l, sim::CommModel::Coupled); }, 2});
    rows.push_back({"Llama-405B-class 8,192, rail, coupled",
                    [] { return from_text(llama405_yaml("coupled"), "llama405_coupled"); }, 3});
    rows.push_back({"Llama-405B-class 8,192, 2:1 fat tree, analytical",
                    [] { return from_text(llama405_yaml("analytical", true), "llama405_fat"); }});
    rows.push_back({"Llama-405B-class 8,192, 2:1 fat tree, coupled",
                    [] { return from_text(llama405_yaml("coupled", true), "llama405_fat_coupled"); },
                    static_cast<int>(rows.size()) - 1});
  }
  if (coupled_cc) {
    // DCQCN + PFC on coupled flows, each beside the same step timed analytical on the same fabric.
    const std::string l = (kRoot / "examples/llama3_70b_1024.yaml").string();
    rows.push_back({"llama3_70b_1024, rail, coupled + DCQCN + PFC",
                    [l] { return with_cc(from_file(l, sim::CommModel::Coupled), false); }, 2});
    rows.push_back({"llama3_70b_1024, 2:1 fat tree, analytical", [l] { return analytical_on(from_file(l), true); }});
    rows.push_back({"llama3_70b_1024, 2:1 fat tree, coupled + DCQCN + PFC",
                    [l] { return with_cc(from_file(l, sim::CommModel::Coupled), true); },
                    static_cast<int>(rows.size()) - 1});
    // The MoE example (EP all-to-alls as independent flows beside the coupled collectives), DCQCN and PFC on.
    const std::string m = (kRoot / "examples/moe_mixtral_1024_dcqcn.yaml").string();
    rows.push_back({"moe_mixtral_1024, analytical", [m] { return from_file(m, sim::CommModel::Analytical); }});
    rows.push_back({"moe_mixtral_1024_dcqcn (coupled + DCQCN + PFC)", [m] { return from_file(m); },
                    static_cast<int>(rows.size()) - 1});
    if (with_8192) {
      rows.push_back({"Llama-405B-class 8,192, rail, coupled + DCQCN + PFC",
                      [] { return with_cc(from_text(llama405_yaml("coupled"), "llama405_cc"), false); }, 3});
      rows.push_back({"Llama-405B-class 8,192, 2:1 fat tree, analytical",
                      [] { return from_text(llama405_yaml("analytical", true), "llama405_fat"); }});
      rows.push_back({"Llama-405B-class 8,192, 2:1 fat tree, coupled + DCQCN + PFC",
                      [] { return with_cc(from_text(llama405_yaml("coupled", true), "llama405_fat_cc"), false); },
                      static_cast<int>(rows.size()) - 1});
    }
  }
  if (flows) {
    rows.push_back({"GPT-3 175B, 64 A100, 8 micro-batches, flows (fluid)",
                    [] { return from_text(baseline_yaml("flows", 8, "fluid"), "flows_fluid"); }});
    rows.push_back({"GPT-3 175B, 64 A100, 8 micro-batches, flows (simgrid)",
                    [] { return from_text(baseline_yaml("flows", 8, "simgrid"), "flows_simgrid"); }});
  }
  fmt::print("{:<52} {:>6} {:>12} {:>11} {:>11} {:>11} {:>9} {:>9} {:>11}\n", "step", "GPUs", "ops", "step(s)",
             "wall(s)", "peak(MiB)", "wall/base", "mem/base", "wall/analyt");
  double base_wall = 0, base_rss = 0;
  std::vector<double> walls;
  for (const Row& row : rows) {
    const ChildResult r = run_in_child([&] {
      const scn::Scenario sc = row.scenario();
      const scn::WorkloadRunResult w = scn::run_workload(sc);
      return std::vector<double>{static_cast<double>(w.workload.world_size()),
                                 static_cast<double>(w.replay.ops_executed), w.replay.step_time.seconds()};
    });
    if (base_wall == 0) {
      base_wall = r.wall_seconds;
      base_rss = r.max_rss_bytes;
    }
    walls.push_back(r.wall_seconds);
    fmt::print("{:<52} {:>6.0f} {:>12.0f} {:>11.4f} {:>11.2f} {:>11.1f} {:>9.2f} {:>9.2f} {:>11}\n", row.name,
               r.values[0], r.values[1], r.values[2], r.wall_seconds, r.max_rss_bytes / (1024.0 * 1024.0),
               r.wall_seconds / base_wall, r.max_rss_bytes / base_rss,
               row.against >= 0 ? fmt::format("{:.2f}", r.wall_seconds / walls[static_cast<std::size_t>(row.against)])
                                : std::string("-"));
  }
  fmt::print("\nops: ops executed over all ranks; step(s): simulated step time; wall: generation + replay in a child "
             "process; peak: its maximum resident set size\n");
  return 0;
}
