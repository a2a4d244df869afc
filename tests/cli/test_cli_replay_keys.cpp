// replay keys through `railyard run`: replay.nccl_sms (the SMs a GEMM loses to NCCL's kernels beside it).
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

// Mean compute seconds per rank of one step of a small GPT on a DGX A100 (its profile has a `gemm:` block, so GEMMs
// are timed by waves of tiles over the SMs), tp 2 and dp 4: the gradient all-reduces of the DP buckets run on their
// own stream beside the backward GEMMs.
double compute_s(const fs::path& dir, const std::string& replay)
{
  const fs::path file = dir / "step.yaml";
  std::ofstream(file) << "name: step\n"
                         "cluster: {kind: single_node, gpus_per_node: 8}\n"
                         "profile: " +
                             kSource +
                             "/calibration/profiles/dgx_a100_ib_hdr.yaml\n"
                             "workload:\n"
                             "  generator: megatron\n"
                             "  model: {layers: 4, hidden: 2048, heads: 16, seq_length: 1024, vocab: 32768}\n"
                             "  parallel: {tp: 2, zero: 0, bucket_params: 1e6}\n"
                             "  training: {global_batch: 16, micro_batch: 2}\n"
                             "  replay: " +
                             replay + "\n";
  const fs::path out = dir / "out";
  fs::remove_all(out);
  const CliResult r = run_cli("run " + file.string() + " --out " + out.string());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return -1;
  return nlohmann::json::parse(read_file(out / "summary.json"))["breakdown_mean_over_ranks"]["compute_s"].get<double>();
}

// With `ideal` communication every collective takes no time, so no GEMM ever runs beside one: its compute time is the
// kernel model's with all SMs. nccl_sms: false must give exactly that under analytical communication too, and the
// default (true) more, since backward GEMMs overlap the DP all-reduces and lose one SM per NCCL channel.
TEST(ReplayKeys, NcclSmsFalseGivesEveryGemmAllItsSms)
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

} // namespace
