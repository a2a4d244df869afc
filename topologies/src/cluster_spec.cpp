// The `cluster:` section of a scenario: parsing (with the YAML line of every value) and the rules a spec obeys.
#include "spec_rules.hpp"

#include "railyard/common/numbers.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string_view>
#include <utility>
#include <vector>

namespace railyard::topo {

std::string to_string(ClusterKind k)
{
  switch (k) {
  case ClusterKind::SingleNode:
    return "single_node";
  case ClusterKind::FatTree:
    return "fat_tree";
  case ClusterKind::RailOptimized:
    return "rail_optimized";
  case ClusterKind::RailOnly:
    return "rail_only";
  }
  return "unknown";
}

std::string to_string(NodeKind k)
{
  switch (k) {
  case NodeKind::NvSwitch:
    return "nvswitch";
  case NodeKind::FullyConnected:
    return "fully_connected";
  }
  return "unknown";
}

std::string to_string(VertexKind k)
{
  switch (k) {
  case VertexKind::Gpu:
    return "gpu";
  case VertexKind::Nic:
    return "nic";
  case VertexKind::NvSwitch:
    return "nvswitch";
  case VertexKind::Leaf:
    return "leaf";
  case VertexKind::Spine:
    return "spine";
  case VertexKind::Core:
    return "core";
  }
  return "unknown";
}

std::string to_string(LinkKind k)
{
  switch (k) {
  case LinkKind::NvLink:
    return "nvlink";
  case LinkKind::Pcie:
    return "pcie";
  case LinkKind::NicLeaf:
    return "nic_leaf";
  case LinkKind::LeafSpine:
    return "leaf_spine";
  case LinkKind::SpineCore:
    return "spine_core";
  case LinkKind::Xgmi:
    return "xgmi";
  }
  return "unknown";
}

namespace detail {

int leaf_downlink_ports(const ClusterSpec& spec)
{
  return spec.has_core_tier() ? spec.radix / 2 : spec.leaf_downlinks;
}

int leaf_uplinks(const ClusterSpec& spec)
{
  // The tolerance keeps 32 / (32/12) from rounding up to 13 through floating-point error.
  const double exact = leaf_downlink_ports(spec) / spec.oversubscription;
  return std::max(1, static_cast<int>(std::ceil(exact - 1e-9)));
}

int aggregation_uplinks(const ClusterSpec& spec)
{
  const double exact = (spec.radix / 2) / spec.core_oversubscription;
  return std::max(1, static_cast<int>(std::ceil(exact - 1e-9)));
}

namespace {

std::optional<SpecProblem> check_bandwidth(const char* field, BytesPerSec v)
{
  if (std::isfinite(v.bytes_per_sec()) && v.bytes_per_sec() > 0) return std::nullopt;
  return SpecProblem{field,
                     fmt::format("a bandwidth must be a finite number greater than zero (got {})", format_bandwidth(v)),
                     "write a positive bandwidth with its unit, such as '400 Gb/s' or '50 GB/s'"};
}

std::optional<SpecProblem> check_latency(const char* field, Seconds v)
{
  if (std::isfinite(v.seconds()) && v.seconds() >= 0) return std::nullopt;
  return SpecProblem{field, fmt::format("a latency must be zero or more (got {})", format_seconds(v)),
                     "write a non-negative time with its unit, such as '1 us'"};
}

std::optional<SpecProblem> check_count(const char* field, long long v)
{
  if (v > 0) return std::nullopt;
  return SpecProblem{field, fmt::format("must be a whole number greater than zero (got {})", v),
                     "write a positive count"};
}

// Smallest even radix whose full k-ary fat tree has a host port for every NIC (k^3/4 >= nics).
long long radix_that_fits(long long nics)
{
  long long k = 4;
  while (k * k * k / 4 < nics)
    k += 2;
  return k;
}

} // namespace

std::optional<SpecProblem> find_problem(const ClusterSpec& s)
{
  if (auto p = check_count("gpus_per_node", s.gpus_per_node)) return p;
  if (auto p = check_count("nodes", s.nodes)) return p;
  const long long gpus = static_cast<long long>(s.nodes) * s.gpus_per_node;
  if (gpus > kMaxGpus)
    return SpecProblem{"nodes", fmt::format("{} GPUs is more than the {} this version simulates", gpus, kMaxGpus),
                       "use fewer nodes or fewer GPUs per node"};
  if (s.kind == ClusterKind::SingleNode && s.nodes != 1)
    return SpecProblem{"nodes", fmt::format("a single_node cluster has exactly one node (got {})", s.nodes),
                       "set nodes: 1, or choose kind fat_tree, rail_optimized or rail_only for several nodes"};
  if (auto p = check_bandwidth("node.nvlink_bandwidth", s.nvlink_bandwidth)) return p;
  if (auto p = check_latency("node.nvlink_latency", s.nvlink_latency)) return p;
  if (auto p = check_bandwidth("node.pcie_bandwidth", s.pcie_bandwidth)) return p;
  if (auto p = check_latency("node.pcie_latency", s.pcie_latency)) return p;
  if (auto p = check_bandwidth("nic.bandwidth", s.nic_bandwidth)) return p;
  if (auto p = check_latency("nic.latency", s.nic_latency)) return p;
  if (auto p = check_bandwidth("fabric.link_bandwidth", s.fabric_bandwidth)) return p;
  if (auto p = check_latency("fabric.link_latency", s.fabric_latency)) return p;
  if (s.fully_connected()) {
    if (auto p = check_bandwidth("node.xgmi_bandwidth", s.xgmi_bandwidth)) return p;
    if (auto p = check_latency("node.xgmi_latency", s.xgmi_latency)) return p;
    if (s.nvswitch)
      return SpecProblem{"node.nvswitch", "a fully connected node has no NVSwitch: its GPUs are joined pairwise",
                         "remove nvswitch, or choose node kind nvswitch"};
    if (s.gpus_per_node > kMaxMeshGpus)
      return SpecProblem{
          "gpus_per_node",
          fmt::format("a fully connected node joins every GPU pair with its own link; {} GPUs would "
                      "need {} links per GPU, more than the {} GPUs per node a mesh is built for here",
                      s.gpus_per_node, s.gpus_per_node - 1, kMaxMeshGpus),
          fmt::format("use at most {} GPUs per fully connected node (MI300X platforms have 8)", kMaxMeshGpus)};
  } else if (!s.nvswitch && s.gpus_per_node > 1) {
    return SpecProblem{"node.nvswitch",
                       fmt::format("the {} GPUs of a node need a way to reach each other, and this node has neither an "
                                   "NVSwitch nor direct links",
                                   s.gpus_per_node),
                       "set nvswitch: true, or kind: fully_connected (one xGMI link per GPU pair, as on MI300X), or "
                       "gpus_per_node: 1"};
  }
  if (s.tiers != 2 && s.tiers != 3)
    return SpecProblem{"fabric.tiers",
                       fmt::format("tiers must be 2 (leaf/spine) or 3 (k-ary fat tree), got {}", s.tiers),
                       "write tiers: 2 or tiers: 3"};
  if (s.tiers == 3 && s.kind != ClusterKind::FatTree)
    return SpecProblem{"fabric.tiers",
                       fmt::format("tiers: 3 applies only to kind fat_tree; {} has a fixed shape", to_string(s.kind)),
                       "remove tiers, or choose kind fat_tree"};
  if (auto p = check_count("fabric.leaf_downlinks", s.leaf_downlinks)) return p;
  if (s.radix < 0)
    return SpecProblem{"fabric.radix", fmt::format("must be a whole number greater than zero (got {})", s.radix),
                       "write an even switch radix such as 64"};
  if (!std::isfinite(s.oversubscription) || s.oversubscription < 1.0)
    return SpecProblem{"fabric.oversubscription",
                       fmt::format("oversubscription is downlink : uplink bandwidth and must be at least 1 (got {:g})",
                                   s.oversubscription),
                       "write 1 for a non-blocking fabric, or a ratio such as 2 or '3:1'"};

  if (s.nics_per_node < 0 || (s.nics_per_node > 0 && s.gpus_per_node % s.nics_per_node != 0))
    return SpecProblem{"nic.per_node",
                       fmt::format("{} NICs per node do not divide the node's {} GPUs evenly (the GPUs of one PCIe "
                                   "switch share its NIC)",
                                   s.nics_per_node, s.gpus_per_node),
                       fmt::format("give a divisor of {}, e.g. {} or {}", s.gpus_per_node, s.gpus_per_node,
                                   std::max(1, s.gpus_per_node / 2))};
  if (!std::isfinite(s.core_oversubscription) || s.core_oversubscription < 1.0)
    return SpecProblem{"fabric.core_oversubscription",
                       fmt::format("core_oversubscription is aggregation downlink : core uplink bandwidth and must be "
                                   "at least 1 (got {:g})",
                                   s.core_oversubscription),
                       "write 1 for a non-blocking core, or a ratio such as 7 or '7:1'"};
  if (s.core_oversubscription > 1.0 && !s.has_core_tier())
    return SpecProblem{"fabric.core_oversubscription",
                       "core_oversubscription is the oversubscription between the pods of a 3-tier fat tree, and this "
                       "fabric has no core tier",
                       "use fabric.oversubscription for the leaf uplinks, or kind: fat_tree with tiers: 3"};
  if (s.has_core_tier()) {
    const long long nics = s.nics();
    if (s.radix < 4 || s.radix % 2 != 0)
      return SpecProblem{"fabric.radix",
                         fmt::format("a 3-tier k-ary fat tree needs an even switch radix k >= 4 (got {})", s.radix),
                         fmt::format("set radix to an even number of switch ports such as {}", radix_that_fits(nics))};
    const long long half = s.radix / 2;
    const long long pods = ceil_div(nics, half * half);
    if (pods > s.radix)
      return SpecProblem{
          "fabric.radix",
          fmt::format("a k={} fat tree has {} pods and {} host ports, but {} NICs need {} pods", s.radix, s.radix,
                      s.radix * half * half, nics, pods),
          fmt::format("use radix {} or more (k^3/4 >= {} NICs), or fewer GPUs", radix_that_fits(nics), nics)};
  }
  if (s.kind == ClusterKind::RailOnly && s.nodes > s.leaf_downlinks)
    return SpecProblem{"nodes",
                       fmt::format("a rail_only cluster connects every node to one switch per rail, which has {} "
                                   "ports (fabric.leaf_downlinks), so {} nodes cannot be connected",
                                   s.leaf_downlinks, s.nodes),
                       fmt::format("use at most {} nodes, raise fabric.leaf_downlinks to {} or more, or choose kind "
                                   "rail_optimized",
                                   s.leaf_downlinks, s.nodes)};
  return std::nullopt;
}

} // namespace detail

namespace {

constexpr std::array<std::pair<std::string_view, ClusterKind>, 4> kKinds{
    {{"single_node", ClusterKind::SingleNode},
     {"fat_tree", ClusterKind::FatTree},
     {"rail_optimized", ClusterKind::RailOptimized},
     {"rail_only", ClusterKind::RailOnly}}};

ClusterKind parse_kind(const YamlNode& n)
{
  const std::string text = n.as_string();
  std::vector<std::string> names;
  for (const auto& [name, kind] : kKinds) {
    if (text == name) return kind;
    names.emplace_back(name);
  }
  const std::string near = closest_spelling(text, names);
  n.fail(fmt::format("unknown cluster kind '{}'; the kinds are single_node, fat_tree, rail_optimized, rail_only", text),
         near.empty() ? "write one of those kinds" : fmt::format("did you mean '{}'?", near));
}

// A count in the range its field can take; find_problem checks what depends on several fields (divisibility, the
// total GPU count, an even radix).
// kMaxGpus bounds every count: no node, GPU or switch-port count of a simulated cluster is larger.
int parse_count(const YamlNode& n)
{
  return static_cast<int>(n.as_int(1, detail::kMaxGpus));
}

// "2", "2.5" or a ratio "2:1" (YAML reads an unquoted 2:1 as the string "2:1").
double parse_ratio(const YamlNode& n)
{
  const std::string text = n.as_string();
  const auto colon = text.find(':');
  if (colon == std::string::npos) return n.as_double();
  auto number = [&](const std::string& part) {
    try {
      return parse_finite(part);
    } catch (const std::invalid_argument&) {
      n.fail(fmt::format("'{}' is not a ratio", text), "write a number such as 2, or a ratio such as '2:1'");
    }
  };
  const double down = number(text.substr(0, colon));
  const double up = number(text.substr(colon + 1));
  if (!(up > 0)) n.fail(fmt::format("'{}' has a zero or negative uplink side", text), "write a ratio such as '2:1'");
  return down / up;
}

// The node that holds `field` (relative to the section), or the deepest existing parent, for its line number.
YamlNode locate(const YamlNode& section, const std::string& field)
{
  YamlNode cur = section;
  size_t start = 0;
  while (start <= field.size()) {
    const size_t dot = field.find('.', start);
    const std::string part = field.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!cur.is_map() || !cur.has(part)) break;
    cur = cur.at(part);
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return cur;
}

} // namespace

ClusterSpec parse_cluster(const YamlNode& cluster)
{
  cluster.expect_keys({"kind", "nodes", "gpus", "gpus_per_node", "node", "nic", "fabric", "failures"});
  ClusterSpec s;
  s.kind = parse_kind(cluster.at("kind"));
  if (auto n = cluster.get("gpus_per_node")) s.gpus_per_node = parse_count(*n);

  const auto nodes = cluster.get("nodes");
  const auto gpus = cluster.get("gpus");
  if (nodes && gpus)
    gpus->fail("give either nodes or gpus, not both", "keep one of them; gpus = nodes x gpus_per_node");
  if (nodes) {
    s.nodes = parse_count(*nodes);
  } else if (gpus) {
    const int total = parse_count(*gpus);
    if (s.gpus_per_node > 0 && (total <= 0 || total % s.gpus_per_node != 0))
      gpus->fail(fmt::format("{} GPUs is not a whole positive multiple of gpus_per_node = {}", total, s.gpus_per_node),
                 fmt::format("write a multiple of {} such as {}, or give nodes instead", s.gpus_per_node,
                             s.gpus_per_node * std::max(1, total / s.gpus_per_node)));
    s.nodes = s.gpus_per_node > 0 ? total / s.gpus_per_node : 0;
  } else if (s.kind != ClusterKind::SingleNode) {
    cluster.fail("missing the cluster size", "add 'nodes: N' or 'gpus: G' (a multiple of gpus_per_node)");
  }

  if (auto node = cluster.get("node")) {
    node->expect_keys({"kind", "nvswitch", "nvlink_bandwidth", "nvlink_latency", "xgmi_bandwidth", "xgmi_latency",
                       "pcie_bandwidth", "pcie_latency"});
    if (auto k = node->get("kind")) {
      const std::string kind = k->as_string();
      if (kind == "nvswitch")
        s.node_kind = NodeKind::NvSwitch;
      else if (kind == "fully_connected")
        s.node_kind = NodeKind::FullyConnected;
      else
        k->fail(fmt::format("'{}' is not a node kind", kind),
                "write nvswitch (GPUs on an NVSwitch) or fully_connected (one direct link per GPU pair, e.g. MI300X "
                "xGMI)");
    }
    const bool mesh = s.fully_connected();
    // Keys of the other kind of node are refused rather than ignored: a user who writes nvlink_bandwidth on an xGMI
    // node expects it to be used.
    for (const char* key : {"nvlink_bandwidth", "nvlink_latency"})
      if (auto v = node->get(key); v && mesh)
        v->fail(
            fmt::format("{} applies to a node whose GPUs sit on an NVSwitch, and this node is fully_connected", key),
            fmt::format("write {} (per GPU pair, per direction) instead",
                        std::string(key) == "nvlink_bandwidth" ? "xgmi_bandwidth" : "xgmi_latency"));
    for (const char* key : {"xgmi_bandwidth", "xgmi_latency"})
      if (auto v = node->get(key); v && !mesh)
        v->fail(fmt::format("{} applies to a fully connected node (one link per GPU pair), and this node is an "
                            "NVSwitch node",
                            key),
                "add kind: fully_connected to node:, or write nvlink_bandwidth / nvlink_latency");
    if (mesh) s.nvswitch = false;
    if (auto v = node->get("nvswitch")) {
      const bool want = node->bool_or("nvswitch", s.nvswitch);
      if (mesh && want)
        v->fail("a fully connected node has no NVSwitch: its GPUs are joined pairwise",
                "remove nvswitch, or write kind: nvswitch");
      s.nvswitch = want;
    }
    if (auto v = node->get("xgmi_bandwidth")) s.xgmi_bandwidth = v->as_bandwidth();
    if (auto v = node->get("xgmi_latency")) s.xgmi_latency = v->as_seconds();
    if (auto v = node->get("nvlink_bandwidth")) s.nvlink_bandwidth = v->as_bandwidth();
    if (auto v = node->get("nvlink_latency")) s.nvlink_latency = v->as_seconds();
    if (auto v = node->get("pcie_bandwidth")) s.pcie_bandwidth = v->as_bandwidth();
    if (auto v = node->get("pcie_latency")) s.pcie_latency = v->as_seconds();
  }
  if (auto nic = cluster.get("nic")) {
    nic->expect_keys({"bandwidth", "latency", "per_node"});
    if (auto v = nic->get("per_node")) s.nics_per_node = parse_count(*v);
    if (auto v = nic->get("bandwidth")) s.nic_bandwidth = v->as_bandwidth();
    if (auto v = nic->get("latency")) s.nic_latency = v->as_seconds();
  }
  if (auto fabric = cluster.get("fabric")) {
    fabric->expect_keys({"tiers", "leaf_downlinks", "radix", "oversubscription", "core_oversubscription",
                         "link_bandwidth", "link_latency"});
    if (auto v = fabric->get("tiers"))
      s.tiers = static_cast<int>(v->as_int(2, 3, "tiers are 2 (leaf/spine) or 3 (k-ary fat tree)"));
    if (auto v = fabric->get("leaf_downlinks")) s.leaf_downlinks = parse_count(*v);
    if (auto v = fabric->get("radix")) s.radix = parse_count(*v);
    if (auto v = fabric->get("oversubscription")) s.oversubscription = parse_ratio(*v);
    if (auto v = fabric->get("core_oversubscription")) s.core_oversubscription = parse_ratio(*v);
    if (auto v = fabric->get("link_bandwidth")) s.fabric_bandwidth = v->as_bandwidth();
    if (auto v = fabric->get("link_latency")) s.fabric_latency = v->as_seconds();
  }

  if (auto f = cluster.get("failures")) {
    f->expect_keys({"cables", "switches", "leaf_spine_down", "degraded", "stragglers", "nodes"});
    const auto names = [](const YamlNode& list, std::vector<Failures::Named>& out) {
      if (!list.is_sequence()) list.fail("give a list of names", "write e.g. [leaf0-spine1]");
      for (const YamlNode& n : list.items())
        out.push_back({n.as_string(), n.where()});
    };
    if (auto v = f->get("cables")) names(*v, s.failures.cables);
    if (auto v = f->get("switches")) names(*v, s.failures.switches);
    if (auto v = f->get("leaf_spine_down")) {
      s.failures.leaf_spine_down = static_cast<int>(v->as_int(0, 1'000'000));
      s.failures.leaf_spine_where = v->where();
    }
    if (auto v = f->get("degraded")) {
      if (!v->is_sequence()) v->fail("give a list", "write degraded: [{cable: leaf0-spine1, fraction: 0.5}]");
      for (const YamlNode& d : v->items()) {
        d.expect_keys({"cable", "fraction"});
        const double fr = d.at("fraction").as_double();
        if (!(fr > 0 && fr <= 1))
          d.at("fraction")
              .fail(fmt::format("{} is not a fraction of the rate in (0, 1]", fr),
                    "give e.g. 0.5 for half the rate; a cable that is down goes under cables:");
        s.failures.degraded.push_back({d.at("cable").as_string(), fr, d.where()});
      }
    }
    if (auto v = f->get("nodes")) {
      if (!v->is_sequence()) v->fail("give a list of node indices", "write nodes: [3]");
      for (const YamlNode& n : v->items()) {
        const auto node = static_cast<int>(n.as_int(0, std::max(0, s.nodes - 1), "the cluster's nodes"));
        if (s.failures.node_down(node)) n.fail(fmt::format("node {} is listed twice", node), "list each node once");
        s.failures.nodes.push_back({node, n.where()});
      }
    }
    if (auto v = f->get("stragglers")) {
      if (!v->is_sequence()) v->fail("give a list", "write stragglers: [{gpu: 5, slowdown: 1.2}]");
      for (const YamlNode& g : v->items()) {
        g.expect_keys({"gpu", "slowdown"});
        const auto gpu = static_cast<int>(g.at("gpu").as_int(0, std::max(0, s.gpus() - 1), "the cluster's GPUs"));
        const double sd = g.at("slowdown").as_double();
        if (!(sd >= 1 && sd <= 1000))
          g.at("slowdown")
              .fail(fmt::format("{} is not a slowdown factor in [1, 1000]", sd),
                    "give how many times longer its kernels take, e.g. 1.2 for 20% slower");
        s.failures.stragglers.push_back({gpu, sd, g.where()});
      }
    }
  }

  if (auto problem = detail::find_problem(s)) {
    std::string field = problem->field;
    if (field == "nodes" && !nodes && gpus)
      field = "gpus"; // the user sized the cluster in GPUs; point at what they wrote
    InputLocation where = locate(cluster, field).where();
    where.field = cluster.path().empty() ? field : cluster.path() + "." + field;
    throw InputError(where, problem->rule, problem->fix);
  }
  return s;
}

} // namespace railyard::topo
