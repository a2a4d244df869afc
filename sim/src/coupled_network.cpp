// The collective-level fluid network (coupled_network.hpp).
#include "coupled_network.hpp"
#include "rates.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace railyard::sim::coupled {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr std::uint32_t kAlone = ~0U; ///< LinkRec::local of a link only one flow crosses

/// Progressive filling with multiplicities over a compact problem: links 0..n-1 with capacities, flows as lists of
/// (link, k). Every unfrozen flow rises at one level; a link saturates when its residual over the sum of its unfrozen
/// flows' k is reached; its flows freeze at that level. Ties break by link index, so the result is a function of the
/// problem alone.
class Filler {
public:
  /// A new problem with `links` shared links (capacities set with set_capacity); flows follow, each its loads, an
  /// optional add_cap, then end_flow.
  void reset(std::size_t links)
  {
    cap_.assign(links, 0.0);
    flow_off_.assign(1, 0);
    flow_link_.clear();
    flow_k_.clear();
  }
  void set_capacity(std::uint32_t link, double c) { cap_[link] = c; }
  void add_load(std::uint32_t link, double k)
  {
    flow_link_.push_back(link);
    flow_k_.push_back(k);
  }
  /// The current flow never runs faster than `cap`: a private link of that capacity, after the shared ones.
  void add_cap(double cap)
  {
    cap_.push_back(cap);
    add_load(static_cast<std::uint32_t>(cap_.size() - 1), 1.0);
  }
  void end_flow() { flow_off_.push_back(static_cast<std::uint32_t>(flow_link_.size())); }

  /// The level at which link `l` saturated in the last run (infinity: it never did).
  [[nodiscard]] double saturated_at(std::uint32_t l) const { return saturated_[l]; }

  const std::vector<double>& run()
  {
    const std::size_t nl = cap_.size(), nf = flow_off_.size() - 1;
    // links -> (flow, k) in CSR
    link_off_.assign(nl + 1, 0);
    for (auto l : flow_link_)
      ++link_off_[l + 1];
    for (std::size_t l = 0; l < nl; ++l)
      link_off_[l + 1] += link_off_[l];
    link_flow_.resize(flow_link_.size());
    fill_.assign(link_off_.begin(), link_off_.end() - 1);
    for (std::uint32_t f = 0; f < nf; ++f)
      for (std::uint32_t i = flow_off_[f]; i < flow_off_[f + 1]; ++i)
        link_flow_[fill_[flow_link_[i]]++] = f;
    res_ = cap_;
    sumk_.assign(nl, 0.0);
    unfrozen_.assign(nl, 0);
    stamp_.assign(nl, 0);
    for (std::size_t i = 0; i < flow_link_.size(); ++i) {
      sumk_[flow_link_[i]] += flow_k_[i];
      ++unfrozen_[flow_link_[i]];
    }
    rate_.assign(nf, kInf);
    frozen_.assign(nf, 0);
    saturated_.assign(nl, kInf);
    // Flows with no link keep an infinite rate; the fill ends once every other flow is frozen (the remaining links,
    // hundreds for a ring channel, have nothing left to decide).
    std::size_t left = 0;
    for (std::uint32_t f = 0; f < nf; ++f)
      left += flow_off_[f + 1] > flow_off_[f] ? 1 : 0;
    // Freezes the unfrozen flows of link `l`, saturated at `level`; touched(l2) for each other link whose share moved.
    const auto saturate = [&](std::uint32_t l, double level, const auto& touched) {
      saturated_[l] = level;
      for (std::uint32_t j = link_off_[l]; j < link_off_[l + 1]; ++j) {
        const std::uint32_t f = link_flow_[j];
        if (frozen_[f]) continue;
        frozen_[f] = 1;
        --left;
        rate_[f] = level;
        for (std::uint32_t i = flow_off_[f]; i < flow_off_[f + 1]; ++i) {
          const std::uint32_t l2 = flow_link_[i];
          res_[l2] -= flow_k_[i] * level;
          sumk_[l2] -= flow_k_[i];
          --unfrozen_[l2];
          if (l2 != l && unfrozen_[l2] > 0 && sumk_[l2] > 0) touched(l2);
        }
      }
    };
    if (nf <= kScanFlows) {
      // A few flows (a cap change under DCQCN, one ring and its neighbours): a scan of the links per level is cheaper
      // than the heap and takes the same links in the same order (lowest level, then lowest index).
      while (left > 0) {
        double best = kInf;
        std::uint32_t at = ~0U;
        for (std::uint32_t l = 0; l < nl; ++l) {
          if (unfrozen_[l] == 0 || !(sumk_[l] > 0)) continue;
          const double level = std::max(res_[l], 0.0) / sumk_[l];
          if (at == ~0U || level < best) {
            best = level;
            at = l;
          }
        }
        if (at == ~0U) break;
        saturate(at, best, [](std::uint32_t) {});
      }
      return rate_;
    }
    auto& heap = heap_;
    heap.clear();
    const auto push = [&heap](double level, std::uint32_t l, std::uint32_t stamp) {
      heap.push_back({level, l, stamp});
      std::push_heap(heap.begin(), heap.end(), std::greater<>{});
    };
    for (std::uint32_t l = 0; l < nl; ++l)
      if (unfrozen_[l] > 0 && sumk_[l] > 0) heap.push_back({std::max(res_[l], 0.0) / sumk_[l], l, 0});
    std::make_heap(heap.begin(), heap.end(), std::greater<>{});
    // Lazy keys: freezing flows at the lowest level only raises the level of the other links they cross
    // ((res - k L) / (sumk - k) >= res / sumk when res / sumk >= L), so a link's entry is a lower bound of its level
    // and is not pushed again when it is touched (a ring channel's freeze touches hundreds of links). A popped entry
    // whose link was touched since is pushed back at its level now; one that was not is that link's level, taken in
    // the order the eager heap would take it.
    while (!heap.empty() && left > 0) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
      const auto [level, l, stamp] = heap.back();
      heap.pop_back();
      if (unfrozen_[l] == 0 || !(sumk_[l] > 0)) continue;
      if (stamp != stamp_[l]) {
        push(std::max(res_[l], 0.0) / sumk_[l], l, stamp_[l]);
        continue;
      }
      saturate(l, level, [&](std::uint32_t l2) { ++stamp_[l2]; });
    }
    return rate_;
  }

private:
  static constexpr std::size_t kScanFlows = 8; ///< up to this many flows, run() scans the links instead of a heap
  std::vector<double> cap_, flow_k_, res_, sumk_, rate_, saturated_;
  std::vector<std::uint32_t> flow_off_, flow_link_, link_off_, link_flow_, fill_, unfrozen_, stamp_;
  std::vector<std::uint8_t> frozen_;
  /// The fill's heap: (level, link, stamp), lowest level first, ties by link; one entry per link, a stale stamp (the
  /// link touched since its push) pushed back at its level now.
  struct Entry {
    double level;
    std::uint32_t link, stamp;
    bool operator>(const Entry& o) const
    {
      return level != o.level ? level > o.level : (link != o.link ? link > o.link : stamp > o.stamp);
    }
  };
  std::vector<Entry> heap_;
};

Filler& filler()
{
  thread_local Filler f;
  return f;
}

} // namespace

Network::Network(const topo::Topology& topology, const FluidConfig& config, std::uint64_t seed)
    : topo_(topology), cfg_(config), seed_(seed), record_links_(config.record_links),
      interval_(config.sample_interval.seconds()), queues_(config.queues())
{
  if (record_links_ && !(interval_ > 0))
    throw std::invalid_argument("coupled::Network: the sample interval must be positive");
  links_.resize(topo_.num_links());
  for (topo::LinkId l = 0; l < topo_.num_links(); ++l)
    links_[l].capacity = topo_.link(l).bandwidth.bytes_per_sec();
  if (queues_) init_queues();
}

std::uint32_t Network::add(double t, std::span<const Load> loads, double ref_bytes, double cap, std::uint64_t owner,
                           std::span<const LaneSpec> lanes)
{
  const std::uint32_t f = flows_.acquire();
  FlowRec& fr = flows_[f];
  fr.loads.clear();
  fr.extra.clear();
  fr.lanes.clear();
  fr.remaining = fr.ref = ref_bytes;
  fr.cap = fr.base_cap = cap;
  fr.rate = 0;
  fr.last_t = t;
  fr.owner = owner;
  fr.active = true;
  fr.fresh = true;
  fr.draining = fr.drained = false;
  fr.paused = 0;
  fr.end_at = 0;
  ++flows_started_;
  if (first_start_ < 0) first_start_ = t;
  if (queues_ && !lanes.empty())
    add_lanes(f, t, lanes); // fills fr.loads (host hops) and fr.extra (the rest)
  else
    fr.loads.assign(loads.begin(), loads.end());
  fr.pos.resize(fr.loads.size());
  for (std::uint32_t i = 0; i < fr.loads.size(); ++i) {
    const std::uint32_t l = fr.loads[i].link;
    LinkRec& L = links_[l];
    integrate(l, t);
    fr.pos[i] = static_cast<std::uint32_t>(L.flows.size());
    L.flows.emplace_back(f, i);
    mark_dirty(l);
  }
  auto count = [&](const std::vector<Load>& v, bool joined) {
    for (const Load& ld : v) {
      LinkRec& L = links_[ld.link];
      ++L.flows_total;
      const auto n = static_cast<std::uint32_t>(L.flows.size() + (joined ? 0 : 1));
      L.max_flows = std::max(L.max_flows, n);
      L.bin_max_flows = std::max(L.bin_max_flows, n);
    }
  };
  count(fr.loads, true);
  count(fr.extra, false);
  dirty_flows_.push_back(f);
  return f;
}

void Network::mark_dirty(std::uint32_t link)
{
  if (links_[link].dirty) return;
  links_[link].dirty = true;
  dirty_links_.push_back(link);
}

void Network::solve(double t, const PostEnd& post)
{
  // Incremental max-min, as the fluid backend's (fluid_maxmin.cpp): the allocation before the changes was max-min
  // fair, so only flows on the links the changes touched (R) can change at first. Progressive filling runs for those
  // flows (F) over every link they cross (L), holding every other flow's rate fixed (its k x rate taken off the link's
  // capacity). That answer is the global one unless, on a link of L outside R that other flows share, an F flow
  // changed its rate (another flow there may have gained or lost its bottleneck) or an F flow was frozen there below
  // another flow's rate (that flow must yield): such links join R and the fill is redone. Flows on disjoint links are
  // never visited.
  if (dirty_links_.empty() && solve_alone(t, post)) return;
  r_links_.clear();
  for (std::uint32_t l : dirty_links_) {
    links_[l].dirty = false;
    if (!links_[l].in_r) {
      links_[l].in_r = true;
      r_links_.push_back(l);
    }
  }
  dirty_links_.clear();
  Filler& fill = filler();
  const std::vector<double>* rates = nullptr;
  while (true) {
    ++epoch_;
    comp_flows_.clear();
    comp_links_.clear();
    for (std::uint32_t f : dirty_flows_) {
      FlowRec& fr = flows_[f];
      if (!fr.active || fr.draining || fr.mark == epoch_) continue; // a draining flow holds no share
      fr.mark = epoch_;
      comp_flows_.push_back(f);
    }
    for (std::uint32_t l : r_links_)
      for (const auto& fi : links_[l].flows) {
        FlowRec& fr = flows_[fi.first];
        if (fr.mark == epoch_) continue;
        fr.mark = epoch_;
        comp_flows_.push_back(fi.first);
      }
    // A link only one flow crosses is a cap on that flow (capacity / k), not a link of the fill (most of a ring's
    // host links); a capped flow gets a private link of its cap's capacity. The fill's links are the shared ones.
    for (std::uint32_t f : comp_flows_) {
      FlowRec& fr = flows_[f];
      fr.solve_cap = fr.cap;
      for (const Load& ld : fr.loads) {
        LinkRec& L = links_[ld.link];
        if (L.flows.size() <= 1) {
          L.local = kAlone;
          fr.solve_cap = std::min(fr.solve_cap, L.capacity / ld.k);
        } else if (L.mark != epoch_) {
          L.mark = epoch_;
          comp_links_.push_back(ld.link);
        }
      }
    }
    // Deterministic order whatever the order of the changes: links and flows by id.
    std::sort(comp_links_.begin(), comp_links_.end());
    std::sort(comp_flows_.begin(), comp_flows_.end());
    const auto shared = static_cast<std::uint32_t>(comp_links_.size());
    for (std::uint32_t i = 0; i < shared; ++i)
      links_[comp_links_[i]].local = i;
    fill.reset(shared);
    for (std::uint32_t l : comp_links_) {
      const LinkRec& L = links_[l];
      double held = 0; // what flows outside F take from it
      for (const auto& [g, gi] : L.flows)
        if (flows_[g].mark != epoch_) held += flows_[g].loads[gi].k * flows_[g].rate;
      fill.set_capacity(L.local, std::max(0.0, L.capacity - held));
    }
    for (std::uint32_t f : comp_flows_) {
      const FlowRec& fr = flows_[f];
      for (const Load& ld : fr.loads)
        if (links_[ld.link].local != kAlone) fill.add_load(links_[ld.link].local, ld.k);
      if (fr.solve_cap < kInf) fill.add_cap(fr.solve_cap);
      fill.end_flow();
    }
    rates = &fill.run();
    for (std::size_t j = 0; j < comp_flows_.size(); ++j)
      flows_[comp_flows_[j]].new_rate = (*rates)[j];
    bool grown = false;
    for (std::uint32_t l : comp_links_) {
      LinkRec& L = links_[l];
      if (L.in_r) continue;
      bool others = false, changed = false, above = false;
      const double level = fill.saturated_at(L.local);
      for (const auto& [f, fi] : L.flows) {
        const FlowRec& fr = flows_[f];
        if (fr.mark != epoch_) {
          others = true;
          above = above || (level < kInf && fr.rate > level * (1 + 1e-12));
        } else {
          changed = changed || fr.fresh || rates_differ(fr.new_rate, fr.rate);
        }
      }
      if (others && (changed || above)) {
        L.in_r = true;
        r_links_.push_back(l);
        grown = true;
      }
    }
    if (!grown) break;
  }
  for (std::uint32_t l : r_links_)
    links_[l].in_r = false;
  dirty_flows_.clear();
  for (std::size_t j = 0; j < comp_flows_.size(); ++j) {
    const std::uint32_t f = comp_flows_[j];
    FlowRec& fr = flows_[f];
    const double r = (*rates)[j];
    if (!fr.fresh && r == fr.rate) continue;
    apply_rate(f, r, t, post);
  }
  if (queues_) settle(t);
}

bool Network::solve_alone(double t, const PostEnd& post)
{
  // Only flows changed (their caps), and each crosses no link another flow crosses: progressive filling would give
  // each its cap or its tightest link's capacity / k, and no other flow's rate moves. (The common change under DCQCN:
  // a lane's reaction point changing the cap of the ring it holds back.)
  for (std::uint32_t f : dirty_flows_) {
    const FlowRec& fr = flows_[f];
    if (!fr.active || fr.draining) continue;
    if (fr.fresh) return false;
    for (const Load& ld : fr.loads)
      if (links_[ld.link].flows.size() > 1) return false;
  }
  std::sort(dirty_flows_.begin(), dirty_flows_.end());
  dirty_flows_.erase(std::unique(dirty_flows_.begin(), dirty_flows_.end()), dirty_flows_.end());
  alone_.swap(dirty_flows_);
  dirty_flows_.clear();
  for (std::uint32_t f : alone_) {
    FlowRec& fr = flows_[f];
    if (!fr.active || fr.draining) continue;
    double r = fr.cap;
    for (const Load& ld : fr.loads)
      r = std::min(r, links_[ld.link].capacity / ld.k);
    if (r != fr.rate) apply_rate(f, r, t, post);
  }
  alone_.clear();
  if (queues_) settle(t);
  return true;
}

void Network::apply_rate(std::uint32_t f, double r, double t, const PostEnd& post)
{
  set_rate(f, r, t);
  FlowRec& fr = flows_[f];
  fr.fresh = false;
  ++fr.version; // its earlier end is stale
  if (r > 0) post(f, fr.version, r == kInf || fr.remaining <= 0 ? t : t + fr.remaining / r);
}

void Network::set_rate(std::uint32_t f, double r, double t)
{
  FlowRec& fr = flows_[f];
  if (!fr.lanes.empty()) begin_rate_change(f, t);
  if (!fr.fresh) fr.remaining = std::max(0.0, fr.remaining - (fr.rate == kInf ? kInf : fr.rate * (t - fr.last_t)));
  const double old = fr.fresh ? 0.0 : fr.rate;
  for (const std::vector<Load>* v : {&fr.loads, &fr.extra})
    for (const Load& ld : *v) {
      integrate(ld.link, t);
      links_[ld.link].rate += ld.k * (r - old);
    }
  if (queues_)
    for (const Load& ld : fr.loads)
      touch_catch(ld.link); // what the shares leave its catching lanes moved
  fr.rate = r;
  fr.last_t = t;
  fr.fresh = false;
  if (!fr.lanes.empty()) end_rate_change(f);
}

void Network::detach(std::uint32_t f, double t)
{
  FlowRec& fr = flows_[f];
  if (!fr.fresh && fr.rate != 0 && fr.rate < kInf) set_rate(f, 0, t);
  fr.fresh = false;
  for (std::uint32_t i = 0; i < fr.loads.size(); ++i) {
    const std::uint32_t l = fr.loads[i].link;
    LinkRec& L = links_[l];
    const std::uint32_t p = fr.pos[i];
    const auto moved = L.flows.back();
    L.flows[p] = moved;
    L.flows.pop_back();
    if (p < L.flows.size()) flows_[moved.first].pos[moved.second] = p;
    if (L.flows.empty()) {
      integrate(l, t);
      L.rate = 0; // no rounding residue on an idle link
      if (queues_) touch_catch(l);
    }
    mark_dirty(l);
  }
  fr.loads.clear();
  fr.pos.clear();
}

void Network::release(std::uint32_t f, double t)
{
  FlowRec& fr = flows_[f];
  detach(f, t);
  if (!fr.lanes.empty()) remove_lanes(f);
  for (const Load& ld : fr.extra) {
    integrate(ld.link, t);
    if (links_[ld.link].flows.empty() && links_[ld.link].rate < 1e-9 * links_[ld.link].capacity)
      links_[ld.link].rate = 0;
  }
  fr.extra.clear();
  fr.active = false;
  ++fr.version;
  flows_.release(f);
  last_end_ = std::max(last_end_, t);
}

bool Network::end(std::uint32_t flow, std::uint32_t version, double t, std::uint64_t& owner, double& at)
{
  if (flow >= flows_.size()) return false;
  FlowRec& fr = flows_[flow];
  if (!fr.active || fr.version != version) return false;
  if (!fr.lanes.empty() && !fr.draining) {
    // Its last byte entered the network: it leaves the host links; the queues still hold what they hold.
    set_rate(flow, 0, t);
    fr.remaining = 0;
    fr.draining = true;
    detach(flow, t);
    finish_injection(flow, t);
    if (!fr.drained) {
      ++fr.version;
      return false;
    }
  }
  owner = fr.owner;
  at = fr.drained ? fr.end_at : t;
  release(flow, t);
  return true;
}

void Network::integrate(std::uint32_t link, double t)
{
  LinkRec& L = links_[link];
  if (!(t > L.last_t)) return;
  const bool moving = L.rate > 0 && L.rate != kInf;
  if (!moving && !L.paused) {
    L.last_t = t;
    return;
  }
  if (moving) L.bytes += L.rate * (t - L.last_t);
  if (L.paused) L.paused_total += t - L.last_t;
  if (!record_links_) {
    L.last_t = t;
    return;
  }
  auto bin_of = [&](double x) { return static_cast<std::uint64_t>(std::floor(x / interval_)); };
  std::uint64_t k = bin_of(L.last_t);
  while (L.last_t < t) {
    if (k != L.bin) {
      close_bin(link, static_cast<double>(L.bin) * interval_, interval_);
      L.bin = k;
      L.bin_max_flows = static_cast<std::uint32_t>(L.flows.size());
    }
    const double seg_end = std::min(t, static_cast<double>(k + 1) * interval_);
    if (moving) L.bin_bytes += L.rate * (seg_end - L.last_t);
    if (L.paused) L.bin_paused += seg_end - L.last_t;
    L.last_t = seg_end;
    ++k;
  }
}

void Network::close_bin(std::uint32_t link, double start, double len)
{
  LinkRec& L = links_[link];
  if (L.bin_bytes > 0 || L.bin_max_queue > 0 || L.bin_marks > 0 || L.bin_paused > 0)
    samples_.push_back({start, len, link, L.bin_bytes, len > 0 ? L.bin_bytes / (L.capacity * len) : 0.0,
                        L.bin_max_queue, L.bin_marks, L.bin_paused, L.bin_max_flows});
  L.bin_bytes = L.bin_max_queue = L.bin_marks = L.bin_paused = 0;
}

void Network::finish(double t)
{
  for (std::uint32_t l = 0; l < links_.size(); ++l) {
    integrate(l, t);
    LinkRec& L = links_[l];
    if (record_links_) {
      const double start = static_cast<double>(L.bin) * interval_;
      close_bin(l, start, std::max(std::min(interval_, t - start), 0.0));
    }
  }
}

std::vector<double> Network::rates_alone(const std::vector<std::vector<Load>>& flows,
                                         const std::vector<double>& caps) const
{
  std::vector<std::uint32_t> local(links_.size(), ~0U), ids;
  for (const auto& f : flows)
    for (const Load& ld : f)
      if (local[ld.link] == ~0U) {
        local[ld.link] = 0;
        ids.push_back(ld.link);
      }
  std::sort(ids.begin(), ids.end());
  Filler fill;
  fill.reset(ids.size());
  for (std::uint32_t i = 0; i < ids.size(); ++i) {
    local[ids[i]] = i;
    fill.set_capacity(i, links_[ids[i]].capacity);
  }
  for (std::size_t i = 0; i < flows.size(); ++i) {
    for (const Load& ld : flows[i])
      fill.add_load(local[ld.link], ld.k);
    if (i < caps.size() && caps[i] < kInf) fill.add_cap(caps[i]);
    fill.end_flow();
  }
  return fill.run();
}

FluidReport Network::take_report()
{
  FluidReport r;
  r.link_info = describe_links(topo_);
  FluidStats& st = r.stats;
  st.flows = flows_started_;
  st.first_start = first_start_;
  st.last_end = last_end_;
  st.links.resize(links_.size());
  for (std::size_t l = 0; l < links_.size(); ++l) {
    LinkTotals& tot = st.links[l];
    tot.bytes = links_[l].bytes;
    tot.max_flows = links_[l].max_flows;
    tot.flows = links_[l].flows_total;
    tot.paused = links_[l].paused_total;
    if (queues_) {
      const QLink& q = q_[l];
      tot.max_queue = q.max_queue;
      tot.marks = q.marks;
      tot.max_ingress = q.max_ingress;
      st.pause_events += q.pause_events;
    }
    st.pause_time += tot.paused;
    st.ecn_marks += tot.marks;
    if (tot.max_queue > st.max_queue) {
      st.max_queue = tot.max_queue;
      st.max_queue_link = static_cast<std::int64_t>(l);
    }
  }
  st.cnps = cnps_;
  st.rate_decreases = decreases_;
  st.overflow_bytes = overflow_;
  if (queues_) st.host_peak_load = host_peak_;
  std::sort(samples_.begin(), samples_.end(), [](const LinkSample& a, const LinkSample& b) {
    return a.time != b.time ? a.time < b.time : a.link < b.link;
  });
  r.links = std::move(samples_);
  samples_.clear();
  return r;
}

} // namespace railyard::sim::coupled
