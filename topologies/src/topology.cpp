// Topology: index tables derived once from the graph, and up*/down* routing with per-flow ECMP hashing over them.
#include "railyard/topologies/topology.hpp"

#include "railyard/common/hash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <limits>
#include <stdexcept>

namespace railyard::topo {
namespace {

// A switch's ECMP choice for one flow: a pure function of (flow, seed, switch), so a flow keeps its path and
// different switches choose independently of each other.
std::uint64_t ecmp_hash(std::uint64_t flow_key, std::uint64_t seed, std::uint64_t vertex)
{
  return splitmix64(splitmix64(splitmix64(flow_key) ^ seed) ^ vertex);
}

// Maps a 64-bit hash onto [0, n) without the bias of a modulo: the high half of the 128-bit product (Lemire 2019).
int pick(std::uint64_t hash, int n)
{
  return static_cast<int>((static_cast<unsigned __int128>(hash) * static_cast<unsigned>(n)) >> 64);
}

constexpr std::size_t kNoVertex = std::numeric_limits<std::size_t>::max();

} // namespace

Topology::Topology(ClusterSpec spec, Graph graph) : spec_(std::move(spec)), graph_(std::move(graph))
{
  build_tables();
}

void Topology::build_tables()
{
  // Link ids must be dense so that per-link state elsewhere can live in plain vectors.
  const std::size_t num_edges = boost::num_edges(graph_);
  links_.assign(num_edges, Graph::edge_descriptor{});
  std::vector<bool> seen(num_edges, false);
  for (auto [e, end] = boost::edges(graph_); e != end; ++e) {
    const LinkId id = graph_[*e].id;
    if (id >= num_edges || seen[id])
      throw std::invalid_argument(fmt::format("link ids must be 0..{} without repeats; found {}", num_edges - 1, id));
    seen[id] = true;
    links_[id] = *e;
  }

  const int gpus = spec_.gpus();
  gpu_vertices_.assign(gpus, kNoVertex);
  nic_vertices_.assign(gpus, kNoVertex);
  const std::size_t nv = boost::num_vertices(graph_);
  for (VertexId v = 0; v < nv; ++v) {
    const Vertex& x = graph_[v];
    if (x.kind != VertexKind::Gpu && x.kind != VertexKind::Nic) continue;
    const int locals = x.kind == VertexKind::Gpu ? spec_.gpus_per_node : spec_.nics_of_node();
    if (x.node < 0 || x.node >= spec_.nodes || x.local < 0 || x.local >= locals)
      throw std::invalid_argument(
          fmt::format("vertex {} has node {} local {} outside the spec", x.name, x.node, x.local));
    if (x.kind == VertexKind::Gpu) {
      gpu_vertices_[x.node * spec_.gpus_per_node + x.local] = v;
    } else {
      // The NIC of every GPU that shares it (one per GPU unless nic.per_node is smaller).
      for (int l = 0; l < spec_.gpus_per_node; ++l)
        if (spec_.nic_of_local(l) == x.local) nic_vertices_[x.node * spec_.gpus_per_node + l] = v;
    }
  }
  for (int g = 0; g < gpus; ++g)
    if (gpu_vertices_[g] == kNoVertex || nic_vertices_[g] == kNoVertex)
      throw std::invalid_argument(fmt::format("GPU {} or its NIC is missing from the graph", g));

  // Switches numbered leaves first, then tier 2, then tier 3: a lower tier always has lower numbers, which lets the
  // reachability sets below be filled in one pass each way.
  switch_of_vertex_.assign(nv, -1);
  switch_vertices_.clear();
  for (int tier = 1; tier <= 3; ++tier)
    for (VertexId v = 0; v < nv; ++v)
      if (is_fabric_switch(graph_[v].kind) && graph_[v].tier == tier) {
        switch_of_vertex_[v] = static_cast<int>(switch_vertices_.size());
        switch_vertices_.push_back(v);
      }
  num_leaves_ = static_cast<int>(
      std::count_if(switch_vertices_.begin(), switch_vertices_.end(), [&](VertexId v) { return graph_[v].tier == 1; }));
  link_target_switch_.assign(num_edges, -1);
  for (LinkId id = 0; id < num_edges; ++id)
    link_target_switch_[id] = switch_of_vertex_[boost::target(links_[id], graph_)];

  // Switch-to-switch links out of every switch, split by direction, in link-id order.
  const std::size_t num_switches = switch_vertices_.size();
  up_begin_.assign(num_switches + 1, 0);
  down_begin_.assign(num_switches + 1, 0);
  up_links_.clear();
  down_links_.clear();
  std::vector<LinkId> out;
  for (std::size_t s = 0; s < num_switches; ++s) {
    const VertexId v = switch_vertices_[s];
    out.clear();
    for (auto [e, end] = boost::out_edges(v, graph_); e != end; ++e)
      if (switch_of_vertex_[boost::target(*e, graph_)] >= 0) out.push_back(graph_[*e].id);
    std::sort(out.begin(), out.end());
    for (LinkId id : out) {
      const int to_tier = graph_[link_target(id)].tier;
      if (to_tier > graph_[v].tier)
        up_links_.push_back(id);
      else if (to_tier < graph_[v].tier)
        down_links_.push_back(id);
    }
    up_begin_[s + 1] = up_links_.size();
    down_begin_[s + 1] = down_links_.size();
  }

  // The links every route starts and ends with.
  gpu_links_.assign(gpus, GpuLinks{});
  auto first_link = [&](auto range, LinkKind kind) {
    LinkId best = kNoLink;
    for (auto e = range.first; e != range.second; ++e)
      if (graph_[*e].kind == kind) best = std::min(best, graph_[*e].id);
    return best;
  };
  for (int g = 0; g < gpus; ++g) {
    GpuLinks& l = gpu_links_[g];
    l.to_nvswitch = first_link(boost::out_edges(gpu_vertices_[g], graph_), LinkKind::NvLink);
    l.from_nvswitch = first_link(boost::in_edges(gpu_vertices_[g], graph_), LinkKind::NvLink);
    l.to_nic = first_link(boost::out_edges(gpu_vertices_[g], graph_), LinkKind::Pcie);
    l.from_nic = first_link(boost::in_edges(gpu_vertices_[g], graph_), LinkKind::Pcie);
    l.nic_up = first_link(boost::out_edges(nic_vertices_[g], graph_), LinkKind::NicLeaf);
    l.nic_down = first_link(boost::in_edges(nic_vertices_[g], graph_), LinkKind::NicLeaf);
    if (l.nic_up != kNoLink) l.leaf = link_target_switch_[l.nic_up];
    if (l.leaf >= num_leaves_)
      throw std::invalid_argument(fmt::format("NIC {} is cabled to a switch that is not a leaf", g));
  }
  // Fully connected nodes: each GPU's direct link to every other GPU of its node.
  mesh_out_.clear();
  if (spec_.fully_connected()) {
    const int gpn = spec_.gpus_per_node;
    mesh_out_.assign(static_cast<std::size_t>(gpus) * gpn, kNoLink);
    for (int g = 0; g < gpus; ++g)
      for (auto [e, end] = boost::out_edges(gpu_vertices_[g], graph_); e != end; ++e)
        if (graph_[*e].kind == LinkKind::Xgmi) {
          const Vertex& to = graph_[boost::target(*e, graph_)];
          mesh_out_[static_cast<std::size_t>(g) * gpn + to.local] = graph_[*e].id;
        }
  }

  // below: leaves reachable going only down; reach: going up any number of tiers first. Down targets have lower
  // numbers and up targets higher ones, so one ascending and one descending pass suffice.
  words_ = (static_cast<std::size_t>(num_leaves_) + 63) / 64;
  below_.assign(num_switches * words_, 0);
  reach_.assign(num_switches * words_, 0);
  for (std::size_t s = 0; s < num_switches; ++s) {
    if (static_cast<int>(s) < num_leaves_) below_[s * words_ + s / 64] |= std::uint64_t{1} << (s % 64);
    for (std::size_t k = down_begin_[s]; k < down_begin_[s + 1]; ++k) {
      const std::size_t t = static_cast<std::size_t>(link_target_switch_[down_links_[k]]);
      for (std::size_t w = 0; w < words_; ++w)
        below_[s * words_ + w] |= below_[t * words_ + w];
    }
  }
  // Down links as runs of leaves, for the binary-search down hop.
  run_begin_.assign(num_switches + 1, 0);
  runs_.clear();
  runs_disjoint_.assign(num_switches, 1);
  for (std::size_t s = 0; s < num_switches; ++s) {
    const std::size_t first = runs_.size();
    for (std::size_t k = down_begin_[s]; k < down_begin_[s + 1]; ++k) {
      const int t = link_target_switch_[down_links_[k]];
      for (std::size_t w = 0; w < words_; ++w)
        for (std::uint64_t bits = below_[t * words_ + w]; bits != 0; bits &= bits - 1) {
          const int leaf = static_cast<int>(w * 64) + std::countr_zero(bits);
          if (runs_.size() > first && runs_.back().link == down_links_[k] && runs_.back().leaf_end == leaf)
            ++runs_.back().leaf_end;
          else
            runs_.push_back(DownRun{leaf, leaf + 1, down_links_[k], t});
        }
    }
    std::sort(runs_.begin() + static_cast<std::ptrdiff_t>(first), runs_.end(),
              [](const DownRun& a, const DownRun& b) { return a.leaf_begin < b.leaf_begin; });
    for (std::size_t i = first + 1; i < runs_.size(); ++i)
      if (runs_[i - 1].leaf_end > runs_[i].leaf_begin) runs_disjoint_[s] = 0;
    run_begin_[s + 1] = runs_.size();
  }

  for (std::size_t s = num_switches; s-- > 0;) {
    for (std::size_t w = 0; w < words_; ++w)
      reach_[s * words_ + w] = below_[s * words_ + w];
    for (std::size_t k = up_begin_[s]; k < up_begin_[s + 1]; ++k) {
      const std::size_t t = static_cast<std::size_t>(link_target_switch_[up_links_[k]]);
      for (std::size_t w = 0; w < words_; ++w)
        reach_[s * words_ + w] |= reach_[t * words_ + w];
    }
  }
}

VertexId Topology::gpu_vertex(int gpu) const
{
  if (gpu < 0 || gpu >= num_gpus())
    throw std::out_of_range(fmt::format("GPU {} is outside 0..{}", gpu, num_gpus() - 1));
  return gpu_vertices_[gpu];
}

VertexId Topology::nic_vertex(int gpu) const
{
  if (gpu < 0 || gpu >= num_gpus())
    throw std::out_of_range(fmt::format("GPU {} is outside 0..{}", gpu, num_gpus() - 1));
  return nic_vertices_[gpu];
}

std::string Topology::link_name(LinkId id) const
{
  return graph_[link_source(id)].name + "->" + graph_[link_target(id)].name;
}

template <class Visit>
int Topology::for_each_next(int sw, int leaf, Visit&& visit) const
{
  int n = 0;
  if (below(sw, leaf)) {
    if (runs_disjoint_[sw]) {
      const auto first = runs_.begin() + static_cast<std::ptrdiff_t>(run_begin_[sw]);
      const auto last = runs_.begin() + static_cast<std::ptrdiff_t>(run_begin_[sw + 1]);
      auto it = std::upper_bound(first, last, leaf, [](int l, const DownRun& r) { return l < r.leaf_begin; });
      if (it != first && leaf < (--it)->leaf_end) {
        visit(it->link, it->target);
        return 1;
      }
      return 0;
    }
    for (std::size_t k = down_begin_[sw]; k < down_begin_[sw + 1]; ++k) {
      const int t = link_target_switch_[down_links_[k]];
      if (below(t, leaf)) {
        visit(down_links_[k], t);
        ++n;
      }
    }
    return n;
  }
  // Going up: prefer switches that see the leaf below them (the turn is there); only when none does, climb further
  // through those that reach it at all. In a Clos every up-neighbour falls in the same class, so all are equal cost.
  bool turn_next = false;
  for (std::size_t k = up_begin_[sw]; k < up_begin_[sw + 1] && !turn_next; ++k)
    turn_next = below(link_target_switch_[up_links_[k]], leaf);
  for (std::size_t k = up_begin_[sw]; k < up_begin_[sw + 1]; ++k) {
    const int t = link_target_switch_[up_links_[k]];
    if (turn_next ? below(t, leaf) : reaches(t, leaf)) {
      visit(up_links_[k], t);
      ++n;
    }
  }
  return n;
}

int Topology::relay_gpu(int src, int dst, bool pxn) const
{
  // A rail-only fabric has no switch joining two rails, so cross-rail traffic must change rail over NVLink.
  const bool use_pxn = pxn || spec_.kind == ClusterKind::RailOnly;
  if (use_pxn && (spec_.nvswitch || spec_.fully_connected()) && node_of(src) != node_of(dst) &&
      local_of(src) != local_of(dst))
    return node_of(src) * spec_.gpus_per_node + local_of(dst);
  return src;
}

std::string Topology::disconnected() const
{
  if (spec_.kind == ClusterKind::SingleNode || spec_.nodes <= 1) return {};
  for (int g = 0; g < num_gpus(); ++g)
    if (gpu_links_[g].leaf < 0 && !spec_.failures.node_down(node_of(g))) // a node down is meant to be cut off
      return fmt::format("{} has no cable to a leaf, so {} reaches no other node", graph_[nic_vertex(g)].name,
                         graph_[gpu_vertex(g)].name);
  // Rail-only fabrics join no two leaves (traffic stays on its rail through PXN).
  if (spec_.kind == ClusterKind::RailOnly) return {};
  for (int a = 0; a < num_leaves_; ++a)
    for (int b = 0; b < num_leaves_; ++b)
      if (a != b && !reaches(a, b))
        return fmt::format("no up*/down* path is left from {} to {}", graph_[switch_vertices_[a]].name,
                           graph_[switch_vertices_[b]].name);
  return {};
}

void Topology::check_communicator(const std::vector<int>& gpus, const std::string& name) const
{
  if (spec_.failures.nodes.empty() || gpus.empty()) return;
  for (int g : gpus) {
    if (g < 0 || g >= num_gpus()) continue;
    const Failures::NodeDown* n = spec_.failures.node_down(node_of(g));
    if (!n) continue;
    for (int h : gpus)
      if (h >= 0 && h < num_gpus() && node_of(h) != node_of(g))
        throw InputError(n->where,
                         fmt::format("node {} is down (cluster.failures.nodes), and {} joins its {} with {} of node {}",
                                     n->node, name, graph_[gpu_vertex(g)].name, graph_[gpu_vertex(h)].name, node_of(h)),
                         fmt::format("leave node {}'s GPUs ({}..{}) out of the collectives' ranks or the jobs' GPUs, "
                                     "or take the node out of failures.nodes",
                                     n->node, n->node * spec_.gpus_per_node, (n->node + 1) * spec_.gpus_per_node - 1));
  }
}

void Topology::append_intra(int src, int dst, Path& p) const
{
  if (spec_.fully_connected()) {
    const LinkId l = mesh_out_[static_cast<std::size_t>(src) * spec_.gpus_per_node + local_of(dst)];
    if (l == kNoLink) throw std::logic_error(fmt::format("GPU {} has no direct link to GPU {}", src, dst));
    p.push_back(l);
    return;
  }
  if (gpu_links_[src].to_nvswitch == kNoLink || gpu_links_[dst].from_nvswitch == kNoLink)
    throw std::logic_error(fmt::format("GPUs {} and {} share a node without an NVSwitch", src, dst));
  p.push_back(gpu_links_[src].to_nvswitch);
  p.push_back(gpu_links_[dst].from_nvswitch);
}

Path Topology::route(int src, int dst, std::uint64_t flow_key, std::uint64_t seed, bool pxn) const
{
  if (src < 0 || src >= num_gpus() || dst < 0 || dst >= num_gpus())
    throw std::out_of_range(fmt::format("route {} -> {}: GPUs are 0..{}", src, dst, num_gpus() - 1));
  Path p;
  if (src == dst) return p;
  const GpuLinks& d = gpu_links_[dst];
  if (node_of(src) == node_of(dst)) {
    p.reserve(2);
    append_intra(src, dst, p);
    return p;
  }
  // At most: 2 NVLink (PXN) + GPU->NIC->leaf + up to 4 switch hops + leaf->NIC->GPU.
  p.reserve(10);
  const int relay = relay_gpu(src, dst, pxn);
  if (relay != src) append_intra(src, relay, p);
  const GpuLinks& r = gpu_links_[relay];
  if (r.leaf < 0 || d.leaf < 0) check_communicator({src, dst}, "a transfer"); // a node down: InputError
  if (r.leaf < 0 || d.leaf < 0)
    throw std::logic_error(fmt::format("GPU {} or GPU {} has no NIC cabled to a leaf", relay, dst));
  p.push_back(r.to_nic);
  p.push_back(r.nic_up);
  // A switch hashes the flow's 5-tuple: both ends are in it, so the k-th flow of every pair does not take the same
  // uplink (a key without the pair put every pair's k-th flow on one spine).
  const std::uint64_t tuple =
      splitmix64((static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32 | static_cast<std::uint32_t>(dst)) ^
                 splitmix64(flow_key));
  int sw = r.leaf;
  for (int hop = 0; sw != d.leaf; ++hop) {
    const int n = hop < 8 ? for_each_next(sw, d.leaf, [](LinkId, int) {}) : 0;
    if (n == 0)
      throw std::logic_error(fmt::format("no up*/down* route from {} to {}", graph_[switch_vertices_[sw]].name,
                                         graph_[switch_vertices_[d.leaf]].name));
    int chosen = n == 1 ? 0 : pick(ecmp_hash(tuple, seed, switch_vertices_[sw]), n);
    LinkId link = kNoLink;
    int next = -1;
    for_each_next(sw, d.leaf, [&](LinkId l, int t) {
      if (chosen-- == 0) {
        link = l;
        next = t;
      }
    });
    p.push_back(link);
    sw = next;
  }
  p.push_back(d.nic_down);
  p.push_back(d.from_nic);
  return p;
}

void Topology::append_paths(int sw, int dst, Path& prefix, std::vector<Path>& out, std::size_t limit) const
{
  if (out.size() >= limit) return;
  const GpuLinks& d = gpu_links_[dst];
  if (sw == d.leaf) {
    out.push_back(prefix);
    out.back().push_back(d.nic_down);
    out.back().push_back(d.from_nic);
    return;
  }
  for_each_next(sw, d.leaf, [&](LinkId l, int t) {
    prefix.push_back(l);
    append_paths(t, dst, prefix, out, limit);
    prefix.pop_back();
  });
}

std::vector<Path> Topology::all_paths(int src, int dst, bool pxn, std::size_t limit) const
{
  if (src < 0 || src >= num_gpus() || dst < 0 || dst >= num_gpus())
    throw std::out_of_range(fmt::format("all_paths {} -> {}: GPUs are 0..{}", src, dst, num_gpus() - 1));
  std::vector<Path> out;
  if (limit == 0) return out;
  if (src == dst || node_of(src) == node_of(dst)) {
    out.push_back(route(src, dst, 0, 0, pxn));
    return out;
  }
  const int relay = relay_gpu(src, dst, pxn);
  if (gpu_links_[relay].leaf < 0 || gpu_links_[dst].leaf < 0)
    throw std::logic_error(fmt::format("GPU {} or GPU {} has no NIC cabled to a leaf", relay, dst));
  Path prefix;
  if (relay != src) append_intra(src, relay, prefix);
  prefix.push_back(gpu_links_[relay].to_nic);
  prefix.push_back(gpu_links_[relay].nic_up);
  append_paths(gpu_links_[relay].leaf, dst, prefix, out, limit);
  return out;
}

Seconds Topology::path_latency(const Path& p) const
{
  Seconds total{0};
  for (LinkId id : p)
    total += link(id).latency;
  return total;
}

BytesPerSec Topology::path_bandwidth(const Path& p) const
{
  BytesPerSec least(std::numeric_limits<double>::infinity());
  for (LinkId id : p)
    least = std::min(least, link(id).bandwidth);
  return least;
}

} // namespace railyard::topo
