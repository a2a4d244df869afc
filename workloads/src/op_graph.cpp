#include "railyard/workloads/op_graph.hpp"

#include "names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

namespace railyard::workloads {

static_assert(sizeof(Op) <= 40, "Op must stay small: the generator builds graphs of millions of ops per rank set");

std::string_view to_string(GroupKind k)
{
  switch (k) {
  case GroupKind::TP:
    return "TP";
  case GroupKind::PP:
    return "PP";
  case GroupKind::DP:
    return "DP";
  case GroupKind::EP:
    return "EP";
  case GroupKind::CP:
    return "CP";
  case GroupKind::Other:
    break;
  }
  return "other";
}

GroupKind group_kind_from_string(std::string_view s)
{
  std::string l = detail::lower(s);
  if (l == "tp") return GroupKind::TP;
  if (l == "pp") return GroupKind::PP;
  if (l == "dp") return GroupKind::DP;
  if (l == "ep") return GroupKind::EP;
  if (l == "cp") return GroupKind::CP;
  return GroupKind::Other;
}

std::string_view to_string(OpKind k)
{
  switch (k) {
  case OpKind::Compute:
    return "compute";
  case OpKind::Collective:
    return "collective";
  case OpKind::Send:
    return "send";
  case OpKind::Recv:
    return "recv";
  case OpKind::Memcpy:
    return "memcpy";
  }
  return "unknown";
}

Op Op::make_compute(double flops, Bytes bytes_accessed, StreamId stream)
{
  Op op;
  op.kind = OpKind::Compute;
  op.flops = flops;
  op.bytes = bytes_accessed;
  op.stream = stream;
  return op;
}

Op Op::make_collective(CollectiveKind k, Bytes bytes, int comm, int root, StreamId stream)
{
  Op op;
  op.kind = OpKind::Collective;
  op.set_collective(k);
  op.bytes = bytes;
  op.comm = comm;
  op.peer = root;
  op.stream = stream;
  return op;
}

Op Op::make_send(int comm, int peer, Bytes bytes, int tag, StreamId stream)
{
  Op op;
  op.kind = OpKind::Send;
  op.comm = comm;
  op.peer = peer;
  op.bytes = bytes;
  op.tag = tag;
  op.stream = stream;
  return op;
}

Op Op::make_recv(int comm, int peer, Bytes bytes, int tag, StreamId stream)
{
  Op op = make_send(comm, peer, bytes, tag, stream);
  op.kind = OpKind::Recv;
  return op;
}

Op Op::make_memcpy(Bytes bytes, StreamId stream)
{
  Op op;
  op.kind = OpKind::Memcpy;
  op.bytes = bytes;
  op.stream = stream;
  return op;
}

// ---- RankGraph ----

std::optional<Seconds> RankGraph::measured_duration(OpId id) const
{
  if (measured_duration_s_.empty() || std::isnan(measured_duration_s_[id])) return std::nullopt;
  return Seconds(measured_duration_s_[id]);
}

std::optional<Seconds> RankGraph::measured_start(OpId id) const
{
  if (measured_start_s_.empty() || std::isnan(measured_start_s_[id])) return std::nullopt;
  return Seconds(measured_start_s_[id]);
}

std::optional<Seconds> RankGraph::issue_time(OpId id) const
{
  if (issue_s_.empty() || std::isnan(issue_s_[id])) return std::nullopt;
  return Seconds(issue_s_[id]);
}

std::string RankGraph::describe(OpId id) const
{
  switch (source_kind_) {
  case SourceKind::NodeId:
    return fmt::format("node {}", source_id(id));
  case SourceKind::Line:
    return fmt::format("line {}", source_id(id));
  case SourceKind::EventIndex:
    return fmt::format("event {}", source_id(id));
  case SourceKind::Generated:
    break;
  }
  return fmt::format("op {}", id);
}

// ---- RankGraphBuilder ----

RankGraphBuilder::RankGraphBuilder(std::string source_file, SourceKind source_kind)
{
  graph_.source_file_ = std::move(source_file);
  graph_.source_kind_ = source_kind;
}

OpId RankGraphBuilder::add(Op op, std::string_view name)
{
  auto [it, inserted] = name_index_.try_emplace(std::string(name), static_cast<std::uint32_t>(graph_.names_.size()));
  if (inserted) graph_.names_.emplace_back(name);
  op.name = it->second;
  graph_.ops_.push_back(op);
  auto id = static_cast<OpId>(graph_.ops_.size() - 1);
  if (!graph_.source_ids_.empty()) graph_.source_ids_.push_back(id);
  if (!graph_.measured_duration_s_.empty())
    graph_.measured_duration_s_.push_back(std::numeric_limits<double>::quiet_NaN());
  if (!graph_.measured_start_s_.empty()) graph_.measured_start_s_.push_back(std::numeric_limits<double>::quiet_NaN());
  if (!graph_.issue_s_.empty()) graph_.issue_s_.push_back(std::numeric_limits<double>::quiet_NaN());
  if (!graph_.gemm_.empty()) graph_.gemm_.emplace_back();
  if (!graph_.host_marks_.empty()) graph_.host_marks_.push_back(0);
  if (!graph_.launch_call_.empty()) graph_.launch_call_.push_back(kNone);
  return id;
}

void RankGraphBuilder::set_source_id(OpId op, std::uint64_t id)
{
  auto& ids = graph_.source_ids_;
  if (ids.empty()) {
    ids.resize(graph_.ops_.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
      ids[i] = i;
  }
  ids[op] = id;
}

void RankGraphBuilder::set_measured(OpId op, std::optional<Seconds> start, std::optional<Seconds> duration)
{
  auto put = [&](std::vector<double>& v, std::optional<Seconds> t) {
    if (!t) return;
    if (v.empty()) v.assign(graph_.ops_.size(), std::numeric_limits<double>::quiet_NaN());
    v[op] = t->seconds();
  };
  put(graph_.measured_start_s_, start);
  put(graph_.measured_duration_s_, duration);
}

void RankGraphBuilder::set_issue_time(OpId op, Seconds at)
{
  auto& v = graph_.issue_s_;
  if (v.empty()) v.assign(graph_.ops_.size(), std::numeric_limits<double>::quiet_NaN());
  v[op] = at.seconds();
}

void RankGraphBuilder::set_host_calls(std::vector<HostCall> calls, std::vector<std::string> threads)
{
  graph_.host_calls_ = std::move(calls);
  graph_.host_threads_ = std::move(threads);
}

void RankGraphBuilder::set_launch_call(OpId op, std::uint32_t call)
{
  auto& v = graph_.launch_call_;
  if (v.empty()) v.assign(graph_.ops_.size(), kNone);
  v[op] = call;
}

void RankGraphBuilder::add_host_marks(OpId op, std::uint8_t marks)
{
  auto& v = graph_.host_marks_;
  if (v.empty()) v.assign(graph_.ops_.size(), 0);
  v[op] |= marks;
}

void RankGraphBuilder::set_gemm(OpId op, GemmShape shape)
{
  auto& v = graph_.gemm_;
  if (v.empty()) v.assign(graph_.ops_.size(), GemmShape{});
  v[op] = shape;
}

RankGraph RankGraphBuilder::finish()
{
  // Counting sort of the edges by op gives the CSR arrays in O(ops + edges) without per-op vectors.
  const std::size_t n = graph_.ops_.size();
  std::vector<std::uint32_t> offsets(n + 1, 0);
  for (auto [op, dep] : edges_)
    if (op < n) ++offsets[op + 1];
  for (std::size_t i = 0; i < n; ++i)
    offsets[i + 1] += offsets[i];
  std::vector<OpId> ids(offsets[n]);
  std::vector<std::uint32_t> fill(offsets.begin(), offsets.end() - 1);
  for (auto [op, dep] : edges_)
    if (op < n) ids[fill[op]++] = dep;
  edges_.clear();
  edges_.shrink_to_fit();
  // Drop duplicate dependencies (Chakra lists a node in both data_deps and ctrl_deps at times).
  std::vector<std::uint32_t> out_offsets(n + 1, 0);
  std::size_t w = 0;
  for (std::size_t i = 0; i < n; ++i) {
    auto b = ids.begin() + offsets[i];
    auto e = ids.begin() + offsets[i + 1];
    std::sort(b, e);
    auto last = std::unique(b, e);
    for (auto it = b; it != last; ++it)
      ids[w++] = *it;
    out_offsets[i + 1] = static_cast<std::uint32_t>(w);
  }
  ids.resize(w);
  ids.shrink_to_fit();
  graph_.dep_offsets_ = std::move(out_offsets);
  graph_.dep_ids_ = std::move(ids);
  name_index_.clear();
  RankGraph out = std::move(graph_);
  graph_ = RankGraph{};
  return out;
}

// ---- Workload ----

int Workload::communicator_of(int rank, const Op& op) const
{
  if (op.comm < 0) return -1;
  const auto& map = ranks[rank].comm_map;
  int id = op.comm;
  if (!map.empty()) {
    if (static_cast<std::size_t>(op.comm) >= map.size()) return -1;
    id = map[op.comm];
  }
  if (id < 0 || static_cast<std::size_t>(id) >= communicators.size()) return -1;
  return id;
}

int Workload::peer_global_rank(int rank, const Op& op) const
{
  int c = communicator_of(rank, op);
  if (c < 0 || op.peer < 0 || static_cast<std::size_t>(op.peer) >= communicators[c].ranks.size()) return -1;
  return communicators[c].ranks[op.peer];
}

int Workload::add_communicator(std::string name, GroupKind kind, std::vector<int> members)
{
  int id = static_cast<int>(communicators.size());
  communicators.push_back(Communicator{id, std::move(name), kind, std::move(members), {}});
  return id;
}

void Workload::add_rank(RankGraph graph)
{
  graphs.push_back(std::make_shared<const RankGraph>(std::move(graph)));
  ranks.push_back(Rank{static_cast<std::uint32_t>(graphs.size() - 1), {}});
}

OpCounts count_ops(const RankGraph& g)
{
  OpCounts c;
  for (const Op& op : g.ops()) {
    switch (op.kind) {
    case OpKind::Compute:
      ++c.compute;
      break;
    case OpKind::Collective:
      ++c.collective;
      break;
    case OpKind::Send:
      ++c.send;
      break;
    case OpKind::Recv:
      ++c.recv;
      break;
    case OpKind::Memcpy:
      ++c.memcpy;
      break;
    }
  }
  for (OpId i = 0; i < g.size(); ++i)
    c.deps += g.deps(i).size();
  return c;
}

// ---- validation ----

namespace {

class Problems {
public:
  explicit Problems(std::size_t max) : max_(max) {}
  [[nodiscard]] bool full() const { return out_.size() >= max_; }
  [[nodiscard]] std::size_t size() const { return out_.size(); }
  void add(const RankGraph& g, int rank, OpId op, std::string rule, std::string fix)
  {
    if (full()) return;
    InputLocation at;
    at.file = g.source_file();
    if (g.source_kind() == SourceKind::Line) at.line = static_cast<int>(g.source_id(op));
    at.field = fmt::format("rank {} {}", rank, g.describe(op));
    out_.emplace_back(std::move(at), std::move(rule), std::move(fix));
  }
  void add_global(std::string file, std::string field, std::string rule, std::string fix)
  {
    if (!full())
      out_.emplace_back(InputLocation{std::move(file), 0, std::move(field)}, std::move(rule), std::move(fix));
  }
  std::vector<InputError> take() { return std::move(out_); }

private:
  std::size_t max_;
  std::vector<InputError> out_;
};

// Structure of one program: dependency ids, sizes, and cycles through dependencies and stream order.
void check_graph(const RankGraph& g, int rank, Problems& p)
{
  const auto n = static_cast<OpId>(g.size());
  for (const auto& [what, t] : {std::pair{"measured span", g.measured_span()}, {"clock offset", g.clock_offset()}})
    if (t && !(t->seconds() >= 0 && t->seconds() <= limits::kMaxSeconds))
      p.add_global(g.source_file(), fmt::format("rank {}", rank),
                   fmt::format("the trace's {} is {} s; it must be >= 0 and at most 1e6 s", what, t->seconds()),
                   "give the trace as it was recorded");
  for (OpId i = 0; i < n && !p.full(); ++i) {
    const Op& op = g.op(i);
    for (OpId d : g.deps(i))
      if (d >= n)
        p.add(g, rank, i, fmt::format("depends on op id {} which does not exist (the program has {} ops)", d, n),
              "remove the dangling dependency or add the op it names");
    // The ranges of units.hpp (limits), whichever reader built the op: no size or time outside them reaches a model.
    if (!(op.bytes.bytes() >= 0 && op.bytes.bytes() <= limits::kMaxBytes))
      p.add(g, rank, i,
            fmt::format("size is {} bytes; sizes must be finite, >= 0 and at most 2^53 B (8 PiB)", op.bytes.bytes()),
            "give a non-negative size in bytes");
    if (op.flops < 0 || !std::isfinite(op.flops))
      p.add(g, rank, i, fmt::format("flops is {}; it must be finite and >= 0", op.flops), "give non-negative FLOPs");
    if (auto d = g.measured_duration(i); d && !(d->seconds() >= 0 && d->seconds() <= limits::kMaxSeconds))
      p.add(g, rank, i, fmt::format("measured duration is {} s; it must be >= 0 and at most 1e6 s", d->seconds()),
            "give a non-negative duration");
    if (auto t = g.measured_start(i); t && !(std::abs(t->seconds()) <= limits::kMaxSeconds))
      p.add(g, rank, i,
            fmt::format("measured start is {} s from the trace's origin; it must be within 1e6 s", t->seconds()),
            "give the trace as it was recorded");
    if (auto t = g.issue_time(i); t && !(std::abs(t->seconds()) <= limits::kMaxSeconds))
      p.add(g, rank, i,
            fmt::format("issue time is {} s from the trace's origin; it must be within 1e6 s", t->seconds()),
            "give the trace as it was recorded");
    if (auto gm = g.gemm(i)) {
      // A kernel model times a GEMM by its shape: the shape must be the op's work.
      if (op.kind != OpKind::Compute)
        p.add(g, rank, i, fmt::format("has a GEMM shape but is a {} op", to_string(op.kind)),
              "give GEMM shapes to compute ops only");
      else if (std::abs(gm->flops() - op.flops) > 1e-9 * std::max(gm->flops(), op.flops))
        p.add(g, rank, i,
              fmt::format("GEMM shape {} x {} x {} (batch {}) is 2 m n k batch = {} FLOPs but the op has {}", gm->m,
                          gm->n, gm->k, gm->batch, gm->flops(), op.flops),
              "give the op the FLOPs of its shape");
    }
    if (const std::uint32_t c = g.launch_call(i); c != kNone && c >= g.host_calls().size())
      p.add(g, rank, i, fmt::format("names host call {} of {}", c, g.host_calls().size()),
            "name a host call of the rank");
  }
  // Host calls (a reader's own output): in thread order, each thread's calls in start order, times within range.
  const auto calls = g.host_calls();
  for (std::size_t c = 0; c < calls.size() && !p.full(); ++c) {
    const HostCall& h = calls[c];
    const bool ordered = c == 0 || calls[c - 1].thread < h.thread ||
                         (calls[c - 1].thread == h.thread && calls[c - 1].start_s <= h.start_s);
    const bool finite = std::abs(h.start_s) <= limits::kMaxSeconds && h.duration_s >= 0 &&
                        h.duration_s <= limits::kMaxSeconds && std::abs(h.gap_s) <= limits::kMaxSeconds &&
                        h.tail_s >= 0 && h.tail_s <= limits::kMaxSeconds;
    if (!ordered || !finite || h.thread >= g.host_threads().size() || (h.waits != kNone && h.waits >= n))
      p.add_global(g.source_file(), fmt::format("rank {} host call {}", rank, c),
                   "a host call is out of order, out of range or names an op or thread the rank does not have",
                   "give the trace as it was recorded");
  }
  if (p.full()) return;

  // Predecessors of op i: its dependencies plus the previous op on its stream.
  std::vector<OpId> stream_prev(n, std::numeric_limits<OpId>::max());
  {
    std::unordered_map<StreamId, OpId> last;
    for (OpId i = 0; i < n; ++i) {
      StreamId s = g.op(i).stream;
      if (s == kUnordered) continue;
      if (auto it = last.find(s); it != last.end()) stream_prev[i] = it->second;
      last[s] = i;
    }
  }
  // Kahn's algorithm over successor lists in CSR form.
  std::vector<std::uint32_t> indeg(n, 0), succ_off(n + 1, 0);
  auto for_each_pred = [&](OpId i, auto&& fn) {
    for (OpId d : g.deps(i))
      if (d < n) fn(d);
    if (stream_prev[i] != std::numeric_limits<OpId>::max()) fn(stream_prev[i]);
  };
  for (OpId i = 0; i < n; ++i)
    for_each_pred(i, [&](OpId d) {
      ++indeg[i];
      ++succ_off[d + 1];
    });
  for (OpId i = 0; i < n; ++i)
    succ_off[i + 1] += succ_off[i];
  std::vector<OpId> succ(succ_off[n]);
  {
    std::vector<std::uint32_t> fill(succ_off.begin(), succ_off.end() - 1);
    for (OpId i = 0; i < n; ++i)
      for_each_pred(i, [&](OpId d) { succ[fill[d]++] = i; });
  }
  std::vector<OpId> ready;
  for (OpId i = 0; i < n; ++i)
    if (indeg[i] == 0) ready.push_back(i);
  std::size_t done = 0;
  while (!ready.empty()) {
    OpId v = ready.back();
    ready.pop_back();
    ++done;
    for (std::uint32_t k = succ_off[v]; k < succ_off[v + 1]; ++k)
      if (--indeg[succ[k]] == 0) ready.push_back(succ[k]);
  }
  if (done == n) return;
  // Every op left over has a left-over predecessor; walking predecessors must come back to an op seen before.
  OpId start = 0;
  while (indeg[start] == 0)
    ++start;
  std::vector<std::uint32_t> seen_at(n, std::numeric_limits<std::uint32_t>::max());
  std::vector<OpId> path;
  OpId v = start;
  while (seen_at[v] == std::numeric_limits<std::uint32_t>::max()) {
    seen_at[v] = static_cast<std::uint32_t>(path.size());
    path.push_back(v);
    OpId next = v;
    for_each_pred(v, [&](OpId d) {
      if (next == v && indeg[d] > 0) next = d;
    });
    v = next;
  }
  std::vector<OpId> cycle(path.begin() + seen_at[v], path.end());
  std::reverse(cycle.begin(), cycle.end()); // predecessor walk reversed: now in execution order
  std::string chain;
  for (OpId c : cycle)
    chain += g.describe(c) + " -> ";
  chain += g.describe(cycle.front());
  p.add(g, rank, cycle.front(), fmt::format("dependency cycle (data, control and stream order): {}", chain),
        "break the cycle; an op cannot wait for itself");
}

struct CollectiveSig {
  CollectiveKind kind;
  double bytes;
  int root;
  int rank;
  OpId op;
};

std::string describe_sig(const CollectiveSig& s)
{
  std::string out = fmt::format("{} of {} bytes", models::to_string(s.kind), s.bytes);
  if (s.root >= 0) out += fmt::format(" root {}", s.root);
  return out;
}

} // namespace

std::vector<InputError> find_problems(const Workload& w, std::size_t max_problems)
{
  Problems p(max_problems);
  const int world = w.world_size();
  const auto ncomm = w.communicators.size();
  std::string first_file = w.ranks.empty() || w.graphs.empty() ? w.source : w.graphs.front()->source_file();

  // Membership by rank (CSR): the communicators each rank belongs to and its group rank there. Memory grows with
  // the total number of members, not communicators x world size (thousands of groups at 8,192 ranks).
  std::vector<std::uint32_t> member_off(static_cast<std::size_t>(world) + 1, 0);
  for (std::size_t c = 0; c < ncomm; ++c) {
    const Communicator& comm = w.communicators[c];
    std::string field = fmt::format("communicator {} '{}'", c, comm.name);
    if (comm.id != static_cast<int>(c))
      p.add_global(first_file, field, fmt::format("has id {} but sits at index {}", comm.id, c),
                   "communicator ids must equal their index");
    if (comm.ranks.empty())
      p.add_global(first_file, field, "has no member ranks", "list the global ranks of the group");
    std::vector<int> sorted = comm.ranks;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      int r = sorted[i];
      if (r < 0 || r >= world) {
        p.add_global(first_file, field,
                     fmt::format("member {} is not a rank of the workload (world size {})", r, world),
                     "list ranks in [0, world size)");
        continue;
      }
      if (i > 0 && sorted[i - 1] == r) {
        p.add_global(first_file, field, fmt::format("lists rank {} twice", r), "list each member once");
        continue;
      }
      ++member_off[r + 1];
    }
  }
  // Bad member lists make the membership tables below meaningless: report them alone.
  if (p.size() > 0) return p.take();
  for (int r = 0; r < world; ++r)
    member_off[r + 1] += member_off[r];
  std::vector<std::pair<int, int>> members(member_off[world]); // (communicator, group rank), per rank
  {
    std::vector<std::uint32_t> fill(member_off.begin(), member_off.end() - 1);
    for (std::size_t c = 0; c < ncomm; ++c)
      for (std::size_t i = 0; i < w.communicators[c].ranks.size(); ++i)
        members[fill[w.communicators[c].ranks[i]]++] = {static_cast<int>(c), static_cast<int>(i)};
  }
  // Position of communicator c in rank r's membership list, or -1.
  auto slot_of = [&](int c, int r) -> int {
    for (std::uint32_t k = member_off[r]; k < member_off[r + 1]; ++k)
      if (members[k].first == c) return static_cast<int>(k - member_off[r]);
    return -1;
  };
  auto group_rank_of = [&](int c, int r) -> int {
    int k = slot_of(c, r);
    return k < 0 ? -1 : members[member_off[r] + k].second;
  };
  if (p.full()) return p.take();

  std::vector<bool> graph_checked(w.graphs.size(), false);
  for (int r = 0; r < world && !p.full(); ++r) {
    const auto& rk = w.ranks[r];
    if (rk.graph >= w.graphs.size() || !w.graphs[rk.graph]) {
      p.add_global(w.source, fmt::format("rank {}", r), "has no program", "give every rank a graph");
      continue;
    }
    if (!graph_checked[rk.graph]) {
      graph_checked[rk.graph] = true;
      check_graph(*w.graphs[rk.graph], r, p);
    }
  }
  if (p.full()) return p.take();

  // Per rank: communicators, membership, peers and roots; then collect each communicator's collective sequence.
  std::vector<std::vector<CollectiveSig>> reference(ncomm); // sequence of the communicator's first member
  using P2PKey = std::tuple<int, int, int, int>;            // communicator, sender, receiver, tag
  std::map<P2PKey, std::pair<std::vector<std::pair<int, OpId>>, std::vector<std::pair<int, OpId>>>> p2p;
  auto rank_ok = [&](int r) { return r >= 0 && r < world && w.ranks[r].graph < w.graphs.size(); };

  for (int r = 0; r < world && !p.full(); ++r) {
    if (!rank_ok(r)) continue;
    const RankGraph& g = w.graph_of(r);
    for (OpId i = 0; i < g.size() && !p.full(); ++i) {
      const Op& op = g.op(i);
      if (op.kind != OpKind::Collective && op.kind != OpKind::Send && op.kind != OpKind::Recv) continue;
      int c = w.communicator_of(r, op);
      if (c < 0) {
        p.add(g, r, i, fmt::format("uses communicator slot {} which does not exist", op.comm),
              "name a communicator of the workload (comm_group.json, pg_config, or the generator's groups)");
        continue;
      }
      const Communicator& comm = w.communicators[c];
      int me = group_rank_of(c, r);
      if (me < 0) {
        p.add(g, r, i, fmt::format("uses communicator '{}' but rank {} is not one of its members", comm.name, r),
              "use a communicator the rank belongs to");
        continue;
      }
      int size = static_cast<int>(comm.ranks.size());
      if (op.kind == OpKind::Collective) {
        CollectiveKind k = op.collective();
        bool rooted = k == CollectiveKind::Broadcast || k == CollectiveKind::Reduce;
        if (rooted && (op.peer < 0 || op.peer >= size)) {
          p.add(g, r, i,
                fmt::format("{} root {} is not a rank of communicator '{}' (size {})", models::to_string(k),
                            op.peer, comm.name, size),
                "give the root's rank within the communicator");
          continue;
        }
        if (me == 0) reference[c].push_back(CollectiveSig{k, op.bytes.bytes(), rooted ? op.peer : -1, r, i});
      } else {
        if (op.peer < 0 || op.peer >= size || op.peer == me) {
          p.add(g, r, i,
                fmt::format("{} peer {} is not another rank of communicator '{}' (size {}, this rank is {})",
                            to_string(op.kind), op.peer, comm.name, size, me),
                "give the peer's rank within the communicator");
          continue;
        }
        int other = comm.ranks[op.peer];
        if (op.kind == OpKind::Send)
          p2p[{c, r, other, op.tag}].first.emplace_back(r, i);
        else
          p2p[{c, other, r, op.tag}].second.emplace_back(r, i);
      }
    }
  }
  if (p.full()) return p.take();

  // Every member must issue its communicator's collectives in the first member's order.
  std::vector<std::size_t> next; // per entry of the rank's membership list: collectives seen so far
  std::vector<bool> reported(ncomm, false);
  auto disagree = [&](int c, int r, const RankGraph& g, OpId i, const std::string& what) {
    reported[c] = true;
    p.add(g, r, i, "ranks disagree on a collective: " + what,
          "every member of a communicator must issue the same collectives (kind, size, root) in the same order");
  };
  for (int r = 0; r < world && !p.full(); ++r) {
    if (!rank_ok(r)) continue;
    const RankGraph& g = w.graph_of(r);
    next.assign(member_off[r + 1] - member_off[r], 0);
    for (OpId i = 0; i < g.size(); ++i) {
      const Op& op = g.op(i);
      if (op.kind != OpKind::Collective) continue;
      int c = w.communicator_of(r, op);
      int slot = c < 0 ? -1 : slot_of(c, r);
      if (slot < 0 || members[member_off[r] + slot].second == 0 || reported[c]) continue;
      const auto& ref = reference[c];
      const Communicator& comm = w.communicators[c];
      std::size_t k = next[slot]++;
      bool rooted = op.collective() == CollectiveKind::Broadcast || op.collective() == CollectiveKind::Reduce;
      CollectiveSig mine{op.collective(), op.bytes.bytes(), rooted ? op.peer : -1, r, i};
      if (k >= ref.size()) {
        disagree(c, r, g, i,
                 fmt::format("collective #{} on communicator '{}' ({}) has no counterpart: rank {} ({}) issues only {}",
                             k + 1, comm.name, describe_sig(mine), comm.ranks[0],
                             w.graph_of(comm.ranks[0]).source_file(), ref.size()));
        continue;
      }
      const CollectiveSig& want = ref[k];
      // All-to-all sizes may differ between ranks (alltoallv, as PyTorch's alltoall_base with splits records it).
      bool sizes_differ = want.bytes != mine.bytes && mine.kind != CollectiveKind::AllToAll;
      if (want.kind != mine.kind || sizes_differ || want.root != mine.root) {
        const RankGraph& rg = w.graph_of(want.rank);
        disagree(c, r, g, i,
                 fmt::format("collective #{} on communicator '{}' is {} here but {} on rank {} ({} {})", k + 1,
                             comm.name, describe_sig(mine), describe_sig(want), want.rank, rg.source_file(),
                             rg.describe(want.op)));
      }
    }
    for (std::uint32_t k = member_off[r]; k < member_off[r + 1] && !p.full(); ++k) {
      const auto [c, me] = members[k];
      const std::size_t seen = next[k - member_off[r]];
      if (reported[c] || me == 0 || seen >= reference[c].size()) continue;
      const CollectiveSig& want = reference[c][seen];
      const RankGraph& rg = w.graph_of(want.rank);
      reported[c] = true;
      p.add_global(g.source_file(), fmt::format("rank {}", r),
                   fmt::format("ranks disagree on a collective: rank {} issues {} collectives on communicator '{}' but "
                               "rank {} issues {} (the first missing one is {} at {} {})",
                               r, seen, w.communicators[c].name, want.rank, reference[c].size(), describe_sig(want),
                               rg.source_file(), rg.describe(want.op)),
                   "every member of a communicator must issue the same collectives in the same order");
    }
  }

  // Point-to-point: the k-th send from a to b with tag t meets the k-th receive on b from a with tag t.
  for (const auto& [key, lists] : p2p) {
    if (p.full()) break;
    const auto& [c, src, dst, tag] = key;
    const auto& [sends, recvs] = lists;
    std::size_t both = std::min(sends.size(), recvs.size());
    for (std::size_t k = 0; k < both && !p.full(); ++k) {
      const RankGraph& gs = w.graph_of(sends[k].first);
      const RankGraph& gr = w.graph_of(recvs[k].first);
      double bs = gs.op(sends[k].second).bytes.bytes();
      double br = gr.op(recvs[k].second).bytes.bytes();
      if (bs != br) {
        p.add(gr, dst, recvs[k].second,
              fmt::format("receive #{} from rank {} (tag {}) expects {} bytes but the send ({} {}) has {}", k + 1, src,
                          tag, br, gs.source_file(), gs.describe(sends[k].second), bs),
              "make the send and receive sizes equal");
        break;
      }
    }
    if (sends.size() > both) {
      const RankGraph& g = w.graph_of(src);
      p.add(g, src, sends[both].second,
            fmt::format("send to rank {} (tag {}, communicator '{}') has no matching receive: {} sends, {} receives",
                        dst, tag, w.communicators[c].name, sends.size(), recvs.size()),
            "add the receive on the peer or remove the send");
    } else if (recvs.size() > both) {
      const RankGraph& g = w.graph_of(dst);
      p.add(g, dst, recvs[both].second,
            fmt::format("receive from rank {} (tag {}, communicator '{}') has no matching send: {} sends, {} receives",
                        src, tag, w.communicators[c].name, sends.size(), recvs.size()),
            "add the send on the peer or remove the receive");
    }
  }
  return p.take();
}

void validate(const Workload& w)
{
  auto problems = find_problems(w, 1);
  if (!problems.empty()) throw problems.front();
}

} // namespace railyard::workloads
