// What a topology costs and what it can carry: counts, cables, optics, bisection (a max flow), and its DOT drawing.
#include "spec_rules.hpp"

#include <boost/graph/push_relabel_max_flow.hpp>
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <map>
#include <ostream>
#include <utility>

namespace railyard::topo {
namespace {

bool is_fabric(LinkKind k)
{
  return k == LinkKind::NicLeaf || k == LinkKind::LeafSpine || k == LinkKind::SpineCore;
}

// "agg12" -> "agg": the family a switch belongs to, as its name spells it.
std::string name_prefix(const std::string& name)
{
  std::size_t end = name.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1])))
    --end;
  return name.substr(0, end);
}

using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, long long,
                    boost::property<boost::edge_residual_capacity_t, long long,
                                    boost::property<boost::edge_reverse_t, FlowTraits::edge_descriptor>>>>;

// A max-flow network: every arc comes with a zero-capacity reverse arc for the residual graph.
class FlowNetwork {
public:
  explicit FlowNetwork(std::size_t vertices) : g_(vertices) {}

  void add_arc(std::size_t from, std::size_t to, long long capacity)
  {
    auto capacity_map = boost::get(boost::edge_capacity, g_);
    auto reverse_map = boost::get(boost::edge_reverse, g_);
    const auto forward = boost::add_edge(from, to, g_).first;
    const auto backward = boost::add_edge(to, from, g_).first;
    capacity_map[forward] = capacity;
    capacity_map[backward] = 0;
    reverse_map[forward] = backward;
    reverse_map[backward] = forward;
  }

  long long max_flow(std::size_t source, std::size_t sink) { return boost::push_relabel_max_flow(g_, source, sink); }

private:
  FlowGraph g_;
};

} // namespace

TopologySummary Topology::summary() const
{
  TopologySummary s;
  s.nodes = spec_.nodes;
  std::map<std::pair<int, std::string>, int> switches; // (tier, family) -> count, in tier order
  for (VertexId v = 0; v < num_vertices(); ++v) {
    const Vertex& x = graph_[v];
    switch (x.kind) {
    case VertexKind::Gpu:
      ++s.gpus;
      break;
    case VertexKind::Nic:
      ++s.nics;
      break;
    case VertexKind::NvSwitch:
      ++s.nvswitches;
      break;
    default:
      ++switches[{x.tier, name_prefix(x.name)}];
    }
  }
  for (const auto& [key, count] : switches)
    s.switches_by_tier.emplace_back(key.second, count);
  s.links = num_links();
  for (LinkId id = 0; id < num_links(); ++id)
    if (link(id).kind == LinkKind::Xgmi) ++s.gpu_links;
  s.gpu_links /= 2; // two directed links per cable

  // NVLink and PCIe run inside the node (board traces and the NVLink backplane), so neither counts as a cable. Every
  // cable outside the node is counted as optical, NIC-to-leaf included: in a rail-optimized pod a node's rails go to
  // leaves in other racks, beyond the reach of copper (NVIDIA DGX SuperPOD H100 reference architecture).
  std::size_t fabric_links = 0;
  for (LinkId id = 0; id < num_links(); ++id)
    if (is_fabric(link(id).kind)) ++fabric_links;
  s.cables = fabric_links / 2;
  s.optics = 2 * s.cables;

  // Bisection: max flow from the NICs of nodes [0, n/2) to those of [n/2, n) over the fabric links, capacities in
  // whole bytes per second. Only fabric links enter the network: the two halves share no node, so NVLink and PCIe
  // cannot carry anything across the cut.
  const int half_nodes = spec_.nodes / 2;
  if (half_nodes > 0 && num_leaves_ > 0) {
    const std::size_t source = num_vertices();
    const std::size_t sink = num_vertices() + 1;
    FlowNetwork net(num_vertices() + 2);
    long long total = 1;
    for (LinkId id = 0; id < num_links(); ++id)
      if (is_fabric(link(id).kind)) {
        const long long capacity = std::llround(link(id).bandwidth.bytes_per_sec());
        net.add_arc(link_source(id), link_target(id), capacity);
        total += capacity;
      }
    const int split = half_nodes * spec_.gpus_per_node;
    for (int g = 0; g < num_gpus(); ++g) {
      if (g < split)
        net.add_arc(source, nic_vertices_[g], total);
      else
        net.add_arc(nic_vertices_[g], sink, total);
    }
    s.bisection = BytesPerSec(static_cast<double>(net.max_flow(source, sink)));
    // The smaller half's NICs at line rate: (gpus / 2) x NIC bandwidth when the node count is even.
    const int smaller = std::min(half_nodes, spec_.nodes - half_nodes) * spec_.nics_of_node();
    s.full_bisection = spec_.nic_bandwidth * static_cast<double>(smaller);
  }

  // Leaf oversubscription as built: the first leaf's downlink ports at NIC speed over its uplink bandwidth.
  if (num_leaves_ > 0) {
    BytesPerSec up{0};
    for (std::size_t k = up_begin_[0]; k < up_begin_[1]; ++k)
      up += link(up_links_[k]).bandwidth;
    if (up.bytes_per_sec() > 0)
      s.oversubscription = (spec_.nic_bandwidth * static_cast<double>(detail::leaf_downlink_ports(spec_))) / up;
  }
  // Between pods (3-tier fat tree): an aggregation switch's k/2 edge downlinks over the core uplinks it keeps.
  if (spec_.has_core_tier())
    s.core_oversubscription = (spec_.radix / 2) / static_cast<double>(detail::aggregation_uplinks(spec_));
  return s;
}

void Topology::write_dot(std::ostream& out) const
{
  out << "graph railyard {\n";
  out << fmt::format("  label=\"{}: {} nodes x {} GPUs\";\n", to_string(spec_.kind), spec_.nodes, spec_.gpus_per_node);
  out << "  rankdir=BT;\n  node [style=filled];\n";
  for (VertexId v = 0; v < num_vertices(); ++v) {
    const Vertex& x = graph_[v];
    const char* shape = x.kind == VertexKind::Gpu ? "box" : x.kind == VertexKind::Nic ? "ellipse" : "hexagon";
    const char* color = x.kind == VertexKind::Gpu        ? "palegreen"
                        : x.kind == VertexKind::Nic      ? "lightyellow"
                        : x.kind == VertexKind::NvSwitch ? "lightgrey"
                                                         : "lightblue";
    out << fmt::format("  \"{}\" [shape={}, fillcolor={}];\n", x.name, shape, color);
  }
  // One undirected edge per cable, labelled with its kind and per-direction bandwidth.
  std::vector<bool> drawn;
  for (LinkId id = 0; id < num_links(); ++id) {
    const Link& l = link(id);
    if (l.cable >= drawn.size()) drawn.resize(l.cable + 1, false);
    if (drawn[l.cable]) continue;
    drawn[l.cable] = true;
    out << fmt::format("  \"{}\" -- \"{}\" [label=\"{} {}\"];\n", graph_[link_source(id)].name,
                       graph_[link_target(id)].name, to_string(l.kind), format_bandwidth(l.bandwidth));
  }
  out << "}\n";
}

nlohmann::ordered_json failures_json(const Failures& f)
{
  // What is down or slow (a summary's cable counts are of the cables as built, without the ones down).
  nlohmann::ordered_json fj;
  nlohmann::ordered_json cables = nlohmann::ordered_json::array(), switches = nlohmann::ordered_json::array(),
                         degraded = nlohmann::ordered_json::array(), stragglers = nlohmann::ordered_json::array();
  for (const auto& c : f.cables)
    cables.push_back(c.name);
  for (const auto& w : f.switches)
    switches.push_back(w.name);
  for (const auto& d : f.degraded)
    degraded.push_back({{"cable", d.cable}, {"fraction", d.fraction}});
  for (const auto& g : f.stragglers)
    stragglers.push_back({{"gpu", g.gpu}, {"slowdown", g.slowdown}});
  fj["cables_down"] = cables;
  fj["switches_down"] = switches;
  fj["leaf_spine_down"] = f.leaf_spine_down;
  fj["degraded"] = degraded;
  fj["stragglers"] = stragglers;
  nlohmann::ordered_json nodes = nlohmann::ordered_json::array();
  for (const auto& n : f.nodes)
    nodes.push_back(n.node);
  fj["nodes_down"] = nodes;
  return fj;
}

nlohmann::ordered_json summary_json(const ClusterSpec& spec, const TopologySummary& s)
{
  nlohmann::ordered_json j;
  j["kind"] = to_string(spec.kind);
  j["nodes"] = s.nodes;
  j["gpus_per_node"] = spec.gpus_per_node;
  j["gpus"] = s.gpus;
  j["nics"] = s.nics;
  j["node_kind"] = to_string(spec.node_kind);
  j["nvswitches"] = s.nvswitches;
  if (spec.fully_connected()) {
    j["gpu_links"] = s.gpu_links;
    j["xgmi_bandwidth_bytes_per_s"] = spec.xgmi_bandwidth.bytes_per_sec();
  }
  nlohmann::ordered_json switches = nlohmann::ordered_json::object();
  for (const auto& [tier, count] : s.switches_by_tier)
    switches[tier] = count;
  j["switches"] = switches;
  j["links"] = s.links;
  j["cables"] = s.cables;
  j["optics"] = s.optics;
  j["nic_bandwidth_bytes_per_s"] = spec.nic_bandwidth.bytes_per_sec();
  j["bisection_bytes_per_s"] = s.bisection.bytes_per_sec();
  j["full_bisection_bytes_per_s"] = s.full_bisection.bytes_per_sec();
  j["oversubscription"] = s.oversubscription;
  if (spec.has_core_tier()) j["core_oversubscription"] = s.core_oversubscription;
  if (spec.failures.any() || !spec.failures.stragglers.empty()) j["failures"] = failures_json(spec.failures);
  return j;
}

} // namespace railyard::topo
