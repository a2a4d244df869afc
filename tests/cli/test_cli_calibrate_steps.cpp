// `railyard calibrate --steps`: the framework's host costs fitted on measured training steps (vTrain's single-node
// A100 measurements, data/validation/vtrain_single), the fitted profile used by `railyard run`, and bad input.
// Expectations come from the published measurements (held-out rows) and from the run path agreeing with the fit's.
#include "cli_support.hpp"

#include "railyard/common/csv.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

namespace fs = std::filesystem;
using railyard::test::CliResult;
using railyard::test::read_file;
using railyard::test::run_cli;

namespace {

const std::string kData = std::string(RAILYARD_SOURCE_DIR) + "/data/validation/vtrain_single";

class CalibrateSteps : public railyard::test::TempDirTest {
protected:
  // The header and the first `n` rows of vTrain's file.
  std::string subset(int n)
  {
    std::ifstream in(kData + "/ground_truth_single.csv");
    std::string line, text;
    for (int i = 0; i <= n && std::getline(in, line); ++i)
      text += line + "\n";
    return write("steps.csv", text);
  }
};

double geomean_error(const std::vector<std::map<std::string, std::string>>& rows, const std::string& half,
                     const std::string& column)
{
  double sum = 0;
  int n = 0;
  for (const auto& r : rows)
    if (r.at("half") == half) {
      sum += std::abs(std::log(std::stod(r.at(column)) / std::stod(r.at("measured_s"))));
      ++n;
    }
  return std::exp(sum / n) - 1;
}

} // namespace

TEST_F(CalibrateSteps, FitsTheHostAndPredictsHeldOutMeasurements)
{
  const std::string steps = subset(80);
  const fs::path profile = dir_ / "fitted.yaml", predictions = dir_ / "pred.csv";
  const CliResult r =
      run_cli("calibrate --steps " + steps + " --scenario " + kData + "/a100_megatron_deepspeed.yaml --out " +
              profile.string() + " --predictions " + predictions.string() +
              " --framework Megatron-DeepSpeed --system vtrain_subset --description 'vTrain rows 2-81'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.out.find("with framework, held-out"), std::string::npos) << r.out;
  const auto rows = railyard::test::csv_rows(predictions);
  ASSERT_EQ(rows.size(), 80U);
  // Each row's measured time is the file's, in seconds; the error columns are simulated / measured - 1.
  const auto source = railyard::parse_csv(read_file(steps), steps);
  int fit = 0;
  for (const auto& row : rows) {
    const int line = std::stoi(row.at("line"));
    EXPECT_NEAR(std::stod(row.at("measured_s")), std::stod(source[line - 1].fields[10]) / 1e3, 1e-12);
    EXPECT_NEAR(std::stod(row.at("framework_error")),
                std::stod(row.at("framework_s")) / std::stod(row.at("measured_s")) - 1, 1e-12);
    fit += row.at("half") == "fit";
  }
  EXPECT_GT(fit, 25); // about half, by a hash of the line
  EXPECT_LT(fit, 55);
  // Measured steps of these small models are far slower than their kernels (the device alone is off by ~50%); the
  // host model fitted on the other rows brings the held-out rows to within 12% geometric mean (8% on all 1,440 rows:
  // ctest validation.vtrain_steps).
  const double device = geomean_error(rows, "held-out", "device_alone_s");
  const double framework = geomean_error(rows, "held-out", "framework_s");
  EXPECT_GT(device, 0.3);
  EXPECT_LT(framework, 0.12);

  // The profile carries the fit; `railyard run` on one row's scenario with it gives the fit's own prediction, and
  // with replay.framework: false the device alone.
  const std::string text = read_file(profile);
  EXPECT_NE(text.find("framework:"), std::string::npos);
  EXPECT_NE(text.find("name: Megatron-DeepSpeed"), std::string::npos);
  EXPECT_NE(text.find("system: vtrain_subset"), std::string::npos);
  EXPECT_NE(text.find("description: vTrain rows 2-81"), std::string::npos);
  const auto& first = rows.front(); // line 2: 2 GPUs, gb 16, mb 8, h 1024, 24 layers, tp 1 dp 1 pp 2
  ASSERT_EQ(first.at("line"), "2");
  auto scenario = [&](const std::string& replay) {
    return write(replay.empty() ? "row2_host.yaml" : "row2_device.yaml",
                 "name: row2\ncluster: {kind: single_node, nodes: 1, gpus_per_node: 2, node: {nvlink_bandwidth: 235 "
                 "GB/s, nvlink_latency: 0.6 us, pcie_bandwidth: 32 GB/s}}\nnccl: {system: dgx_a100}\nprofile: " +
                     profile.string() +
                     "\nworkload:\n  generator: megatron\n  model: {layers: 24, hidden: 1024, heads: 16, seq_length: "
                     "1024, vocab: 50257, flash_attention: false}\n  parallel: {tp: 1, pp: 2, dp: 1, "
                     "sequence_parallel: false, zero: 0}\n  training: {micro_batch: 8, global_batch: 16, recompute: "
                     "full, dtype: fp16}\n  replay: {communication: analytical" +
                     replay + "}\n");
  };
  for (const auto& [replay, column] : std::vector<std::pair<std::string, std::string>>{
           {"", "framework_s"}, {", framework: false", "device_alone_s"}}) {
    const fs::path out = dir_ / ("run" + std::to_string(replay.size()));
    const CliResult run = run_cli("run " + scenario(replay) + " --out " + out.string());
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const auto j = nlohmann::json::parse(read_file(out / "summary.json"));
    EXPECT_NEAR(j["step_time_s"].get<double>(), std::stod(first.at(column)), 1e-9 * std::stod(first.at(column)))
        << column;
    EXPECT_EQ(j.contains("framework"), replay.empty());
  }
}

TEST_F(CalibrateSteps, BadInputIsRefusedWithTheLineAndTheFix)
{
  const std::string base = kData + "/a100_megatron_deepspeed.yaml";
  const std::string out = (dir_ / "p.yaml").string();
  auto expect_refused = [&](const std::string& args, const std::string& needle) {
    const CliResult r = run_cli(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << "\n" << r.output;
    EXPECT_FALSE(fs::exists(out)) << args;
  };
  const std::string good = subset(8);
  // A column that is no scenario key.
  expect_refused("calibrate --steps " + write("badcol.csv", "layers,step_time_ms\n24,100\n12,50\n16,70\n20,80\n") +
                     " --scenario " + base + " --out " + out,
                 "column 'layers'");
  // A time that is not positive, on its line.
  expect_refused("calibrate --steps " + write("badtime.csv", "workload.model.layers,step_time_ms\n24,100\n12,-5\n") +
                     " --scenario " + base + " --out " + out,
                 ":3");
  // No time column.
  expect_refused("calibrate --steps " + write("notime.csv", "workload.model.layers\n24\n") + " --scenario " + base +
                     " --out " + out,
                 "step_time_s");
  // A value that makes an invalid scenario: the row's line, and the scenario's rule.
  expect_refused("calibrate --steps " +
                     write("badval.csv", "workload.parallel.tp,step_time_ms\n3,100\n1,90\n1,80\n1,70\n") +
                     " --scenario " + base + " --out " + out,
                 ":2");
  expect_refused("calibrate --steps " + good + " --out " + out, "--scenario");
  expect_refused("calibrate --steps " + good + " --scenario " + base + " --from " + good + " --out " + out, "--from");
  expect_refused("calibrate --steps " + good + " --scenario " + base + " --out " + out + " --fit-fraction 1",
                 "--fit-fraction");
  expect_refused("calibrate --steps " + write("two.csv", "workload.model.layers,step_time_ms\n24,100\n12,50\n") +
                     " --scenario " + base + " --out " + out,
                 "at least 2");
  // The predictions file is never replaced, and the CSV is never overwritten by the profile.
  const std::string existing = write("existing.csv", "keep me\n");
  expect_refused("calibrate --steps " + good + " --scenario " + base + " --out " + out + " --predictions " + existing,
                 "exists already");
  EXPECT_EQ(read_file(existing), "keep me\n");
  const CliResult over = run_cli("calibrate --steps " + good + " --scenario " + base + " --out " + good);
  EXPECT_EQ(over.exit_code, 2) << over.output;
  EXPECT_NE(read_file(good).find("iteration time"), std::string::npos);
}

TEST_F(CalibrateSteps, SeedFractionAndBudgetShapeTheFit)
{
  const std::string steps = subset(24);
  const std::string base = kData + "/a100_megatron_deepspeed.yaml";
  auto fit = [&](const std::string& name, const std::string& args) {
    const fs::path out = dir_ / (name + ".yaml"), pred = dir_ / (name + ".csv");
    const CliResult r = run_cli("calibrate --steps " + steps + " --scenario " + base + " --out " + out.string() +
                                " --predictions " + pred.string() + " " + args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return std::make_pair(r.out, railyard::test::csv_rows(pred));
  };
  auto halves = [](const std::vector<std::map<std::string, std::string>>& rows) {
    std::string h;
    for (const auto& r : rows)
      h += r.at("half") == "fit" ? 'f' : 'h';
    return h;
  };
  const auto [out1, seed1] = fit("s1", "--max-evaluations 6");
  const auto [out2, seed2] = fit("s2", "--max-evaluations 6 --seed 2");
  const auto [out3, quarter] = fit("q", "--max-evaluations 6 --fit-fraction 0.25");
  // The budget caps the fit: the first simplex (5 evaluations) and one reflection.
  EXPECT_NE(out1.find("(6 evaluations)"), std::string::npos) << out1;
  // Another seed splits the rows differently; a quarter leaves fewer rows to the fit.
  EXPECT_NE(halves(seed1), halves(seed2));
  const auto count = [](const std::string& h) { return std::count(h.begin(), h.end(), 'f'); };
  EXPECT_LT(count(halves(quarter)), count(halves(seed1)));
  EXPECT_GT(count(halves(quarter)), 1);
}

// The host model on every communication model: a pipeline step of a small model on 8 A100s with the shipped
// Megatron-DeepSpeed profile. The hosts' issuing time bounds the step from below, and the host only ever adds to the
// device's own step.
TEST_F(CalibrateSteps, TheHostModelRunsOnEveryCommunicationModel)
{
  const std::string profile =
      std::string(RAILYARD_SOURCE_DIR) + "/calibration/profiles/dgx_a100_megatron_deepspeed.yaml";
  auto scenario = [&](const std::string& replay, const std::string& network) {
    return write("s_" + std::to_string(std::hash<std::string>{}(replay + network)) + ".yaml",
                 "name: host\ncluster: {kind: single_node, nodes: 1, gpus_per_node: 8, node: {nvlink_bandwidth: 235 "
                 "GB/s, nvlink_latency: 0.6 us}}\nnccl: {system: dgx_a100}\n" +
                     network + "profile: " + profile +
                     "\nworkload:\n  generator: megatron\n  model: {layers: 4, hidden: 1024, heads: 16, seq_length: "
                     "1024, vocab: 50257, flash_attention: false}\n  parallel: {tp: 2, pp: 2, dp: 2, "
                     "sequence_parallel: false, zero: 0}\n  training: {micro_batch: 1, global_batch: 8, recompute: "
                     "full, dtype: fp16}\n  replay: {" +
                     replay + "}\n");
  };
  const std::vector<std::pair<std::string, std::string>> modes = {
      {"communication: analytical", ""},
      {"communication: ideal", ""},
      {"communication: coupled", ""},
      {"communication: flows", ""},
      {"communication: flows", "network: {backend: fluid}\n"}};
  for (const auto& [replay, network] : modes) {
    SCOPED_TRACE(replay + " " + network);
    double step[2] = {0, 0};
    for (int framework = 0; framework < 2; ++framework) {
      const fs::path out = dir_ / ("o" + std::to_string(framework));
      fs::remove_all(out);
      const CliResult r = run_cli("run " + scenario(replay + (framework ? "" : ", framework: false"), network) +
                                  " --out " + out.string());
      ASSERT_EQ(r.exit_code, 0) << r.output;
      const auto j = nlohmann::json::parse(read_file(out / "summary.json"));
      step[framework] = j["step_time_s"].get<double>();
      ASSERT_EQ(j.contains("framework"), framework == 1);
      if (framework) {
        const double busy = j["framework"]["host_busy_s_mean_over_ranks"].get<double>();
        EXPECT_GT(busy, 0);
        EXPECT_GE(step[1], busy);
      }
    }
    EXPECT_GT(step[1], step[0]);
  }
}
