// A cluster's bill of materials, counted from its topology graph: nodes and GPUs, switches by tier (what each uses of
// its ports), and every cable outside the nodes by reach class, with the transceivers its ends need.
#include "railyard/studies/plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

namespace railyard::studies {
namespace {

// "agg12" -> "agg": the family a switch belongs to, as its name spells it (topologies names them so).
std::string family_of(const std::string& name)
{
  std::size_t end = name.size();
  while (end > 0 && std::isdigit(static_cast<unsigned char>(name[end - 1])))
    --end;
  return name.substr(0, end);
}

long long ceil_div(long long a, long long b)
{
  return (a + b - 1) / b;
}

enum class Reach { Rack, Row, Hall };
const char* reach_name(Reach r)
{
  return r == Reach::Rack ? "in the rack" : r == Reach::Row ? "within a row" : "across the hall";
}

const Part& find_part(const Catalogue& c, const std::string& id, const char* category, const ClusterParts& parts,
                      const std::string& field)
{
  const auto it = c.parts.find(id);
  InputLocation at = parts.where;
  at.field = at.field.empty() ? field : at.field + "." + field;
  if (it == c.parts.end()) {
    std::string known;
    for (const auto& [k, p] : c.parts)
      if (p.category == category) known += (known.empty() ? "" : ", ") + k;
    throw InputError(at, fmt::format("the catalogue has no part '{}'", id),
                     fmt::format("name a {} part of the catalogue ({}), or add yours in a catalogue of your own",
                                 category, known.empty() ? "it has none" : known));
  }
  if (it->second.category != category)
    throw InputError(at, fmt::format("part '{}' is a {}, not a {}", id, it->second.category, category),
                     fmt::format("name a {} part", category));
  return it->second;
}

struct PhysicalSwitch {
  std::string family;
  const Part* part = nullptr; ///< the catalogue part the tier is built of
  long long ports_used = 0;
  std::map<Reach, long long> optical; ///< optical ports by reach class
};

} // namespace

Bom bill_of_materials(const topo::Topology& t, const Catalogue& c, const ClusterParts& parts)
{
  using topo::LinkKind;
  const topo::ClusterSpec& spec = t.spec();
  Bom bom;
  bom.nodes = spec.nodes;
  bom.gpus = spec.gpus();
  bom.nics = spec.nics();

  const Part& host = find_part(c, parts.host, "host", parts, "host");
  const Part& gpu = find_part(c, parts.gpu, "gpu", parts, "gpu");
  InputLocation at = parts.where;
  if (host.gpus != spec.gpus_per_node)
    throw InputError(at,
                     fmt::format("host part '{}' holds {} GPUs; the cluster's nodes have {}", host.id, host.gpus,
                                 spec.gpus_per_node),
                     "name a host part with as many GPUs as cluster.gpus_per_node");
  if (host.nics > 0 && spec.nics_of_node() > host.nics)
    throw InputError(at,
                     fmt::format("host part '{}' has {} fabric NICs; the cluster's nodes have {}", host.id, host.nics,
                                 spec.nics_of_node()),
                     "name a host part with enough NICs, or lower cluster.nics_per_node");

  // Which rack each node sits in; a leaf whose NICs all sit in one rack is that rack's top-of-rack switch.
  std::map<topo::VertexId, std::set<int>> racks_of_leaf;
  for (topo::LinkId id = 0; id < t.num_links(); id += 2)
    if (t.link(id).kind == LinkKind::NicLeaf)
      racks_of_leaf[t.link_target(id)].insert(t.vertex(t.link_source(id)).node / parts.nodes_per_rack);

  // Logical switches, then the physical ones they are built as.
  std::map<topo::VertexId, std::size_t> physical_of;
  std::vector<PhysicalSwitch> physical;
  {
    // (family, group) -> logical switches with their ports used.
    std::map<std::pair<std::string, int>, std::vector<std::pair<topo::VertexId, long long>>> by_family;
    for (topo::VertexId v = 0; v < t.num_vertices(); ++v) {
      const topo::Vertex& x = t.vertex(v);
      if (!topo::is_fabric_switch(x.kind)) continue;
      const long long ports = static_cast<long long>(boost::out_degree(v, t.graph()));
      by_family[{family_of(x.name), x.kind == topo::VertexKind::Leaf ? -2 : x.group}].emplace_back(v, ports);
    }
    for (const auto& [key, members] : by_family) {
      const std::string& family = key.first;
      const Part& part = find_part(c, parts.switches.count(family) ? parts.switches.at(family) : parts.switches.at("*"),
                                   "switch", parts, "switch");
      long long most = 0;
      bool same = true;
      for (const auto& [v, ports] : members) {
        same = same && ports == members.front().second;
        most = std::max(most, ports);
      }
      if (most > part.ports)
        throw InputError(at, fmt::format("{} switches use {} ports; '{}' has {}", family, most, part.id, part.ports),
                         "name a switch with more ports (parts.switch), or build smaller leaves (fabric."
                         "leaf_downlinks) or fewer spines");
      // Above the leaves, switches using at most half their ports are merged: k of them become one switch with k
      // parallel cables to each neighbour (same bandwidth and paths; NVIDIA's SuperPOD spines are built so).
      long long k = 1;
      if (parts.merge_spines && key.second != -2 && same && most > 0 && 2 * most <= part.ports) k = part.ports / most;
      for (std::size_t i = 0; i < members.size(); ++i) {
        if (i % static_cast<std::size_t>(k) == 0) physical.push_back({family, &part, 0, {}});
        physical_of[members[i].first] = physical.size() - 1;
        physical.back().ports_used += members[i].second;
      }
    }
  }

  // Cables by reach class; optical ones need a transceiver at each end (a cage serves several ports).
  std::map<Reach, long long> dac, fiber;
  std::map<std::pair<int, Reach>, long long> node_optical; // (node, reach) -> optical NIC ports
  for (topo::LinkId id = 0; id < t.num_links(); id += 2) {
    const topo::Link& l = t.link(id);
    if (l.kind != LinkKind::NicLeaf && l.kind != LinkKind::LeafSpine && l.kind != LinkKind::SpineCore) continue;
    const topo::VertexId a = t.link_source(id), b = t.link_target(id);
    Reach r = Reach::Row;
    if (l.kind == LinkKind::SpineCore) r = Reach::Hall;
    if (l.kind == LinkKind::NicLeaf && racks_of_leaf[b].size() == 1) r = Reach::Rack;
    const double gbps = l.bandwidth.bytes_per_sec() * 8 / 1e9;
    for (topo::VertexId end : {a, b})
      if (topo::is_fabric_switch(t.vertex(end).kind)) {
        const PhysicalSwitch& sw = physical[physical_of[end]];
        if (sw.part->port_gbps > 0 && gbps > sw.part->port_gbps * (1 + 1e-9))
          throw InputError(at,
                           fmt::format("{} links run at {:g} Gb/s; '{}' ports run at {:g} Gb/s", sw.family, gbps,
                                       sw.part->id, sw.part->port_gbps),
                           "name a faster switch, or slow the cluster's links");
      }
    if (r == Reach::Rack) {
      ++dac[r];
      continue;
    }
    ++fiber[r];
    for (topo::VertexId end : {a, b}) {
      if (topo::is_fabric_switch(t.vertex(end).kind))
        ++physical[physical_of[end]].optical[r];
      else
        ++node_optical[{t.vertex(end).node, r}];
    }
  }

  std::map<Reach, long long> transceivers;
  for (const auto& [key, ports] : node_optical)
    transceivers[key.second] += ceil_div(ports, host.nic_ports_per_transceiver);
  for (const PhysicalSwitch& p : physical)
    for (const auto& [r, ports] : p.optical)
      transceivers[r] += ceil_div(ports, p.part->ports_per_transceiver);

  // The lines.
  const auto add = [&](const Part& p, long long count, std::string note, std::string category = {}) {
    if (count == 0) return;
    BomLine line{category.empty() ? p.category : std::move(category),
                 p.id,
                 p.description,
                 count,
                 p.price_usd,
                 p.power_w,
                 std::move(note)};
    bom.lines.push_back(line);
    if (line.price_usd())
      bom.capex_usd += *line.price_usd();
    else if (std::find(bom.unpriced.begin(), bom.unpriced.end(), p.id) == bom.unpriced.end())
      bom.unpriced.push_back(p.id);
    if (line.power_w())
      bom.it_power_w += *line.power_w();
    else if (std::find(bom.unpowered.begin(), bom.unpowered.end(), p.id) == bom.unpowered.end())
      bom.unpowered.push_back(p.id);
  };
  add(host, bom.nodes,
      fmt::format("{} nodes of {} GPUs and {} fabric NICs (the NICs are in the host's price and "
                  "power)",
                  bom.nodes, spec.gpus_per_node, spec.nics_of_node()));
  add(gpu, bom.gpus, fmt::format("{} per node", spec.gpus_per_node));
  struct Tier {
    const Part* part = nullptr;
    long long switches = 0, ports_used = 0;
  };
  std::map<std::string, Tier> tiers; // by family
  for (const PhysicalSwitch& p : physical) {
    Tier& t = tiers[p.family];
    t.part = p.part;
    ++t.switches;
    t.ports_used += p.ports_used;
  }
  for (const auto& [family, tier] : tiers) {
    bom.switches += tier.switches;
    bom.switches_by_tier[family] = tier.switches;
    add(*tier.part, tier.switches,
        fmt::format("{} switches: {} of their {} ports in use", family, tier.ports_used,
                    tier.switches * static_cast<long long>(tier.part->ports)),
        "switch (" + family + ")");
  }
  for (Reach r : {Reach::Rack, Reach::Row, Reach::Hall}) {
    if (transceivers[r] > 0) {
      const Part& x = find_part(c, r == Reach::Hall ? parts.transceiver_long : parts.transceiver_short, "transceiver",
                                parts, r == Reach::Hall ? "transceiver_long" : "transceiver_short");
      bom.transceivers += transceivers[r];
      add(x, transceivers[r], fmt::format("{} optical links {}: one per cage at each end", fiber[r], reach_name(r)));
    }
    if (fiber[r] > 0) {
      const Part& f = find_part(c, parts.fiber, "cable", parts, "fiber");
      bom.fiber_cables += fiber[r];
      add(f, fiber[r], fmt::format("links {}", reach_name(r)));
    }
    if (dac[r] > 0) {
      const Part& d = find_part(c, parts.dac, "cable", parts, "dac");
      bom.dac_cables += dac[r];
      add(d, dac[r], fmt::format("NIC to top-of-rack leaf, {} nodes per rack", parts.nodes_per_rack));
    }
  }
  return bom;
}

} // namespace railyard::studies
