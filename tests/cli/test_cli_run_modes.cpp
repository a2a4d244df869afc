// Every documented mode of `railyard run` with a workload, through the binary: each communication model on a
// generated step and on a real trace of every kind, `flows` on every backend, the profile's collective costs, and the
// replay switches. The lists of names come from the parser itself (sim::kCommModels, sim::kBackends,
// scn::kTraceFormats): a mode added there without a case here fails RunModes.EveryListedModeHasACase.
//
// Expectations follow from the execution rules (sim/README.md, "Workload replay"), not from earlier outputs:
// - ideal makes every communication op free and changes nothing else, so no step is shorter than ideal's;
// - without congestion control the fluid backend and SimGrid's max-min solver give the same transfer times
//   (DESIGN.md: "On every case that both can run without CC, the two must agree"), so flows agrees on both;
// - dropping dependencies (host launch times, inferred cross-stream edges) can only let ops start earlier.
#include "cli_support.hpp"

#include "railyard/scenario/workload_spec.hpp"
#include "railyard/sim/replay.hpp"
#include "railyard/sim/simulation.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace scn = railyard::scenario;

using namespace railyard;
using namespace railyard::test;

namespace {

const std::string kTraces = std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces";
const std::string kProfile = std::string(RAILYARD_SOURCE_DIR) + "/calibration/profiles/dgx_h100_ib_ndr.yaml";

// A DGX H100-like cluster of `gpus` GPUs: one NVSwitch node, or 8-GPU nodes on a rail-optimized fabric.
std::string cluster_yaml(int gpus)
{
  std::string s = "cluster:\n";
  if (gpus <= 8)
    s += "  kind: single_node\n  nodes: 1\n  gpus_per_node: " + std::to_string(gpus) + "\n";
  else
    s += "  kind: rail_optimized\n  nodes: " + std::to_string(gpus / 8) + "\n  gpus_per_node: 8\n";
  s += "  node: {nvlink_bandwidth: 370.8 GB/s, nvlink_latency: 0.5 us, pcie_bandwidth: 64 GB/s}\n"
       "  nic: {bandwidth: 400 Gb/s, latency: 1 us}\n";
  if (gpus > 8)
    s += "  fabric: {leaf_downlinks: 32, oversubscription: 1, link_bandwidth: 400 Gb/s, link_latency: 0.6 us}\n";
  return s + "nccl: {system: dgx_h100}\nprofile: " + kProfile + "\n";
}

struct Source {
  int gpus;
  std::string workload; ///< the `workload:` section without its `replay:` entry
};

// One small case per workload source: a generated Megatron step and one real trace of every kind
// (tests/data/traces/README.md has their provenance).
const std::map<std::string, Source>& sources()
{
  static const std::map<std::string, Source> s{
      {"megatron",
       {16, "workload:\n  generator: megatron\n  model: {layers: 2, hidden: 1024, heads: 16, seq_length: 512, vocab: "
            "8192}\n  parallel: {tp: 8, pp: 1, dp: 2}\n  training: {micro_batch: 1, global_batch: 4, recompute: "
            "none, dtype: bf16}\n"}},
      {"chakra",
       {8, "workload:\n  trace: chakra\n  path: " + kTraces +
               "/chakra_et/astrasim_custom_ring_allreduce_8npus_1MB/custom_allreduce\n"}},
      {"kineto",
       {8, "workload:\n  trace: kineto\n  path: " + kTraces + "/kineto/param_dlrm_8rank_v100/dlrm_kineto.tar.gz\n"}},
      {"simai", {8, "workload:\n  trace: simai\n  path: " + kTraces + "/simai/SimAI_example/microAllReduce.txt\n"}},
      {"astrasim1",
       {8,
        "workload:\n  trace: astrasim1\n  path: " + kTraces + "/astrasim1_text/microAllReduce.txt\n  world_size: 8\n"}},
      {"aicb",
       {128, "workload:\n  trace: aicb\n  path: " + kTraces +
                 "/simai/aicb_physical_model_workload/L7B-M1-C04_Llama7B_megatron_tp2_pp1_mbs1.csv\n"}},
  };
  return s;
}

std::vector<std::string> source_names()
{
  std::vector<std::string> names;
  for (const auto& [name, s] : sources())
    names.push_back(name);
  return names;
}

struct RunOutcome {
  CliResult cli;
  nlohmann::json summary;
  int max_collectives_per_rank = 0; ///< from trace.json, over its ranks (the first rank of every distinct program)
};

class RunModes : public ::testing::Test {
protected:
  void SetUp() override { dir_ = temp_dir("run_modes_" + std::to_string(++count_)); }
  void TearDown() override { fs::remove_all(dir_); }

  RunOutcome run(const std::string& name, const std::string& scenario, const std::string& extra_args = "")
  {
    const fs::path file = dir_ / (name + ".yaml");
    std::ofstream(file) << "name: " << name << "\nseed: 1\n" << scenario;
    const fs::path out = dir_ / ("out_" + name);
    RunOutcome r;
    r.cli = run_cli("run " + file.string() + " --out " + out.string() + " " + extra_args);
    if (r.cli.exit_code == 0 && fs::exists(out / "summary.json"))
      r.summary = nlohmann::json::parse(read_file(out / "summary.json"));
    if (r.cli.exit_code == 0 && fs::exists(out / "trace.json")) {
      std::map<int, int> per_rank;
      const nlohmann::json trace = nlohmann::json::parse(read_file(out / "trace.json"));
      for (const auto& e : trace.at("traceEvents"))
        if (e.value("cat", "") == "collective") ++per_rank[e["pid"].get<int>()];
      for (const auto& [rank, n] : per_rank)
        r.max_collectives_per_rank = std::max(r.max_collectives_per_rank, n);
    }
    return r;
  }

  // Runs `source` with `replay` (the entries of workload.replay) and `network` (a network: section or "").
  RunOutcome run_source(const std::string& source, const std::string& replay, const std::string& network = "")
  {
    const Source& s = sources().at(source);
    std::string name = source + "_" + replay + network;
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return run(name, cluster_yaml(s.gpus) + network + s.workload + "  replay: {" + replay + "}\n");
  }

  static void expect_complete(const RunOutcome& r, const std::string& what)
  {
    ASSERT_EQ(r.cli.exit_code, 0) << what << "\n" << r.cli.output;
    ASSERT_TRUE(r.summary.is_object()) << what << ": no summary.json";
    EXPECT_EQ(r.summary["status"], "complete") << what;
    // A trace of communication alone takes no time when communication is free; otherwise time passes.
    if (r.summary["communication"] == "ideal")
      EXPECT_GE(r.summary["step_time_s"].get<double>(), 0) << what;
    else
      EXPECT_GT(r.summary["step_time_s"].get<double>(), 0) << what;
    // Every op of every traced rank ran: the replay ends only when the graphs are exhausted.
    EXPECT_EQ(r.summary["ops_executed"], r.summary["workload"]["ops"]) << what;
  }

  fs::path dir_;
  static inline int count_ = 0;
};

std::string expected_collective_model(sim::CommModel m)
{
  switch (m) {
  case sim::CommModel::Flows:
    return "flows";
  case sim::CommModel::Analytical:
    return "schedule";
  case sim::CommModel::Ideal:
    return "none";
  case sim::CommModel::Coupled:
    return "coupled";
  }
  return "?";
}

TEST_F(RunModes, EveryListedModeHasACase)
{
  for (std::string_view f : scn::kTraceFormats)
    EXPECT_TRUE(sources().count(std::string(f))) << "trace format '" << f << "' has no CLI case here: add one";
  EXPECT_EQ(sim::kCommModels.size(), 4u) << "a communication model was added: give it its expectations below";
  EXPECT_EQ(sim::kBackends.size(), 2u) << "a backend was added: run flows on it below";
}

class EverySource : public RunModes, public ::testing::WithParamInterface<std::string> {};

TEST_P(EverySource, EveryCommunicationModelRunsAndIdealIsTheFloor)
{
  const std::string source = GetParam();
  {
    std::map<std::string, double> step;
    int collectives_per_rank = 0;
    for (sim::CommModel m : sim::kCommModels) {
      const std::string model = sim::to_string(m);
      for (sim::Backend b : sim::kBackends) {
        // Only flows moves bytes on a network; the other models run on the event loop whatever the backend.
        if (m != sim::CommModel::Flows && b != sim::Backend::SimGrid) continue;
        const std::string backend = sim::to_string(b);
        const std::string what = source + " / " + model + " / " + backend;
        const RunOutcome r = run_source(source, "communication: " + model, "network: {backend: " + backend + "}\n");
        expect_complete(r, what);
        if (HasFatalFailure()) return;
        EXPECT_EQ(r.summary["communication"], model) << what;
        EXPECT_EQ(r.summary["backend"], backend) << what;
        EXPECT_EQ(r.summary["collective_model"]["model"], expected_collective_model(m)) << what;
        step[m == sim::CommModel::Flows ? model + "/" + backend : model] = r.summary["step_time_s"].get<double>();
        collectives_per_rank = std::max(collectives_per_rank, r.max_collectives_per_rank);
      }
    }
    const double ideal = step.at("ideal");
    for (const auto& [k, t] : step)
      EXPECT_GE(t, ideal * (1 - 1e-12)) << source << ": " << k << " is shorter than free communication";
    // The backends agree on every transfer's arrival; they differ on when a sender sees its send complete: SimGrid
    // completes the sender's comm after the base latency every route reports to it (two NVLink hops, 2 x 0.5 us;
    // sim/README.md, "The simgrid backend"), the fluid network when the last byte has left. A rank whose last op of
    // a collective is a send (a tree's root) ends up to that much later on SimGrid, at most once per collective on
    // the step's critical path.
    const double base_latency_s = 2 * 0.5e-6;
    EXPECT_NEAR(step.at("flows/fluid"), step.at("flows/simgrid"),
                1e-6 * step.at("flows/simgrid") + collectives_per_rank * base_latency_s)
        << source << ": the two backends disagree without congestion control";
  }
}

INSTANTIATE_TEST_SUITE_P(RunModes, EverySource, ::testing::ValuesIn(source_names()),
                         [](const auto& info) { return info.param; });

TEST_F(RunModes, ProfileCollectiveCostsAreReportedPerDistinctCall)
{
  const RunOutcome r = run_source("megatron", "communication: analytical, collective_model: profile");
  expect_complete(r, "collective_model: profile");
  const auto& cm = r.summary["collective_model"];
  EXPECT_EQ(cm["model"], "profile");
  EXPECT_EQ(cm["profile_file"], kProfile);
  ASSERT_GT(cm["distinct_calls"].get<int>(), 0);
  EXPECT_EQ(cm["timed_by_profile_fit"].get<int>() + cm["timed_by_schedule"].get<int>(),
            cm["distinct_calls"].get<int>());
  EXPECT_EQ(cm["calls"].size(), cm["distinct_calls"].get<std::size_t>());
}

TEST_F(RunModes, DroppingHostLaunchesOrInferredEdgesNeverLengthensAStep)
{
  for (const std::string model : {"analytical", "flows"}) {
    const RunOutcome pinned = run_source("kineto", "communication: " + model + ", host_launch: recorded");
    const RunOutcome free = run_source("kineto", "communication: " + model + ", host_launch: off");
    expect_complete(pinned, model + " host_launch: recorded");
    expect_complete(free, model + " host_launch: off");
    if (HasFatalFailure()) return;
    EXPECT_LE(free.summary["step_time_s"].get<double>(), pinned.summary["step_time_s"].get<double>() * (1 + 1e-12))
        << model;
  }
  const Source& k = sources().at("kineto");
  const std::string base = cluster_yaml(k.gpus) + k.workload;
  const RunOutcome inferred =
      run("inferred", base + "  infer_cross_stream_deps: true\n  replay: {communication: analytical}\n");
  const RunOutcome plain =
      run("plain", base + "  infer_cross_stream_deps: false\n  replay: {communication: analytical}\n");
  expect_complete(inferred, "infer_cross_stream_deps: true");
  expect_complete(plain, "infer_cross_stream_deps: false");
  if (HasFatalFailure()) return;
  EXPECT_LE(plain.summary["step_time_s"].get<double>(), inferred.summary["step_time_s"].get<double>() * (1 + 1e-12));
}

TEST_F(RunModes, ProfileTimedComputeAndTraceRanksAreHonoured)
{
  // measured_durations: false times the trace's kernels by the profile's roofline instead of their recorded length.
  const RunOutcome roofline = run_source("kineto", "communication: analytical, measured_durations: false");
  const RunOutcome measured = run_source("kineto", "communication: analytical, measured_durations: true");
  expect_complete(roofline, "measured_durations: false");
  expect_complete(measured, "measured_durations: true");
  if (HasFatalFailure()) return;
  EXPECT_NE(roofline.summary["step_time_s"].get<double>(), measured.summary["step_time_s"].get<double>());

  const RunOutcome some = run_source("kineto", "communication: analytical, trace_ranks: [0, 3]");
  expect_complete(some, "trace_ranks: [0, 3]");
  if (HasFatalFailure()) return;
  EXPECT_EQ(some.summary["traced_ranks"], nlohmann::json::array({0, 3}));
}

TEST_F(RunModes, SeedOptionOverridesTheScenario)
{
  const Source& s = sources().at("megatron");
  const RunOutcome r = run("seed", cluster_yaml(s.gpus) + s.workload + "  replay: {communication: analytical}\n",
                           "--seed 18446744073709551615");
  expect_complete(r, "--seed");
  EXPECT_EQ(r.summary["seed"].get<std::uint64_t>(), 18446744073709551615ull);
}

} // namespace
