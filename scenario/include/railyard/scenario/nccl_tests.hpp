// A simulated nccl-tests sweep (NVIDIA/nccl-tests: all_reduce_perf and friends): sizes from min to max, every size
// `iters` calls of the collective on the scenario's cluster, each size isolated from the others as nccl-tests'
// barrier between sizes isolates them, printed in nccl-tests' own table (src/common.cu) with algbw and busbw as its
// doc/PERFORMANCE.md defines them.
#pragma once

#include "railyard/models/collective.hpp"
#include "railyard/models/host_issue.hpp"
#include "railyard/scenario/scenario.hpp"

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace railyard::scenario {

struct NcclTestsOptions {
  models::CollectiveKind kind = models::CollectiveKind::AllReduce;
  std::int64_t min_bytes = 32 * 1024 * 1024; ///< nccl-tests -b (its default)
  std::int64_t max_bytes = 32 * 1024 * 1024; ///< -e
  std::int64_t step_factor = 1;              ///< -f: multiply by it when > 1
  std::int64_t step_bytes = 1024 * 1024;     ///< -i: else add this
  std::vector<int> ranks;                    ///< GPUs taking part, in rank order; empty: all of the cluster
  int root = 0;                              ///< -r (broadcast, reduce)
  std::string type = "float";                ///< -d
  std::string redop = "sum";                 ///< nccl-tests -o (RCCL: decides MSCCL / MSCCL++ with -d)
  /// nccl-tests -G: graph launches per size, the calls captured into a CUDA / HIP graph (0: plain launches). Only
  /// RCCL's choice reads it: MSCCL++ takes captured calls alone (models/rccl_tuning.hpp rccl_default_kernel).
  int graph_launches = 0;
  int iters = 1; ///< calls per size, back to back; the time is their average
  /// How the calls move: "flows" (every transfer of the lowered schedule on the scenario's network), "coupled" (each
  /// channel one fluid flow: sim::CommModel::Coupled) or "auto": coupled from kCoupledFrom ranks on, where per-step
  /// flows take minutes per size (a 1 GiB all-reduce on 1,024 GPUs is 33.5 M transfers), and flows below.
  std::string communication = "auto";
  /// nccl-tests' process shape: one process per node drives that node's GPUs from `threads` threads (-t), each
  /// thread `-g` = GPUs per node / threads of them (`all_reduce_perf -t T -g G`); or one process per GPU
  /// (`mpirun -np N all_reduce_perf -g 1`).
  int threads = 1;
  bool process_per_gpu = false;
  /// What one issuing thread pays per call and per channel of a call (models/host_issue.hpp). Every iteration a
  /// thread issues its GPUs' calls back to back, so a size whose calls take the thread longer than the GPUs take to
  /// run them is host-bound: time = max(device, GPUs per thread x (per_call + per_channel x channels)). Zero: the
  /// host is not modelled (the device time alone).
  models::HostIssueCost host;
};
inline constexpr int kCoupledFrom = 512;

/// nccl-tests' byte counts for one size (getCollByteCount of each test): the "size" column (the larger of the send
/// and receive buffers, which is also the call's size in Railyard's convention) and the "count" column.
struct NcclTestsCounts {
  std::int64_t size_bytes = 0;
  std::int64_t count = 0;
};
NcclTestsCounts nccl_tests_counts(models::CollectiveKind kind, std::int64_t bytes, int type_size, int nranks);

/// One column of a row: nccl-tests' out-of-place or in-place call.
struct NcclTestsColumn {
  models::CollectiveCall call; ///< as run: NCCL's (RCCL's) algorithm, protocol and channels for it
  Seconds time{0};             ///< per call: the longer of the device and the issuing thread
  Seconds device_time{0};      ///< the simulated collective
  Seconds host_time{0};        ///< the issuing thread per iteration (0 when options.host is zero)
  double algbw_GBps = 0, busbw_GBps = 0;
  /// RCCL only: the kernel RCCL runs before its cost model is asked, as simulated: MSCCL's XML file
  /// ("allreduce-allpairs-8n-simple-op.xml") or MSCCL++'s kernel ("allreduce7"); empty: the cost model's pick.
  std::string rccl_kernel;
};

/// One size: its counts, its out-of-place call (the row's own column fields: call, time, ..., as nccl-tests prints
/// them first) and its in-place call.
struct NcclTestsRow : NcclTestsColumn {
  NcclTestsCounts counts;
  /// The in-place call: the out-of-place one's numbers, except where RCCL runs it differently (MSCCL's algorithms are
  /// in-place or out-of-place; in-place all_reduce of 11 to 14 MiB has none), when it is simulated on its own.
  NcclTestsColumn in_place;
};

/// Where one rank runs, as nccl-tests' "#  Rank N ... on HOST device D" line names it.
struct NcclTestsDevice {
  std::string host; ///< the node's name: node0, node1, ... (one per node, as hostnames are)
  int device = 0;   ///< the GPU's index inside its node (its CUDA device number there)
};

struct NcclTestsRun {
  NcclTestsOptions options;
  int nranks = 0;
  int gpus_per_process = 0;             ///< GPUs one process drives: its node's ranks, or 1 with process_per_gpu
  int gpus_per_thread = 0;              ///< the header's nGpus: gpus_per_process / threads
  std::string gpu_model;                ///< the name CUDA gives the GPU of the scenario's system
  std::vector<NcclTestsDevice> devices; ///< per rank
  /// NCCL_ALGO / NCCL_PROTO in force for the run (the scenario's nccl.algo / nccl.proto, which --algo / --proto
  /// replace), as given; printed the way NCCL acknowledges them with NCCL_DEBUG=INFO.
  std::optional<std::string> algo_env, proto_env;
  bool coupled = false; ///< the calls ran as coupled flows (NcclTestsOptions::communication)
  models::CollectiveLibrary library = models::CollectiveLibrary::Nccl; ///< RCCL: rccl-tests' header and names
  std::vector<NcclTestsRow> rows;
};

/// Runs the sweep on the scenario's cluster with its `nccl:` settings, one simulation per size (per-step flows each in
/// a child process: SimGrid runs one engine per process; coupled on the replay's event loop). Bad options are
/// InputError naming them.
NcclTestsRun simulate_nccl_tests(const Scenario& scenario, const NcclTestsOptions& options);

/// Prints the run as nccl-tests prints it: header, device lines (one host name per node, device numbers inside the
/// node), the lines NCCL prints with NCCL_DEBUG=INFO when NCCL_PROTO / NCCL_ALGO are set (src/graph/tuning.cc:
/// "NCCL_PROTO set by environment to %s", "NCCL_ALGO set by environment to %s", once per rank, each with NCCL's
/// "host:pid:tid [device] NCCL INFO " prefix), the column header, one row per size with
/// out-of-place and in-place results (alike unless RCCL runs the in-place call on another kernel; #wrong 0: it moves
/// no wrong data), and the footer with the average bus bandwidth. Railyard's own notes (NCCL's choice per size, the
/// MSCCL / MSCCL++ kernel RCCL runs it on where it does, the in-place column's where it differs) follow the footer as
/// comment lines.
void print_nccl_tests(std::ostream& out, const NcclTestsRun& run, const std::string& scenario_name);

} // namespace railyard::scenario
