// The collective-level fluid network (coupled_network.hpp).
#include "coupled_network.hpp"

#include <algorithm>
#include <cmath>
#include <queue>
#include <stdexcept>

namespace railyard::sim::coupled {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

/// Progressive filling with multiplicities over a compact problem: links 0..n-1 with capacities, flows as lists of
/// (link, k). Every unfrozen flow rises at one level; a link saturates when its residual over the sum of its unfrozen
/// flows' k is reached; its flows freeze at that level. Ties break by link index, so the result is a function of the
/// problem alone.
class Filler {
public:
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
  void end_flow() { flow_off_.push_back(static_cast<std::uint32_t>(flow_link_.size())); }

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
    using Entry = std::tuple<double, std::uint32_t, std::uint32_t>; // level, link, stamp
    std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
    for (std::uint32_t l = 0; l < nl; ++l)
      if (unfrozen_[l] > 0 && sumk_[l] > 0) heap.emplace(std::max(res_[l], 0.0) / sumk_[l], l, 0);
    while (!heap.empty()) {
      const auto [level, l, stamp] = heap.top();
      heap.pop();
      if (stamp != stamp_[l] || unfrozen_[l] == 0) continue;
      for (std::uint32_t j = link_off_[l]; j < link_off_[l + 1]; ++j) {
        const std::uint32_t f = link_flow_[j];
        if (frozen_[f]) continue;
        frozen_[f] = 1;
        rate_[f] = level;
        for (std::uint32_t i = flow_off_[f]; i < flow_off_[f + 1]; ++i) {
          const std::uint32_t l2 = flow_link_[i];
          res_[l2] -= flow_k_[i] * level;
          sumk_[l2] -= flow_k_[i];
          --unfrozen_[l2];
          if (l2 != l && unfrozen_[l2] > 0 && sumk_[l2] > 0)
            heap.emplace(std::max(res_[l2], 0.0) / sumk_[l2], l2, ++stamp_[l2]);
        }
      }
    }
    return rate_;
  }

private:
  std::vector<double> cap_, flow_k_, res_, sumk_, rate_;
  std::vector<std::uint32_t> flow_off_, flow_link_, link_off_, link_flow_, fill_, unfrozen_, stamp_;
  std::vector<std::uint8_t> frozen_;
};

Filler& filler()
{
  thread_local Filler f;
  return f;
}

} // namespace

void add_load(std::vector<Load>& loads, std::uint32_t link, double k)
{
  for (auto& l : loads)
    if (l.link == link) {
      l.k += k;
      return;
    }
  loads.push_back({link, k});
}

Network::Network(const topo::Topology& topology, bool record_links, double sample_interval_s)
    : topo_(topology), record_links_(record_links), interval_(sample_interval_s)
{
  if (record_links_ && !(interval_ > 0))
    throw std::invalid_argument("coupled::Network: the sample interval must be positive");
  links_.resize(topo_.num_links());
  for (topo::LinkId l = 0; l < topo_.num_links(); ++l)
    links_[l].capacity = topo_.link(l).bandwidth.bytes_per_sec();
}

std::uint32_t Network::add(double t, std::span<const Load> loads, double ref_bytes, double cap, std::uint64_t owner)
{
  std::uint32_t f = 0;
  if (!free_.empty()) {
    f = free_.back();
    free_.pop_back();
  } else {
    f = static_cast<std::uint32_t>(flows_.size());
    flows_.emplace_back();
  }
  FlowRec& fr = flows_[f];
  fr.loads.assign(loads.begin(), loads.end());
  fr.pos.resize(fr.loads.size());
  fr.remaining = ref_bytes;
  fr.cap = cap;
  fr.rate = 0;
  fr.last_t = t;
  fr.owner = owner;
  fr.active = true;
  fr.fresh = true;
  ++flows_started_;
  if (first_start_ < 0) first_start_ = t;
  for (std::uint32_t i = 0; i < fr.loads.size(); ++i) {
    const std::uint32_t l = fr.loads[i].link;
    LinkRec& L = links_[l];
    integrate(l, t);
    fr.pos[i] = static_cast<std::uint32_t>(L.flows.size());
    L.flows.emplace_back(f, i);
    ++L.flows_total;
    L.max_flows = std::max<std::uint32_t>(L.max_flows, static_cast<std::uint32_t>(L.flows.size()));
    L.bin_max_flows = std::max<std::uint32_t>(L.bin_max_flows, static_cast<std::uint32_t>(L.flows.size()));
    mark_dirty(l);
  }
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
  ++solves_;
  ++epoch_;
  comp_links_.clear();
  comp_flows_.clear();
  stack_.clear();
  for (std::uint32_t l : dirty_links_) {
    links_[l].dirty = false;
    stack_.push_back(l);
  }
  dirty_links_.clear();
  for (std::uint32_t f : dirty_flows_) {
    FlowRec& fr = flows_[f];
    if (!fr.active || fr.mark == epoch_) continue;
    fr.mark = epoch_;
    comp_flows_.push_back(f);
  }
  dirty_flows_.clear();
  // The connected component of the changed links: every flow on them, every link of those flows, and so on.
  while (!stack_.empty()) {
    const std::uint32_t l = stack_.back();
    stack_.pop_back();
    LinkRec& L = links_[l];
    if (L.mark == epoch_) continue;
    L.mark = epoch_;
    comp_links_.push_back(l);
    for (const auto& [f, i] : L.flows) {
      FlowRec& fr = flows_[f];
      if (fr.mark == epoch_) continue;
      fr.mark = epoch_;
      comp_flows_.push_back(f);
      for (const Load& ld : fr.loads)
        if (links_[ld.link].mark != epoch_) stack_.push_back(ld.link);
    }
  }
  // Deterministic order whatever the order of the changes: links and flows by id.
  std::sort(comp_links_.begin(), comp_links_.end());
  std::sort(comp_flows_.begin(), comp_flows_.end());
  // A capped flow gets a private link of its cap's capacity.
  std::size_t capped = 0;
  for (std::uint32_t f : comp_flows_)
    capped += flows_[f].cap < kInf ? 1 : 0;
  Filler& fill = filler();
  fill.reset(comp_links_.size() + capped);
  for (std::uint32_t i = 0; i < comp_links_.size(); ++i) {
    links_[comp_links_[i]].local = i;
    fill.set_capacity(i, links_[comp_links_[i]].capacity);
  }
  auto next = static_cast<std::uint32_t>(comp_links_.size());
  for (std::uint32_t f : comp_flows_) {
    for (const Load& ld : flows_[f].loads)
      fill.add_load(links_[ld.link].local, ld.k);
    if (flows_[f].cap < kInf) {
      fill.set_capacity(next, flows_[f].cap);
      fill.add_load(next++, 1.0);
    }
    fill.end_flow();
  }
  const std::vector<double>& rates = fill.run();
  solved_flows_ += comp_flows_.size();
  for (std::size_t j = 0; j < comp_flows_.size(); ++j) {
    const std::uint32_t f = comp_flows_[j];
    FlowRec& fr = flows_[f];
    const double r = rates[j];
    if (!fr.fresh && r == fr.rate) continue;
    if (!fr.fresh) fr.remaining = std::max(0.0, fr.remaining - fr.rate * (t - fr.last_t));
    for (const Load& ld : fr.loads) {
      integrate(ld.link, t);
      links_[ld.link].rate += ld.k * (r - fr.rate);
    }
    fr.fresh = false;
    fr.rate = r;
    fr.last_t = t;
    ++fr.version;
    post(f, fr.version, r == kInf || fr.remaining <= 0 ? t : t + fr.remaining / r);
  }
}

bool Network::end(std::uint32_t flow, std::uint32_t version, double t, std::uint64_t& owner)
{
  if (flow >= flows_.size()) return false;
  FlowRec& fr = flows_[flow];
  if (!fr.active || fr.version != version) return false;
  owner = fr.owner;
  for (std::uint32_t i = 0; i < fr.loads.size(); ++i) {
    const std::uint32_t l = fr.loads[i].link;
    LinkRec& L = links_[l];
    integrate(l, t);
    if (fr.rate < kInf) L.rate -= fr.loads[i].k * fr.rate;
    const std::uint32_t p = fr.pos[i];
    const auto moved = L.flows.back();
    L.flows[p] = moved;
    L.flows.pop_back();
    if (p < L.flows.size()) flows_[moved.first].pos[moved.second] = p;
    if (L.flows.empty()) L.rate = 0; // no rounding residue on an idle link
    mark_dirty(l);
  }
  fr.active = false;
  fr.loads.clear();
  ++fr.version;
  free_.push_back(flow);
  last_end_ = std::max(last_end_, t);
  return true;
}

void Network::integrate(std::uint32_t link, double t)
{
  LinkRec& L = links_[link];
  if (!(t > L.last_t)) return;
  if (L.rate <= 0 || L.rate == kInf) {
    L.last_t = t;
    return;
  }
  L.bytes += L.rate * (t - L.last_t);
  if (!record_links_) {
    L.last_t = t;
    return;
  }
  auto bin_of = [&](double x) { return static_cast<std::uint64_t>(std::floor(x / interval_)); };
  std::uint64_t k = bin_of(L.last_t);
  while (L.last_t < t) {
    if (k != L.bin) {
      if (L.bin_bytes > 0) {
        const double start = static_cast<double>(L.bin) * interval_;
        samples_.push_back(
            {start, interval_, link, L.bin_bytes, L.bin_bytes / (L.capacity * interval_), 0, 0, 0, L.bin_max_flows});
      }
      L.bin = k;
      L.bin_bytes = 0;
      L.bin_max_flows = static_cast<std::uint32_t>(L.flows.size());
    }
    const double seg_end = std::min(t, static_cast<double>(k + 1) * interval_);
    L.bin_bytes += L.rate * (seg_end - L.last_t);
    L.last_t = seg_end;
    ++k;
  }
}

void Network::finish(double t)
{
  for (std::uint32_t l = 0; l < links_.size(); ++l) {
    integrate(l, t);
    LinkRec& L = links_[l];
    if (record_links_ && L.bin_bytes > 0) {
      const double start = static_cast<double>(L.bin) * interval_;
      const double len = std::max(std::min(interval_, t - start), 0.0);
      samples_.push_back(
          {start, len, l, L.bin_bytes, len > 0 ? L.bin_bytes / (L.capacity * len) : 0.0, 0, 0, 0, L.bin_max_flows});
      L.bin_bytes = 0;
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
  std::size_t capped = 0;
  for (double c : caps)
    capped += c < kInf ? 1 : 0;
  Filler fill;
  fill.reset(ids.size() + capped);
  for (std::uint32_t i = 0; i < ids.size(); ++i) {
    local[ids[i]] = i;
    fill.set_capacity(i, links_[ids[i]].capacity);
  }
  auto next = static_cast<std::uint32_t>(ids.size());
  for (std::size_t i = 0; i < flows.size(); ++i) {
    for (const Load& ld : flows[i])
      fill.add_load(local[ld.link], ld.k);
    if (i < caps.size() && caps[i] < kInf) {
      fill.set_capacity(next, caps[i]);
      fill.add_load(next++, 1.0);
    }
    fill.end_flow();
  }
  return fill.run();
}

FluidReport Network::take_report()
{

  FluidReport r;
  r.link_info = describe_links(topo_);
  r.stats.flows = flows_started_;
  r.stats.first_start = first_start_;
  r.stats.last_end = last_end_;
  r.stats.links.resize(links_.size());
  for (std::size_t l = 0; l < links_.size(); ++l) {
    LinkTotals& tot = r.stats.links[l];
    tot.bytes = links_[l].bytes;
    tot.max_flows = links_[l].max_flows;
    tot.flows = links_[l].flows_total;
  }
  std::sort(samples_.begin(), samples_.end(), [](const LinkSample& a, const LinkSample& b) {
    return a.time != b.time ? a.time < b.time : a.link < b.link;
  });
  r.links = std::move(samples_);
  samples_.clear();
  return r;
}

} // namespace railyard::sim::coupled
