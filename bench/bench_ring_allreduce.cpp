// Benchmark: simulate NCCL ring all-reduce on large rail-optimized clusters with the simgrid or fluid backend and
// report wall time, CPU time (user + system, steadier on a shared machine) and peak memory per size, as ratios against
// a baseline size run in the same invocation. Each size runs in its own child process, so its peak memory is its own.
//
//   bench_ring_allreduce [--gpus 64,1024,8192] [--size-per-gpu 256KiB] [--channels 1] [--backend simgrid|fluid]
//
// The message is size-per-gpu x GPUs, so every run has one chunk loop and every ring step moves size-per-gpu /
// channels bytes per flow: the flow count, 2 (n-1) n channels, is what grows.
#include "railyard/common/child_process.hpp"
#include "ring_case.hpp"
#include "railyard/sim/collective_runner.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>

using namespace railyard;

int main(int argc, char** argv)
{
  CLI::App app{"Ring all-reduce simulation benchmark"};
  std::string backend = "simgrid";
  std::vector<int> sizes{64, 1024, 8192};
  std::string per_gpu = "256 KiB";
  int channels = 1;
  double precision = 1e-9;
  app.add_option("--gpus", sizes, "GPU counts; the first is the baseline")->delimiter(',');
  app.add_option("--size-per-gpu", per_gpu, "all-reduce bytes per GPU");
  app.add_option("--channels", channels, "NCCL channels");
  app.add_option("--precision", precision, "SimGrid surf/precision in seconds");
  app.add_option("--backend", backend, "FlowNetwork backend")->check(CLI::IsMember({"simgrid", "fluid"}));
  CLI11_PARSE(app, argc, argv);
  const Bytes per(parse_bytes(per_gpu));

  fmt::print("{:>6} {:>12} {:>14} {:>10} {:>10} {:>10} {:>12} {:>10} {:>10} {:>10}\n", "gpus", "flows",
             "simulated(ms)", "wall(s)", "cpu(s)", "peak(MiB)", "flows/cpu-s", "wall/base", "cpu/base", "mem/base");
  double base_wall = 0, base_cpu = 0, base_mem = 0;
  for (int n : sizes) {
    const topo::ClusterSpec spec = bench::ring_cluster(n);
    const auto r = run_in_child([&] {
      const topo::Topology t = topo::build_topology(spec);
      sim::SimulationConfig config;
      config.time_precision = precision;
      config.backend = backend == "fluid" ? sim::Backend::Fluid : sim::Backend::SimGrid;
      // Per-flow and per-link records of 134 M flows would be the benchmark's memory, not the simulator's.
      config.fluid.record_flows = false;
      config.fluid.record_links = false;
      sim::Simulation s(t, config);
      const auto timings = sim::run_schedules(s, {bench::ring_all_reduce(n, per, channels)});
      return std::vector<double>{timings[0].duration().seconds(), double(s.network().totals().flows_received)};
    });
    if (base_wall == 0) {
      base_wall = r.wall_seconds;
      base_cpu = std::max(r.cpu_seconds, 1e-3);
      base_mem = r.max_rss_bytes;
    }
    fmt::print("{:>6} {:>12.0f} {:>14.4f} {:>10.2f} {:>10.2f} {:>10.1f} {:>12.0f} {:>10.1f} {:>10.1f} {:>10.2f}\n", n,
               r.values[1], r.values[0] * 1e3, r.wall_seconds, r.cpu_seconds, r.max_rss_bytes / (1024.0 * 1024),
               r.values[1] / std::max(r.cpu_seconds, 1e-3), r.wall_seconds / base_wall, r.cpu_seconds / base_cpu,
               r.max_rss_bytes / base_mem);
    std::fflush(stdout);
  }
  return 0;
}
