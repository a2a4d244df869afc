// Cluster topologies as Boost.Graph graphs: GPUs, NICs, NVSwitches and switch tiers joined by directed links (each
// cable is two links, one per direction). Routing is up*/down* with per-flow ECMP hashing, as in a Clos fabric.
#pragma once

#include "railyard/common/units.hpp"
#include "railyard/common/yaml.hpp"

#include <boost/graph/adjacency_list.hpp>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace railyard::topo {

enum class ClusterKind { SingleNode, FatTree, RailOptimized, RailOnly };
enum class VertexKind { Gpu, Nic, NvSwitch, Leaf, Spine, Core };
/// A switch of the scale-out fabric (leaf, spine, core): its egress ports queue (NVSwitch ports are credit-based).
[[nodiscard]] constexpr bool is_fabric_switch(VertexKind k)
{
  return k == VertexKind::Leaf || k == VertexKind::Spine || k == VertexKind::Core;
}
enum class LinkKind { NvLink, Pcie, NicLeaf, LeafSpine, SpineCore, Xgmi };
/// How the GPUs of a node reach each other: through an NVSwitch (one NVLink port pair per GPU), or over a fully
/// connected mesh of direct links, one per GPU pair (AMD Instinct MI300X: 8 GPUs on Infinity Fabric / xGMI).
enum class NodeKind { NvSwitch, FullyConnected };

std::string to_string(ClusterKind k);
std::string to_string(NodeKind k);
std::string to_string(VertexKind k);
std::string to_string(LinkKind k);

/// `cluster.failures`: what is down or slow in the fabric (topologies/README.md, "Failures"). Cables are named by their
/// two ends as `railyard topo describe` names vertices, in either order: "leaf0-spine3" (or "leaf0->spine3").
struct Failures {
  struct Named {
    std::string name;
    InputLocation where;
  };
  struct Degraded {
    std::string cable;
    double fraction = 1; ///< of the cable's rate, in (0, 1]
    InputLocation where;
  };
  std::vector<Named> cables;   ///< cables down (both directions)
  std::vector<Named> switches; ///< switches down: every cable of theirs
  int leaf_spine_down = 0;     ///< cables leaf<i>-spine<i> down for i < N (2-tier fabrics): a count to sweep over
  InputLocation leaf_spine_where;
  std::vector<Degraded> degraded; ///< cables at a fraction of their rate (a slow NIC: its nic-leaf cable)
  struct Straggler {
    int gpu = 0;
    double slowdown = 1; ///< its kernels take this many times as long, >= 1
    InputLocation where;
  };
  std::vector<Straggler> stragglers; ///< GPUs that run slow (the replay of a workload applies them)
  struct NodeDown {
    int node = 0;
    InputLocation where;
  };
  std::vector<NodeDown> nodes; ///< nodes down: their NIC cables are not built; no communicator may span them
  [[nodiscard]] const NodeDown* node_down(int node) const
  {
    for (const auto& n : nodes)
      if (n.node == node) return &n;
    return nullptr;
  }
  /// Anything that changes the fabric (stragglers do not).
  [[nodiscard]] bool any() const
  {
    return !cables.empty() || !switches.empty() || leaf_spine_down > 0 || !degraded.empty() || !nodes.empty();
  }
};

/// What a scenario's `cluster:` section says, validated. Bandwidths are per direction.
struct ClusterSpec {
  ClusterKind kind = ClusterKind::SingleNode;
  int nodes = 1;
  int gpus_per_node = 8;

  // Inside a node: every GPU has one NVLink port pair to the NVSwitch (if nvswitch), or, on a fully connected node,
  // one direct xGMI link to every other GPU of its node; and a PCIe path to its NIC.
  NodeKind node_kind = NodeKind::NvSwitch;
  bool nvswitch = true; ///< node_kind == NvSwitch (false on a fully connected node, or a one-GPU node without one)
  BytesPerSec nvlink_bandwidth = units::GBps(450); ///< per GPU, per direction (H100 NVLink4: 18 x 25 GB/s)
  Seconds nvlink_latency = units::us(0.5);         ///< per NVLink hop (GPU->NVSwitch or NVSwitch->GPU)
  /// Fully connected node: each GPU pair's direct link, per direction (MI300X: 64 GB/s, AMD's 128 GB/s bidirectional
  /// per Infinity Fabric link), and its latency (one hop).
  BytesPerSec xgmi_bandwidth = units::GBps(64);
  Seconds xgmi_latency = units::us(0.7);
  BytesPerSec pcie_bandwidth = units::GBps(64); ///< GPU <-> NIC, per direction (PCIe Gen5 x16)
  Seconds pcie_latency = units::us(0.5);

  // NICs and fabric: nics_per_node NICs per node (one per GPU by default), GPU l of a node on NIC
  // l / (gpus_per_node / nics_per_node): the GPUs of one PCIe switch share its NIC.
  int nics_per_node = 0;                        ///< 0: one per GPU; else a divisor of gpus_per_node
  BytesPerSec nic_bandwidth = units::Gbps(400); ///< per direction (ConnectX-7 NDR 400 Gb/s)
  Seconds nic_latency = units::us(1.0);         ///< NIC to leaf, including the NIC's own processing
  int tiers = 2;                                ///< fat_tree: 2 (leaf/spine) or 3 (k-ary fat tree)
  int leaf_downlinks = 32;                      ///< leaf ports facing NICs (fat_tree 2-tier, rail kinds)
  int radix = 0;                                ///< k for a 3-tier k-ary fat tree
  double oversubscription = 1.0;                ///< downlink : uplink bandwidth at the leaf (2 means 2:1)
  /// 3-tier fat tree: downlink : uplink bandwidth at the aggregation switches, between pods (7 means 1:7 between
  /// pods): each keeps radix/2 / core_oversubscription of its core uplinks, and only the cores they reach remain.
  double core_oversubscription = 1.0;
  BytesPerSec fabric_bandwidth = units::Gbps(400); ///< each switch-to-switch link, per direction
  Seconds fabric_latency = units::us(0.6);         ///< each switch-to-switch hop, including switching

  Failures failures; ///< `failures:`, applied when the graph is built (build_topology)

  [[nodiscard]] int gpus() const { return nodes * gpus_per_node; }
  [[nodiscard]] bool fully_connected() const { return node_kind == NodeKind::FullyConnected; }
  /// A 3-tier k-ary fat tree: pods of edge and aggregation switches under a core tier.
  [[nodiscard]] bool has_core_tier() const { return kind == ClusterKind::FatTree && tiers == 3; }
  [[nodiscard]] int nics_of_node() const { return nics_per_node > 0 ? nics_per_node : gpus_per_node; }
  [[nodiscard]] int nics() const { return nodes * nics_of_node(); }
  /// The NIC (0..nics_of_node()-1) GPU `local` of a node uses.
  [[nodiscard]] int nic_of_local(int local) const { return local / (gpus_per_node / nics_of_node()); }
};

/// Parses and validates a `cluster:` section. Errors name file, line, field, the rule broken and the fix.
ClusterSpec parse_cluster(const YamlNode& cluster);

struct Vertex {
  VertexKind kind = VertexKind::Gpu;
  int tier = 0;     ///< 0: GPU, NIC, NVSwitch; 1: leaf / edge / rail switch; 2: spine / aggregation; 3: core
  int node = -1;    ///< node index for GPU, NIC, NVSwitch; -1 for fabric switches
  int local = -1;   ///< GPU or NIC index inside its node (= rail); leaf: its rail where rails exist
  int group = -1;   ///< pod (3-tier) or scalable unit (rail kinds); -1 where none
  std::string name; ///< unique, e.g. "gpu3.5", "nic3.5", "nvsw3", "leaf7", "spine2", "core0"
};

struct Link {
  LinkKind kind = LinkKind::NvLink;
  BytesPerSec bandwidth{0};
  Seconds latency{0};
  std::size_t id = 0;    ///< dense index 0..num_links()-1
  std::size_t cable = 0; ///< the two directions of one cable share this index
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, Vertex, Link>;
using VertexId = std::size_t;
using LinkId = std::size_t;
using Path = std::vector<LinkId>; ///< links in order from source to destination

struct TopologySummary {
  int gpus = 0, nics = 0, nvswitches = 0, nodes = 0;
  std::size_t gpu_links = 0; ///< direct GPU-to-GPU cables inside the nodes (fully connected nodes: n(n-1)/2 each)
  std::vector<std::pair<std::string, int>> switches_by_tier; ///< e.g. {"leaf", 16}, {"spine", 8}
  std::size_t links = 0;                                     ///< directed links
  std::size_t cables = 0;                                    ///< physical cables outside the nodes
  std::size_t optics = 0;                                    ///< transceivers: two per fabric cable
  BytesPerSec bisection{0};           ///< max flow from the first half of the nodes to the second half
  BytesPerSec full_bisection{0};      ///< what a non-blocking fabric would give: half the NIC bandwidth
  double oversubscription = 1.0;      ///< leaf downlink : uplink bandwidth
  double core_oversubscription = 1.0; ///< 3-tier fat tree: aggregation downlink : core uplink bandwidth, as built
};

/// `cluster.failures` as JSON: cables_down, switches_down, leaf_spine_down, degraded, stragglers (summary.json).
nlohmann::ordered_json failures_json(const Failures& f);

/// The summary as JSON (used by `railyard topo describe --json` and by summary.json); bandwidths in bytes per second.
nlohmann::ordered_json summary_json(const ClusterSpec& spec, const TopologySummary& summary);

class Topology {
public:
  Topology(ClusterSpec spec, Graph graph);
  // The link table holds edge descriptors, which point into the graph's own edge storage: a copied or moved graph
  // has other storage, so a copy or move builds the tables again from the spec and the graph.
  Topology(const Topology& other) : Topology(other.spec_, other.graph_) {}
  Topology(Topology&& other) : Topology(std::move(other.spec_), std::move(other.graph_)) {}
  Topology& operator=(const Topology&) = delete;
  Topology& operator=(Topology&&) = delete;

  [[nodiscard]] const ClusterSpec& spec() const { return spec_; }
  [[nodiscard]] const Graph& graph() const { return graph_; }
  [[nodiscard]] int num_gpus() const { return spec_.gpus(); }
  [[nodiscard]] int num_nodes() const { return spec_.nodes; }
  [[nodiscard]] int gpus_per_node() const { return spec_.gpus_per_node; }
  [[nodiscard]] int node_of(int gpu) const { return gpu / spec_.gpus_per_node; }
  [[nodiscard]] int local_of(int gpu) const { return gpu % spec_.gpus_per_node; }

  [[nodiscard]] VertexId gpu_vertex(int gpu) const;
  [[nodiscard]] VertexId nic_vertex(int gpu) const; ///< the NIC on the GPU's own PCIe switch (its rail)
  [[nodiscard]] const Vertex& vertex(VertexId v) const { return graph_[v]; }
  [[nodiscard]] std::size_t num_vertices() const { return boost::num_vertices(graph_); }

  [[nodiscard]] std::size_t num_links() const { return links_.size(); }
  [[nodiscard]] const Link& link(LinkId id) const { return graph_[links_[id]]; }
  [[nodiscard]] VertexId link_source(LinkId id) const { return boost::source(links_[id], graph_); }
  [[nodiscard]] VertexId link_target(LinkId id) const { return boost::target(links_[id], graph_); }
  [[nodiscard]] std::string link_name(LinkId id) const; ///< "nic3.5->leaf5"

  /// The path one flow takes from GPU `src` to GPU `dst`. Inside a node: NVLink through the NVSwitch, or the direct
  /// link between the two GPUs of a fully connected node. Across
  /// nodes: GPU -> NIC -> up the tiers -> down -> NIC -> GPU, choosing among equal-cost uplinks by hashing
  /// (src, dst, flow_key, seed, switch), the way a switch hashes a QP's 5-tuple (flow_key stands for the ports). With
  /// `pxn` (NCCL's PXN), or always on a rail-only cluster, a flow between GPUs on different rails of different nodes
  /// first crosses NVLink to the GPU of the source node that sits on the destination's rail and leaves through that
  /// GPU's NIC, so it stays on the destination's rail: src -> NVSwitch -> gpu(node(src), rail(dst)) -> NIC -> ... ->
  /// NIC -> dst. Same arguments, same path.
  [[nodiscard]] Path route(int src, int dst, std::uint64_t flow_key, std::uint64_t seed, bool pxn = false) const;

  /// Every equal-cost path between two GPUs, enumerated up to `limit` paths.
  [[nodiscard]] std::vector<Path> all_paths(int src, int dst, bool pxn = false, std::size_t limit = 1 << 20) const;

  /// Sum of link latencies along a path.
  [[nodiscard]] Seconds path_latency(const Path& p) const;
  /// Smallest link bandwidth along a path.
  [[nodiscard]] BytesPerSec path_bandwidth(const Path& p) const;

  [[nodiscard]] TopologySummary summary() const;
  /// Why some GPUs cannot reach each other (a NIC without its leaf cable, two leaves with no up*/down* path left
  /// between them), naming them; empty when every pair is connected.
  [[nodiscard]] std::string disconnected() const;
  /// Refuses (InputError at the failures.nodes entry) a communicator of these GPUs that joins a node that is down with
  /// another node; `name` says which communicator it is.
  void check_communicator(const std::vector<int>& gpus, const std::string& name) const;
  void write_dot(std::ostream& out) const;

private:
  static constexpr LinkId kNoLink = static_cast<LinkId>(-1);

  /// The links a route starts and ends with, per GPU, looked up instead of searched.
  struct GpuLinks {
    LinkId to_nvswitch = kNoLink, from_nvswitch = kNoLink; ///< GPU -> NVSwitch, NVSwitch -> GPU
    LinkId to_nic = kNoLink, from_nic = kNoLink;           ///< GPU -> NIC, NIC -> GPU (PCIe)
    LinkId nic_up = kNoLink, nic_down = kNoLink;           ///< NIC -> leaf, leaf -> NIC
    int leaf = -1;                                         ///< dense leaf index of the GPU's NIC, -1 if none
  };

  void build_tables();
  [[nodiscard]] bool below(int sw, int leaf) const { return (below_[sw * words_ + leaf / 64] >> (leaf % 64)) & 1U; }
  [[nodiscard]] bool reaches(int sw, int leaf) const { return (reach_[sw * words_ + leaf / 64] >> (leaf % 64)) & 1U; }
  /// Calls visit(link, next_switch) for every link out of switch `sw` that starts a shortest up*/down* continuation
  /// towards `leaf`, in link-id order, the same order for route() and all_paths(). Returns how many there were.
  template <class Visit>
  int for_each_next(int sw, int leaf, Visit&& visit) const;
  [[nodiscard]] int relay_gpu(int src, int dst, bool pxn) const;
  /// Appends the links from GPU `src` to GPU `dst` of the same node (NVSwitch: two links; fully connected: one).
  void append_intra(int src, int dst, Path& p) const;
  void append_paths(int sw, int dst, Path& prefix, std::vector<Path>& out, std::size_t limit) const;

  ClusterSpec spec_;
  Graph graph_;
  std::vector<Graph::edge_descriptor> links_;
  std::vector<VertexId> gpu_vertices_;
  std::vector<VertexId> nic_vertices_;

  // Routing tables (see build_tables): switches are numbered densely, leaves first.
  std::vector<GpuLinks> gpu_links_;
  /// Fully connected nodes: mesh_out_[g * gpus_per_node + l] is GPU g's direct link to local GPU l of its node.
  std::vector<LinkId> mesh_out_;
  std::vector<int> switch_of_vertex_;     ///< vertex -> dense switch index, -1 for GPUs, NICs and NVSwitches
  std::vector<VertexId> switch_vertices_; ///< dense switch index -> vertex
  int num_leaves_ = 0;
  std::vector<std::size_t> up_begin_, down_begin_; ///< per switch, offsets into up_links_ / down_links_
  std::vector<LinkId> up_links_, down_links_;      ///< switch-to-switch links going up / down, by link id
  std::vector<int> link_target_switch_;            ///< link -> dense switch index of its target, -1 if none
  std::size_t words_ = 0;                          ///< 64-bit words in one set of leaves
  std::vector<std::uint64_t> below_;               ///< per switch: leaves it reaches going only down (a leaf: itself)
  std::vector<std::uint64_t> reach_; ///< per switch: leaves it reaches going up any number of tiers, then down

  /// A run of consecutive leaves [leaf_begin, leaf_end) below the target of one down link. Where a switch's runs do
  /// not overlap (every tree-shaped fabric built here), the down hop towards a leaf is one binary search instead of
  /// a scan of every down link (a spine over 512 leaves).
  struct DownRun {
    int leaf_begin = 0, leaf_end = 0;
    LinkId link = kNoLink;
    int target = -1;
  };
  std::vector<std::size_t> run_begin_; ///< per switch, offsets into runs_
  std::vector<DownRun> runs_;          ///< per switch, sorted by leaf_begin
  std::vector<char> runs_disjoint_;    ///< per switch: 1 when its runs do not overlap
};

/// Builds the graph a spec describes. Impossible clusters (more NICs than the fabric has ports, a rail-only
/// cluster with more nodes than a rail switch has ports, ...) are an InputError naming the field.
Topology build_topology(const ClusterSpec& spec, const InputLocation& where = {});

/// What build_topology(spec) will hold, counted without building it (so a run can refuse a cluster its memory cannot
/// hold before allocating it). Same validation and same InputError as build_topology.
struct TopologySize {
  std::size_t vertices = 0; ///< GPUs, NICs, NVSwitches and fabric switches
  std::size_t links = 0;    ///< directed links: two per cable
  std::size_t leaves = 0;   ///< fabric switches at the first tier (each has a bitset row of below())
  std::size_t switches = 0; ///< fabric switches of every tier
};
TopologySize topology_size(const ClusterSpec& spec, const InputLocation& where = {});

} // namespace railyard::topo
