// From a scenario's call to a schedule the simulator runs: NCCL's inputs for the call on this cluster, NCCL's choice
// of algorithm, protocol and channels where the scenario leaves them open (models/nccl_tuning.hpp), NCCL's refusals
// as InputError, and the lowering with NCCL's fixed costs (models/lowering.hpp).
#pragma once

#include "railyard/common/error.hpp"
#include "railyard/models/lowering.hpp"
#include "railyard/models/nccl_tuning.hpp"
#include "railyard/models/rccl_tuning.hpp"
#include "railyard/topologies/topology.hpp"

#include <array>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace railyard::sim {

/// A scenario's `nccl:` section, as NCCL resolution reads it: the system NCCL's cost model assumes, and NCCL_ALGO /
/// NCCL_PROTO as NCCL reads them.
struct NcclSettings {
  /// dgx_a100, dgx_h100, hgx_h200 or hgx_b200; when `nccl.system` is absent, the profile's GPU model's (A100,
  /// H100, H200, B200), else empty: chosen from the NVLink bandwidth (nccl_resolve.hpp nccl_node)
  std::string system;
  std::string system_from;                ///< "scenario", "profile" or "" (NVLink bandwidth), for summaries
  std::optional<std::string> algo, proto; ///< NCCL_ALGO / NCCL_PROTO text
  models::NcclOverrides overrides;        ///< parsed from algo and proto
  bool latencies = true;                  ///< NCCL's base and per-hop latencies (false: bytes and links only)
  /// nccl.net_latency: one network step of NCCL's pipeline on this cluster's transport, wire included, per protocol
  /// (LL, LL128, Simple), in place of NCCL's hwLat[NET] (measured by NVIDIA on InfiniBand) for Ring, Tree and
  /// NVLSTree steps and point-to-point sends between nodes. Absent: NCCL's. (aws-ofi-nccl's tuner models EFA's as
  /// 20 us on P5, 23 us with Simple's completion: models/README.md.)
  std::optional<std::array<Seconds, 3>> net_latency;
  models::NcclChannelLimits channels; ///< nccl.min_channels / max_channels (NCCL_MIN/MAX_NCHANNELS)
  /// nccl.nthreads / nccl.ll128_nthreads: NCCL_NTHREADS / NCCL_LL128_NTHREADS (threads per channel); 0: unset
  int nthreads = 0, ll128_nthreads = 0;
  InputLocation where; ///< the section, for messages
  /// nccl.library: NCCL (NVIDIA) or RCCL (AMD), or what the system implies (mi300x: RCCL). RCCL's cost model, rings
  /// and costs then come from models/rccl_tuning.hpp.
  models::CollectiveLibrary library = models::CollectiveLibrary::Nccl;
  /// RCCL only: how calls reach it (nccl.msccl, nccl.mscclpp, nccl.graph_capture; railyard nccl-tests -G, -d, -o and
  /// its in-place column), which decides whether RCCL's MSCCL / MSCCL++ kernels take a call (rccl_default_kernel).
  models::RcclCallMode rccl_calls;
};

/// The systems NCCL's cost model is given here, spelled once: the name a scenario's `nccl.system` uses, the GPU
/// CUDA names (a profile's GPU model maps to the system through it), the node layout NCCL's topology search sees,
/// and the node's display name where it differs from the layout's.
struct NcclSystem {
  std::string_view name; ///< nccl.system
  std::string_view gpu;  ///< as it appears in CUDA's device name ("NVIDIA H100 80GB HBM3")
  models::NodeLayout layout;
  std::string_view display;                                            ///< empty: the layout's own name
  models::CollectiveLibrary library = models::CollectiveLibrary::Nccl; ///< the library that runs on it
};
/// H200 is an H100 with more HBM: same sm90, 18 NVLink4 links, NVSwitch with NVLink SHARP (NVIDIA HGX H200
/// datasheet), so NCCL's search sees the DGX H100 layout.
/// MI300X: 8 GPUs on a fully connected xGMI mesh, RCCL (models/rccl_tuning.hpp; the GPU as ROCm names it, "AMD
/// Instinct MI300X").
inline constexpr std::array<NcclSystem, 5> kNcclSystems{{
    {"dgx_a100", "A100", models::NodeLayout::DgxA100, "", models::CollectiveLibrary::Nccl},
    {"dgx_h100", "H100", models::NodeLayout::DgxH100, "", models::CollectiveLibrary::Nccl},
    {"hgx_h200", "H200", models::NodeLayout::DgxH100, "HGX H200", models::CollectiveLibrary::Nccl},
    {"hgx_b200", "B200", models::NodeLayout::HgxB200, "", models::CollectiveLibrary::Nccl},
    {"mi300x", "MI300X", models::NodeLayout::Mi300x, "8x MI300X", models::CollectiveLibrary::Rccl},
}};
/// "nccl" or "rccl".
std::string to_string(models::CollectiveLibrary library);
/// The entry of kNcclSystems named `name`; null for none.
const NcclSystem* find_nccl_system(std::string_view name);
/// "dgx_a100, dgx_h100, hgx_h200, hgx_b200": the names, for messages.
std::string nccl_system_names();

/// The node NCCL's topology search sees: `nccl.system`, or when it is absent the generation whose NVLink bandwidth
/// per GPU the cluster's is closest to (A100 300 GB/s, H100/H200 450 GB/s, B200 900 GB/s). NICs are the cluster's.
models::NodeSpec nccl_node(const NcclSettings& settings, const topo::ClusterSpec& cluster);

/// NCCL's view of one call: its communicator's nodes and ranks per node, the graphs NCCL's search builds for them
/// (derive_graphs), whether NVLS is available (an NVSwitch with multicast, sm90+, more than two GPUs per node) and the
/// scenario's NCCL_ALGO / NCCL_PROTO. Empty when the ranks per node differ (NCCL's model assumes them equal).
std::optional<models::NcclTuningInput> nccl_input(const models::CollectiveCall& call, const topo::Topology& topology,
                                                  const NcclSettings& settings);

/// Fills in algorithm, protocol and channels as NCCL would: NCCL_ALGO / NCCL_PROTO (the scenario's `nccl:` section
/// and the call's own `algorithm` / `protocol`, which act like NCCL_ALGO / NCCL_PROTO for this call alone) restrict
/// NCCL's cost table, the cheapest entry wins and NCCL's channel trimming for small messages applies; `channels`
/// overrides the count. With RCCL, the kernels RCCL takes first (MSCCL / MSCCL++ on one 8x MI300X node:
/// models::rccl_default_kernel with settings.rccl_calls) win unless the call names its own algorithm, protocol or
/// channels; NCCL_ALGO / NCCL_PROTO do not reach them, as in RCCL. A request NCCL cannot run is an InputError at
/// `where` naming the collective, the algorithm and why. alltoall and sendrecv are grouped p2p in NCCL: protocol LL up
/// to 16 KiB per transfer, else Simple, on half the p2p channels (each peer takes two).
models::CollectiveCall resolve_call(const models::CollectiveCall& call, const topo::Topology& topology,
                                    const NcclSettings& settings, const InputLocation& where);

/// The orders of RCCL's rings over the fully connected nodes of a communicator (LoweringInput::intra_rings): empty on
/// NVIDIA nodes and where each node holds one rank.
struct MeshRings {
  std::vector<std::vector<int>> orders;
  bool reverse_odd_nodes = false;
  int nnodes = 1; ///< nodes the ranks span
};
/// RCCL's rings for these ranks: whole 8x MI300X nodes take the rome model's orders, some GPUs of one node RCCL's
/// search over them, some GPUs of several nodes the whole node's orders (models/rccl_tuning.hpp rccl_ring_orders).
MeshRings mesh_rings(const std::vector<int>& ranks, int gpus_per_node, const models::NodeSpec& node);

/// One NCCL communicator on a topology, built once as NCCL builds one (ncclCommInitRank runs the topology search and
/// ncclTopoTuneModel once per communicator): its ranks, nodes and ranks per node, the graphs of derive_graphs, its
/// channel counts, NVLS availability, p2p lanes, the settings' NCCL_ALGO / NCCL_PROTO and the hop latencies NCCL's
/// costs are net of. Each call of the communicator is then a lookup in that state: resolve() adds the call's
/// collective, size and own choices and asks NCCL's cost table (models::choose).
class NcclCommunicator {
public:
  NcclCommunicator(std::vector<int> ranks, const topo::Topology& topology, NcclSettings settings);

  [[nodiscard]] const std::vector<int>& ranks() const { return ranks_; }
  /// NCCL's cost-model input for this communicator (collective and bytes left at their defaults); empty when the
  /// ranks per node differ (NCCL's model assumes them equal).
  [[nodiscard]] const std::optional<models::NcclTuningInput>& tuning() const { return tuning_; }
  /// NCCL's p2p channels (ncclTopoComputeP2pChannels: the communicator's channels rounded up to a power of two), of
  /// which each peer takes two (NCCL_NCHANNELS_PER_NET_PEER's default; an assumption for NVLink peers): this many
  /// rounds of sends run at once. With unequal ranks per node, the whole cluster's channels stand in.
  [[nodiscard]] int p2p_lanes() const { return p2p_lanes_; }
  /// resolve_call for a call of this communicator (its ranks are this communicator's).
  [[nodiscard]] models::CollectiveCall resolve(const models::CollectiveCall& call, const InputLocation& where) const;
  /// lowering_input for a call this communicator resolved.
  [[nodiscard]] models::LoweringInput lowering_input(const models::CollectiveCall& resolved,
                                                     Seconds step_overhead) const;

private:
  const topo::Topology* topology_;
  NcclSettings settings_;
  std::vector<int> ranks_;
  std::optional<models::NcclTuningInput> tuning_;
  int p2p_lanes_ = 1;
  models::NodeSpec node_;               ///< the cluster's node as NCCL's (RCCL's) topology search sees it
  MeshRings rings_;                     ///< RCCL's ring orders for the ranks, found once (mesh_rings)
  Seconds intra_hop_{0}, inter_hop_{0}; ///< hop_latencies of the topology
};

/// The path latency of one hop between two GPUs of a node, and between the same-rail GPUs of two nodes (zero where
/// the cluster has no such pair).
struct HopLatencies {
  Seconds intra{0}, inter{0};
};
HopLatencies hop_latencies(const topo::Topology& topology);

/// The lowering input of a resolved call: NCCL's fixed costs for its algorithm and protocol (when
/// settings.latencies), the NVLS efficiency of the GPU generation, and the scenario's extra step overhead. NCCL's
/// per-hop latency includes the wire, which the simulator charges through the topology's link latencies, so a
/// step's overhead is NCCL's hop latency less the hop's path latency (at least zero).
models::LoweringInput lowering_input(const models::CollectiveCall& resolved, const topo::Topology& topology,
                                     const NcclSettings& settings, Seconds step_overhead);

/// Lowers a resolved call with at most `max_steps` steps (0: no limit). A call NCCL does not implement, or whose
/// schedule would need more steps, is an InputError at `where` naming the call, what is wrong and the fix.
/// The lowering NCCL would do for each call with `settings`: resolve_call, then lower_checked of its lowering_input
/// with `step_overhead` added to every step (ReplayOptions::lower takes it). Each distinct rank list is one
/// NcclCommunicator, built on its first call and looked up on the others.
std::function<models::Schedule(const models::CollectiveCall&, const InputLocation&)>
nccl_lowering(const topo::Topology& topology, NcclSettings settings, Seconds step_overhead, std::size_t max_steps = 0);

/// NcclCommunicator(ranks, topology, settings).p2p_lanes(): the rounds of sends among `ranks` that run at once.
int p2p_lanes(const std::vector<int>& ranks, const topo::Topology& topology, const NcclSettings& settings);

models::Schedule lower_checked(models::LoweringInput in, const InputLocation& where, std::size_t max_steps = 0);

} // namespace railyard::sim
