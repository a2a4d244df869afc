// `replay.communication: coupled` through the binary: generated training steps on 64 and 256 GPUs agree with the
// per-step flows replay on the fluid backend (no congestion control, same seed), on a rail-optimized fabric and on a
// 2:1 fat tree; bytes sent are bytes received; it is the default on a multi-node cluster; its outputs (summary.json's
// congestion and network, congestion.csv, links.csv and the trace's link tracks) are written; with DCQCN and PFC on it
// agrees with per-step flows and its adaptive steps with fixed ones.
#include "cli_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

namespace fs = std::filesystem;

using railyard::test::read_file;
using railyard::test::run_cli;
using railyard::test::shell_quote;
using railyard::test::temp_dir;

namespace {

/// A Megatron-style step (a Llama-like model cut to 8 layers) with TP 8 inside a node, PP 2 and DP over the rest.
std::string step_yaml(int nodes, const std::string& fabric, const std::string& network, const std::string& replay)
{
  const int dp = nodes / 2;
  return "name: coupled_step\nseed: 3\ncluster:\n  " + fabric + "\n  nodes: " + std::to_string(nodes) +
         "\n  gpus_per_node: 8\n  node: {nvlink_bandwidth: 370.8 GB/s, nvlink_latency: 0.5 us, pcie_bandwidth: 64 "
         "GB/s}\n  nic: {bandwidth: 400 Gb/s, latency: 1 us}\n" +
         (network.empty() ? "" : "network: " + network + "\n") + "nccl: {system: dgx_h100}\nprofile: " +
         (fs::path(RAILYARD_SOURCE_DIR) / "calibration/profiles/dgx_h100_ib_ndr.yaml").string() +
         "\nworkload:\n  generator: megatron\n  model: {layers: 8, hidden: 4096, heads: 32, kv_heads: 8, ffn_hidden: "
         "14336, gated_mlp: true, seq_length: 4096, vocab: 32000}\n  parallel: {tp: 8, pp: 2, dp: " +
         std::to_string(dp) + ", zero: 1}\n  training: {micro_batch: 1, global_batch: " + std::to_string(4 * dp) +
         ", recompute: selective}\n  replay: {" + replay + "}\n";
}

const std::string kRail = "kind: rail_optimized\n  fabric: {leaf_downlinks: 32, link_bandwidth: 400 Gb/s}";
/// Two nodes per leaf, 8 uplinks for 16 NIC ports.
const std::string kFat2to1 =
    "kind: fat_tree\n  fabric: {leaf_downlinks: 16, oversubscription: 2, link_bandwidth: 400 Gb/s}";

nlohmann::json run_ok(const fs::path& dir, const std::string& name, const std::string& yaml,
                      const std::string& extra = "")
{
  const fs::path file = dir / (name + ".yaml");
  std::ofstream(file) << yaml;
  const auto r = run_cli("run " + shell_quote(file.string()) + " --out " + shell_quote((dir / name).string()) + extra);
  EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.output;
  if (r.exit_code != 0) return {};
  return nlohmann::json::parse(read_file(dir / name / "summary.json"));
}

double step_of(const nlohmann::json& j)
{
  return j.is_object() ? j.at("step_time_s").get<double>() : NAN;
}

} // namespace

// The same steps, coupled and per-step flows on the fluid backend (spraying on the fat tree, so both see the same
// paths): within 2% (measured: 0.05% and less). Coupled moves the bytes the flows replay moves.
TEST(CliCoupled, TrainingStepsAgreeWithPerStepFlows)
{
  const fs::path dir = temp_dir("coupled_steps");
  struct Case {
    std::string name;
    int nodes;
    std::string fabric, network;
  };
  for (const Case& c :
       {Case{"rail64", 8, kRail, "{backend: fluid}"}, Case{"fat64", 8, kFat2to1, "{backend: fluid, ecmp: spray}"},
        Case{"rail256", 32, kRail, "{backend: fluid}"}}) {
    const auto coupled = run_ok(dir, c.name + "_coupled",
                                step_yaml(c.nodes, c.fabric, c.network, "communication: coupled, trace_ranks: none"));
    const auto flows = run_ok(dir, c.name + "_flows",
                              step_yaml(c.nodes, c.fabric, c.network, "communication: flows, trace_ranks: none"));
    ASSERT_TRUE(coupled.is_object() && flows.is_object()) << c.name;
    EXPECT_EQ(coupled["communication"], "coupled");
    std::printf("%-8s coupled %.6f s  flows %.6f s  %+.3f%%\n", c.name.c_str(), step_of(coupled), step_of(flows),
                100 * (step_of(coupled) / step_of(flows) - 1));
    EXPECT_NEAR(step_of(coupled), step_of(flows), 0.02 * step_of(flows)) << c.name;
    const auto& f = coupled["flows"];
    EXPECT_GT(f["wire_bytes_sent"].get<double>(), 0) << c.name;
    EXPECT_NEAR(f["wire_bytes_sent"].get<double>(), f["wire_bytes_received"].get<double>(),
                1e-9 * f["wire_bytes_sent"].get<double>())
        << c.name;
    EXPECT_EQ(f["sent"], f["received"]) << c.name;
    // Every collective call of the step is counted, by group kind; none is faster than alone.
    const auto& groups = coupled["congestion"]["by_group"];
    ASSERT_TRUE(groups.contains("tp") && groups.contains("dp")) << c.name;
    for (const auto& [kind, g] : groups.items()) {
      EXPECT_GE(g["factor"].get<double>(), 1 - 1e-9) << c.name << " " << kind;
      EXPECT_GE(g["p50"].get<double>(), 1 - 1e-9) << c.name << " " << kind;
      std::uint64_t in_bins = 0;
      for (const auto& h : g["histogram"])
        in_bins += h.get<std::uint64_t>();
      EXPECT_EQ(in_bins, g["calls"].get<std::uint64_t>()) << c.name << " " << kind;
    }
    EXPECT_TRUE(fs::exists(dir / (c.name + "_coupled") / "congestion.csv")) << c.name;
  }
}

// Without replay.communication, a multi-node step runs coupled and says so; one node keeps per-step flows.
TEST(CliCoupled, DefaultOnAMultiNodeCluster)
{
  const fs::path dir = temp_dir("coupled_default");
  const auto multi = run_ok(dir, "multi", step_yaml(2, kRail, "", "trace_ranks: none"));
  ASSERT_TRUE(multi.is_object());
  EXPECT_EQ(multi["communication"], "coupled");
  EXPECT_NE(multi["notes"].dump().find("the default on a multi-node cluster"), std::string::npos) << multi["notes"];
  std::string one = step_yaml(2, kRail, "", "trace_ranks: none");
  one.replace(one.find("nodes: 2"), 8, "nodes: 1");
  one.replace(one.find("pp: 2, dp: 1"), 12, "pp: 1, dp: 1");
  const auto single = run_ok(dir, "single", one);
  ASSERT_TRUE(single.is_object());
  EXPECT_EQ(single["communication"], "flows");
}

// Links sampled at a step-level interval on request: links.csv, the hottest links with their utilisation, and the
// trace's counter tracks for them.
TEST(CliCoupled, LinkRecordsAndTrace)
{
  const fs::path dir = temp_dir("coupled_links");
  const auto j = run_ok(dir, "links",
                        step_yaml(8, kFat2to1,
                                  "{backend: fluid, ecmp: per_qp, outputs: {links: true, sample_interval: "
                                  "1 ms}}",
                                  "communication: coupled"));
  ASSERT_TRUE(j.is_object());
  const auto& hot = j["network"]["hottest_links"];
  ASSERT_FALSE(hot.empty());
  EXPECT_GT(hot[0]["utilisation"].get<double>(), 0);
  EXPECT_LE(hot[0]["utilisation"].get<double>(), 1 + 1e-9);
  EXPECT_EQ(j["network"]["sample_interval_s"].get<double>(), 1e-3);
  const std::string links = read_file(dir / "links" / "links.csv");
  EXPECT_GT(std::count(links.begin(), links.end(), '\n'), 10);
  EXPECT_NE(read_file(dir / "links" / "trace.json").find("network: hottest links"), std::string::npos);
}

// DCQCN and PFC on coupled flows (queue_steps adaptive, the default, and fixed) against per-step flows on the same 2:1
// fat tree (spraying, so both see the same paths): the step within 5% of per-step flows; the adaptive steps within 1%
// of stepping every microsecond on time, deepest queue, marks and pause time; PFC dropped no byte; every byte sent
// arrived. The uplinks queue: marks, CNPs and pauses happen.
TEST(CliCoupled, DcqcnAndPfcOnCoupledSteps)
{
  const fs::path dir = temp_dir("coupled_cc");
  const std::string net = "{backend: fluid, ecmp: spray, cc: dcqcn, pfc: {enabled: true}";
  const auto adaptive =
      run_ok(dir, "adaptive", step_yaml(8, kFat2to1, net + "}", "communication: coupled, trace_ranks: none"));
  const auto fixed = run_ok(
      dir, "fixed", step_yaml(8, kFat2to1, net + ", queue_steps: fixed}", "communication: coupled, trace_ranks: none"));
  const auto flows = run_ok(dir, "flows", step_yaml(8, kFat2to1, net + "}", "communication: flows, trace_ranks: none"));
  ASSERT_TRUE(adaptive.is_object() && fixed.is_object() && flows.is_object());
  const auto& a = adaptive["network"];
  const auto& x = fixed["network"];
  std::printf("dcqcn+pfc fat64: coupled %.6f s (fixed steps %.6f s), flows %.6f s, %+.2f%%; queue %.0f/%.0f B, marks "
              "%.0f/%.0f, pause %.6f/%.6f s\n",
              step_of(adaptive), step_of(fixed), step_of(flows), 100 * (step_of(adaptive) / step_of(flows) - 1),
              a["max_queue_bytes"].get<double>(), x["max_queue_bytes"].get<double>(), a["ecn_marks"].get<double>(),
              x["ecn_marks"].get<double>(), a["pause_time_s"].get<double>(), x["pause_time_s"].get<double>());
  EXPECT_EQ(adaptive["communication"], "coupled");
  EXPECT_NEAR(step_of(adaptive), step_of(flows), 0.05 * step_of(flows));
  EXPECT_NEAR(step_of(adaptive), step_of(fixed), 0.01 * step_of(fixed));
  for (const char* key : {"max_queue_bytes", "ecn_marks", "pause_time_s"}) {
    EXPECT_GT(x[key].get<double>(), 0) << key;
    EXPECT_NEAR(a[key].get<double>(), x[key].get<double>(), 0.01 * x[key].get<double>()) << key;
  }
  EXPECT_GT(a["cnps"].get<double>(), 0);
  EXPECT_EQ(a["overflow_bytes"].get<double>(), 0.0);
  // A NIC port never sends beyond its line rate: the lanes behind one host link, those catching up on their windows
  // included, send at most its capacity together (before the cap, sprayed lanes catching up each at their DCQCN
  // rate sent up to 17.8x it here, 32x with fixed steps).
  std::printf("host link peak load: adaptive %.12f, fixed steps %.12f\n", a["host_link_peak_load"].get<double>(),
              x["host_link_peak_load"].get<double>());
  EXPECT_LE(a["host_link_peak_load"].get<double>(), 1 + 1e-9);
  EXPECT_LE(x["host_link_peak_load"].get<double>(), 1 + 1e-9);
  // And it is reached: max-min shares only the host links, so a ring edge's NIC with no DCQCN cap on its flow carries
  // its flows' shares summed to its capacity.
  EXPECT_NEAR(a["host_link_peak_load"].get<double>(), 1.0, 1e-9);
  EXPECT_NEAR(x["host_link_peak_load"].get<double>(), 1.0, 1e-9);
  const auto& f = adaptive["flows"];
  EXPECT_NEAR(f["wire_bytes_sent"].get<double>(), f["wire_bytes_received"].get<double>(),
              1e-9 * f["wire_bytes_sent"].get<double>());
}

// An MoE step (Mixtral-8x7B-like, 4 layers, EP 8 all-to-alls across node pairs) on 1,024 GPUs with PFC alone, one
// micro-batch: all-to-all lanes finish injecting while their ports turn cold, and leave the steps holding bytes they
// sent in the step under way. Those bytes arrive (before the fix they stayed in the lane: its flow never drained and
// the replay reported a deadlock at 45 ms). The step ends, bytes sent are bytes received, PFC paused and dropped
// nothing.
TEST(CliCoupled, LanesLeavingTheStepsDeliverWhatTheySent)
{
  const fs::path dir = temp_dir("coupled_moe_pfc");
  const std::string yaml =
      "name: moe_pfc\nseed: 1\ncluster:\n  kind: rail_optimized\n  nodes: 128\n  gpus_per_node: 8\n  node: "
      "{nvlink_bandwidth: 370.8 GB/s, nvlink_latency: 0.5 us, pcie_bandwidth: 64 GB/s}\n  nic: {bandwidth: 400 Gb/s, "
      "latency: 1 us}\n  fabric: {leaf_downlinks: 32, oversubscription: 1, link_bandwidth: 400 Gb/s, link_latency: "
      "0.6 us}\nnetwork: {backend: fluid, ecmp: per_qp, cc: none, pfc: {enabled: true}}\nnccl: {system: "
      "dgx_h100}\nprofile: " +
      (fs::path(RAILYARD_SOURCE_DIR) / "calibration/profiles/dgx_h100_ib_ndr.yaml").string() +
      "\nworkload:\n  generator: megatron\n  model: {layers: 4, hidden: 4096, heads: 32, kv_heads: 8, ffn_hidden: "
      "14336, gated_mlp: true, seq_length: 4096, vocab: 32000, experts: 8, top_k: 2}\n  parallel: {tp: 2, pp: 4, dp: "
      "128, ep: 8, sequence_parallel: true, zero: 1}\n  training: {micro_batch: 1, global_batch: 128, recompute: "
      "selective}\n  replay: {communication: coupled, trace_ranks: none}\n";
  const auto j = run_ok(dir, "moe", yaml);
  ASSERT_TRUE(j.is_object());
  EXPECT_GT(step_of(j), 0);
  EXPECT_GT(j["breakdown_mean_over_ranks"]["exposed_communication_s"]["ep"].get<double>(), 0);
  const auto& n = j["network"];
  EXPECT_GT(n["pause_time_s"].get<double>(), 0); // the all-to-alls congest: PFC acts
  EXPECT_EQ(n["overflow_bytes"].get<double>(), 0.0);
  const auto& f = j["flows"];
  EXPECT_GT(f["wire_bytes_sent"].get<double>(), 0);
  EXPECT_NEAR(f["wire_bytes_sent"].get<double>(), f["wire_bytes_received"].get<double>(),
              1e-9 * f["wire_bytes_sent"].get<double>());
}

// queue_steps names adaptive or fixed, and only where a queue is modelled.
TEST(CliCoupled, BadQueueStepsAreRefused)
{
  const fs::path dir = temp_dir("coupled_bad_steps");
  struct Bad {
    std::string name, network, message;
  };
  for (const Bad& b :
       {Bad{"word", "{backend: fluid, cc: dcqcn, queue_steps: sometimes}", "is neither adaptive nor fixed"},
        Bad{"no_queue", "{backend: fluid, queue_steps: fixed}", "no queue is modelled"}}) {
    const fs::path file = dir / (b.name + ".yaml");
    std::ofstream(file) << step_yaml(2, kRail, b.network, "communication: coupled");
    const auto r = run_cli("run " + shell_quote(file.string()) + " --out " + shell_quote((dir / b.name).string()));
    EXPECT_EQ(r.exit_code, 2) << b.name << "\n" << r.output;
    EXPECT_NE(r.output.find(b.message), std::string::npos) << r.output;
    EXPECT_NE(r.output.find("queue_steps"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir / b.name / "summary.json")) << b.name;
  }
}

namespace {

/// Two 64-GPU jobs on a 16-node 2:1 fat tree (two nodes per leaf): `placement` for both.
std::string jobs_yaml(const std::string& placement, const std::string& extra_job = "")
{
  const std::string model = "      model: {layers: 8, hidden: 4096, heads: 32, kv_heads: 8, ffn_hidden: 14336, "
                            "gated_mlp: true, seq_length: 4096, vocab: 32000}\n";
  auto job = [&](const std::string& name, const std::string& parallel) {
    return "  - name: " + name + "\n    gpus: 64\n    placement: " + placement +
           "\n    workload:\n      generator: megatron\n" + model + "      parallel: " + parallel +
           "\n      training: {micro_batch: 1, global_batch: 16, recompute: selective}\n";
  };
  return "name: two_jobs\nseed: 7\ncluster:\n  " + kFat2to1 +
         "\n  nodes: 16\n  gpus_per_node: 8\n  nic: {bandwidth: 400 Gb/s, latency: 1 us}\n"
         "network: {backend: fluid, ecmp: per_qp}\nnccl: {system: dgx_h100}\nprofile: " +
         (fs::path(RAILYARD_SOURCE_DIR) / "calibration/profiles/dgx_h100_ib_ndr.yaml").string() + "\njobs:\n" +
         job("a", "{tp: 8, pp: 2, dp: 4, zero: 1}") + job("b", "{tp: 8, pp: 1, dp: 8, zero: 1}") + extra_job;
}

} // namespace

// Several jobs on one fabric. Contiguous (or leaf-aligned) jobs hold whole leaves of their own: no link carries both
// jobs' traffic (a leaf's uplinks carry what leaves it, a spine's downlink what enters that leaf), so each runs as it
// does alone, slowdown 1 to rounding. Scattered on the same nodes count, they share leaves and their uplinks: each
// is slower than alone. Each job's step is its own GPUs' first start to last end.
TEST(CliCoupled, SeveralJobsOnOneFabric)
{
  const fs::path dir = temp_dir("coupled_jobs");
  for (const std::string placement : {"contiguous", "rail_aligned"}) {
    const auto j = run_ok(dir, placement, jobs_yaml(placement));
    ASSERT_TRUE(j.is_object()) << placement;
    ASSERT_EQ(j["jobs"].size(), 2u);
    EXPECT_EQ(j["jobs"][0]["nodes"], nlohmann::json({0, 1, 2, 3, 4, 5, 6, 7})) << placement;
    EXPECT_EQ(j["jobs"][1]["nodes"], nlohmann::json({8, 9, 10, 11, 12, 13, 14, 15})) << placement;
    for (const auto& job : j["jobs"]) {
      EXPECT_EQ(job["placement"], placement);
      EXPECT_NEAR(job["slowdown"].get<double>(), 1.0, 1e-9) << placement << " " << job["name"];
    }
    // The step is the longer job's.
    EXPECT_NEAR(j["step_time_s"].get<double>(),
                std::max(j["jobs"][0]["step_time_s"].get<double>(), j["jobs"][1]["step_time_s"].get<double>()), 1e-12);
  }
  const auto s = run_ok(dir, "scattered", jobs_yaml("scattered"));
  ASSERT_TRUE(s.is_object());
  std::set<int> nodes;
  for (const auto& job : s["jobs"]) {
    EXPECT_GT(job["slowdown"].get<double>(), 1.01) << job["name"];
    for (const auto& n : job["nodes"])
      EXPECT_TRUE(nodes.insert(n.get<int>()).second) << "node " << n << " given twice";
  }
  EXPECT_EQ(nodes.size(), 16u);
  // Same scenario and seed, same placement and times.
  const auto again = run_ok(dir, "scattered_again", jobs_yaml("scattered"));
  EXPECT_EQ(again["jobs"], s["jobs"]);
}

TEST(CliCoupled, BadJobsAreRefused)
{
  const fs::path dir = temp_dir("coupled_bad_jobs");
  struct Bad {
    std::string name, yaml, message;
  };
  std::string odd = jobs_yaml("contiguous");
  odd.replace(odd.find("gpus: 64"), 8, "gpus: 60");
  const std::string third = "  - name: c\n    gpus: 8\n    workload: {generator: megatron, model: {layers: 2, hidden: "
                            "1024, heads: 8, seq_length: 1024, vocab: 32000}, parallel: {tp: 8}, training: "
                            "{global_batch: 1}}\n";
  std::string placement = jobs_yaml("contiguous");
  placement.replace(placement.find("placement: contiguous"), 21, "placement: packed");
  // One node for the first job leaves no 15 free nodes starting at a leaf group boundary (every 2 nodes) for the
  // second.
  std::string unaligned = jobs_yaml("contiguous");
  unaligned.replace(unaligned.find("gpus: 64"), 8, "gpus: 8");
  unaligned.replace(unaligned.find("gpus: 64"), 8, "gpus: 120");
  unaligned.replace(unaligned.rfind("placement: contiguous"), 21, "placement: rail_aligned");
  for (const Bad& b : {Bad{"odd", odd, "not a positive multiple of the cluster's 8 GPUs per node"},
                       Bad{"too_many", jobs_yaml("contiguous", third), "more than the cluster's 128"},
                       Bad{"placement", placement, "unknown placement 'packed'"},
                       Bad{"unaligned", unaligned, "needs 15 free nodes starting at a leaf group boundary (every 2"}}) {
    const fs::path file = dir / (b.name + ".yaml");
    std::ofstream(file) << b.yaml;
    const auto r = run_cli("run " + shell_quote(file.string()) + " --out " + shell_quote((dir / b.name).string()));
    EXPECT_EQ(r.exit_code, 2) << b.name << "\n" << r.output;
    EXPECT_NE(r.output.find(b.message), std::string::npos) << b.name << "\n" << r.output;
    EXPECT_NE(r.output.find(file.string()), std::string::npos) << b.name << ": the message names the file";
  }
}
