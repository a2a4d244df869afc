#include "railyard/sim/nccl_resolve.hpp"

#include "railyard/models/rccl_tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>

namespace railyard::sim {

namespace {

// Row of NCCL's per-function override tables (ncclFunc_t order: Broadcast, Reduce, AllGather, ReduceScatter,
// AllReduce; nccl_tuning.hpp kNcclFunctions).
int function_row(models::CollectiveKind k)
{
  switch (k) {
  case models::CollectiveKind::Broadcast:
    return 0;
  case models::CollectiveKind::Reduce:
    return 1;
  case models::CollectiveKind::AllGather:
    return 2;
  case models::CollectiveKind::ReduceScatter:
    return 3;
  case models::CollectiveKind::AllReduce:
    return 4;
  default:
    return -1;
  }
}

bool is_p2p(models::CollectiveKind k)
{
  return k == models::CollectiveKind::AllToAll || k == models::CollectiveKind::SendRecv;
}

std::map<int, int> ranks_per_node(const std::vector<int>& ranks, const topo::Topology& topology)
{
  std::map<int, int> per_node;
  for (int g : ranks)
    ++per_node[topology.node_of(g)];
  return per_node;
}

std::string overrides_text(const NcclSettings& s)
{
  std::string out;
  if (s.algo) out += fmt::format(" NCCL_ALGO={}", *s.algo);
  if (s.proto) out += fmt::format(" NCCL_PROTO={}", *s.proto);
  return out;
}

int pow2_up(int v)
{
  int p = 1;
  while (p < v)
    p <<= 1;
  return p;
}

} // namespace

int p2p_lanes(const std::vector<int>& ranks, const topo::Topology& topology, const NcclSettings& settings)
{
  return NcclCommunicator(ranks, topology, settings).p2p_lanes();
}

models::Schedule lower_checked(models::LoweringInput in, const InputLocation& where, std::size_t max_steps)
{
  in.max_steps = max_steps;
  try {
    return models::lower(in);
  } catch (const models::ScheduleTooLarge& e) {
    throw InputError(where,
                     fmt::format("{} of {} on {} ranks ({} / {}, {} channels) would be lowered into {:.3g} steps or "
                                 "more ({:.3g} GiB), more than this run may still hold: {} steps (what the memory left "
                                 "under the run's limit, or --max-transfers, allows)",
                                 models::to_string(in.call.kind), format_bytes(in.call.bytes), in.call.ranks.size(),
                                 models::nccl_name(*in.call.algorithm), models::to_string(*in.call.protocol),
                                 in.call.channels.value_or(1), e.steps(),
                                 e.steps() * sizeof(models::Step) / (1024.0 * 1024 * 1024), e.limit()),
                     "a smaller size or fewer repeats, or run it with more memory (--max-memory) or a larger "
                     "--max-transfers");
  } catch (const std::invalid_argument& e) {
    throw InputError(where,
                     fmt::format("{} with algorithm {} cannot be lowered: {}", models::to_string(in.call.kind),
                                 models::nccl_name(*in.call.algorithm), e.what()),
                     "leave the algorithm to NCCL's cost model, or pick one NCCL implements for this collective");
  }
}

std::string to_string(models::CollectiveLibrary library)
{
  return library == models::CollectiveLibrary::Rccl ? "rccl" : "nccl";
}

const NcclSystem* find_nccl_system(std::string_view name)
{
  for (const NcclSystem& s : kNcclSystems)
    if (s.name == name) return &s;
  return nullptr;
}

std::string nccl_system_names()
{
  std::string out;
  for (const NcclSystem& s : kNcclSystems)
    out += fmt::format("{}{}", out.empty() ? "" : ", ", s.name);
  return out;
}

models::NodeSpec nccl_node(const NcclSettings& settings, const topo::ClusterSpec& cluster)
{
  models::NodeLayout layout = models::NodeLayout::DgxH100;
  std::string name;
  if (const NcclSystem* system = find_nccl_system(settings.system)) {
    layout = system->layout;
    name = system->display;
  } else if (cluster.fully_connected() || settings.library == models::CollectiveLibrary::Rccl) {
    // The one fully connected node the models know: 8x MI300X on xGMI, with RCCL.
    layout = models::NodeLayout::Mi300x;
  } else {
    // Nearest NVLink generation by ratio: A100 300, H100/H200 450, B200 900 GB/s per GPU and direction.
    const double gbps = cluster.nvlink_bandwidth.bytes_per_sec() / 1e9;
    const std::pair<double, models::NodeLayout> gens[] = {
        {300, models::NodeLayout::DgxA100}, {450, models::NodeLayout::DgxH100}, {900, models::NodeLayout::HgxB200}};
    double best = 1e300;
    for (const auto& [bw, l] : gens) {
      const double d = std::abs(std::log(gbps / bw));
      if (d < best) {
        best = d;
        layout = l;
      }
    }
  }
  models::NodeSpec node = models::node_spec(layout);
  if (!name.empty()) node.name = name;
  node.nvswitch_multicast = node.nvswitch_multicast && cluster.nvswitch;
  if (cluster.nodes > 1)
    node.nic_bw = cluster.nic_bandwidth; // NCCL reports a NIC's port speed / 8, which is the cluster's bytes per second
  return node;
}

NcclCommunicator::NcclCommunicator(std::vector<int> ranks, const topo::Topology& topology, NcclSettings settings)
    : topology_(&topology), settings_(std::move(settings)), ranks_(std::move(ranks))
{
  const models::NodeSpec cluster_node = nccl_node(settings_, topology.spec());
  node_ = cluster_node;
  rings_ = mesh_rings(ranks_, topology.gpus_per_node(), node_);
  const auto hops = hop_latencies(topology);
  intra_hop_ = hops.intra;
  inter_hop_ = hops.inter;
  const auto per_node = ranks_per_node(ranks_, topology);
  bool equal = !per_node.empty();
  const int ppn = equal ? per_node.begin()->second : 0;
  for (const auto& [node, count] : per_node)
    equal = equal && count == ppn;
  if (equal) {
    const int nnodes = static_cast<int>(per_node.size());
    models::NodeSpec node = cluster_node;
    // NCCL searches graphs over the communicator's GPUs only, each with its own NIC on a rail-optimized node. With
    // one GPU per node the NVLink budget of derive_graphs does not apply; a two-GPU node with one NIC gives the same
    // NIC bound without its (g - 1) / g term, which is zero for one GPU.
    node.gpus = std::max(2, ppn);
    // The NICs NCCL finds for the communicator's GPUs of one node: one each, or fewer where GPUs share a NIC
    // (cluster nic.per_node below the GPUs per node).
    std::set<topo::VertexId> nics;
    const int first_node = per_node.begin()->first;
    for (int r : ranks_)
      if (topology.node_of(r) == first_node) nics.insert(topology.nic_vertex(r));
    node.nics = std::max(1, std::min(node.nics, static_cast<int>(nics.size())));
    // RCCL's channels depend on the communicator's ranks per node (and its rank count), which it is given outright.
    const auto graphs = node.gfx.empty() ? models::derive_graphs(node, nnodes, settings_.channels)
                                         : models::rccl_communicator_graphs(node, nnodes, ppn, settings_.channels);
    models::NcclTuningInput in;
    in.nranks = static_cast<int>(ranks_.size());
    in.nnodes = nnodes;
    in.gpus_per_node = ppn;
    in.compute_capability = node.compute_capability;
    in.cpu = node.cpu;
    in.nvls_supported = node.nvswitch_multicast && node.compute_capability >= 90 && ppn > 2;
    in.ring = graphs.ring;
    in.tree = graphs.tree;
    in.nvls = graphs.nvls;
    in.comm_channels = graphs.comm_channels;
    in.nvls_channels = in.nvls_supported ? graphs.nvls_channels : 0;
    in.nthreads = settings_.nthreads;
    in.ll128_nthreads = settings_.ll128_nthreads;
    in.overrides = settings_.overrides;
    in.library = graphs.library;
    in.rccl = graphs.rccl;
    tuning_ = in;
  }
  int comm = tuning_ ? tuning_->comm_channels : 0;
  if (comm < 1)
    comm = models::derive_graphs(cluster_node, std::max(1, topology.num_nodes()), settings_.channels).comm_channels;
  p2p_lanes_ = std::max(1, pow2_up(std::max(1, comm)) / 2);
}

std::optional<models::NcclTuningInput> nccl_input(const models::CollectiveCall& call, const topo::Topology& topology,
                                                  const NcclSettings& settings)
{
  auto in = NcclCommunicator(call.ranks, topology, settings).tuning();
  if (in) {
    in->collective = call.kind;
    in->bytes = call.bytes;
  }
  return in;
}

models::CollectiveCall resolve_call(const models::CollectiveCall& call, const topo::Topology& topology,
                                    const NcclSettings& settings, const InputLocation& where)
{
  return NcclCommunicator(call.ranks, topology, settings).resolve(call, where);
}

models::CollectiveCall NcclCommunicator::resolve(const models::CollectiveCall& call, const InputLocation& where) const
{
  const NcclSettings& settings = settings_;
  models::CollectiveCall out = call;
  if (call.ranks.empty())
    throw InputError(where, fmt::format("{} has no ranks", models::to_string(call.kind)), "list at least one GPU");
  auto field = [&](const char* f) {
    InputLocation w = where;
    if (w.field.empty()) w.field = f;
    return w;
  };

  // RCCL's default path (src/collectives.cc -> mscclEnqueueCheck) takes some calls before its cost model: MSCCL /
  // MSCCL++ on one 8x MI300X node. A call's own algorithm, protocol or channels ask for the cost model's path.
  if (tuning_ && !call.algorithm && !call.protocol && !call.channels) {
    models::NcclTuningInput in = *tuning_;
    in.collective = call.kind;
    in.bytes = call.bytes;
    if (const auto kernel = models::rccl_default_kernel(in, settings.rccl_calls, settings.channels.max)) {
      out.algorithm = kernel->algorithm;
      out.protocol = kernel->protocol;
      out.channels = kernel->channels;
      return out;
    }
  }

  if (is_p2p(call.kind)) {
    if (call.algorithm || call.protocol)
      throw InputError(field(call.algorithm ? "algorithm" : "protocol"),
                       fmt::format("NCCL cannot run {} with a chosen algorithm or protocol: NCCL runs it as grouped "
                                   "point-to-point sends and receives, LL up to 16 KiB per transfer and Simple above; "
                                   "NCCL_ALGO and NCCL_PROTO do not apply",
                                   models::to_string(call.kind)),
                       "remove algorithm and protocol from this entry");
    const double per_transfer =
        call.kind == models::CollectiveKind::AllToAll ? call.bytes.bytes() / call.ranks.size() : call.bytes.bytes();
    out.algorithm = models::Algorithm::Ring; // NCCL's p2p path has no algorithm; Ring stands in for it in outputs
    out.protocol = models::p2p_protocol(Bytes(per_transfer));
    if (!out.channels) out.channels = p2p_lanes_;
    return out;
  }

  auto in = tuning_;
  if (in) {
    in->collective = call.kind;
    in->bytes = call.bytes;
  }
  if (!in) {
    if (call.algorithm && call.protocol && call.channels) return out;
    throw InputError(where,
                     fmt::format("NCCL's cost model needs the same number of ranks on every node, and this {} has "
                                 "ranks on nodes with different counts",
                                 models::to_string(call.kind)),
                     "give algorithm, protocol and channels for this call, or use a communicator with equal ranks per "
                     "node");
  }
  models::validate(*in, where);
  if (call.algorithm) models::check_request(*in, *call.algorithm, call.protocol, where);
  // The call's own choices act like NCCL_ALGO / NCCL_PROTO for this call alone.
  const int row = function_row(call.kind);
  if (call.algorithm)
    for (int a = 0; a < models::kNcclAlgorithms; ++a)
      in->overrides.algorithms[row][a] = a == static_cast<int>(*call.algorithm);
  if (call.protocol)
    for (int p = 0; p < models::kNcclProtocols; ++p)
      in->overrides.protocols[row][p] =
          p == static_cast<int>(*call.protocol) ? models::NcclEnable::On : models::NcclEnable::Off;
  const auto choice = models::choose(*in);
  if (!choice) {
    std::string asked = overrides_text(settings);
    if (call.algorithm) asked += fmt::format(" algorithm {}", models::nccl_name(*call.algorithm));
    if (call.protocol) asked += fmt::format(" protocol {}", models::nccl_name(*call.protocol));
    // Why each allowed algorithm is out, in NCCL's own terms where it refuses it outright.
    std::string why;
    for (int a = 0; a < models::kNcclAlgorithms; ++a) {
      if (!in->overrides.algorithms[row][a]) continue;
      try {
        models::check_request(*in, static_cast<models::Algorithm>(a), call.protocol, where);
      } catch (const InputError& e) {
        why += fmt::format("; {}", e.rule());
      }
    }
    throw InputError(field(call.algorithm  ? "algorithm"
                           : call.protocol ? "protocol"
                                           : "op"),
                     fmt::format("NCCL has no algorithm and protocol for {} of {} B on {} ranks ({} per node) with{}: "
                                 "its cost model prices none of the allowed combinations on this system{}",
                                 models::to_string(call.kind), call.bytes.bytes(), in->nranks, in->gpus_per_node,
                                 asked.empty() ? " its defaults" : asked, why),
                     "allow more algorithms or protocols (nccl.algo / nccl.proto, --algo / --proto, or this entry's "
                     "algorithm and protocol)");
  }
  out.algorithm = choice->algorithm;
  out.protocol = choice->protocol;
  if (!out.channels) out.channels = choice->channels;
  return out;
}

MeshRings mesh_rings(const std::vector<int>& ranks, int gpus_per_node, const models::NodeSpec& node)
{
  MeshRings out;
  if (node.gfx.empty() || ranks.empty()) return out;
  std::map<int, std::vector<int>> locals; // node -> its GPUs' local indices, ascending
  for (int g : ranks)
    locals[g / gpus_per_node].push_back(g % gpus_per_node);
  for (auto& [n, l] : locals)
    std::sort(l.begin(), l.end());
  out.nnodes = static_cast<int>(locals.size());
  const std::vector<int>& first = locals.begin()->second;
  const int ppn = static_cast<int>(first.size());
  if (out.nnodes == 1 && ppn > 1 && ppn < node.gpus) {
    // Some GPUs of one node: the rings of RCCL's search over them (orders of their positions, in bus order).
    models::NodeSpec part = node;
    part.gpus = ppn;
    for (const auto& order : models::rccl_ring_orders(part, 1)) {
      std::vector<int> ring;
      for (int i : order)
        ring.push_back(first[static_cast<std::size_t>(i)]);
      out.orders.push_back(std::move(ring));
    }
  } else if (ppn > 1) {
    // Whole nodes (rome_model_79 / 81), or some GPUs of several nodes: the whole node's orders, which a subset
    // follows in the same order (RCCL's search there depends on PCIe and NUMA paths not modelled).
    out.orders = models::rccl_ring_orders(node, out.nnodes);
    out.reverse_odd_nodes = out.nnodes > 1;
  }
  return out;
}

namespace {

// The lowering input of a resolved call, from what it needs of the communicator: the GPU generation (its NCCL
// costs; RCCL's for an AMD node, with the orders of RCCL's rings over the node's direct links, `rings`) and the hop
// latencies NCCL's numbers are net of.
models::LoweringInput lowering_input_of(const models::CollectiveCall& resolved, int gpus_per_node,
                                        const models::NodeSpec& node, const MeshRings& rings, HopLatencies hops,
                                        const NcclSettings& settings, Seconds step_overhead)
{
  models::LoweringInput li;
  li.call = resolved;
  li.gpus_per_node = gpus_per_node;
  li.step_overhead = step_overhead;
  const auto algorithm = resolved.algorithm.value_or(models::Algorithm::Ring);
  const auto protocol = resolved.protocol.value_or(models::Protocol::Simple);
  const int nranks = static_cast<int>(resolved.ranks.size());
  models::LoweringCosts costs;
  if (!node.gfx.empty()) {
    costs = models::rccl_lowering_costs(algorithm, protocol, nranks, rings.nnodes);
    li.rccl_chunking = true;
    // Point-to-point calls take direct links; rings and trees follow RCCL's ring orders.
    if (algorithm == models::Algorithm::Ring || algorithm == models::Algorithm::Tree) {
      li.intra_rings = rings.orders;
      li.intra_rings_reverse_odd_nodes = rings.reverse_odd_nodes;
    }
  } else {
    // One GPU on each of several nodes: NCCL's model (src/graph/tuning.cc) prices the network steps of a ring
    // all_reduce, all_gather or reduce_scatter with Tree's hwLat[NET] (its interLat); a ring broadcast or reduce
    // takes Ring's there, and point-to-point calls are outside the model.
    std::set<int> nodes;
    for (int g : resolved.ranks)
      nodes.insert(g / gpus_per_node);
    const auto k = resolved.kind;
    const bool interlat_kind = k == models::CollectiveKind::AllReduce || k == models::CollectiveKind::AllGather ||
                               k == models::CollectiveKind::ReduceScatter;
    const bool one_per_node = interlat_kind && nodes.size() > 1 && static_cast<int>(nodes.size()) == nranks;
    costs = models::nccl_lowering_costs(algorithm, protocol, node.compute_capability, nranks, one_per_node);
    // A ring across nodes pays at least the host's network overhead for each intra-node step, as NCCL's model
    // charges it ("inter-node rings still have to launch nsteps * net overhead").
    if (algorithm == models::Algorithm::Ring && interlat_kind && nodes.size() > 1)
      costs.intra_hop = std::max(costs.intra_hop, models::ring_net_overhead(node.cpu, protocol));
  }
  li.costs.nvls_efficiency = costs.nvls_efficiency;
  li.costs.link_efficiency = costs.link_efficiency;
  if (!settings.latencies) return li;
  // A transport whose network step is not InfiniBand's (nccl.net_latency) replaces NCCL's hwLat[NET] where NCCL's
  // model charges it per network step; PAT keeps NCCL's own formula, NVLS has no network step.
  if (settings.net_latency && (algorithm == models::Algorithm::Ring || algorithm == models::Algorithm::Tree ||
                               algorithm == models::Algorithm::NvlsTree))
    costs.inter_hop = (*settings.net_latency)[static_cast<std::size_t>(protocol)];
  // NCCL's hwLat is the whole latency of a hop, wire included. The simulator charges the wire through the topology's
  // link latencies, so a step's overhead is what NCCL's number adds beyond the path (none when the path alone is
  // slower).
  li.costs.launch = costs.launch;
  li.costs.intra_hop = Seconds(std::max(0.0, (costs.intra_hop - hops.intra).seconds()));
  li.costs.inter_hop = Seconds(std::max(0.0, (costs.inter_hop - hops.inter).seconds()));
  return li;
}

} // namespace

// Without a communicator: no topology search is needed for the costs, only the generation and the hop latencies.
models::LoweringInput lowering_input(const models::CollectiveCall& resolved, const topo::Topology& topology,
                                     const NcclSettings& settings, Seconds step_overhead)
{
  const models::NodeSpec node = nccl_node(settings, topology.spec());
  return lowering_input_of(resolved, topology.gpus_per_node(), node,
                           mesh_rings(resolved.ranks, topology.gpus_per_node(), node), hop_latencies(topology),
                           settings, step_overhead);
}

models::LoweringInput NcclCommunicator::lowering_input(const models::CollectiveCall& resolved,
                                                       Seconds step_overhead) const
{
  return lowering_input_of(resolved, topology_->gpus_per_node(), node_, rings_, {intra_hop_, inter_hop_}, settings_,
                           step_overhead);
}

HopLatencies hop_latencies(const topo::Topology& topology)
{
  HopLatencies h;
  const int per_node = topology.gpus_per_node();
  const bool pxn = true;
  if (per_node > 1) h.intra = topology.path_latency(topology.route(0, 1, 0, 0, pxn));
  // Between the first two nodes that are up (a node down has no path out: cluster.failures.nodes).
  int a = 0;
  while (a < topology.num_nodes() && topology.spec().failures.node_down(a))
    ++a;
  int b = a + 1;
  while (b < topology.num_nodes() && topology.spec().failures.node_down(b))
    ++b;
  if (b < topology.num_nodes()) h.inter = topology.path_latency(topology.route(a * per_node, b * per_node, 0, 0, pxn));
  return h;
}

std::function<models::Schedule(const models::CollectiveCall&, const InputLocation&)>
nccl_lowering(const topo::Topology& topology, NcclSettings settings, Seconds step_overhead, std::size_t max_steps)
{
  // Built on a communicator's first call, looked up on the others; shared by the copies of the function.
  auto comms = std::make_shared<std::map<std::vector<int>, NcclCommunicator>>();
  return [&topology, settings = std::move(settings), step_overhead, max_steps,
          comms](const models::CollectiveCall& call, const InputLocation& where) {
    auto it = comms->find(call.ranks);
    if (it == comms->end()) it = comms->emplace(call.ranks, NcclCommunicator(call.ranks, topology, settings)).first;
    const models::CollectiveCall resolved = it->second.resolve(call, where);
    return lower_checked(it->second.lowering_input(resolved, step_overhead), where, max_steps);
  };
}

} // namespace railyard::sim
