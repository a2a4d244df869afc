// RCCL's own choice of algorithm and protocol on AMD MI300X (gfx942), reproduced as pure functions from RCCL 2.21.5
// (ROCm/rccl commit 0cbce2a7571c907554199fad7e905f16ec0a565c, "RCCL 2.21.5 for ROCm 6.3.0", NCCL base 2.21.5):
//   - rccl_algo_cost() / rccl_predict() are RCCL's ncclTopoTuneModel + ncclTopoGetAlgoTime (src/graph/tuning.cc, the
//     __HIP_PLATFORM_AMD__ branches): bus bandwidth x bwRatio of the tuning model the matched rome model names, then
//     time = latency + bytes / (bandwidth x tree or ring correction factor by size);
//   - rccl_choose() is topoGetAlgoInfo + getChannnelThreadInfo (src/enqueue.cc): the cheapest combination, the Ring
//     fallback when nothing else is left, channels trimmed for small messages (threads never, on AMD);
//   - rccl_derive_graphs() / rccl_ring_orders() give what RCCL's rome models give an 8x MI300X node
//     (src/graph/rome_models.cc parseA2a8P: rome_model_79 on one node, rome_model_81 on several) and the channel
//     counts of ncclTopoPostset (src/graph/connect.cc).
// Callers normally reach these through nccl_tuning.hpp: algo_cost, predict, table, choose, check_request and validate
// dispatch here when NcclTuningInput::library is CollectiveLibrary::Rccl, and derive_graphs / node_spec know
// NodeLayout::Mi300x. Constants: models/data/rccl_tuning_2_21_5.inc. Not modelled (see models/README.md "RCCL cost
// model"): the MSCCL and MSCCL++ kernels RCCL runs some single-node calls on instead (rccl_default_path says which),
// CollNet, tuner plugins, NCCL_THREAD_THRESHOLDS, and MI300X nodes that match no rome model or another one.
#pragma once

#include "railyard/models/nccl_tuning.hpp"

#include <array>
#include <optional>
#include <vector>

namespace railyard::models {

struct LoweringCosts; // railyard/models/lowering.hpp (included by callers of rccl_lowering_costs)

inline constexpr int kRcclAlgorithms = 6; ///< NCCL_NUM_ALGORITHMS in RCCL 2.21.5: no PAT

/// One entry of rcclTuningModel[] (src/graph/tuning.cc struct tuningModel).
struct RcclTuningModel {
  std::array<std::array<std::array<double, kNcclProtocols>, kRcclAlgorithms>, 3> hw_latency_us; ///< hwLat[hw][a][p]
  std::array<std::array<std::array<double, kNcclProtocols>, kRcclAlgorithms>, 2> bw_ratio; ///< bwRatio[<=2|>2][a][p]
  std::array<std::array<double, 27>, kNcclProtocols> tree_correction; ///< treeCorrectionFactor[p][log2i(bytes/64)]
  std::array<std::array<double, 27>, kNcclProtocols> ring_correction; ///< ringCorrectionFactor[p][log2i(bytes/64)]
};

/// The constants behind the RCCL model, for reports and provenance (values in models/data/rccl_tuning_2_21_5.inc).
struct RcclConstants {
  const char* version;
  const char* source;
  std::array<std::array<double, kNcclProtocols>, kRcclAlgorithms> base_latency_us;
  std::array<RcclTuningModel, 6> tuning_models;
  double gfx94_ring_ll_bcast_reduce_factor;
  double net_overhead_intel_us, net_overhead_amd_us, net_overhead_other_us, net_overhead_simple_multiplier;
  double tree_ratio;
  int max_threads, simple_max_threads, ll_max_threads, ll128_max_threads;
  double pci_bw_gbps;
  long ll_thread_threshold, ll128_thread_threshold, simple_thread_threshold;
  double xgmi_gfx94_gbps;
  double pcie_gen5_x16_gbps;
  int max_channels, multi_node_max_channels;
  int default_nc, gfx94_nc_two_ranks, gfx94_nc_four_ranks;
  int default_min_channels;
  std::array<int, 12> msccl_8_rank_channels;
  long mscclpp_threshold_bytes;
  long msccl_allreduce_max_bytes;
  const char* rome_model_79_ring_base;
  const char* rome_model_81_ring_base;
  const char* rome_model_81_ring_tail2;
  const char* rome_model_81_ring_tail1;
};
const RcclConstants& rccl_constants();

/// RCCL's tuning-table entry (comm->latencies, comm->bandwidths) for (algorithm, protocol), or nothing where RCCL
/// gives it zero bandwidth: not implemented for the collective, PAT (absent in RCCL), NVLS/NVLSTree (no NVSwitch),
/// CollNet (no plugin), LL128 (bwRatio 0 in tuning model 5, and off by default on all but gfx90a), Tree/Simple on one
/// gfx94x node (skipped by ncclTopoTuneModel), or switched off by NCCL_ALGO / NCCL_PROTO.
std::optional<NcclAlgoCost> rccl_algo_cost(const NcclTuningInput& in, Algorithm a, Protocol p);

/// ncclTopoGetAlgoTime with RCCL's corrections: Tree bandwidth x treeCorrectionFactor, Ring across nodes x
/// ringCorrectionFactor, both by log2i(bytes >> 6) capped at 26. Empty where rccl_algo_cost is.
std::optional<Seconds> rccl_predict(const NcclTuningInput& in, Algorithm a, Protocol p);

/// rccl_predict() for every (algorithm, protocol) in Algorithm's order (PAT rows empty).
std::vector<NcclPrediction> rccl_table(const NcclTuningInput& in);

/// topoGetAlgoInfo + getChannnelThreadInfo: the cheapest combination (first on ties; LL128 skipped unless the
/// topology is exactly RCCL_TOPO_XGMI_ALL, i.e. no rome model matched); where NCCL_ALGO / NCCL_PROTO leave nothing,
/// RCCL's Ring fallback (the ring bandwidths before the overrides). Channels: comm channels, one fewer while bytes <
/// channels x threads x threshold; threads stay at the maximum (256). Empty for AllToAll / SendRecv.
std::optional<NcclChoice> rccl_choose(const NcclTuningInput& in);

/// Refuses what RCCL cannot run on this communicator, naming collective, algorithm (and protocol) and why: NVLS and
/// NVLSTree (no NVSwitch multicast on AMD), CollNet, PAT (not in RCCL 2.21.5), Tree outside all_reduce, Tree/Simple
/// on one gfx94x node, LL128 (zero bandwidth in the MI300X tuning model), alltoall / sendrecv algorithms.
void rccl_check_request(const NcclTuningInput& in, Algorithm a, std::optional<Protocol> p, const InputLocation& where);

/// Checks an RCCL input (ranks, graphs, tuning model index, gfx942, overrides RCCL can parse) and throws InputError
/// naming the field.
void rccl_validate(const NcclTuningInput& in, const InputLocation& where);

/// The graphs and channel counts RCCL 2.21.5 sets up on `nnodes` 8x MI300X nodes (node_spec(NodeLayout::Mi300x)):
/// one node matches rome_model_79 (the NICs are trimmed from a one-node communicator): 28 ring and tree channels of
/// 336 / 28 = 12 GB/s, 56 comm channels; several nodes (8 NICs per node) match rome_model_81: 64 channels of
/// 336 / 64 = 5.25 GB/s, 64 comm channels. `limits` are NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS as RCCL's
/// ncclTopoPostset applies them. Throws InputError for a node RCCL's models do not cover this way.
NcclSystemGraphs rccl_derive_graphs(const NodeSpec& node, int nnodes, NcclChannelLimits limits = {});

/// The intra-node GPU orders (local indices 0..7) of RCCL's rings on node `host` (0-based) of `nnodes` MI300X
/// nodes, one per channel up to the shortest period of the channel sequence that divides the communicator's channel
/// count, so channel c runs orders[c % orders.size()]. From the rome model's ring strings (one node: rome_model_79's
/// 28 rings, 14 distinct, channels doubled to 56; several nodes: rome_model_81's 64, an order entering the node at
/// its first GPU through that GPU's NIC and leaving from its last). With an even node count RCCL reverses every
/// order on odd hosts (parseGraph reverse = hostIdx % 2), so rings cross between nodes on one rail; with an odd
/// count the last two hosts take ringTail1 / ringTail2. Assumes RCCL's GPU and NIC mapping is the identity (the
/// node enumerates like the model: GPU i's NIC is NIC i, GPUs 0-3 on NUMA node 0).
std::vector<std::vector<int>> rccl_ring_orders(const NodeSpec& node, int nnodes, int host = 0);

/// RCCL's fixed costs for the lowering, as nccl_lowering_costs gives NCCL's: launch = baseLat[a][p], intra_hop =
/// hwLat[NVLINK][a][p] and inter_hop = hwLat[NET][a][p] of MI300X's tuning model (rcclTuningModel[5]); a ring across
/// nodes pays at least the network post overhead per intra-node hop (AMD EPYC host: 2 us, x3 for Simple), as RCCL's
/// model does. Throws std::invalid_argument for NVLS, NVLSTree, PAT and CollNet, which RCCL does not run here.
LoweringCosts rccl_lowering_costs(Algorithm a, Protocol p, int nranks, int nnodes);

/// Where RCCL 2.21.5 sends a call before its cost model is asked (src/collectives.cc -> mscclEnqueueCheck) with
/// default settings: on a communicator whose rome model enables MSCCL (one 8x MI300X node), all_reduce up to
/// RCCL_MSCCLPP_THRESHOLD (1 MiB) and all_gather of at most 1 MiB output run on MSCCL++ kernels (built by default for
/// gfx942), other all_reduce up to 16 MiB on MSCCL's allpairs algorithm (out-of-place ranges). Neither is modelled;
/// rccl_choose() prices the path RCCL takes with RCCL_MSCCL_ENABLE=0 / RCCL_MSCCLPP_ENABLE=0.
enum class RcclKernelPath { CostModel, Mscclpp, Msccl };
RcclKernelPath rccl_default_path(const NcclTuningInput& in);
std::string to_string(RcclKernelPath p);

} // namespace railyard::models
