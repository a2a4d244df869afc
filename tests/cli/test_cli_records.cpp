// What is recorded never changes what is simulated (a non-negotiable): the DCQCN + PFC example run through the binary
// with its links and flows records off, sampled every 10 us (as shipped) and every 1 us gives the same collective
// times and the same pause time, ECN marks, CNPs and queue peak, to the last bit; and a training step replayed with
// `flows` on a 2:1 fat tree with DCQCN + PFC gives the same step and breakdown. Before the fix, sampling every 1 us
// doubled the incast's time (3.31 ms -> 6.77 ms) and the step took 5.71 ms with records and 4.98 ms without: every
// sample date integrated the queues, so the samples set the queue model's steps.
#include "cli_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

using railyard::test::read_file;
using railyard::test::run_cli;
using railyard::test::shell_quote;
using railyard::test::temp_dir;

namespace {

struct Physics {
  std::string collectives; ///< collectives.csv without its header: every time, to the digit
  double pause_time_s = 0, ecn_marks = 0, max_queue_bytes = 0, cnps = 0;
};

Physics run_with_outputs(const fs::path& dir, const std::string& name, const std::string& outputs)
{
  std::string yaml = read_file(fs::path(RAILYARD_SOURCE_DIR) / "examples/dcqcn_on.yaml");
  const std::string shipped = "outputs: {sample_interval: 10 us}";
  const auto at = yaml.find(shipped);
  EXPECT_NE(at, std::string::npos) << "examples/dcqcn_on.yaml no longer has '" << shipped << "'";
  if (at != std::string::npos) yaml.replace(at, shipped.size(), "outputs: {" + outputs + "}");
  const fs::path scenario = dir / (name + ".yaml");
  {
    std::ofstream(scenario) << yaml;
  }
  const fs::path out = dir / name;
  const auto r = run_cli("run " + shell_quote(scenario.string()) + " --out " + shell_quote(out.string()));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  Physics p;
  const std::string csv = read_file(out / "collectives.csv");
  p.collectives = csv.substr(csv.find('\n') + 1);
  const auto j = nlohmann::json::parse(read_file(out / "summary.json"));
  const auto& n = j.at("network");
  p.pause_time_s = n.at("pause_time_s").get<double>();
  p.ecn_marks = n.at("ecn_marks").get<double>();
  p.max_queue_bytes = n.at("max_queue_bytes").get<double>();
  p.cnps = n.at("cnps").get<double>();
  return p;
}

} // namespace

TEST(CliRecords, WhatIsRecordedNeverChangesWhatIsSimulated)
{
  const fs::path dir = temp_dir("records");
  const Physics shipped = run_with_outputs(dir, "every_10us", "sample_interval: 10 us");
  ASSERT_FALSE(shipped.collectives.empty());
  EXPECT_GT(shipped.pause_time_s, 0) << "the example must exercise PFC for this test to mean anything";
  EXPECT_GT(shipped.cnps, 0) << "the example must exercise DCQCN for this test to mean anything";
  for (const auto& [name, outputs] :
       std::vector<std::pair<std::string, std::string>>{{"none", "links: false, flows: false"},
                                                        {"every_1us", "sample_interval: 1 us"},
                                                        {"every_3us", "sample_interval: 3 us, flows: false"}}) {
    const Physics p = run_with_outputs(dir, name, outputs);
    EXPECT_EQ(p.collectives, shipped.collectives) << name;
    EXPECT_EQ(p.pause_time_s, shipped.pause_time_s) << name;
    EXPECT_EQ(p.ecn_marks, shipped.ecn_marks) << name;
    EXPECT_EQ(p.max_queue_bytes, shipped.max_queue_bytes) << name;
    EXPECT_EQ(p.cnps, shipped.cnps) << name;
  }
  fs::remove_all(dir);
}

TEST(CliRecords, ATrainingStepOnQueuesDoesNotDependOnItsRecords)
{
  const fs::path dir = temp_dir("records_step");
  auto step = [&](const std::string& name, const std::string& outputs) {
    const fs::path scenario = dir / (name + ".yaml");
    {
      std::ofstream(scenario)
          << "name: step_dcqcn\ncluster:\n  kind: fat_tree\n  nodes: 4\n  gpus_per_node: 8\n"
             "  node: {nvlink_bandwidth: 370.8 GB/s, nvlink_latency: 0.5 us, pcie_bandwidth: 64 GB/s}\n"
             "  nic: {bandwidth: 400 Gb/s, latency: 1 us}\n"
             "  fabric: {leaf_downlinks: 8, oversubscription: 2, link_bandwidth: 400 Gb/s, link_latency: 0.6 us}\n"
             "nccl: {system: dgx_h100}\nprofile: "
          << RAILYARD_SOURCE_DIR
          << "/calibration/profiles/dgx_h100_ib_ndr.yaml\n"
             "network:\n  backend: fluid\n  cc: dcqcn\n  pfc: {enabled: true}\n  outputs: {"
          << outputs
          << "}\nworkload:\n  generator: megatron\n"
             "  model: {layers: 2, hidden: 1024, heads: 16, seq_length: 512, vocab: 8192}\n"
             "  parallel: {tp: 8, pp: 1, dp: 4}\n"
             "  training: {micro_batch: 1, global_batch: 8, recompute: none, dtype: bf16}\n"
             "  replay: {communication: flows}\n";
    }
    const fs::path out = dir / name;
    const auto r = run_cli("run " + shell_quote(scenario.string()) + " --out " + shell_quote(out.string()));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    const auto j = nlohmann::json::parse(read_file(out / "summary.json"));
    return std::make_pair(j.at("step_time_s").get<double>(), read_file(out / "breakdown.csv"));
  };
  const auto shipped = step("every_10us", "sample_interval: 10 us");
  EXPECT_GT(shipped.first, 0);
  for (const auto& [name, outputs] : std::vector<std::pair<std::string, std::string>>{
           {"none", "links: false, flows: false"}, {"every_1us", "sample_interval: 1 us"}}) {
    const auto p = step(name, outputs);
    EXPECT_EQ(p.first, shipped.first) << name;
    EXPECT_EQ(p.second, shipped.second) << name;
  }
  fs::remove_all(dir);
}

namespace {

nlohmann::json run_summary(const fs::path& dir, const std::string& name, const std::string& yaml, int expect_exit = 0,
                           std::string* output = nullptr)
{
  const fs::path scenario = dir / (name + ".yaml");
  {
    std::ofstream(scenario) << yaml;
  }
  const fs::path out = dir / name;
  const auto r = run_cli("run " + shell_quote(scenario.string()) + " --out " + shell_quote(out.string()));
  EXPECT_EQ(r.exit_code, expect_exit) << r.output;
  if (output) *output = r.output;
  if (r.exit_code != 0) return {};
  return nlohmann::json::parse(read_file(out / "summary.json"));
}

std::size_t csv_rows(const fs::path& p)
{
  const std::string s = read_file(p);
  return static_cast<std::size_t>(std::count(s.begin(), s.end(), '\n')) - 1; // less the header
}

} // namespace

// `outputs: auto` (the default) keeps flows.csv only while its rows fit 256 MiB. A ring all-reduce on 320 GPUs with 16
// channels starts 2 (n - 1) x 16 x n = 3,266,560 transfers, past it: no flows.csv, the summary says why and how to ask
// for it, and the aggregates (transfer count, links.csv) are still there. A small run keeps its flows.csv, one row per
// transfer; `flows: true` is said as asked.
TEST(CliRecords, AutoKeepsTheAggregatesOfALargeRunAndEveryRowOfASmallOne)
{
  const fs::path dir = temp_dir("records_auto");
  const int n = 320, channels = 16;
  const std::string ring = "name: ring\ncluster: {kind: rail_optimized, nodes: " + std::to_string(n / 8) +
                           ", gpus_per_node: 8}\nnetwork: {backend: fluid}\ncollectives:\n  - {op: all_reduce, size: "
                           "1 MiB, algorithm: ring, protocol: simple, channels: " +
                           std::to_string(channels) + "}\n";
  const auto large = run_summary(dir, "large", ring);
  ASSERT_FALSE(large.is_null());
  const double transfers = 2.0 * (n - 1) * channels * n;
  EXPECT_EQ(large.at("network").at("transfers").get<double>(), transfers);
  const std::string why = large.at("network").at("records").at("flows.csv").get<std::string>();
  EXPECT_EQ(why.rfind("not recorded", 0), 0U) << why;
  EXPECT_NE(why.find("network.outputs.flows: true"), std::string::npos) << why;
  EXPECT_FALSE(fs::exists(dir / "large" / "flows.csv"));
  EXPECT_TRUE(fs::exists(dir / "large" / "links.csv"));
  EXPECT_FALSE(large.at("network").contains("fct_s")); // percentiles need the rows

  const int m = 16;
  std::string small = ring;
  small.replace(small.find("nodes: 40"), 9, "nodes: 2");
  const auto kept = run_summary(dir, "small", small);
  ASSERT_FALSE(kept.is_null());
  EXPECT_EQ(kept.at("network").at("records").at("flows.csv"), "recorded");
  EXPECT_EQ(csv_rows(dir / "small" / "flows.csv"), static_cast<std::size_t>(2 * (m - 1) * channels * m));

  std::string asked = small;
  asked.replace(asked.find("network: {backend: fluid}"), 25,
                "network: {backend: fluid, outputs: {flows: true, links: false}}");
  const auto on = run_summary(dir, "asked", asked);
  ASSERT_FALSE(on.is_null());
  EXPECT_EQ(on.at("network").at("records").at("flows.csv"), "recorded (network.outputs.flows: true)");
  EXPECT_EQ(on.at("network").at("records").at("links.csv"), "not recorded (network.outputs.links: false)");
  EXPECT_TRUE(fs::exists(dir / "asked" / "flows.csv"));
  EXPECT_FALSE(fs::exists(dir / "asked" / "links.csv"));

  std::string bad = small;
  bad.replace(bad.find("network: {backend: fluid}"), 25, "network: {backend: fluid, outputs: {flows: maybe}}");
  std::string message;
  (void)run_summary(dir, "bad", bad, 2, &message);
  EXPECT_NE(message.find("flows"), std::string::npos) << message;
  EXPECT_NE(message.find("true, false or auto"), std::string::npos) << message;
  fs::remove_all(dir);
}

// A training step replayed with `flows` on the fluid backend: by default the summary carries the network's aggregates
// (transfers, pauses, marks, queues) and no per-flow rows (a 64-GPU step held 3.2 GB of flow records nobody wrote);
// with `flows: true, links: true` flows.csv has a row per transfer the replay counted and links.csv is written.
TEST(CliRecords, AWorkloadRunWritesTheNetworkAggregatesAndTheRecordsWhenAsked)
{
  const fs::path dir = temp_dir("records_workload");
  const std::string step =
      "name: step\ncluster:\n  kind: rail_optimized\n  nodes: 2\n  gpus_per_node: 8\nnccl: {system: dgx_h100}\n"
      "profile: " +
      std::string(RAILYARD_SOURCE_DIR) +
      "/calibration/profiles/dgx_h100_ib_ndr.yaml\nnetwork: {backend: fluid}\nworkload:\n  generator: megatron\n"
      "  model: {layers: 2, hidden: 1024, heads: 16, seq_length: 512, vocab: 8192}\n"
      "  parallel: {tp: 8, pp: 1, dp: 2}\n  training: {micro_batch: 1, global_batch: 4, recompute: none, dtype: "
      "bf16}\n  replay: {communication: flows}\n";
  const auto plain = run_summary(dir, "plain", step);
  ASSERT_FALSE(plain.is_null());
  ASSERT_TRUE(plain.contains("network"));
  EXPECT_EQ(plain.at("network").at("flows").get<double>(), plain.at("flows").at("sent").get<double>());
  EXPECT_EQ(plain.at("network").at("records").at("flows.csv").get<std::string>().rfind("not recorded", 0), 0U);
  EXPECT_FALSE(fs::exists(dir / "plain" / "flows.csv"));
  EXPECT_FALSE(fs::exists(dir / "plain" / "links.csv"));

  std::string asked = step;
  asked.replace(asked.find("network: {backend: fluid}"), 25,
                "network: {backend: fluid, outputs: {flows: true, links: true}}");
  const auto on = run_summary(dir, "asked", asked);
  ASSERT_FALSE(on.is_null());
  EXPECT_EQ(csv_rows(dir / "asked" / "flows.csv"), on.at("flows").at("sent").get<std::size_t>());
  EXPECT_TRUE(fs::exists(dir / "asked" / "links.csv"));
  EXPECT_EQ(on.at("step_time_s"), plain.at("step_time_s")); // and what is recorded changes nothing

  // trace.json: a counter track per hottest link beside the ranks, its values links.csv's samples of that link (and 0
  // where it has none); none without links.csv.
  auto counters = [&](const std::string& run) {
    std::vector<nlohmann::json> c;
    const auto trace = nlohmann::json::parse(read_file(dir / run / "trace.json"));
    for (const auto& e : trace.at("traceEvents"))
      if (e.at("ph") == "C") c.push_back(e);
    return c;
  };
  EXPECT_TRUE(counters("plain").empty());
  const auto tracks = counters("asked");
  ASSERT_FALSE(tracks.empty());
  std::set<std::string> hottest, tracked;
  for (const auto& h : on.at("network").at("hottest_links"))
    hottest.insert(h.at("name").get<std::string>());
  std::map<std::pair<std::string, long long>, double> samples; // (link, time in ns) -> utilisation
  {
    std::istringstream links(read_file(dir / "asked" / "links.csv"));
    std::string line;
    std::getline(links, line); // time_s,interval_s,link,name,kind,capacity_Bps,bytes,utilisation,...
    while (std::getline(links, line)) {
      std::vector<std::string> f;
      std::istringstream cells(line);
      for (std::string c; std::getline(cells, c, ',');)
        f.push_back(c);
      ASSERT_GE(f.size(), 8U) << line;
      samples[{f[3], std::llround(std::stod(f[0]) * 1e9)}] = std::stod(f[7]);
    }
  }
  std::size_t matched = 0;
  for (const auto& e : tracks) {
    const std::string name = e.at("name");
    tracked.insert(name);
    const double u = e.at("args").at("utilisation").get<double>();
    const auto it = samples.find({name, std::llround(e.at("ts").get<double>() * 1e3)});
    if (u != 0) {
      ASSERT_NE(it, samples.end()) << name << " at " << e.at("ts") << " us has no links.csv row";
      EXPECT_NEAR(u, it->second, 1e-12) << name;
      ++matched;
    }
  }
  EXPECT_GT(matched, 0U);
  EXPECT_EQ(tracked, hottest);
  fs::remove_all(dir);
}
