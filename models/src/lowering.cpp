// Lowering core: patterns, schedules, NCCL's chunk sizes and fixed costs, the pipeline builder, and the dispatch to
// the per-algorithm files (lowering_ring.cpp, lowering_tree.cpp, lowering_nvls.cpp, lowering_pat.cpp,
// lowering_p2p.cpp, lowering_msccl.cpp).
#include "railyard/models/lowering.hpp"

#include "lowering_internal.hpp"
#include "railyard/models/nccl_tuning.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace railyard::models {

Pattern::Pattern(std::string name, const std::vector<std::vector<int>>& send_to,
                 const std::vector<std::vector<int>>& recv_from)
    : name_(std::move(name))
{
  for (const auto& peers : send_to) {
    send_peers_.insert(send_peers_.end(), peers.begin(), peers.end());
    send_offsets_.push_back(static_cast<std::uint32_t>(send_peers_.size()));
  }
  for (const auto& peers : recv_from) {
    recv_peers_.insert(recv_peers_.end(), peers.begin(), peers.end());
    recv_offsets_.push_back(static_cast<std::uint32_t>(recv_peers_.size()));
  }
}

Pattern::Pattern(std::string name, const std::vector<std::vector<int>>& send_to,
                 const std::vector<std::vector<double>>& send_weights, const std::vector<std::vector<int>>& recv_from)
    : Pattern(std::move(name), send_to, recv_from)
{
  if (send_weights.size() != send_to.size()) throw std::invalid_argument("Pattern: one weight list per rank is needed");
  bool all_one = true;
  for (std::size_t r = 0; r < send_to.size(); ++r) {
    if (send_weights[r].size() != send_to[r].size())
      throw std::invalid_argument("Pattern: one weight per send is needed");
    for (double w : send_weights[r])
      all_one = all_one && w == 1.0;
  }
  if (!all_one)
    for (const auto& w : send_weights)
      send_weights_.insert(send_weights_.end(), w.begin(), w.end());
}

Pattern Pattern::ring(std::string name, const std::vector<int>& order)
{
  const int n = static_cast<int>(order.size());
  std::vector<std::vector<int>> send_to(n), recv_from(n);
  for (int i = 0; i < n; ++i) {
    const int me = order[i];
    send_to[me] = {order[(i + 1) % n]};
    recv_from[me] = {order[(i + n - 1) % n]};
  }
  return Pattern(std::move(name), send_to, recv_from);
}

Pattern Pattern::from_sends(std::string name, int nranks, const std::vector<Send>& sends,
                            const std::vector<Send>& recvs)
{
  Pattern p;
  p.name_ = std::move(name);
  const auto n = static_cast<std::size_t>(nranks);
  // Counting sort by rank keeps each rank's peers in the order given, as the per-rank lists would.
  const auto fill = [n](const std::vector<Send>& items, bool by_src, std::vector<std::uint32_t>& offsets,
                        std::vector<std::int32_t>& peers, std::vector<double>* weights) {
    offsets.assign(n + 1, 0);
    for (const auto& s : items)
      ++offsets[static_cast<std::size_t>(by_src ? s.src : s.dst) + 1];
    for (std::size_t r = 0; r < n; ++r)
      offsets[r + 1] += offsets[r];
    std::vector<std::uint32_t> next(offsets.begin(), offsets.end() - 1);
    peers.assign(items.size(), 0);
    bool all_one = true;
    for (const auto& s : items)
      all_one = all_one && s.weight == 1.0;
    if (weights && !all_one) weights->assign(items.size(), 1.0);
    for (const auto& s : items) {
      const std::uint32_t at = next[static_cast<std::size_t>(by_src ? s.src : s.dst)]++;
      peers[at] = by_src ? s.dst : s.src;
      if (weights && !all_one) (*weights)[at] = s.weight;
    }
  };
  fill(sends, true, p.send_offsets_, p.send_peers_, &p.send_weights_);
  fill(recvs, false, p.recv_offsets_, p.recv_peers_, nullptr);
  return p;
}

void Pattern::mark_inter_node(const std::vector<int>& gpus, int gpus_per_node)
{
  const int n = nranks();
  recv_inter_.assign(static_cast<std::size_t>(std::max(n, 0)), 0);
  for (int r = 0; r < n; ++r)
    for (int peer : recvs(r))
      if (gpus[peer] / gpus_per_node != gpus[r] / gpus_per_node) recv_inter_[r] = 1;
}

std::size_t Schedule::num_steps() const
{
  std::size_t total = 0;
  for (const auto& ch : channels)
    total += ch.size();
  return total;
}

ScheduleTooLarge::ScheduleTooLarge(double steps, std::size_t limit)
    : std::length_error(
          fmt::format("the schedule would hold {:.0f} steps or more, above the limit of {}", steps, limit)),
      steps_(steps), limit_(limit)
{
}

std::size_t Pattern::memory_bytes() const
{
  return sizeof(Pattern) + name_.capacity() + (send_offsets_.capacity() + recv_offsets_.capacity()) * 4 +
         (send_peers_.capacity() + recv_peers_.capacity()) * 4 + send_weights_.capacity() * 8 + recv_inter_.capacity();
}

std::size_t Schedule::memory_bytes() const
{
  std::size_t total = sizeof(Schedule) + gpus.capacity() * sizeof(int) + depth.capacity();
  for (const auto& p : patterns)
    total += p.memory_bytes();
  for (const auto& ch : channels)
    total += sizeof(ch) + ch.capacity() * sizeof(Step);
  return total;
}

std::size_t Schedule::num_transfers() const
{
  std::size_t total = 0;
  for (const auto& ch : channels)
    for (const auto& s : ch)
      total += patterns[s.pattern].num_sends();
  return total;
}

Bytes Schedule::bytes_sent_by(int rank) const
{
  Bytes total{0};
  for (const auto& ch : channels)
    for (const auto& s : ch) {
      const Pattern& p = patterns[s.pattern];
      const auto n = p.sends(rank).size();
      for (std::size_t i = 0; i < n; ++i)
        total += s.bytes * p.send_weight(rank, i);
    }
  return total;
}

const ProtocolSpec& protocol_spec(Protocol p)
{
  // Buffer sizes are NCCL's defaults (src/init.cc, src/include/device.h, NCCL 2.19-2.27), cut into NCCL_STEPS = 8
  // steps. Simple: 4 MiB, 512 KiB per step; ring all-reduce moves ALLREDUCE_CHUNKSTEPS = 4 of them per chunk
  // (2 MiB). LL: NCCL_LL_LINES_PER_THREAD 8 x 512 threads x 8 steps x 16-byte lines = 512 KiB, 64 KiB per step
  // of which half is data (8 data bytes and 8 flag bytes per line). LL128: NCCL_LL128_ELEMS_PER_THREAD 120 x 640
  // threads x 8 steps x 8 B = 4,915,200 B, 614,400 B per step, of which 120 of every 128 bytes are data.
  static const ProtocolSpec kSpecs[] = {
      {Protocol::LL, 2.0, Bytes(64.0 * 1024), Bytes(32.0 * 1024),
       "NCCL src/include/device.h: an LL line is 8 data bytes and 8 flag bytes"},
      {Protocol::LL128, 128.0 / 120.0, Bytes(614400), Bytes(576000),
       "NCCL src/include/device.h: NCCL_LL128_DATAELEMS 15 of NCCL_LL128_LINEELEMS 16"},
      {Protocol::Simple, 1.0, Bytes(512.0 * 1024), Bytes(2.0 * 1024 * 1024),
       "NCCL src/include/collectives.h: ALLREDUCE_CHUNKSTEPS 4 of NCCL_STEPS 8 of a 4 MiB buffer"},
  };
  for (const auto& s : kSpecs)
    if (s.protocol == p) return s;
  throw std::invalid_argument("unknown protocol");
}

Protocol p2p_protocol(Bytes largest_transfer)
{
  // NCCL_P2P_LL_THRESHOLD (src/enqueue.cc, default 16384): p2p operations up to that size use LL.
  return largest_transfer.bytes() <= 16384 ? Protocol::LL : Protocol::Simple;
}

namespace {

int log2_floor(std::int64_t v)
{
  int r = -1;
  while (v > 0) {
    v >>= 1;
    ++r;
  }
  return r;
}

bool ring_simple_multi_step(CollectiveKind k)
{
  return k == CollectiveKind::AllReduce || k == CollectiveKind::AllGather || k == CollectiveKind::ReduceScatter;
}

} // namespace

Bytes nccl_chunk(CollectiveKind kind, Algorithm a, Protocol p, Bytes total, int channels, int nranks, int nnodes,
                 int nheads)
{
  // calcCollChunking (src/enqueue.cc, NCCL 2.26.2). Values in bytes; `total` is NCCL's nBytes.
  const double nbytes = total.bytes();
  const double step = protocol_spec(p).step_wire.bytes();
  const int chunk_steps = (p == Protocol::Simple && a == Algorithm::Ring && ring_simple_multi_step(kind)) ? 4 : 1;
  double chunk = step * chunk_steps;
  if (p == Protocol::LL) chunk /= 2;
  if (p == Protocol::LL128) chunk = std::floor(chunk / 16) * 15;
  const double ops = static_cast<double>(std::max(1, channels)) * std::max(1, nheads);
  constexpr double kNvlsChunk = 128.0 * 1024; // NCCL_NVLS_CHUNKSIZE default (src/transport/nvls.cc)
  if (a == Algorithm::Nvls) {
    chunk = std::min(chunk, kNvlsChunk);
    if (nbytes < 64 * ops * chunk && chunk > 65536) chunk = 65536;
    if (nbytes < 8 * ops * chunk && chunk > 32768) chunk = 32768;
    if (nbytes < 2 * ops * chunk && chunk > 16384) chunk = 16384;
  } else if (a == Algorithm::NvlsTree) {
    chunk = kNvlsChunk;
    if (nnodes >= 4) // NCCL_NVLSTREE_MAX_CHUNKSIZE unset
      chunk = std::min(chunk, 65536.0);
    if (nbytes < 32 * ops * chunk && chunk > 262144) chunk = 262144;
    if (nbytes < 16 * ops * chunk && chunk > 131072) chunk = 131072;
    if (nbytes < 4 * ops * chunk && chunk > 65536) chunk = 65536;
    if (nbytes < 1 * ops * chunk && chunk > 32768) chunk = 32768;
  } else if (a == Algorithm::Tree && p == Protocol::LL128) {
    const double ppn = static_cast<double>(nranks) / std::max(1, nnodes);
    const double nsteps = 1 + log2_floor(nnodes) + 0.1 * ppn;
    const double per = static_cast<double>(std::max(1, channels));
    while (std::floor(nbytes / (per * chunk)) < nsteps * 64 / ppn && chunk > 131072)
      chunk /= 2;
    while (std::floor(nbytes / (per * chunk)) < nsteps * 16 / ppn && chunk > 32768)
      chunk /= 2;
  } else if (a == Algorithm::Pat && kind == CollectiveKind::AllGather) {
    while (chunk * channels * 32 > nbytes && chunk > 65536)
      chunk /= 2;
  } else if (a == Algorithm::Pat && kind == CollectiveKind::ReduceScatter) {
    while (chunk * channels * 16 > nbytes && chunk > 65536)
      chunk /= 2;
  }
  return Bytes(chunk);
}

Bytes rccl_chunk(CollectiveKind kind, Algorithm a, Protocol p, Bytes total, int channels, int nranks, int nnodes,
                 int nheads)
{
  double chunk = nccl_chunk(kind, a, p, total, channels, nranks, nnodes, nheads).bytes();
  if (p != Protocol::Simple) return Bytes(chunk);
  // RCCL's loops divide integers: nBytes / (nChannels * chunkSize).
  const double nbytes = total.bytes();
  const double per = static_cast<double>(std::max(1, channels));
  const auto chunks = [&] { return std::floor(nbytes / (per * chunk)); };
  if (a == Algorithm::Tree && kind == CollectiveKind::AllReduce) {
    const int nodes = std::max(1, nnodes);
    const double depth = nranks / nodes - 1 + log2_floor(nodes); // src/graph/connect.cc: log2i(nNodes)
    while (chunks() < depth * 8 && chunk > 131072)
      chunk /= 2;
    while (chunks() < depth * 4 && chunk > 65536)
      chunk /= 2;
    while (chunks() < depth && chunk > 32768)
      chunk /= 2;
  } else if (a == Algorithm::Ring && (kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce)) {
    while (chunks() < 64 && chunk > 262144)
      chunk /= 2;
    while (chunks() < 32 && chunk > 131072)
      chunk /= 2;
    while (chunks() < 16 && chunk > 65536)
      chunk /= 2;
    while (chunks() < 8 && chunk > 32768)
      chunk /= 2;
  }
  return Bytes(chunk);
}

LoweringCosts nccl_lowering_costs(Algorithm a, Protocol p, int compute_capability, int nranks, bool one_rank_per_node)
{
  // NCCL 2.26.2 src/graph/tuning.cc: baseLat is paid once per call, hwLat per hop of the pipeline (NVLink inside a
  // node, NET between nodes). NVLS's hwLat is NCCL's whole NVLS latency (it adds it once, not per step), so it is
  // the launch cost here. PAT has its own formula there: 8 + log2(nNodes) * interLat / 3.5 + nRanks * 2.8 us, with
  // interLat Tree's network latency; its fixed terms are the launch, interLat / 3.5 each of the log2 steps.
  const auto& k = nccl_constants();
  const auto ai = static_cast<int>(a);
  const auto pi = static_cast<int>(p);
  constexpr int kNvlink = 0, kNet = 2;
  const double us = 1e-6;
  LoweringCosts c;
  switch (a) {
  case Algorithm::Ring:
  case Algorithm::Tree: {
    c.launch = Seconds(k.base_latency_us[ai][pi] * us);
    c.intra_hop = Seconds(k.hw_latency_us[kNvlink][ai][pi] * us);
    // tuning.cc: "With ppn=1 latencies are fully exposed, use the Tree network latency" (interLat of every
    // algorithm; Tree's own is the same either way).
    const int net = one_rank_per_node ? static_cast<int>(Algorithm::Tree) : ai;
    c.inter_hop = Seconds(k.hw_latency_us[kNet][net][pi] * us);
    break;
  }
  case Algorithm::Nvls:
    c.launch = Seconds(k.hw_latency_us[kNvlink][ai][pi] * us);
    break;
  case Algorithm::NvlsTree:
    c.launch = Seconds(k.hw_latency_us[kNvlink][ai][pi] * us);
    c.inter_hop = Seconds(k.hw_latency_us[kNet][ai][pi] * us);
    break;
  case Algorithm::Pat: {
    const double inter = k.hw_latency_us[kNet][static_cast<int>(Algorithm::Tree)][pi] / k.pat_inter_divisor;
    c.launch = Seconds((k.pat_base_us + nranks * k.pat_per_rank_us) * us);
    c.intra_hop = Seconds(inter * us);
    c.inter_hop = Seconds(inter * us);
    break;
  }
  case Algorithm::CollNetDirect:
  case Algorithm::CollNetChain:
    throw std::invalid_argument("CollNet is not modelled");
  case Algorithm::MscclAllPairs:
  case Algorithm::Mscclpp:
    throw std::invalid_argument("MSCCL and MSCCL++ are RCCL's kernels: their costs come from rccl_lowering_costs");
  }
  // nvlsEfficiency in NVIDIA/nccl src/graph/tuning.cc at commit 766bffee4ec494840e4f4fc6b07edfe2754e6a50 (NCCL 2.26.2
  // has no such factor in its model, but the hardware is the same): multimem loads and stores reach 85% of NVLink
  // bandwidth on Hopper, 74% on Blackwell.
  c.nvls_efficiency = compute_capability >= 100 ? 0.74 : compute_capability >= 90 ? 0.85 : 1.0;
  return c;
}

std::vector<int> ring_order(const std::vector<int>& gpus, int gpus_per_node, int channel,
                            const std::vector<std::vector<int>>* intra_rings, bool reverse_odd_nodes)
{
  std::vector<int> order;
  order.reserve(gpus.size());
  for (const auto& node : detail::nodes_in_ring_order(gpus, gpus_per_node, channel, intra_rings, reverse_odd_nodes))
    order.insert(order.end(), node.begin(), node.end());
  return order;
}

TreeLinks nccl_btree(int nranks, int rank)
{
  // ncclGetBtree, src/graph/trees.cc: rank 0 is the root with a single child; below it the tree alternates leaves
  // and inner nodes by the lowest set bit.
  TreeLinks t;
  int bit = 1;
  for (; bit < nranks; bit <<= 1)
    if (bit & rank) break;
  if (rank == 0) {
    if (nranks > 1) t.children.push_back(bit >> 1);
    return t;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= nranks) up = rank ^ bit;
  t.parent = up;
  int lowbit = bit >> 1;
  const int down0 = lowbit == 0 ? -1 : rank - lowbit;
  int down1 = lowbit == 0 ? -1 : rank + lowbit;
  while (down1 >= nranks) {
    down1 = lowbit == 0 ? -1 : rank + lowbit;
    lowbit >>= 1;
  }
  if (down0 >= 0) t.children.push_back(down0);
  if (down1 >= 0) t.children.push_back(down1);
  return t;
}

TreeLinks nccl_dtree(int nranks, int rank, int tree)
{
  if (tree == 0) return nccl_btree(nranks, rank);
  // ncclGetDtree: shift by one for odd nranks, mirror for even.
  TreeLinks t;
  if (nranks % 2 == 1) {
    const TreeLinks b = nccl_btree(nranks, (rank - 1 + nranks) % nranks);
    t.parent = b.parent == -1 ? -1 : (b.parent + 1) % nranks;
    for (int c : b.children)
      t.children.push_back((c + 1) % nranks);
  } else {
    const TreeLinks b = nccl_btree(nranks, nranks - 1 - rank);
    t.parent = b.parent == -1 ? -1 : nranks - 1 - b.parent;
    for (int c : b.children)
      t.children.push_back(nranks - 1 - c);
  }
  return t;
}

namespace detail {

Schedule make_schedule(const LoweringInput& in, Algorithm a, int channels)
{
  Schedule s;
  s.kind = in.call.kind;
  s.algorithm = a;
  s.protocol = in.call.protocol.value_or(Protocol::Simple);
  s.bytes = in.call.bytes;
  s.gpus = in.call.ranks;
  s.channels.resize(static_cast<std::size_t>(std::max(1, channels)));
  s.launch = in.costs.launch;
  return s;
}

Step make_step(std::uint32_t pattern, Bytes bytes, double wire_per_payload, const LoweringInput& in)
{
  Step st;
  st.pattern = pattern;
  st.bytes = bytes;
  st.wire_bytes = Bytes(std::ceil(bytes.bytes() * wire_per_payload));
  st.overhead = in.costs.intra_hop + in.step_overhead;
  st.overhead_inter = in.costs.inter_hop + in.step_overhead;
  return st;
}

void check_steps(const Schedule& s, double more, const LoweringInput& in)
{
  if (in.max_steps == 0) return;
  const double total = static_cast<double>(s.num_steps()) + more;
  if (total > static_cast<double>(in.max_steps)) throw ScheduleTooLarge(total, in.max_steps);
}

std::uint32_t add_pattern(Schedule& s, Pattern p, int gpus_per_node)
{
  p.mark_inter_node(s.gpus, gpus_per_node);
  s.patterns.push_back(std::move(p));
  return static_cast<std::uint32_t>(s.patterns.size() - 1);
}

std::int64_t chunks_for(double bytes, double chunk)
{
  if (bytes <= 0 || chunk <= 0) return 1;
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(bytes / chunk - 1e-9)));
}

void append_pipeline(Schedule& s, int channel, const std::string& name, const std::vector<PipeEdge>& edges,
                     std::int64_t chunks, Bytes chunk, double wire_per_payload, const LoweringInput& in)
{
  if (edges.empty() || chunks <= 0) return;
  std::set<std::int64_t> cuts{0};
  std::int64_t total = 0;
  for (const auto& e : edges) {
    if (e.recv_at < e.send_at) throw std::logic_error("append_pipeline: an edge is received before it is sent");
    cuts.insert({e.send_at, e.send_at + chunks, e.recv_at, e.recv_at + chunks});
    total = std::max(total, e.recv_at + chunks);
  }
  const int n = s.nranks();
  check_steps(s, static_cast<double>(total), in);
  auto& steps = s.channels[static_cast<std::size_t>(channel)];
  steps.reserve(steps.size() + static_cast<std::size_t>(total));
  std::vector<std::int64_t> points(cuts.begin(), cuts.end());
  std::vector<Pattern::Send> sends, recvs;
  for (std::size_t i = 0; i + 1 < points.size() && points[i] < total; ++i) {
    const std::int64_t t = points[i];
    const std::int64_t len = std::min(points[i + 1], total) - t;
    sends.clear();
    recvs.clear();
    for (const auto& e : edges) {
      if (e.send_at <= t && t < e.send_at + chunks) sends.push_back({e.src, e.dst, e.weight});
      if (e.recv_at <= t && t < e.recv_at + chunks) recvs.push_back({e.src, e.dst, 1.0});
    }
    const std::uint32_t idx = add_pattern(
        s, Pattern::from_sends(fmt::format("{}-ch{}-t{}", name, channel, t), n, sends, recvs), in.gpus_per_node);
    const Step st = make_step(idx, chunk, wire_per_payload, in);
    for (std::int64_t k = 0; k < len; ++k)
      steps.push_back(st);
  }
}

std::vector<std::vector<int>> nodes_in_ring_order(const std::vector<int>& gpus, int gpus_per_node, int channel,
                                                  const std::vector<std::vector<int>>* intra_rings,
                                                  bool reverse_odd_nodes)
{
  // Group communicator ranks by node, keeping node order and, inside a node, local GPU order (or the position of the
  // local GPU in the channel's ring where a fully connected node gives rings).
  const bool rings = intra_rings && !intra_rings->empty();
  const std::vector<int>* ring =
      rings ? &(*intra_rings)[static_cast<std::size_t>(channel) % intra_rings->size()] : nullptr;
  std::vector<int> position;
  if (ring) {
    position.assign(static_cast<std::size_t>(gpus_per_node), -1);
    for (std::size_t i = 0; i < ring->size(); ++i) {
      const int local = (*ring)[i];
      if (local < 0 || local >= gpus_per_node || position[local] >= 0)
        throw std::invalid_argument(fmt::format("intra-node ring {} is not an order of the node's {} GPUs",
                                                channel % static_cast<int>(intra_rings->size()), gpus_per_node));
      position[local] = static_cast<int>(i);
    }
  }
  std::map<int, std::vector<std::pair<int, int>>> by_node; // node -> (local gpu or its ring position, comm rank)
  for (int r = 0; r < static_cast<int>(gpus.size()); ++r) {
    const int local = gpus[r] % gpus_per_node;
    int key = local;
    if (ring) {
      if (position[local] < 0)
        throw std::invalid_argument(fmt::format("intra-node ring {} does not visit local GPU {}",
                                                channel % static_cast<int>(intra_rings->size()), local));
      key = position[local];
    }
    by_node[gpus[r] / gpus_per_node].emplace_back(key, r);
  }
  std::vector<std::vector<int>> out;
  out.reserve(by_node.size());
  for (auto& [node, members] : by_node) {
    std::sort(members.begin(), members.end());
    const int k = static_cast<int>(members.size());
    const int entry = (ring ? channel / static_cast<int>(intra_rings->size()) : channel) % k;
    std::vector<int> order;
    order.reserve(members.size());
    for (int i = 0; i < k; ++i)
      order.push_back(members[(entry + i) % k].second);
    if (ring && reverse_odd_nodes && out.size() % 2 == 1) std::reverse(order.begin(), order.end());
    out.push_back(std::move(order));
  }
  return out;
}

} // namespace detail

int connection_depth(CollectiveKind kind, Algorithm a, Protocol p)
{
  // MSCCL's and MSCCL++'s sends are one FIFO step each (their calls run one loop: lowering_msccl.cpp).
  if (a == Algorithm::MscclAllPairs || a == Algorithm::Mscclpp) return kNcclSteps;
  switch (kind) {
  case CollectiveKind::AllToAll:
  case CollectiveKind::SendRecv:
    return 1;
  case CollectiveKind::AllReduce:
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
    if (a == Algorithm::Ring && p == Protocol::Simple) return kNcclSteps / 4; // ALLREDUCE_CHUNKSTEPS = NCCL_STEPS / 2
    return kNcclSteps;
  case CollectiveKind::Broadcast:
  case CollectiveKind::Reduce:
    return kNcclSteps; // BROADCAST_CHUNKSTEPS = REDUCE_CHUNKSTEPS = 1
  }
  return 1;
}

namespace {

/// Lowers a collective (not a p2p group) and gives each channel its connection depth.
Schedule with_depth(Schedule s)
{
  s.depth.assign(s.channels.size(), static_cast<std::uint8_t>(connection_depth(s.kind, s.algorithm, s.protocol)));
  return s;
}

} // namespace

Schedule lower(const LoweringInput& in)
{
  const auto& call = in.call;
  if (!call.algorithm || !call.protocol)
    throw std::invalid_argument("lower(): algorithm and protocol must be chosen before lowering");
  if (call.ranks.empty()) throw std::invalid_argument("lower(): a collective needs at least one rank");
  if (call.bytes.bytes() < 0) throw std::invalid_argument("lower(): negative size");
  if (in.gpus_per_node < 1) throw std::invalid_argument("lower(): gpus_per_node must be positive");
  const Algorithm a = *call.algorithm;
  auto unsupported = [&] {
    return std::invalid_argument(
        fmt::format("{} with algorithm {} is not lowered: {} does not implement it", to_string(call.kind), to_string(a),
                    a == Algorithm::MscclAllPairs || a == Algorithm::Mscclpp ? "RCCL" : "NCCL"));
  };
  if (a == Algorithm::CollNetDirect || a == Algorithm::CollNetChain)
    throw std::invalid_argument("CollNet is not modelled (it needs a CollNet/SHARP network plugin)");

  if (a == Algorithm::MscclAllPairs) {
    if (call.kind != CollectiveKind::AllReduce && call.kind != CollectiveKind::AllToAll) throw unsupported();
    return with_depth(detail::lower_msccl(in));
  }
  if (a == Algorithm::Mscclpp) {
    if (call.kind != CollectiveKind::AllReduce && call.kind != CollectiveKind::AllGather) throw unsupported();
    return with_depth(detail::lower_mscclpp(in));
  }

  switch (call.kind) {
  case CollectiveKind::AllToAll:
  case CollectiveKind::SendRecv: {
    // NCCL runs both as grouped sends and receives (nccl-tests alltoall_perf, sendrecv_perf); the algorithm does
    // not apply. Sizes follow nccl-tests: alltoall moves size / nranks to every rank (itself included, locally);
    // sendrecv sends size to the next rank and receives from the previous one.
    const int n = static_cast<int>(call.ranks.size());
    std::vector<P2pTransfer> transfers;
    if (call.kind == CollectiveKind::AllToAll) {
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j)
          if (i != j) transfers.push_back({call.ranks[i], call.ranks[j], call.bytes / n});
    } else if (n > 1) {
      for (int i = 0; i < n; ++i)
        transfers.push_back({call.ranks[i], call.ranks[(i + 1) % n], call.bytes});
    }
    Schedule s = lower_p2p(transfers, call.channels.value_or(1), in.gpus_per_node, in.costs, in.step_overhead);
    // Keep the communicator's rank order (and its single ranks, which a p2p group without transfers omits).
    if (s.gpus != call.ranks) {
      Schedule shell = detail::make_schedule(in, a, 1);
      shell.channels.clear();
      shell.bytes = Bytes(0);
      const Protocol proto = s.protocol;
      s = merge_group({shell, s}, in.gpus_per_node);
      s.protocol = proto;
    }
    s.kind = call.kind;
    s.bytes = call.bytes;
    return s;
  }
  case CollectiveKind::AllReduce:
    switch (a) {
    case Algorithm::Ring:
      return with_depth(detail::lower_ring(in));
    case Algorithm::Tree:
      return with_depth(detail::lower_tree(in));
    case Algorithm::Nvls:
      return with_depth(detail::lower_nvls(in));
    case Algorithm::NvlsTree:
      return with_depth(detail::lower_nvls_tree(in));
    default:
      throw unsupported();
    }
  case CollectiveKind::AllGather:
  case CollectiveKind::ReduceScatter:
    switch (a) {
    case Algorithm::Ring:
      return with_depth(detail::lower_ring(in));
    case Algorithm::Nvls:
      return with_depth(detail::lower_nvls(in));
    case Algorithm::Pat:
      return with_depth(detail::lower_pat(in));
    default:
      throw unsupported();
    }
  case CollectiveKind::Broadcast:
  case CollectiveKind::Reduce:
    if (a != Algorithm::Ring) throw unsupported();
    return with_depth(detail::lower_ring_chain(in));
  }
  throw unsupported();
}

Schedule merge_group(const std::vector<Schedule>& members, int gpus_per_node)
{
  if (members.empty()) throw std::invalid_argument("merge_group: an empty group");
  Schedule out;
  out.kind = members.front().kind;
  out.algorithm = members.front().algorithm;
  out.protocol = members.front().protocol;
  std::map<int, int> index; // gpu -> rank in the merged communicator
  for (const auto& m : members)
    for (int g : m.gpus)
      if (index.emplace(g, static_cast<int>(out.gpus.size())).second) out.gpus.push_back(g);
  const int n = static_cast<int>(out.gpus.size());
  for (const auto& m : members) {
    out.bytes += m.bytes;
    out.launch = std::max(out.launch, m.launch);
    const auto base = static_cast<std::uint32_t>(out.patterns.size());
    for (const auto& p : m.patterns) {
      std::vector<std::vector<int>> send_to(n), recv_from(n);
      std::vector<std::vector<double>> weights(n);
      for (int r = 0; r < m.nranks(); ++r) {
        const int mr = index.at(m.gpus[r]);
        const auto sends = p.sends(r);
        for (std::size_t i = 0; i < sends.size(); ++i) {
          send_to[mr].push_back(index.at(m.gpus[sends[i]]));
          weights[mr].push_back(p.send_weight(r, i));
        }
        for (int peer : p.recvs(r))
          recv_from[mr].push_back(index.at(m.gpus[peer]));
      }
      Pattern q(p.name(), send_to, weights, recv_from);
      q.mark_inter_node(out.gpus, gpus_per_node);
      out.patterns.push_back(std::move(q));
    }
    for (std::size_t c = 0; c < m.channels.size(); ++c)
      out.depth.push_back(static_cast<std::uint8_t>(m.depth_of(c)));
    for (const auto& ch : m.channels) {
      std::vector<Step> steps = ch;
      for (auto& st : steps)
        st.pattern += base;
      out.channels.push_back(std::move(steps));
    }
  }
  if (out.channels.empty()) out.channels.emplace_back();
  return out;
}

} // namespace railyard::models
