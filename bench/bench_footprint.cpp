// Benchmark: the memory estimate of `railyard run` (sim/footprint.hpp) against the peak resident memory the run then
// takes. Each case is the railyard binary run in its own process, as a user runs it (outputs written to a temporary
// folder); the estimate is the one it records in summary.json, its peak RSS wait4's ru_maxrss. Two sets:
//   --fit       the cases the per-item figures of sim/src/footprint.cpp were read from (the process alone, topologies
//               of rail-optimized clusters from 64 to 4,096 nodes, ring all-reduces on both backends with and without
//               flow records, the two 1,024-GPU training examples); prints, per case, the measured RSS and the
//               figure it gives (bytes per link, per GPU, per record, per op)
//   (default)   cases never used for those figures (3-tier and 2-tier fat trees, another size, traces, the other
//               examples): estimate / measured, signed error
//
//   bench_footprint [--fit]
#include "railyard/common/child_process.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

std::string cluster(const std::string& kind, int nodes, const std::string& fabric)
{
  return fmt::format("cluster:\n  kind: {}\n  nodes: {}\n  gpus_per_node: 8\n"
                     "  node: {{nvlink_bandwidth: 370.8 GB/s, nvlink_latency: 0.5 us, pcie_bandwidth: 64 GB/s}}\n"
                     "  nic: {{bandwidth: 400 Gb/s, latency: 1 us}}\n{}",
                     kind, nodes, fabric.empty() ? "" : "  fabric: " + fabric + "\n");
}

const std::string kLeaf32 = "{leaf_downlinks: 32, oversubscription: 1, link_bandwidth: 400 Gb/s, link_latency: 0.6 us}";
const std::string kKary64 =
    "{tiers: 3, radix: 64, oversubscription: 1, link_bandwidth: 400 Gb/s, link_latency: 0.6 us}";

std::string network(const std::string& backend, bool flows)
{
  return backend == "simgrid" ? "network: {backend: simgrid}\n"
                              : fmt::format("network: {{backend: fluid, outputs: {{flows: {}, links: false}}}}\n",
                                            flows ? "true" : "false");
}

// A two-GPU call inside node 0: the topology and the engine, almost no traffic.
const std::string kTiny =
    "collectives:\n  - {op: all_reduce, size: 1 KiB, ranks: [0, 1], algorithm: ring, protocol: simple, channels: 1}\n";
std::string ring(int gpus)
{
  return fmt::format("collectives:\n  - {{op: all_reduce, size: {} KiB, algorithm: ring, protocol: simple, "
                     "channels: 1}}\n",
                     gpus * 16);
}

struct Case {
  std::string name;
  std::string text; ///< a scenario, or "@path" of an example
};

struct Measured {
  double estimate = 0, rss = 0;
};

// Runs `railyard run` on the case (the binary users run, in its own process) and reads the estimate it recorded in
// summary.json and its peak RSS (wait4's ru_maxrss).
Measured measure(const Case& c, const fs::path& dir)
{
  fs::path scenario;
  if (c.text.front() == '@') {
    scenario = c.text.substr(1);
  } else {
    scenario = dir / "case.yaml";
    std::ofstream(scenario) << "name: bench\nseed: 1\n" << c.text;
  }
  const fs::path out = dir / "out";
  fs::remove_all(out);
  const railyard::ProgramResult r =
      railyard::run_program({RAILYARD_CLI, "run", scenario.string(), "--out", out.string(), "--max-memory", "1024 GiB"},
                            (dir / "stderr.txt").string());
  if (r.exit_code != 0) throw std::runtime_error("railyard run failed on case '" + c.name + "'");
  std::ifstream in(out / "summary.json");
  const auto j = nlohmann::json::parse(in);
  fs::remove_all(out);
  return {j["memory_estimate"]["total_bytes"].get<double>(), r.max_rss_bytes};
}

std::string mib(double b)
{
  return fmt::format("{:.1f}", b / (1024.0 * 1024));
}

} // namespace

int main(int argc, char** argv)
{
  CLI::App app{"Memory estimate of railyard run against its measured peak RSS"};
  bool fit = false;
  app.add_flag("--fit", fit, "the cases the estimate's per-item figures were read from");
  CLI11_PARSE(app, argc, argv);
  const std::string ex = std::string(RAILYARD_SOURCE_DIR) + "/examples/";

  std::vector<Case> cases;
  if (fit) {
    cases.push_back({"one node, tiny call", cluster("single_node", 1, "") + kTiny});
    for (int n : {64, 256, 1024, 4096})
      cases.push_back({fmt::format("rail-optimized {} nodes, tiny call (fluid)", n),
                       cluster("rail_optimized", n, kLeaf32) + network("fluid", false) + kTiny});
    for (int n : {64, 256})
      for (const std::string b : {"simgrid", "fluid"})
        cases.push_back({fmt::format("rail-optimized {} nodes, ring ({})", n, b),
                         cluster("rail_optimized", n, kLeaf32) + network(b, false) + ring(n * 8)});
    for (int n : {64, 256})
      cases.push_back({fmt::format("rail-optimized {} nodes, ring (fluid, flows.csv records)", n),
                       cluster("rail_optimized", n, kLeaf32) + network("fluid", true) + ring(n * 8)});
    cases.push_back({"example gpt3_175b_1024", "@" + ex + "gpt3_175b_1024.yaml"});
    cases.push_back({"example llama3_70b_1024", "@" + ex + "llama3_70b_1024.yaml"});
  } else {
    for (int n : {1024, 4096})
      cases.push_back({fmt::format("3-tier fat tree k=64, {} nodes, tiny call (fluid)", n),
                       cluster("fat_tree", n, kKary64) + network("fluid", false) + kTiny});
    cases.push_back({"2-tier fat tree 2048 nodes, tiny call (simgrid)",
                     cluster("fat_tree", 2048, kLeaf32) + network("simgrid", false) + kTiny});
    cases.push_back({"rail-optimized 128 nodes, ring (simgrid)",
                     cluster("rail_optimized", 128, kLeaf32) + network("simgrid", false) + ring(1024)});
    cases.push_back({"3-tier fat tree k=64, 512 nodes, ring (fluid, flows.csv records)",
                     cluster("fat_tree", 512, kKary64) + network("fluid", true) + ring(4096)});
    for (const char* e : {"default", "nccl_multinode", "incast", "alltoall_fat_tree_2to1", "single_node_h100"})
      cases.push_back({std::string("example ") + e, "@" + ex + e + ".yaml"});
  }

  const fs::path dir = fs::temp_directory_path() / ("railyard_bench_footprint_" + std::to_string(getpid()));
  fs::create_directories(dir);
  fmt::print("{:<64} {:>12} {:>12} {:>9}\n", "case", "estimate MiB", "peak RSS MiB", "error");
  double worst = 0, sum_sq = 0;
  for (const auto& c : cases) {
    const Measured m = measure(c, dir);
    const double err = m.estimate / m.rss - 1;
    worst = std::max(worst, std::abs(err));
    sum_sq += err * err;
    fmt::print("{:<64} {:>12} {:>12} {:>+8.1f}%\n", c.name, mib(m.estimate), mib(m.rss), 100 * err);
    std::fflush(stdout);
  }
  fmt::print("{} cases: worst |error| {:.1f}%, rms {:.1f}% (a positive error over-estimates: refuses early)\n",
             cases.size(), 100 * worst, 100 * std::sqrt(sum_sq / static_cast<double>(cases.size())));
  fs::remove_all(dir);
  return 0;
}
