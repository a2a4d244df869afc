// A traced step's what-ifs through the binary (issue 16): replay.host_launch (model, recorded, off),
// replay.collectives: measured with workload.recorded_on, the summary's host block and breakdown.csv's host-bound
// column, and the bad input of each key: exit 2 naming the file, line and field.
#include "cli_support.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

using namespace railyard::test;

namespace {

const std::string kControl =
    std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces/kineto/hta/trace_diff_control/control.json.gz";

// HTA's control trace: rank 3 of an 8-GPU A100 job, replayed on an 8-GPU node of `GBps` NVLink; `extra` goes into
// workload:, `replay` into replay:.
std::string scenario(double GBps, const std::string& replay, const std::string& extra = "")
{
  return "name: whatif\nseed: 1\ncluster:\n  kind: single_node\n  nodes: 1\n  gpus_per_node: 8\n"
         "  node: {nvlink_bandwidth: " +
         std::to_string(GBps) + " GB/s}\nnccl: {system: dgx_a100}\nworkload:\n  trace: kineto\n  path: " + kControl +
         "\n" + extra + "  replay: {" + replay + "}\n";
}

const std::string kRecordedOn =
    "  recorded_on: {kind: single_node, nodes: 1, gpus_per_node: 8, node: {nvlink_bandwidth: 150 GB/s}}\n";

} // namespace

class CliTraceWhatIf : public TempDirTest {
protected:
  nlohmann::json run_ok(const std::string& name, const std::string& yaml)
  {
    write(name + ".yaml", yaml);
    const CliResult r = run_cli("run " + name + ".yaml --out " + name, "", dir_.string());
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::ifstream in(dir_ / name / "summary.json");
    if (!in) return {};
    return nlohmann::json::parse(in);
  }
  void expect_refused(const std::string& yaml, const std::string& field, const std::string& words)
  {
    write("bad.yaml", yaml);
    const CliResult r = run_cli("run bad.yaml --out bad", "", dir_.string());
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find("bad.yaml"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(field), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(words), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(dir_ / "bad" / "summary.json"));
  }
};

// Each mode runs and says so in the summary; host-bound time is part of idle time, in summary.json and per rank in
// breakdown.csv; the GPU alone has none and is no longer than either host mode. Half the NVLink bandwidth against
// the node the trace was recorded on lengthens the step with the host modelled, and at least as much as with the
// host pinned to its recorded launches (tests/sim/test_trace_host_model.cpp bounds it by the collectives' change).
TEST_F(CliTraceWhatIf, HostModesAndAMeasuredCollectivesWhatIf)
{
  std::map<std::string, nlohmann::json> s;
  for (const std::string mode : {"model", "recorded", "off"}) {
    s[mode] = run_ok(mode, scenario(150, "host_launch: " + mode + ", collectives: measured", kRecordedOn));
    if (HasFailure()) return;
    EXPECT_EQ(s[mode]["host"]["host_launch"], mode);
    const auto& b = s[mode]["breakdown_mean_over_ranks"];
    EXPECT_LE(b["host_bound_s"].get<double>(), b["idle_s"].get<double>());
    EXPECT_NEAR(s[mode]["host"]["host_bound_s_mean_over_ranks"].get<double>(), b["host_bound_s"].get<double>(), 1e-15);
    std::ifstream csv(dir_ / mode / "breakdown.csv");
    std::string header;
    std::getline(csv, header);
    EXPECT_NE(header.find(",idle_s,host_bound_s,"), std::string::npos) << header;
  }
  EXPECT_GT(s["model"]["host"]["host_bound_s_mean_over_ranks"].get<double>(), 0);
  EXPECT_EQ(s["off"]["host"]["host_bound_s_mean_over_ranks"].get<double>(), 0);
  EXPECT_LE(s["off"]["step_time_s"].get<double>(), s["model"]["step_time_s"].get<double>());
  EXPECT_EQ(s["model"]["communication"], "analytical"); // the one collectives: measured works with

  const auto half = run_ok("half", scenario(75, "host_launch: model, collectives: measured", kRecordedOn));
  const auto pinned = run_ok("pinned", scenario(75, "host_launch: recorded, collectives: measured", kRecordedOn));
  if (HasFailure()) return;
  const double grew = half["step_time_s"].get<double>() - s["model"]["step_time_s"].get<double>();
  const double grew_pinned = pinned["step_time_s"].get<double>() - s["recorded"]["step_time_s"].get<double>();
  EXPECT_GT(grew, 0);
  EXPECT_GE(grew, grew_pinned);
  // Without recorded_on the measured collectives stay as measured: the NVLink bandwidth moves nothing.
  const auto unmoved = run_ok("unmoved", scenario(75, "host_launch: model, collectives: measured"));
  if (HasFailure()) return;
  EXPECT_EQ(unmoved["step_time_s"].get<double>(), s["model"]["step_time_s"].get<double>());
}

TEST_F(CliTraceWhatIf, BadKeysAreRefusedNamingTheField)
{
  expect_refused(scenario(150, "host_launch: sometimes"), "replay.host_launch", "model");
  expect_refused(scenario(150, "collectives: guessed"), "replay.collectives", "measured");
  expect_refused(scenario(150, "communication: flows, collectives: measured"), "replay.collectives", "analytical");
  // The traced job had 8 GPUs: a recorded_on node of 4 cannot time its all-reduces at their recorded size.
  expect_refused(
      scenario(150, "collectives: measured",
               "  recorded_on: {kind: single_node, nodes: 1, gpus_per_node: 4, node: {nvlink_bandwidth: 150 GB/s}}\n"),
      "workload.recorded_on", "at least 8 GPUs");
  write("gen.yaml", "name: gen\ncluster: {kind: single_node, nodes: 1, gpus_per_node: 8}\nprofile: " +
                        std::string(RAILYARD_SOURCE_DIR) +
                        "/calibration/profiles/dgx_h100_ib_ndr.yaml\nworkload:\n  generator: megatron\n"
                        "  model: {layers: 2, hidden: 1024, heads: 16, seq_length: 512, vocab: 8192}\n"
                        "  parallel: {tp: 8, pp: 1, dp: 1}\n  training: {micro_batch: 1, global_batch: 4}\n"
                        "  replay: {collectives: measured}\n");
  const CliResult r = run_cli("run gen.yaml --out gen", "", dir_.string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("replay.collectives"), std::string::npos) << r.output;
}

// A trace on a bigger cluster: HTA's nccl_data (rank 0 of a 2-GPU DDP job) at 16 ranks on two 8-GPU nodes. The
// default group spans all 16 (notes say what was assumed); its all-reduces now cross the NICs, so communication takes
// longer than at 2 ranks on one node, and the step is no shorter. collectives: measured cannot grow the groups'
// measured times without recorded_on.
TEST_F(CliTraceWhatIf, ATraceOnABiggerCluster)
{
  const std::string hta =
      std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces/kineto/hta/nccl_parser_config/nccl_data.json.gz";
  auto yaml = [&](int nodes, int world, const std::string& replay) {
    return "name: bigger\nseed: 1\ncluster:\n  kind: " + std::string(nodes == 1 ? "single_node" : "rail_optimized") +
           "\n  nodes: " + std::to_string(nodes) +
           "\n  gpus_per_node: 8\n  nic: {bandwidth: 200 Gb/s}\n  fabric: {link_bandwidth: 200 Gb/s}\n"
           "nccl: {system: dgx_a100}\nworkload:\n  trace: kineto\n  path: " +
           hta + "\n  world_size: " + std::to_string(world) + "\n  replay: {" + replay + "}\n";
  };
  const auto two = run_ok("two", yaml(1, 2, "communication: analytical"));
  const auto sixteen = run_ok("sixteen", yaml(2, 16, "communication: analytical"));
  if (HasFailure()) return;
  EXPECT_EQ(two["workload"]["ranks"], 2);
  EXPECT_EQ(sixteen["workload"]["ranks"], 16);
  EXPECT_EQ(sixteen["workload"]["communicators"], 1);
  const auto dp = [](const nlohmann::json& s) {
    return s["breakdown_mean_over_ranks"]["communication_incl_overlapped_s"]["dp"].get<double>();
  };
  EXPECT_GT(dp(sixteen), dp(two));
  EXPECT_GE(sixteen["step_time_s"].get<double>(), two["step_time_s"].get<double>());
  bool noted = false;
  for (const auto& n : sixteen["workload"]["notes"])
    noted = noted || n.get<std::string>().find("8 replicas along data parallelism") != std::string::npos;
  EXPECT_TRUE(noted) << sixteen["workload"]["notes"];
  expect_refused(yaml(2, 16, "collectives: measured"), "workload.world_size", "recorded_on");
  expect_refused(yaml(2, 15, "communication: analytical"), "workload.world_size", "not a multiple");
}

// A Chakra trace on a bigger cluster: ASTRA-sim's T3D trace (8 ranks, 2 x 2 x 2, one all-reduce on each dimension's
// groups of 2 from comm_group.json) at 16 ranks: its 12 groups name no kind and are not the whole job, so each is
// copied into both replicas; the reader's world group (the whole job) becomes one group over both. Every rank still
// runs its three all-reduces.
TEST_F(CliTraceWhatIf, AChakraTraceOnABiggerCluster)
{
  const std::string t3d =
      std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces/chakra_et/astrasim_artifacts_T3D/trace";
  auto yaml = [&](int nodes, int world) {
    return "name: bigger\nseed: 1\ncluster:\n  kind: " + std::string(nodes == 1 ? "single_node" : "rail_optimized") +
           "\n  nodes: " + std::to_string(nodes) + "\n  gpus_per_node: 8\nworkload:\n  trace: chakra\n  path: " + t3d +
           "\n  world_size: " + std::to_string(world) + "\n  replay: {communication: analytical}\n";
  };
  const auto eight = run_ok("eight", yaml(1, 8));
  const auto sixteen = run_ok("sixteen", yaml(2, 16));
  if (HasFailure()) return;
  EXPECT_EQ(eight["workload"]["ranks"], 8);
  EXPECT_EQ(sixteen["workload"]["ranks"], 16);
  EXPECT_EQ(eight["workload"]["communicators"].get<int>(), 12 + 1);
  EXPECT_EQ(sixteen["workload"]["communicators"].get<int>(), 2 * 12 + 1);
  EXPECT_EQ(sixteen["ops_executed"].get<int>(), 2 * eight["ops_executed"].get<int>());
}
