// Trace and workload-file readers. Each returns a validated Workload (validate() in op_graph.hpp) or throws
// railyard::InputError naming the file, the rank and the node (Chakra node id, Kineto event index, text line).
// The mapping rules of each reader are in workloads/README.md.
#pragma once

#include "railyard/common/units.hpp"
#include "railyard/workloads/op_graph.hpp"

#include <string>
#include <vector>

namespace railyard::workloads {

// ---- Chakra execution traces (mlcommons/chakra et_def.proto) ----

struct ChakraOptions {
  /// comm_group.json (group id -> member ranks). Empty: "<folder of the traces>/comm_group.json" when it exists.
  std::string comm_group_file;
};

/// Reads `<prefix>.<rank>.et` for ranks 0, 1, ... (all that exist, which must be contiguous from 0). `prefix` may
/// also name one of the files; the rank suffix is then stripped.
Workload read_chakra(const std::string& prefix, const ChakraOptions& options = {});

// ---- PyTorch profiler / Kineto traces (Chrome trace JSON) ----

struct KinetoOptions {
  /// Kineto records no cross-stream waits (cudaStreamWaitEvent targets), so by default an op also waits for the
  /// last op of every other stream that had ended before it started in the trace (happens-before by timestamps).
  bool infer_cross_stream_deps = true;
  /// PyTorch host execution traces (ExecutionTraceObserver JSON: `.json`, `.json.gz`, or `.tar.gz`/`.tgz`/`.tar`
  /// archives of several), one per rank: its own rank field, else the rank number in its file name (dlrm_eg_3.json
  /// is rank 3); one alone with one Kineto trace pairs with it. Each is linked to the Kineto trace of its rank, and
  /// an NCCL kernel whose size or process group that trace's args do not give takes them from the record_param_comms
  /// node that launched it (workloads/README.md, "PyTorch host ET + Kineto").
  std::vector<std::string> host_et;
};

/// Reads one or more Kineto traces: `.json`, `.json.gz`, or `.tar.gz`/`.tgz`/`.tar` archives holding several. The
/// rank of each trace is distributedInfo.rank. When the traces do not cover ranks 0..world_size-1, the workload
/// holds the traced ranks only, renumbered in rank order, with communicators restricted to them (see Workload::notes).
Workload read_kineto(const std::vector<std::string>& paths, const KinetoOptions& options = {});

// ---- Layer-wise text workloads: ASTRA-sim 1.0 and SimAI/AICB ----

struct LayerWorkloadOptions {
  /// Number of ranks to expand to. 0: the header's `all_gpus:` (SimAI); required when the header has none.
  int world_size = 0;
  /// Model-parallel (TP) group size. 0: the header's `model_parallel_NPU_group:`; required by the hybrid policies
  /// of files that do not give it. For HYBRID_DATA_MODEL the TP groups are consecutive ranks; for
  /// HYBRID_MODEL_DATA the data-parallel groups are (ASTRA-sim's dimension-0 split).
  int model_parallel = 0;
  /// Length of one compute-time unit: ASTRA-sim 1.0 counts cycles, AICB writes nanoseconds; 1 ns (a 1 GHz clock)
  /// by default for both.
  Seconds tick = units::ns(1);
};

/// SimAI / AICB workload (aliyun/SimAI example/workload_analytical.txt, aicb workload/simAI/...): communication
/// types may carry SimAI's group suffixes (_EP, _DP_EP); header fields ep:, pp:, vpp:, ga:, all_gpus:, pp_comm.
Workload read_simai_workload(const std::string& path, const LayerWorkloadOptions& options = {});
/// ASTRA-sim 1.0 text workload (inputs/workload/ASTRA-sim-1.0/*.txt): DATA, MODEL, HYBRID_DATA_MODEL,
/// HYBRID_MODEL_DATA, HYBRID_CUSTOMIZED, HYBRID_TRANSFORMER, HYBRID_TRANSFORMER_FWD_IN_BCKWD, HYBRID_DLRM, MICRO.
Workload read_astrasim1_workload(const std::string& path, const LayerWorkloadOptions& options = {});
/// AICB "physical" workload CSV (aicb workload/physical/...): "[rank0 ~ rankN]", a header, then one row per
/// collective (comm_type, comm_group, comm_group_size, msg_size, stage, dst, src, ..., count). Collectives only, in
/// order on one stream; groups in Megatron's rank order from the tp/dp/ep/pp group sizes. Uses
/// LayerWorkloadOptions::world_size when set, else the rank range.
Workload read_aicb_physical_workload(const std::string& path, const LayerWorkloadOptions& options = {});

} // namespace railyard::workloads
