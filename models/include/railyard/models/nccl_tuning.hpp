// NCCL's own choice of algorithm and protocol, reproduced as pure functions from NCCL 2.26.2 (NVIDIA/nccl commit
// f44ac759fee12ecb3cc6891e9e739a000f66fd70):
//   - algo_cost() / predict() are ncclTopoTuneModel + ncclTopoGetAlgoTime (src/graph/tuning.cc): one latency and one
//     bandwidth per (collective, algorithm, protocol), then time = latency + bytes / bandwidth with NCCL's corrections;
//   - choose() is topoGetAlgoInfo (src/enqueue.cc): the cheapest allowed combination wins, then NCCL trims channels
//     and threads for small messages. Predicting and choosing are separate steps (STYLE item 8).
//   - derive_graphs() stands in for NCCL's topology search (src/graph/search.cc) on standard DGX/HGX nodes, giving
//     the channel graphs (nChannels, per-channel bandwidth) the model needs.
// The constants are data in models/data/nccl_tuning_2_26_2.inc, each table with the file and array it came from.
// CollNet (SHARP) is not modelled: NCCL disables it without a CollNet plugin, and so does this model.
#pragma once

#include "railyard/common/error.hpp"
#include "railyard/common/units.hpp"
#include "railyard/models/collective.hpp"

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace railyard::models {

inline constexpr int kNcclAlgorithms = 7; ///< NCCL_NUM_ALGORITHMS, in Algorithm's order
inline constexpr int kNcclProtocols = 3;  ///< NCCL_NUM_PROTOCOLS, in Protocol's order
inline constexpr int kNcclFunctions = 5; ///< NCCL_NUM_FUNCTIONS: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce

/// NCCL's path types (src/graph/topo.h PATH_*), nearest first. They decide whether NCCL enables LL128 by default
/// and whether intra-node hops are priced as NVLink or as PCI.
enum class NcclPath { Loc, Nvl, Nvb, C2c, Pix, Pxb, Pxn, Phb, Sys, Net };

/// The host CPU as NCCL's topology reports it: it sets the network post overhead and, across nodes, the LL cap.
enum class CpuVendor { Intel, Amd, Other };

/// One of NCCL's channel graphs (struct ncclTopoGraph) as the topology search leaves it.
struct NcclGraph {
  int channels = 0;        ///< graph->nChannels (before ncclTopoPostset doubles the communicator's channels)
  BytesPerSec bw_intra{0}; ///< graph->bwIntra: per channel, inside a node
  BytesPerSec bw_inter{0}; ///< graph->bwInter: per channel, between nodes
  NcclPath type_intra = NcclPath::Nvl;
  NcclPath type_inter = NcclPath::Pix;
  bool same_channels = true; ///< graph->sameChannels (Ring broadcast/reduce latency)
  bool simple_tree = false;  ///< tree graph only: the search settled on NCCL_TOPO_PATTERN_TREE (Tree bw x 0.85)
  Seconds latency_inter{0};  ///< graph->latencyInter: the NIC's own reported latency (0 for InfiniBand)
};

/// On / off / NCCL's default rule (used for LL128, which NCCL enables only where it is tested).
enum class NcclEnable : std::uint8_t { Off, On, Auto };

/// NCCL_ALGO and NCCL_PROTO as NCCL 2.26 reads them: a matrix per NCCL function. Default: every algorithm allowed,
/// LL and Simple on, LL128 Auto.
struct NcclOverrides {
  std::array<std::array<bool, kNcclAlgorithms>, kNcclFunctions> algorithms{};
  std::array<std::array<NcclEnable, kNcclProtocols>, kNcclFunctions> protocols{};

  NcclOverrides();
  /// Parses NCCL's environment syntax (parseList in src/graph/tuning.cc): a comma list, case-insensitive, "^" to
  /// exclude, and per-function sections after the first, e.g. "ring,tree", "^LL128", "ring;allreduce:tree,nvls".
  /// An unknown name or section is an InputError naming the variable and listing the accepted names, as NCCL
  /// refuses it with ncclInvalidUsage. An absent variable keeps NCCL's default.
  static NcclOverrides parse(std::optional<std::string_view> nccl_algo, std::optional<std::string_view> nccl_proto,
                             const InputLocation& where);

  [[nodiscard]] bool algorithm_allowed(CollectiveKind kind, Algorithm a) const;
  [[nodiscard]] NcclEnable protocol_enable(CollectiveKind kind, Protocol p) const;
};

/// Which library's cost model prices a call: NCCL (NVIDIA) or RCCL (AMD,
/// models/include/railyard/models/rccl_tuning.hpp).
enum class CollectiveLibrary { Nccl, Rccl };

/// What RCCL's topology setup decides beyond the channel graphs (read only where the library is RCCL). For an 8x
/// MI300X node derive_graphs() fills it from the rome model RCCL matches (src/graph/rome_models.cc).
struct RcclTopology {
  std::string gfx = "gfx942"; ///< the GPUs' gcnArchName; RCCL's gfx94x special cases key on it
  int tuning_model = 5;       ///< comm->topo->tuning: index into rcclTuningModel[] (src/graph/tuning.cc), 0..5
  int rome_model = 0;         ///< N of the matched rome_model_N (79 one MI300X node, 81 several); 0: none matched
  bool msccl_enabled = false; ///< the matched model's "mscclEnabled=1" (MSCCL and MSCCL++ take some calls first)
};

/// Everything NCCL's cost model looks at for one collective call.
struct NcclTuningInput {
  CollectiveKind collective = CollectiveKind::AllReduce;
  Bytes bytes{0}; ///< nccl-tests size convention (collective.hpp); NCCL's nBytes is the same number
  int nranks = 0;
  int nnodes = 1;
  int gpus_per_node = 0;       ///< nranks / nnodes; NCCL's ppn
  int compute_capability = 90; ///< 80 A100, 90 H100/H200, 100 B200 (all GPUs alike)
  CpuVendor cpu = CpuVendor::Intel;
  bool nvls_supported = false; ///< NVSwitch with multicast (NVLink SHARP): H100 and later NVSwitch systems
  NcclGraph ring;              ///< ring graph
  NcclGraph tree;              ///< tree graph (PAT uses it too)
  NcclGraph nvls;              ///< NVLS graph (NVLS and NVLSTree); channels 0 when the system has none
  int comm_channels = 0;       ///< comm->nChannels after ncclTopoPostset: where choose() starts trimming
  int nvls_channels = 0;       ///< comm->nvlsChannels: the channels NVLS algorithms launch
  /// NCCL_NTHREADS (Ring and Tree with Simple and LL) and NCCL_LL128_NTHREADS (with LL128): comm->maxThreads where
  /// given, as getNthreads takes them (multiples of 32 within NCCL's bounds: the scenario checks); 0: NCCL's defaults.
  int nthreads = 0, ll128_nthreads = 0;
  NcclOverrides overrides;
  /// Rccl: algo_cost, predict, table, choose, check_request and validate follow RCCL's model (rccl_tuning.hpp);
  /// compute_capability and nvls_supported are then not read.
  CollectiveLibrary library = CollectiveLibrary::Nccl;
  RcclTopology rccl; ///< read only where library is Rccl
};

/// One entry of NCCL's tuning table: comm->latencies and comm->bandwidths (algorithm bandwidth, before the
/// size-dependent corrections of ncclTopoGetAlgoTime).
struct NcclAlgoCost {
  Seconds latency{0};
  BytesPerSec bandwidth{0};
};

struct NcclPrediction {
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  std::optional<Seconds> time; ///< empty where NCCL disables the combination
};

struct NcclChoice {
  Algorithm algorithm = Algorithm::Ring;
  Protocol protocol = Protocol::Simple;
  int channels = 0; ///< channels NCCL launches for this call (info->nMaxChannels)
  int threads = 0;  ///< threads per channel (info->nWarps * 32)
  Seconds time{0};  ///< NCCL's predicted time for the pick
};

/// NCCL's tuning table entry for (algorithm, protocol), or nothing where NCCL gives it zero bandwidth (not
/// implemented for this collective, disabled by NCCL's rules or by the overrides). AllToAll and SendRecv have no
/// entries: NCCL runs them as point-to-point operations outside this model.
std::optional<NcclAlgoCost> algo_cost(const NcclTuningInput& in, Algorithm a, Protocol p);

/// ncclTopoGetAlgoTime: latency + bytes / bandwidth, with the Tree correction factors and the Ring plateau.
std::optional<Seconds> predict(const NcclTuningInput& in, Algorithm a, Protocol p);

/// The least a ring that spans nodes pays for each of its intra-node steps in NCCL's model: getNetOverhead of the
/// host CPU (1 us Intel, 2 us AMD), x3 for Simple (src/graph/tuning.cc: "Inter-node rings still have to launch nsteps
/// * net overhead"; intraLat = max(intraLat, netOverhead) for all_reduce, all_gather and reduce_scatter).
Seconds ring_net_overhead(CpuVendor cpu, Protocol p);

/// predict() for every (algorithm, protocol), in NCCL's order.
std::vector<NcclPrediction> table(const NcclTuningInput& in);

/// topoGetAlgoInfo: the cheapest available combination (first in NCCL's order on ties), and the channels and
/// threads NCCL launches for it. Empty when nothing is available (AllToAll, SendRecv, or overrides that rule out
/// everything, which NCCL reports as ncclInvalidUsage).
std::optional<NcclChoice> choose(const NcclTuningInput& in);

/// Refuses requests NCCL cannot run, naming the collective, the algorithm (and protocol) and why: Tree outside
/// all_reduce, NVLS without NVSwitch multicast or below sm90, PAT with more than one GPU per node, any algorithm for
/// AllToAll, CollNet, protocols NCCL does not implement for the algorithm. `where` locates the request (for example
/// field "collectives[2].algorithm"); the message fills in the rest.
void check_request(const NcclTuningInput& in, Algorithm a, std::optional<Protocol> p, const InputLocation& where);

/// Checks the input itself (rank counts, graphs) and throws InputError naming the field.
void validate(const NcclTuningInput& in, const InputLocation& where);

/// The standard nodes derive_graphs() knows, with what NCCL's (RCCL's for Mi300x) topology detection reports.
enum class NodeLayout { DgxA100, DgxH100, HgxB200, Mi300x };

struct NodeSpec {
  std::string name;
  int gpus = 8;
  int compute_capability = 90;
  int nvlinks_per_gpu = 18; ///< links from each GPU to the NVSwitches
  bool nvswitch_multicast = false;
  int nics = 8;                ///< compute NICs per node
  BytesPerSec nic_bw{0};       ///< NET bandwidth NCCL reports per NIC (port speed / 8)
  BytesPerSec pcie_bw{0};      ///< PCI link bandwidth NCCL reports between GPU/NIC and their switch
  int gpus_per_nic_switch = 1; ///< GPUs sharing a PCIe switch with each NIC
  CpuVendor cpu = CpuVendor::Intel;
  std::string source; ///< where the layout facts come from
  /// AMD GPUs only (compute_capability is NVIDIA's and 0 here): the gcnArchName RCCL keys on ("gfx942"); empty for
  /// NVIDIA nodes. On an AMD node nvlinks_per_gpu counts xGMI links (RCCL's topology types them LINK_NVL).
  std::string gfx;
  BytesPerSec xgmi_link_bw{0}; ///< AMD: one xGMI link as RCCL's topology reports it (src/graph/topo.h)
  int compute_units = 0;       ///< AMD: CUs per GPU (RCCL's gpu.cu, which caps the channels on gfx94x)
};
NodeSpec node_spec(NodeLayout layout);

/// The graphs and channel counts NCCL's search and setup produce for `nnodes` such nodes.
struct NcclSystemGraphs {
  NcclGraph ring, tree, nvls;
  int comm_channels = 0;
  int nvls_channels = 0;
  CollectiveLibrary library = CollectiveLibrary::Nccl; ///< Rccl for AMD nodes (NodeSpec::gfx set)
  RcclTopology rccl;                                   ///< AMD nodes: what RCCL's rome model match decides
};
/// Follows ncclTopoCompute's speed search (src/graph/search.cc: pass 1 lowers the per-channel speed until a
/// solution, ncclTopoDupChannels, pass 2 raises it), then ncclTopoPostset's channel doubling (src/graph/connect.cc),
/// with the bandwidth each channel consumes on NVLink, PCIe and NICs computed in closed form for a symmetric
/// NVSwitch node instead of by NCCL's depth-first search. For one H100 node it gives ring 12 x 30 GB/s, tree
/// 12 x 30 GB/s and NVLS 8 x 40/60 GB/s, the graphs NCCL printed in NVIDIA/nccl issue 1197.
/// NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS (src/graph/connect.cc ncclMinNchannels, ncclMaxNchannels, applied at the
/// end of ncclTopoPostset): the communicator's channels are first cut to `max`, then copied up to `min`. 0: not set.
struct NcclChannelLimits {
  int min = 0, max = 0;
};
/// For an AMD node (NodeSpec::gfx set) it returns what RCCL's rome model gives instead (rccl_derive_graphs).
NcclSystemGraphs derive_graphs(const NodeSpec& node, int nnodes, NcclChannelLimits limits = {});

/// A ready input for `nnodes` standard nodes, all GPUs in the communicator (library Rccl for an AMD node).
NcclTuningInput make_input(const NodeSpec& node, int nnodes, CollectiveKind kind, Bytes bytes);

/// NCCL's own name of an algorithm or protocol, as NCCL_ALGO / NCCL_PROTO spell it ("NVLSTree", "LL128").
std::string nccl_name(Algorithm a);
std::string nccl_name(Protocol p);

/// The constants behind the model, for reports and provenance.
struct NcclConstants {
  const char* version;
  const char* source;
  std::array<std::array<double, kNcclProtocols>, kNcclAlgorithms> base_latency_us;
  std::array<std::array<std::array<double, kNcclProtocols>, kNcclAlgorithms>, 3> hw_latency_us;
  std::array<std::array<double, 3>, 4> ll_max_bw_gbps;
  std::array<std::array<double, 3>, 4> per_ch_max_ring_ll128_bw_gbps;
  std::array<std::array<double, 3>, 4> per_ch_max_tree_ll128_bw_gbps;
  std::array<std::array<double, 3>, 4> per_ch_max_tree_bw_gbps;
  std::array<std::array<double, 23>, kNcclProtocols> tree_correction;
  double ring_ll_factor, ring_ll128_factor, tree_factor, tree_ll_divisor, tree_ll128_one_node, tree_ll128_many_nodes,
      tree_simple_pattern_factor, pat_factor, nvls_ratio, tree_ratio;
  double ring_plateau_pre_ampere, ring_plateau;
  long ring_plateau_min_bytes_per_rank_channel;
  double net_overhead_intel_us, net_overhead_amd_us, net_overhead_other_us, net_overhead_simple_multiplier;
  double pat_base_us, pat_inter_divisor, pat_per_rank_us;
  int warp_size, max_threads, simple_max_threads, ll_max_threads, ll128_max_threads;
  long ll_thread_threshold, ll128_thread_threshold, simple_thread_threshold;
  double pci_bw_gbps;
  int max_channels, max_nvls_arity, nvls_channels_sm90, nvls_channels_sm100;
  double nvlink_bw_sm80_gbps, nvlink_bw_sm90_gbps, nvlink_bw_sm100_gbps;
  std::array<double, 13> speed_intra;
  std::array<double, 19> speed_inter;
  std::array<double, 11> speed_intra_sm90;
  std::array<double, 17> speed_inter_sm90;
  std::array<double, 10> speed_intra_sm100;
  std::array<double, 17> speed_inter_sm100;
  double speed_step_ratio;
  double dup_min_bw_gbps, dup_skip_below_gbps;
  int dup_skip_above_channels;
  double postset_double_min_ring_bw_gbps;
  int postset_double_below_channels;
};
const NcclConstants& nccl_constants();

} // namespace railyard::models
