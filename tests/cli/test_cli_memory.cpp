// The memory model through `railyard run`: a layout that does not fit the GPU is refused with the breakdown and the
// changes that fit (exit 2); summary.json's gpu_memory follows the per-parameter formulas of Megatron's distributed
// optimizer; training.memory_check and training.memory_limit_GiB.
#include "cli_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

namespace fs = std::filesystem;
using railyard::test::CliResult;
using railyard::test::read_file;
using railyard::test::run_cli;

namespace {

const std::string kSource = RAILYARD_SOURCE_DIR;

class Memory : public railyard::test::TempDirTest {
protected:
  // One DGX H100 (8 GPUs) and a model given as `model`, `parallel` and `training` flow maps.
  std::string write(const std::string& name, const std::string& model, const std::string& parallel,
                    const std::string& training)
  {
    const fs::path p = dir_ / name;
    std::ofstream(p) << "name: memory\n"
                        "cluster: {kind: single_node, gpus_per_node: 8}\n"
                        "profile: " +
                            kSource +
                            "/calibration/profiles/dgx_h100_ib_ndr.yaml\n"
                            "workload:\n"
                            "  generator: megatron\n"
                            "  model: " +
                            model +
                            "\n"
                            "  parallel: " +
                            parallel +
                            "\n"
                            "  training: " +
                            training +
                            "\n"
                            "  replay: {communication: analytical}\n";
    return p.string();
  }
  CliResult run(const std::string& file, const std::string& out)
  {
    return run_cli("run " + file + " --out " + (dir_ / out).string());
  }
};

// A 7B-class model (32 layers, hidden 4096): 6.7e9 parameters. Plain data parallelism keeps 18 bytes per parameter
// (bf16 weights, fp32 gradients, Adam's fp32 master weights and moments: Megatron's distributed-optimizer table), 121
// GB per GPU against the H100's 81559 MiB; the distributed optimizer over 8 ranks keeps 6 + 12/8 = 7.5.
const std::string k7B = "{layers: 32, hidden: 4096, heads: 32, seq_length: 2048, vocab: 32000}";

TEST_F(Memory, ALayoutThatDoesNotFitIsRefusedWithItsBreakdownAndTheFix)
{
  const std::string file = write("ddp.yaml", k7B, "{tp: 1, zero: 0}", "{global_batch: 8}");
  const CliResult r = run(file, "out");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  for (const char* want :
       {"does not fit in GPU memory", "pipeline stage 0", "weights", "gradients", "optimizer states", "activations",
        "NCCL buffers", "NVIDIA H100 80GB HBM3", "79.6 GiB", "parallel.zero: 1", "training.memory_check: false"})
    EXPECT_NE(r.output.find(want), std::string::npos) << want << "\n" << r.output;
  // The message points at the training section of the scenario (file and line).
  EXPECT_NE(r.output.find("ddp.yaml:8"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "summary.json"));
  // 18 bytes per parameter: at least 6.4e9 x 18 bytes (the layers alone, 12 l h^2) exceed the 81559 MiB.
  EXPECT_GT(6.4e9 * 18, 81559.0 * 1024 * 1024);
}

TEST_F(Memory, MemoryCheckFalseRunsItAndSaysItDoesNotFit)
{
  const std::string file = write("ddp.yaml", k7B, "{tp: 1, zero: 0}", "{global_batch: 8, memory_check: false}");
  const CliResult r = run(file, "out");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.out.find("DOES NOT FIT"), std::string::npos) << r.out;
  const auto j = nlohmann::json::parse(read_file(dir_ / "out" / "summary.json"));
  const auto& g = j["gpu_memory"][0];
  EXPECT_FALSE(g["checked"].get<bool>());
  EXPECT_GT(g["peak_bytes"].get<double>(), g["capacity_bytes"].get<double>());
}

TEST_F(Memory, SummaryFollowsTheDistributedOptimizerFormulas)
{
  // tp 2, dp 4, ZeRO-1 (Megatron's distributed optimizer): weights 2 P, gradients 4 P, optimizer states 12 P / 4.
  const std::string file = write("small.yaml", "{layers: 2, hidden: 512, heads: 8, seq_length: 256, vocab: 1024}",
                                 "{tp: 2, zero: 1}", "{global_batch: 8}");
  const CliResult r = run(file, "out");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(read_file(dir_ / "out" / "summary.json"));
  const auto& g = j["gpu_memory"][0];
  EXPECT_TRUE(g["checked"].get<bool>());
  // The H100's capacity as nvidia-smi reports it.
  EXPECT_EQ(g["capacity_bytes"].get<double>(), 81559.0 * 1024 * 1024);
  const auto& s = g["stages"][0];
  const double P = s["parameters"].get<double>();
  // 2 layers of 12 h^2 / tp + the embedding and the LM head, V h / tp each (untied), plus layernorms.
  const double h = 512, V = 1024;
  EXPECT_NEAR(P, 2 * 12 * h * h / 2 + 2 * V * h / 2, 0.01 * P);
  EXPECT_DOUBLE_EQ(s["weight_bytes"].get<double>(), 2 * P);
  EXPECT_DOUBLE_EQ(s["gradient_bytes"].get<double>(), 4 * P);
  EXPECT_DOUBLE_EQ(s["optimizer_bytes"].get<double>(), 12 * P / 4);
  // NCCL's buffers: a whole number of connections of LL 512 KiB + LL128 4,915,200 bytes + Simple 4 MiB (NCCL's
  // defaults), at least one channel for each of the rank's two communicators (tp and dp).
  const double conn = 524288.0 + 4915200.0 + 4194304.0;
  const double nccl = s["nccl_buffer_bytes"].get<double>();
  EXPECT_GE(nccl, 2 * conn);
  EXPECT_DOUBLE_EQ(std::fmod(nccl, conn), 0.0);
  const double parts = s["weight_bytes"].get<double>() + s["gradient_bytes"].get<double>() +
                       s["optimizer_bytes"].get<double>() + s["activation_bytes"].get<double>() + nccl;
  EXPECT_DOUBLE_EQ(s["total_bytes"].get<double>(), parts);
  EXPECT_DOUBLE_EQ(g["peak_bytes"].get<double>(), parts);
  EXPECT_NE(r.out.find("memory per GPU: peak"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("of 79.6 GiB"), std::string::npos) << r.out;
}

TEST_F(Memory, MemoryLimitReplacesTheGpusCapacity)
{
  const std::string small = "{layers: 2, hidden: 512, heads: 8, seq_length: 256, vocab: 1024}";
  CliResult r = run(write("tight.yaml", small, "{tp: 2}", "{global_batch: 8, memory_limit_GiB: 0.01}"), "out");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("training.memory_limit_GiB offers 0.0 GiB"), std::string::npos) << r.output;
  r = run(write("bad.yaml", small, "{tp: 2}", "{global_batch: 8, memory_limit_GiB: -1}"), "out2");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("memory_limit_GiB must be a positive number"), std::string::npos) << r.output;
}

} // namespace
