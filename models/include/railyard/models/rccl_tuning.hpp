// RCCL's own choice of algorithm and protocol on AMD MI300X (gfx942), reproduced as pure functions from RCCL 2.21.5
// (ROCm/rccl commit 0cbce2a7571c907554199fad7e905f16ec0a565c, "RCCL 2.21.5 for ROCm 6.3.0", NCCL base 2.21.5):
//   - rccl_algo_cost() / rccl_predict() are RCCL's ncclTopoTuneModel + ncclTopoGetAlgoTime (src/graph/tuning.cc, the
//     __HIP_PLATFORM_AMD__ branches): bus bandwidth x bwRatio of the tuning model the matched rome model names, then
//     time = latency + bytes / (bandwidth x tree or ring correction factor by size);
//   - rccl_choose() is topoGetAlgoInfo + getChannnelThreadInfo (src/enqueue.cc): the cheapest combination, the Ring
//     fallback when nothing else is left, channels trimmed for small messages (threads never, on AMD);
//   - rccl_communicator_graphs() / rccl_derive_graphs() / rccl_ring_orders() give what RCCL sets up on MI300X: the
//     rome models for whole 8-GPU nodes (src/graph/rome_models.cc parseA2a8P: rome_model_79 on one node,
//     rome_model_81 on several), RCCL's own search (src/graph/search.cc ncclTopoCompute) ported exactly for 2..7
//     GPUs of one node, a closed-form link budget in its place across nodes, then ncclTopoPostset
//     (src/graph/connect.cc).
// Callers normally reach these through nccl_tuning.hpp: algo_cost, predict, table, choose, check_request and validate
// dispatch here when NcclTuningInput::library is CollectiveLibrary::Rccl, and derive_graphs / node_spec know
// NodeLayout::Mi300x. Constants: models/data/rccl_tuning_2_21_5.inc. The MSCCL and MSCCL++ kernels RCCL runs some
// single-node calls on instead: rccl_default_kernel says which (models/data/rccl_kernels_mi300x.inc), lower() builds
// their schedules (lowering_msccl.cpp). Not modelled (see models/README.md "RCCL cost model"): CollNet, tuner plugins,
// NCCL_THREAD_THRESHOLDS, and whole MI300X nodes that match another rome model.
#pragma once

#include "railyard/models/nccl_tuning.hpp"

#include <array>
#include <optional>
#include <span>
#include <string>
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
  // ncclTopoCompute (src/graph/search.cc) where no rome model matches: RCCL's speed array (intra and inter are the
  // same on AMD), the step rule, ncclTopoDupChannels' threshold, the search timeouts and the 4P2H ring limit.
  std::array<double, 17> search_speeds_gbps;
  double speed_step_ratio;
  double dup_min_bw_gbps;
  int dup_skip_above_compute_capability, dup_skip_above_channels;
  double dup_skip_below_gbps;
  long search_timeout, search_timeout_tree, search_timeout_same_channels, search_global_timeout;
  int rome_4p2h_one_node_ring_channels;
  double fallback_bw_gbps;
  int hip_compute_capability;
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
/// topology is exactly RCCL_TOPO_XGMI_ALL: no rome model matched, at most 4 GPUs per node); where NCCL_ALGO /
/// NCCL_PROTO leave nothing, RCCL's Ring fallback (the ring bandwidths before the overrides). Channels: comm channels,
/// one fewer while bytes < channels x threads x threshold; threads stay at the maximum (256). Empty for AllToAll /
/// SendRecv.
std::optional<NcclChoice> rccl_choose(const NcclTuningInput& in);

/// Refuses what RCCL cannot run on this communicator, naming collective, algorithm (and protocol) and why: NVLS and
/// NVLSTree (no NVSwitch multicast on AMD), CollNet, PAT (not in RCCL 2.21.5), Tree outside all_reduce, Tree/Simple
/// on one gfx94x node, LL128 (zero bandwidth in the MI300X tuning model), alltoall / sendrecv algorithms.
void rccl_check_request(const NcclTuningInput& in, Algorithm a, std::optional<Protocol> p, const InputLocation& where);

/// Checks an RCCL input (ranks, graphs, tuning model index, gfx942, overrides RCCL can parse) and throws InputError
/// naming the field.
void rccl_validate(const NcclTuningInput& in, const InputLocation& where);

/// The graphs and channel counts RCCL 2.21.5 sets up for a communicator of `ranks_per_node` GPUs on each of `nnodes`
/// MI300X nodes (node: node_spec(NodeLayout::Mi300x), with nics = the NICs those GPUs use on one node). Three ways,
/// each as RCCL takes it (models/README.md "RCCL cost model" has the table of shapes):
///   - 8 GPUs per node: the rome models (src/graph/rome_models.cc parseA2a8P). One node: rome_model_79, 28 ring and
///     tree channels of 336 / 28 = 12 GB/s, 56 comm channels, MSCCL on; several nodes (8 NICs): rome_model_81, 64
///     channels of 5.25 GB/s, 64 comm channels. Tuning model 5.
///   - 2..7 GPUs on one node: no rome model matches, so ncclTopoCompute runs its depth-first search, ported exactly
///     for the xGMI mesh (one 48 GB/s link per GPU pair): TP 2 gives ring 2 x 24 and tree 2 x 48 GB/s, TP 4 ring and
///     tree 6 x 24 GB/s. Tuning model 0.
///   - 1..7 GPUs per node on several nodes: ncclTopoCompute's speed search with a closed-form link budget in place of
///     its depth-first search (a channel per NIC at min(NIC, PCIe) / speed, ppn x floor(48 / speed) over the xGMI
///     links); exact for one GPU per node (ring 2 x 24 GB/s, tree 2 x 48/24). Tuning model 0.
/// Then ncclTopoPostset (src/graph/connect.cc) with RCCL's nc (src/init.cc: 16 for 2 ranks, 4 for 4 ranks on
/// MI300X). `limits` are NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS as RCCL applies them. Throws InputError naming the
/// field for shapes RCCL's code takes elsewhere (8 GPUs with other than 8 NICs across nodes: rome_model_84 / 87 or
/// no model; a node that is not a full xGMI mesh; one rank).
NcclSystemGraphs rccl_communicator_graphs(const NodeSpec& node, int nnodes, int ranks_per_node,
                                          NcclChannelLimits limits = {});

/// rccl_communicator_graphs with the ranks per node read from `node` as sim/src/nccl_resolve.cpp writes it:
/// node.gpus GPUs per node, except that 2 GPUs with 1 NIC on several nodes stand for 1 GPU per node (the simulator
/// passes gpus = max(2, ppn)). RCCL's channel count also depends on the communicator's rank count (nc 16 at 2 ranks,
/// 4 at 4), so a caller that knows its ranks per node should call rccl_communicator_graphs.
NcclSystemGraphs rccl_derive_graphs(const NodeSpec& node, int nnodes, NcclChannelLimits limits = {});

/// A ready RCCL input for `ranks_per_node` GPUs on each of `nnodes` MI300X nodes (rccl_communicator_graphs).
NcclTuningInput rccl_make_input(const NodeSpec& node, int nnodes, int ranks_per_node, CollectiveKind kind, Bytes bytes);

/// The intra-node GPU orders of RCCL's rings on node `host` (0-based) of `nnodes`, one per channel up to the shortest
/// period of the channel sequence that divides the communicator's channel count, so channel c runs
/// orders[c % orders.size()]; ranks per node are read from `node` as rccl_derive_graphs does. Whole nodes: the rome
/// models' ring strings (one node: rome_model_79's 28 rings, 14 distinct, channels doubled to 56; several nodes:
/// rome_model_81's 64, an order entering the node at its first GPU through that GPU's NIC and leaving from its last;
/// with an even node count RCCL reverses every order on odd hosts (parseGraph reverse = hostIdx % 2), with an odd
/// count the last two hosts take ringTail1 / ringTail2), local indices 0..7, assuming RCCL's GPU and NIC mapping is
/// the identity. 2..7 GPUs on one node: the rings of RCCL's search (indices 0..ppn-1 of the communicator's GPUs in
/// bus order), e.g. TP 2: {0 1}; one GPU per node: {0}. Several GPUs per node across nodes: InputError (field
/// node.gpus), the closed form has no order.
std::vector<std::vector<int>> rccl_ring_orders(const NodeSpec& node, int nnodes, int host = 0);

/// RCCL's fixed costs for the lowering, as nccl_lowering_costs gives NCCL's: launch = baseLat[a][p], intra_hop =
/// hwLat[NVLINK][a][p] (hwLat[PCI] with one GPU per node, whose graph is PATH_LOC) of rcclTuningModel[tuning_model]
/// and inter_hop = hwLat[NET][a][p] of tuning model 0 (model 5's 320 us for Ring/Simple is a weight of RCCL's choice,
/// not a hop's latency: see the .cpp); a ring across nodes pays at least the network post overhead per intra-node hop
/// (AMD EPYC host: 2 us, x3 for Simple), as RCCL's model does. The four-argument form takes tuning model 5 for whole
/// 8-GPU nodes (nranks = 8 x nnodes: rome_model_79 / rome_model_81) and 0 otherwise (no rome model matched).
/// MscclAllPairs (MSCCL's kernel moves data through RCCL's Primitives): launch baseLat[Ring][p], intra_hop
/// hwLat[NVLINK][Ring][p] of the tuning model, link_efficiency fitted per protocol; Mscclpp: the fitted launch, no
/// per-step cost beyond the path, link_efficiency fitted for LL (allreduce7), 1 for Simple (allgather6). Throws
/// std::invalid_argument for NVLS, NVLSTree, PAT and CollNet, which RCCL does not run here.
LoweringCosts rccl_lowering_costs(Algorithm a, Protocol p, int nranks, int nnodes);
LoweringCosts rccl_lowering_costs(Algorithm a, Protocol p, int nranks, int nnodes, int tuning_model);

/// One MSCCL algorithm RCCL 2.21.5 installs (tools/msccl-algorithms/*.xml: the <algo> element's attributes and the
/// thread blocks of a GPU that send to one peer). Values in models/data/rccl_kernels_mi300x.inc.
struct MscclAlgorithmSpec {
  const char* file; ///< file name in tools/msccl-algorithms
  CollectiveKind kind;
  Protocol protocol;
  int channels;        ///< nchannels
  int chunks_per_loop; ///< nchunksperloop: the buffer is cut into this many chunks (count x sizeMultiplier must divide)
  int ranks;           ///< ngpus
  bool in_place, out_of_place;
  long min_bytes, max_bytes; ///< minBytes, maxBytes of count x type size x sizeMultiplier (8 for alltoall)
  int peer_channels;         ///< thread blocks of a GPU sending to one peer, each with an equal share
};
/// Every MSCCL algorithm of RCCL 2.21.5, in the directory's sorted order.
std::span<const MscclAlgorithmSpec> msccl_algorithms();
/// The algorithm of that collective, protocol and nchannels (the in-place and out-of-place files of one pair move the
/// same data); null for none.
const MscclAlgorithmSpec* msccl_algorithm(CollectiveKind kind, Protocol p, int channels);

/// What MSCCL++'s and MSCCL's selection reads beyond size, and the fitted rates of their kernels (values and sources in
/// models/data/rccl_kernels_mi300x.inc).
struct RcclKernelConstants {
  long mscclpp_alignment_bytes;                                  ///< MSCCL++ needs nBytes a multiple of this
  std::array<const char*, 4> mscclpp_allreduce_types;            ///< nccl-tests type names MSCCL++ all_reduce takes
  std::array<const char*, 4> msccl_ops;                          ///< reductions MSCCL's scheduler takes (below ncclAvg)
  double msccl_link_efficiency_ll, msccl_link_efficiency_simple; ///< fitted: share of an xGMI link's bandwidth
  double mscclpp_launch_us;                                      ///< fitted: MSCCL++ allreduce7's fixed cost
  double mscclpp_link_efficiency_ll;                             ///< fitted: allreduce7's LL8 writes
  double mscclpp_link_efficiency_simple;                         ///< allgather6's puts: not measured, 1
  const char* fit_note;                                          ///< the fit's data, method and residuals
};
const RcclKernelConstants& rccl_kernel_constants();

/// How calls reach RCCL, beyond collective and size: what src/collectives.cc and mscclEnqueueCheck look at, and
/// RCCL_MSCCL_ENABLE / RCCL_MSCCLPP_ENABLE.
struct RcclCallMode {
  bool msccl = true;   ///< RCCL_MSCCL_ENABLE (default 1); 0 turns off MSCCL++ too (src/init.cc needs mscclEnabled())
  bool mscclpp = true; ///< RCCL_MSCCLPP_ENABLE (default 1 in builds with MSCCL++, as RCCL's for gfx942)
  /// The call is captured into a HIP graph (rccl-tests -G N, hipStreamBeginCapture): MSCCL++ runs only then.
  bool graph_captured = false;
  /// Each rank in a process of its own on its host (mpirun -np 8 ... -g 1): MSCCL++ needs it (mscclppCommCompatible,
  /// allProcessHostsUnique); one process driving several GPUs (-g 8) has none.
  bool process_per_gpu = true;
  bool in_place = false;      ///< sendbuff == recvbuff (all_gather: sendbuff at the rank's offset of recvbuff)
  std::string type = "float"; ///< element type (nccl-tests -d names): MSCCL needs count divisible by chunks
  std::string redop = "sum";  ///< reduction (nccl-tests -o names)
};

/// Where RCCL sends a call: its cost model's pick, MSCCL++ or MSCCL.
enum class RcclKernelPath { CostModel, Mscclpp, Msccl };
std::string to_string(RcclKernelPath p);

/// A kernel RCCL runs instead of its cost model's pick: algorithm MscclAllPairs or Mscclpp, its protocol and
/// channels (MSCCL: the XML's nchannels; MSCCL++: 1, one kernel whose blocks serve all peers) and its name.
struct RcclKernel {
  RcclKernelPath path = RcclKernelPath::CostModel;
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  int channels = 1;
  std::string name; ///< the XML file (MSCCL), or MSCCL++'s kernel: "allreduce7" / "allgather6"
};

/// What RCCL 2.21.5 runs for this call before its cost model is asked (src/collectives.cc: ncclAllReduce,
/// ncclAllGather and ncclAllToAll go to mscclEnqueueCheck when mscclAvailable; src/misc/msccl/msccl_lifecycle.cc), on
/// a communicator whose rome model enables MSCCL (one 8x MI300X node: rome_model_79 "mscclEnabled=1"):
///   1. MSCCL++ (mode.mscclpp, mode.process_per_gpu): only for a call captured into a HIP graph with nBytes > 0 and
///      a multiple of 32; all_reduce of nBytes <= RCCL_MSCCLPP_THRESHOLD (1 MiB) with op sum and type half, int32,
///      uint32 or float (MSCCL++'s ncclAllReduce falls back to allreduce7 for these sizes); all_gather whose output
///      nBytes x nRanks is at most the threshold (allgather6).
///   2. MSCCL's internal scheduler: the first loaded algorithm (every file of tools/msccl-algorithms for 8 ranks with
///      nchannels <= NCCL_MAX_NCHANNELS) of the collective, with op below ncclAvg, count x sizeMultiplier divisible by
///      its nchunksperloop, minBytes <= nBytes x sizeMultiplier <= maxBytes and in-place or out-of-place as the call
///      is: all_reduce up to 16 MiB (allreduce-allpairs-8n-*), alltoall up to 43 MiB (alltoall-8n-*).
/// NCCL_ALGO / NCCL_PROTO are not read on this path (they only restrict ncclTopoTuneModel's table). `max_channels` is
/// NCCL_MAX_NCHANNELS (0: none). Empty: the cost model's pick (rccl_choose).
std::optional<RcclKernel> rccl_default_kernel(const NcclTuningInput& in, const RcclCallMode& mode = {},
                                              int max_channels = 0);
/// rccl_default_kernel's path (CostModel where it is empty).
RcclKernelPath rccl_default_path(const NcclTuningInput& in, const RcclCallMode& mode = {});

} // namespace railyard::models
