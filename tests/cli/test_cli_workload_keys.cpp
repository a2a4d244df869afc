// Workload keys through `railyard run`: replay.nccl_sms (the SMs a GEMM loses to NCCL's kernels beside it), the
// uneven pipeline split (parallel.first_stage_layers / last_stage_layers).
#include "cli_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using railyard::test::CliResult;
using railyard::test::read_file;
using railyard::test::run_cli;

namespace {

const std::string kSource = RAILYARD_SOURCE_DIR;

// A generated step on one DGX A100 (its profile has a `gemm:` block): the workload's model, parallel, training and
// replay flow maps as given. Returns the file.
std::string a100_step(const fs::path& dir, const std::string& model, const std::string& parallel,
                      const std::string& training, const std::string& replay)
{
  const fs::path file = dir / "step.yaml";
  std::ofstream(file) << "name: step\n"
                         "cluster: {kind: single_node, gpus_per_node: 8}\n"
                         "profile: " +
                             kSource +
                             "/calibration/profiles/dgx_a100_ib_hdr.yaml\n"
                             "workload:\n"
                             "  generator: megatron\n"
                             "  model: " +
                             model + "\n  parallel: " + parallel + "\n  training: " + training +
                             "\n  replay: " + replay + "\n";
  return file.string();
}

// Mean compute seconds per rank of one step of a small GPT on the DGX A100 (GEMMs timed by waves of tiles over the
// SMs), tp 2 and dp 4: the gradient all-reduces of the DP buckets run on their own stream beside the backward GEMMs.
double compute_s(const fs::path& dir, const std::string& replay)
{
  const std::string file =
      a100_step(dir, "{layers: 4, hidden: 2048, heads: 16, seq_length: 1024, vocab: 32768}",
                "{tp: 2, zero: 0, bucket_params: 1e6}", "{global_batch: 16, micro_batch: 2}", replay);
  const fs::path out = dir / "out";
  fs::remove_all(out);
  const CliResult r = run_cli("run " + file + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return -1;
  return nlohmann::json::parse(read_file(out / "summary.json"))["breakdown_mean_over_ranks"]["compute_s"].get<double>();
}

// With `ideal` communication every collective takes no time, so no GEMM ever runs beside one: its compute time is the
// kernel model's with all SMs. nccl_sms: false must give exactly that under analytical communication too, and the
// default (true) more, since backward GEMMs overlap the DP all-reduces and lose one SM per NCCL channel.
TEST(WorkloadKeys, NcclSmsFalseGivesEveryGemmAllItsSms)
{
  const fs::path dir = railyard::test::temp_dir("replay_nccl_sms");
  const double ideal = compute_s(dir, "{communication: ideal}");
  const double off = compute_s(dir, "{communication: analytical, nccl_sms: false}");
  const double on = compute_s(dir, "{communication: analytical}");
  ASSERT_GT(ideal, 0);
  EXPECT_NEAR(off, ideal, 1e-12 * ideal);
  EXPECT_GT(on, ideal * (1 + 1e-6));
  // A value that is not a boolean is refused naming the key.
  const fs::path bad = dir / "bad.yaml";
  std::string text = read_file(dir / "step.yaml");
  text.replace(text.find("  replay:"), std::string::npos, "  replay: {nccl_sms: sometimes}\n");
  std::ofstream(bad) << text;
  const CliResult r = run_cli("run " + bad.string() + " --out " + (dir / "bad").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("nccl_sms"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

// Llama 3 405B ran 126 layers on 16 stages with one layer fewer on the first and last (Megatron-core's
// decoder_first/last_pipeline_num_layers). Here 14 layers on 4 stages as 3, 4, 4, 3: the notes say so, and the memory
// model's parameters per stage follow 12 h^2 + 4 h per layer (tp 1; weights of the linear layers and layernorms) plus
// the embedding's V h on the first stage and the LM head's V h + 2 h on the last.
TEST(WorkloadKeys, FirstAndLastStageLayers)
{
  const fs::path dir = railyard::test::temp_dir("stage_layers");
  auto scenario = [&](const std::string& parallel) {
    return a100_step(dir, "{layers: 14, hidden: 1024, heads: 16, seq_length: 512, vocab: 32768}", parallel,
                     "{global_batch: 8}", "{communication: analytical}");
  };
  const fs::path out = dir / "out";
  CliResult r = run_cli("run " + scenario("{tp: 1, pp: 4, first_stage_layers: 3, last_stage_layers: 3}") + " --out " +
                        out.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(read_file(out / "summary.json"));
  bool noted = false;
  for (const auto& n : j["workload"]["notes"])
    noted |= n.get<std::string>().find("layers per pipeline stage: 3, 4, 4, 3") != std::string::npos;
  EXPECT_TRUE(noted) << j["workload"]["notes"];
  const double h = 1024, V = 32768, layer = 12 * h * h + 4 * h;
  const double want[] = {3 * layer + V * h, 4 * layer, 4 * layer, 3 * layer + V * h + 2 * h};
  const auto& stages = j["gpu_memory"][0]["stages"];
  ASSERT_EQ(stages.size(), 4u);
  for (int s = 0; s < 4; ++s)
    EXPECT_DOUBLE_EQ(stages[s]["parameters"].get<double>(), want[s]) << "stage " << s;
  // Interleaving with an uneven split is refused naming the key.
  r = run_cli("run " + scenario("{tp: 1, pp: 4, virtual_stages: 2, first_stage_layers: 2}") + " --out " +
              (dir / "bad").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("first_stage_layers"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

} // namespace
