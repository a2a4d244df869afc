// Cost of the topology layer at scale: building the graph, the summary (bisection max flow) and route() per flow.
//   bench_topo_route [--flows N]
// Prints one line per cluster: GPUs, vertices, links, build / summary seconds, route() nanoseconds per call, peak RSS.
#include "railyard/topologies/topology.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

long peak_rss_mib()
{
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024;
}

struct Case {
  std::string name;
  std::string yaml;
};

} // namespace

int main(int argc, char** argv)
{
  long flows = 2'000'000;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--flows") == 0)
      flows = std::atol(argv[i + 1]);

  const std::vector<Case> cases = {
      {"rail_optimized 16384 GPUs (64 SUs of 32 nodes, 2:1)",
       "kind: rail_optimized\nnodes: 2048\nfabric: {leaf_downlinks: 32, oversubscription: 2}\n"},
      {"fat_tree 2-tier 4096 GPUs", "kind: fat_tree\nnodes: 512\nfabric: {leaf_downlinks: 32}\n"},
      {"fat_tree 3-tier k=32 8192 GPUs", "kind: fat_tree\nnodes: 1024\nfabric: {tiers: 3, radix: 32}\n"},
      {"rail_only 256 GPUs", "kind: rail_only\nnodes: 32\n"},
  };
  fmt::print("{:<52} {:>7} {:>9} {:>9} {:>9} {:>10} {:>10} {:>10} {:>8}\n", "cluster", "GPUs", "vertices", "links",
             "build_s", "summary_s", "route_ns", "pxn_ns", "rss_MiB");
  for (const Case& c : cases) {
    const railyard::YamlNode node = railyard::YamlNode::load_string(c.yaml, "bench");
    auto t0 = Clock::now();
    const railyard::topo::Topology t = railyard::topo::build_topology(railyard::topo::parse_cluster(node));
    const double build_s = seconds_since(t0);
    t0 = Clock::now();
    const auto summary = t.summary();
    const double summary_s = seconds_since(t0);

    // Random inter-GPU pairs from a fixed generator; the path length sum keeps the calls from being optimized away.
    const int gpus = t.num_gpus();
    std::uint64_t state = 1, checksum = 0;
    auto next = [&] {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      return state >> 33;
    };
    double ns[2] = {0, 0};
    for (int pxn = 0; pxn < 2; ++pxn) {
      t0 = Clock::now();
      for (long f = 0; f < flows; ++f) {
        const int src = static_cast<int>(next() % gpus);
        const int dst = static_cast<int>(next() % gpus);
        checksum += t.route(src, dst, static_cast<std::uint64_t>(f), 7, pxn == 1).size();
      }
      ns[pxn] = seconds_since(t0) * 1e9 / static_cast<double>(flows);
    }
    fmt::print("{:<52} {:>7} {:>9} {:>9} {:>9.3f} {:>10.3f} {:>10.1f} {:>10.1f} {:>8}   (bisection {}, {} links "
               "on paths)\n",
               c.name, gpus, t.num_vertices(), t.num_links(), build_s, summary_s, ns[0], ns[1], peak_rss_mib(),
               railyard::format_bandwidth(summary.bisection), checksum);
  }
  return 0;
}
