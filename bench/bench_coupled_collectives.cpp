// A collective at scale through `railyard nccl-tests`' two ways of moving it: per-step flows (every transfer of the
// lowered schedule on the fluid network) and coupled flows (each channel one fluid flow). A 1 GiB all-reduce, NCCL's
// choice of algorithm and 16 channels, on rail-optimized DGX H100 clusters; each run in its own child process (wall
// time and peak memory of that child), the coupled one also as a ratio to the per-step one in the same invocation.
//
// Usage: bench_coupled_collectives [--flows-max 1024]   (per-step flows up to that many GPUs; coupled at every size)
#include "railyard/common/child_process.hpp"
#include "railyard/scenario/nccl_tests.hpp"
#include "railyard/scenario/scenario.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using namespace railyard;
namespace scn = railyard::scenario;

namespace {

scn::Scenario cluster(int nodes)
{
  const std::string text = fmt::format(R"(name: rail_{}
cluster:
  kind: rail_optimized
  nodes: {}
  gpus_per_node: 8
  node: {{nvlink_bandwidth: 370.8 GB/s, nvlink_latency: 0.5 us, pcie_bandwidth: 64 GB/s}}
  nic: {{bandwidth: 400 Gb/s, latency: 1 us}}
  fabric: {{leaf_downlinks: 32, link_bandwidth: 400 Gb/s, link_latency: 0.6 us}}
network: {{backend: fluid}}
nccl: {{system: dgx_h100}}
)",
                                       nodes, nodes);
  return scn::parse_scenario(YamlNode::load_string(text, "bench"), false);
}

} // namespace

int main(int argc, char** argv)
{
  int flows_max = 1024;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--flows-max") == 0) flows_max = std::atoi(argv[i + 1]);
  fmt::print("{:>6} {:>9} {:>14} {:>12} {:>10} {:>10} {:>12}\n", "GPUs", "mode", "time(us)", "busbw(GB/s)", "wall(s)",
             "peak(MiB)", "wall/flows");
  for (int nodes : {128, 1024}) {
    double flows_wall = 0;
    for (const std::string mode : {"flows", "coupled"}) {
      if (mode == "flows" && nodes * 8 > flows_max) continue;
      const ChildResult r = run_in_child([&] {
        scn::NcclTestsOptions o;
        o.min_bytes = o.max_bytes = std::int64_t{1} << 30;
        o.communication = mode;
        const scn::NcclTestsRun run = scn::simulate_nccl_tests(cluster(nodes), o);
        return std::vector<double>{run.rows.at(0).time.seconds(), run.rows.at(0).busbw_GBps};
      });
      if (mode == "flows") flows_wall = r.wall_seconds;
      fmt::print("{:>6} {:>9} {:>14.1f} {:>12.2f} {:>10.2f} {:>10.1f} {:>12}\n", nodes * 8, mode, r.values[0] * 1e6,
                 r.values[1], r.wall_seconds, r.max_rss_bytes / (1024.0 * 1024.0),
                 mode == "coupled" && flows_wall > 0 ? fmt::format("{:.4f}", r.wall_seconds / flows_wall)
                                                     : std::string("-"));
    }
  }
  fmt::print("\nwall: the whole sweep of one size in a child process (per-step flows run it in a grandchild); peak: "
             "the largest resident set of that child or of a process it waited for\n");
  return 0;
}
