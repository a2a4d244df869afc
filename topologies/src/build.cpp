// build_topology: turns a validated ClusterSpec into the graph. Vertices are added node by node (GPUs, NICs,
// NVSwitch), then leaves, spines or aggregation switches, cores; cables in the same order (inside the nodes, NIC to
// leaf, leaf up, spine up), so vertex indices, link ids and names depend only on the spec.
#include "spec_rules.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

namespace railyard::topo {
namespace {

class GraphBuilder {
public:
  explicit GraphBuilder(const ClusterSpec& spec) : spec_(spec) {}

  VertexId add_vertex(VertexKind kind, int tier, int node, int local, int group, std::string name)
  {
    return boost::add_vertex(Vertex{kind, tier, node, local, group, std::move(name)}, graph_);
  }

  /// A cable's name: its two ends' names in name order, "leaf0-spine3".
  static std::string cable_key(const std::string& a, const std::string& b) { return a < b ? a + "-" + b : b + "-" + a; }
  /// A cable as a user names it ("spine3-leaf0", "leaf0->spine3") as cable_key does, or "" if it is not two names.
  static std::string normalize(std::string name)
  {
    const auto arrow = name.find("->");
    if (arrow != std::string::npos) name.replace(arrow, 2, "-");
    const auto dash = name.find('-');
    if (dash == std::string::npos || dash == 0 || dash + 1 == name.size() ||
        name.find('-', dash + 1) != std::string::npos)
      return {};
    return cable_key(name.substr(0, dash), name.substr(dash + 1));
  }
  /// Takes the failures to apply as cables are added (a cable down is not added, a degraded one runs at its
  /// fraction); `where` is the cluster section's location for messages without an entry of their own.
  void fail(const Failures& f)
  {
    for (const auto& c : f.cables) {
      const std::string k = normalize(c.name);
      if (k.empty())
        throw InputError(c.where, fmt::format("'{}' is not a cable name", c.name),
                         "name a cable by its two ends, e.g. leaf0-spine3 or nic2.5-leaf5 (railyard topo describe "
                         "--dot lists them)");
      down_[k] = c.where;
    }
    for (const auto& d : f.degraded) {
      const std::string k = normalize(d.cable);
      if (k.empty())
        throw InputError(d.where, fmt::format("'{}' is not a cable name", d.cable),
                         "name a cable by its two ends, e.g. leaf0-spine3 or nic2.5-leaf5");
      degraded_[k] = {d.fraction, d.where};
    }
    for (const auto& w : f.switches)
      switches_down_[w.name] = w.where;
  }
  void fail_cable(const std::string& a, const std::string& b, const InputLocation& where)
  {
    down_[cable_key(a, b)] = where;
  }
  /// Every failure entry named something this cluster has, outside the nodes.
  void check_matched() const
  {
    for (const auto& [k, where] : down_)
      if (!matched_.count(k))
        throw InputError(where, fmt::format("this cluster has no cable {}", k),
                         "name a fabric or NIC cable by its two ends (railyard topo describe --dot lists them)");
    for (const auto& [k, d] : degraded_)
      if (!matched_.count(k))
        throw InputError(d.second, fmt::format("this cluster has no cable {}", k),
                         "name a fabric or NIC cable by its two ends (railyard topo describe --dot lists them)");
    for (const auto& [name, where] : switches_down_) {
      bool found = false;
      for (VertexId v = 0; v < boost::num_vertices(graph_) && !found; ++v)
        found = graph_[v].name == name && is_fabric_switch(graph_[v].kind);
      if (!found)
        throw InputError(where, fmt::format("this cluster has no fabric switch {}", name),
                         "name a leaf, spine, agg or core switch (railyard topo describe --dot lists them)");
    }
  }

  // One cable: the direction from `a` to `b` gets the even id, the way back the odd one.
  void add_cable(VertexId a, VertexId b, LinkKind kind, BytesPerSec bandwidth, Seconds latency)
  {
    if (!down_.empty() || !degraded_.empty() || !switches_down_.empty() || !spec_.failures.nodes.empty()) {
      const std::string k = cable_key(graph_[a].name, graph_[b].name);
      const bool inside = kind == LinkKind::NvLink || kind == LinkKind::Pcie || kind == LinkKind::Xgmi;
      const auto d = down_.find(k);
      const auto g = degraded_.find(k);
      if (inside && (d != down_.end() || g != degraded_.end()))
        throw InputError(d != down_.end() ? d->second : g->second.second,
                         fmt::format("{} is a cable inside a node (NVLink, xGMI or PCIe)", k),
                         "fail or degrade the fabric: NIC-leaf and switch-switch cables");
      const bool node_down = kind == LinkKind::NicLeaf &&
                             (spec_.failures.node_down(graph_[a].node) || spec_.failures.node_down(graph_[b].node));
      if (node_down) return;
      if (d != down_.end() || switches_down_.count(graph_[a].name) || switches_down_.count(graph_[b].name)) {
        matched_.insert(k);
        return;
      }
      if (g != degraded_.end()) {
        matched_.insert(k);
        bandwidth = BytesPerSec(bandwidth.bytes_per_sec() * g->second.first);
      }
    }
    boost::add_edge(a, b, Link{kind, bandwidth, latency, 2 * cables_, cables_}, graph_);
    boost::add_edge(b, a, Link{kind, bandwidth, latency, 2 * cables_ + 1, cables_}, graph_);
    ++cables_;
  }

  Graph& graph() { return graph_; }

private:
  const ClusterSpec& spec_;
  Graph graph_;
  std::size_t cables_ = 0;
  std::map<std::string, InputLocation> down_, switches_down_;
  std::map<std::string, std::pair<double, InputLocation>> degraded_;
  std::set<std::string> matched_;
};

} // namespace

namespace {

void validate(const ClusterSpec& spec, const InputLocation& where)
{
  if (auto problem = detail::find_problem(spec)) {
    InputLocation at = where;
    at.field = where.field.empty() ? problem->field : where.field + "." + problem->field;
    throw InputError(at, problem->rule, problem->fix);
  }
}

} // namespace

TopologySize topology_size(const ClusterSpec& spec, const InputLocation& where)
{
  // The counts build_topology's loops produce, kind by kind (keep the two in step; tests compare them).
  validate(spec, where);
  const std::size_t gpus = static_cast<std::size_t>(spec.gpus());
  const std::size_t nics = static_cast<std::size_t>(spec.nics());
  const std::size_t rails = static_cast<std::size_t>(spec.nics_of_node()); // NICs per node: the rails
  const std::size_t half = static_cast<std::size_t>(spec.radix / 2);
  const std::size_t uplinks = static_cast<std::size_t>(detail::leaf_uplinks(spec));
  std::size_t leaves = 0, tier2 = 0, cores = 0, up_cables = 0;
  switch (spec.kind) {
  case ClusterKind::SingleNode:
    break;
  case ClusterKind::FatTree:
    if (spec.tiers == 3) {
      const auto pods =
          static_cast<std::size_t>(detail::ceil_div(static_cast<long long>(nics), static_cast<long long>(half * half)));
      const auto core_up = static_cast<std::size_t>(detail::aggregation_uplinks(spec));
      leaves = pods * half;
      tier2 = pods * uplinks;
      cores = uplinks * core_up;
      up_cables = leaves * uplinks + tier2 * core_up;
    } else {
      leaves = static_cast<std::size_t>(detail::ceil_div(static_cast<long long>(nics), spec.leaf_downlinks));
      tier2 = uplinks;
      up_cables = leaves * tier2;
    }
    break;
  case ClusterKind::RailOptimized:
    leaves = static_cast<std::size_t>(detail::ceil_div(spec.nodes, spec.leaf_downlinks)) * rails;
    tier2 = uplinks;
    up_cables = leaves * tier2;
    break;
  case ClusterKind::RailOnly:
    leaves = rails;
    break;
  }
  TopologySize s;
  const std::size_t nvswitches = spec.nvswitch ? static_cast<std::size_t>(spec.nodes) : 0;
  s.leaves = leaves;
  s.switches = leaves + tier2 + cores;
  s.vertices = gpus + nics + nvswitches + s.switches;
  // Per GPU its PCIe cable to its NIC (and its NVLink to the NVSwitch), per NIC its cable to a leaf; a fully
  // connected node has one cable per GPU pair.
  const auto gpn = static_cast<std::size_t>(spec.gpus_per_node);
  const std::size_t mesh = spec.fully_connected() ? static_cast<std::size_t>(spec.nodes) * gpn * (gpn - 1) / 2 : 0;
  const std::size_t cables = gpus * (spec.nvswitch ? 2 : 1) + mesh + (leaves > 0 ? nics : 0) + up_cables;
  s.links = 2 * cables;
  return s;
}

Topology build_topology(const ClusterSpec& spec, const InputLocation& where)
{
  validate(spec, where);

  GraphBuilder b(spec);
  b.fail(spec.failures);
  const int gpn = spec.gpus_per_node;
  const int rails = spec.nics_of_node(); // NICs per node
  const int nics = spec.nics();          // NIC i = node x rails + rail

  // Leaf of each NIC (index into `leaves`) and the group (pod or scalable unit) of each leaf, decided first so that
  // GPUs and NICs can carry their leaf's group.
  std::vector<int> leaf_of_nic(nics, -1);
  std::vector<int> leaf_group;
  std::vector<int> leaf_rail;
  const int half = spec.radix / 2;
  const bool three_tier = spec.has_core_tier();
  int pods = 0;
  switch (spec.kind) {
  case ClusterKind::SingleNode:
    break;
  case ClusterKind::FatTree:
    if (three_tier) {
      // Al-Fares et al. 2008: each pod has k/2 edge switches of k/2 host ports. Pods are built whole.
      pods = static_cast<int>(detail::ceil_div(nics, static_cast<long long>(half) * half));
      for (int e = 0; e < pods * half; ++e) {
        leaf_group.push_back(e / half);
        leaf_rail.push_back(-1);
      }
      for (int i = 0; i < nics; ++i)
        leaf_of_nic[i] = i / half;
    } else {
      const int leaves = static_cast<int>(detail::ceil_div(nics, spec.leaf_downlinks));
      leaf_group.assign(leaves, -1);
      leaf_rail.assign(leaves, -1);
      for (int i = 0; i < nics; ++i)
        leaf_of_nic[i] = i / spec.leaf_downlinks;
    }
    break;
  case ClusterKind::RailOptimized: {
    // A scalable unit holds leaf_downlinks nodes and one leaf per rail; rail r of every node in it meets on one leaf.
    const int units = static_cast<int>(detail::ceil_div(spec.nodes, spec.leaf_downlinks));
    for (int su = 0; su < units; ++su)
      for (int r = 0; r < rails; ++r) {
        leaf_group.push_back(su);
        leaf_rail.push_back(r);
      }
    for (int i = 0; i < nics; ++i)
      leaf_of_nic[i] = (i / rails) / spec.leaf_downlinks * rails + i % rails;
    break;
  }
  case ClusterKind::RailOnly:
    for (int r = 0; r < rails; ++r) {
      leaf_group.push_back(-1);
      leaf_rail.push_back(r);
    }
    for (int i = 0; i < nics; ++i)
      leaf_of_nic[i] = i % rails;
    break;
  }

  // Vertices: per node GPUs, NICs, NVSwitch; then the fabric switches tier by tier.
  const int gpus = spec.gpus();
  auto nic_of_gpu = [&](int g) { return (g / gpn) * rails + spec.nic_of_local(g % gpn); };
  std::vector<VertexId> gpu_v(gpus), nic_v(nics);
  std::vector<VertexId> nvsw_v(spec.nodes, 0);
  for (int n = 0; n < spec.nodes; ++n) {
    for (int l = 0; l < gpn; ++l) {
      const int i = n * gpn + l;
      const int nic = nic_of_gpu(i);
      const int group = leaf_of_nic[nic] >= 0 ? leaf_group[leaf_of_nic[nic]] : -1;
      gpu_v[i] = b.add_vertex(VertexKind::Gpu, 0, n, l, group, fmt::format("gpu{}.{}", n, l));
    }
    for (int r = 0; r < rails; ++r) {
      const int i = n * rails + r;
      const int group = leaf_of_nic[i] >= 0 ? leaf_group[leaf_of_nic[i]] : -1;
      nic_v[i] = b.add_vertex(VertexKind::Nic, 0, n, r, group, fmt::format("nic{}.{}", n, r));
    }
    if (spec.nvswitch) nvsw_v[n] = b.add_vertex(VertexKind::NvSwitch, 0, n, -1, -1, fmt::format("nvsw{}", n));
  }
  std::vector<VertexId> leaf_v(leaf_group.size());
  for (size_t l = 0; l < leaf_group.size(); ++l)
    leaf_v[l] = b.add_vertex(VertexKind::Leaf, 1, -1, leaf_rail[l], leaf_group[l], fmt::format("leaf{}", l));

  const int uplinks = detail::leaf_uplinks(spec);
  const int core_up = detail::aggregation_uplinks(spec); // 3-tier: core uplinks per aggregation switch
  std::vector<VertexId> tier2_v;
  std::vector<VertexId> core_v;
  if (three_tier) {
    // Edge oversubscription removes aggregation switches: each pod keeps `uplinks` of its k/2, each wired to every
    // edge of the pod, and only the cores above the kept ones remain.
    for (int p = 0; p < pods; ++p)
      for (int a = 0; a < uplinks; ++a)
        tier2_v.push_back(b.add_vertex(VertexKind::Spine, 2, -1, -1, p, fmt::format("agg{}", p * uplinks + a)));
    for (int c = 0; c < uplinks * core_up; ++c)
      core_v.push_back(b.add_vertex(VertexKind::Core, 3, -1, -1, -1, fmt::format("core{}", c)));
  } else if (spec.kind == ClusterKind::FatTree || spec.kind == ClusterKind::RailOptimized) {
    for (int s = 0; s < uplinks; ++s)
      tier2_v.push_back(b.add_vertex(VertexKind::Spine, 2, -1, -1, -1, fmt::format("spine{}", s)));
  }

  // failures.leaf_spine_down: leaf i - spine i for i < N, N cables on N different leaves and spines.
  if (const int n = spec.failures.leaf_spine_down; n > 0) {
    const InputLocation& at = spec.failures.leaf_spine_where;
    if (three_tier || tier2_v.empty())
      throw InputError(at, "leaf_spine_down needs a 2-tier fabric with spines (fat_tree with tiers: 2, rail_optimized)",
                       "name the cables under failures.cables instead");
    const int most = static_cast<int>(std::min(leaf_v.size(), tier2_v.size()));
    if (n > most)
      throw InputError(at,
                       fmt::format("{} cables down on distinct leaves and spines; this fabric has {} leaves and {} "
                                   "spines",
                                   n, leaf_v.size(), tier2_v.size()),
                       fmt::format("give at most {}, or name the cables under failures.cables", most));
    for (int i = 0; i < n; ++i)
      b.fail_cable(b.graph()[leaf_v[i]].name, b.graph()[tier2_v[i]].name, at);
  }

  // Cables inside the nodes (NVLink and PCIe), then the GPU pairs of fully connected nodes (xGMI: a, b with a < b, in
  // that order), then NIC to leaf, then leaf up, then aggregation to core.
  for (int i = 0; i < gpus; ++i) {
    if (spec.nvswitch)
      b.add_cable(gpu_v[i], nvsw_v[i / gpn], LinkKind::NvLink, spec.nvlink_bandwidth, spec.nvlink_latency);
    b.add_cable(gpu_v[i], nic_v[nic_of_gpu(i)], LinkKind::Pcie, spec.pcie_bandwidth, spec.pcie_latency);
  }
  if (spec.fully_connected())
    for (int n = 0; n < spec.nodes; ++n)
      for (int a = 0; a < gpn; ++a)
        for (int c = a + 1; c < gpn; ++c)
          b.add_cable(gpu_v[n * gpn + a], gpu_v[n * gpn + c], LinkKind::Xgmi, spec.xgmi_bandwidth, spec.xgmi_latency);
  for (int i = 0; i < nics; ++i)
    if (leaf_of_nic[i] >= 0)
      b.add_cable(nic_v[i], leaf_v[leaf_of_nic[i]], LinkKind::NicLeaf, spec.nic_bandwidth, spec.nic_latency);
  if (three_tier) {
    for (size_t e = 0; e < leaf_v.size(); ++e) {
      const int pod = static_cast<int>(e) / half;
      for (int a = 0; a < uplinks; ++a)
        b.add_cable(leaf_v[e], tier2_v[pod * uplinks + a], LinkKind::LeafSpine, spec.fabric_bandwidth,
                    spec.fabric_latency);
    }
    // Aggregation switch a of every pod connects to cores a*u .. a*u+u-1, u = the core uplinks it keeps (k/2 without
    // core oversubscription).
    for (int p = 0; p < pods; ++p)
      for (int a = 0; a < uplinks; ++a)
        for (int j = 0; j < core_up; ++j)
          b.add_cable(tier2_v[p * uplinks + a], core_v[a * core_up + j], LinkKind::SpineCore, spec.fabric_bandwidth,
                      spec.fabric_latency);
  } else {
    for (VertexId leaf : leaf_v)
      for (VertexId spine : tier2_v)
        b.add_cable(leaf, spine, LinkKind::LeafSpine, spec.fabric_bandwidth, spec.fabric_latency);
  }
  b.check_matched();
  Topology topology(spec, std::move(b.graph()));
  if (spec.failures.any()) {
    const std::string why = topology.disconnected();
    if (!why.empty()) {
      const Failures& f = spec.failures;
      const InputLocation at = !f.cables.empty()     ? f.cables.front().where
                               : !f.switches.empty() ? f.switches.front().where
                               : f.leaf_spine_down   ? f.leaf_spine_where
                                                     : where;
      throw InputError(at, fmt::format("the failures disconnect the cluster: {}", why),
                       "fail fewer cables or switches (every GPU must still reach every other one)");
    }
  }
  return topology;
}

} // namespace railyard::topo
