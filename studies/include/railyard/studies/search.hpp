// railyard search: the fastest parallel layouts of a generated training step on a cluster, through the sweep
// machinery (sweep.hpp). studies/README.md has the file format.
//
//   name: llama3_70b_512
//   base: ../examples/llama3_70b_1024.yaml   # a scenario with workload: generator: megatron
//   gpus: [512]                              # GPU counts to search (nodes = gpus / gpus_per_node); default: the base's
//   space:                                   # values per layout key; a key left out keeps the base's value
//     tp: [1, 2, 4, 8]
//     pp: [1, 2, 4, 8]
//     virtual_stages: [1, 2, 5]
//     micro_batch: [1, 2]
//     recompute: [selective, full]
//     zero: [1]
//   top: 5
//
// dp is derived: gpus / (tp x pp x cp). Every combination is a point. Pass 1 runs each point's memory model alone
// (railyard run --memory-only); the layouts that do not fit are reported with their breakdown and not simulated;
// pass 2 simulates the others; they are ranked by step time, with the Pareto front of step time against GPUs when
// several GPU counts are searched. With `parts:` (and optionally `catalogue:`, as a plan's cluster has them) every
// layout also gets its cluster's capex and cost per GPU-hour, and the Pareto front of step time against capex.
#pragma once

#include "railyard/studies/sweep.hpp"

#include <string>
#include <vector>

namespace railyard::studies {

struct SearchSpec {
  std::string file, name;
  SweepSpec sweep;       ///< the candidates as a sweep: gpus (as cluster.nodes), then the space's keys; dp derived
  std::vector<int> gpus; ///< the GPU counts searched
  std::vector<std::string> keys; ///< the space's keys in order (short names: tp, pp, ...)
  int top = 5;
  int gpus_per_node = 0;
};

/// Reads a search file; InputError naming the file, line and field for anything wrong in it.
SearchSpec load_search(const std::string& path);

struct Candidate {
  std::size_t point = 0;
  int gpus = 0;
  std::vector<std::string> layout; ///< the value of each of SearchSpec::keys, then dp
  std::string status;              ///< ok, does_not_fit, not_a_layout, failed
  std::string reason;              ///< why it is not ranked (the memory breakdown, the scenario's message)
  double step_time_s = 0, mfu = 0, model_tflops_per_gpu = 0, peak_memory_bytes = 0, capacity_bytes = 0;
  std::string memory_breakdown;
  int rank = 0;                               ///< 1 = fastest; 0 when not ranked
  bool pareto = false;                        ///< on the front of step time against GPUs
  double capex_usd = 0, usd_per_gpu_hour = 0; ///< with parts: the cluster's cost (plan.hpp); 0 when not priced
  bool pareto_cost = false;                   ///< with parts: on the front of step time against capex
};

struct SearchOutcome {
  std::vector<Candidate> candidates; ///< ranked ones first (by step time), then the others in point order
  std::size_t ranked = 0, does_not_fit = 0, not_a_layout = 0, failed = 0;
  std::string table; ///< search.csv
};

/// Runs the search into options.out (memory/ and steps/ hold the two passes' sweeps; search.csv the ranking).
SearchOutcome run_search(const SearchSpec& spec, const SweepRunOptions& options);

} // namespace railyard::studies
