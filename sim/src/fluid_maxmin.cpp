// Incremental max-min fair rates.
//
// The allocation before a batch of flow events is max-min fair. After it, only flows on the links the events touched
// (R) can change at first. resolve() runs progressive filling for the flows F on R's links, over every link those
// flows cross (L), holding the rates of all other flows (G) fixed. That local answer is the global one unless, on a
// link of L outside R that G flows share, (a) some F flow changed its rate (a G flow may have lost or gained its
// bottleneck there), or (b) an F flow was frozen there at a level below a G flow's (the G flow should yield). Such
// links join R and the fill is redone; flows on disjoint links are never visited. Each flow f has its rate r_f =
// w_f * level (weights are 1 except for sprayed sub-flows) and an optional cap (DCQCN's rate, or 0 while paused).
#include "fluid_network_impl.hpp"
#include "rates.hpp"

#include <algorithm>
#include <cmath>

namespace railyard::sim::fluid {

namespace {

struct FillLater {
  template <class E>
  bool operator()(const E& x, const E& y) const
  {
    return x.level > y.level || (x.level == y.level && (x.flow != y.flow ? x.flow : x.id > y.id));
  }
};

} // namespace

double Net::effective_cap(const Flow& f) const
{
  if (queues_) {
    // A host link paused for this flow's priority stops it (head-of-line blocking of everything behind it).
    for (int i = 0; i < f.n_mm; ++i)
      if ((links_[f.links[f.mm_hop[i]]].paused_mask >> f.priority) & 1U)
        return 0.0;
  }
  return f.cap;
}

void Net::resolve(double t)
{
  r_.clear();
  for (std::uint32_t l : dirty_) {
    links_[l].dirty = false;
    if (!links_[l].in_r) {
      links_[l].in_r = true;
      r_.push_back(l);
    }
  }
  dirty_.clear();

  while (true) {
    ++epoch_;
    f_.clear();
    l_.clear();
    for (std::uint32_t l : r_)
      for (const Slot& s : links_[l].mm) {
        Flow& fl = flows_[s.flow];
        if (fl.mark != epoch_) {
          fl.mark = epoch_;
          fl.frozen = false;
          f_.push_back(s.flow);
        }
      }
    for (std::uint32_t f : lonely_dirty_) {
      Flow& fl = flows_[f];
      if (fl.active && fl.mark != epoch_) {
        fl.mark = epoch_;
        fl.frozen = false;
        f_.push_back(f);
      }
    }
    for (std::uint32_t f : f_) {
      Flow& fl = flows_[f];
      // A flow alone on every link it crosses (a ring's edge, most of the time) shares nothing: its rate is its
      // slowest link or its cap, and it takes no part in the fill.
      bool alone = true;
      double alone_rate = kInf;
      for (int i = 0; i < fl.n_mm && alone; ++i) {
        const LinkState& ls = links_[fl.links[fl.mm_hop[i]]];
        alone = ls.mm.size() == 1;
        alone_rate = std::min(alone_rate, ls.capacity);
      }
      if (alone) {
        fl.frozen = true;
        fl.new_rate = std::min(alone_rate, effective_cap(fl));
        if (fl.n_mm == 0 && !(fl.new_rate < kInf))
          fl.new_rate = fl.rate;
        continue;
      }
      for (int i = 0; i < fl.n_mm; ++i) {
        const std::uint32_t l = fl.links[fl.mm_hop[i]];
        LinkFill& ls = fill_links_[l];
        if (ls.mark != epoch_) {
          ls.res = links_[l].capacity;
          ls.mark = epoch_;
          ls.wsum = 0;
          ls.unfrozen = 0;
          ls.in_f = 0;
          ls.bottleneck = false;
          ls.bottleneck_level = kInf;
          l_.push_back(l);
        }
        ls.wsum += fl.weight;
        ls.unfrozen++;
        ls.in_f++;
      }
    }
    // What the fixed flows already use.
    for (std::uint32_t l : l_) {
      LinkFill& ls = fill_links_[l];
      if (ls.in_f < links_[l].mm.size())
        for (const Slot& s : links_[l].mm)
          if (flows_[s.flow].mark != epoch_)
            ls.res -= flows_[s.flow].rate;
    }

    // Progressive filling: the link (or flow cap) reached at the lowest level freezes its flows there.
    fill_.clear();
    for (std::uint32_t l : l_) {
      const LinkFill& ls = fill_links_[l];
      fill_.push_back({std::max(ls.res, 0.0) / ls.wsum, l, ls.stamp, false});
    }
    for (std::uint32_t f : f_) {
      const Flow& fl = flows_[f];
      if (fl.frozen)
        continue;
      const double cap = effective_cap(fl);
      if (cap < kInf)
        fill_.push_back({cap / fl.weight, f, 0, true});
    }
    std::make_heap(fill_.begin(), fill_.end(), FillLater{});
    auto freeze = [&](std::uint32_t f, double rate) {
      Flow& fl = flows_[f];
      fl.frozen = true;
      fl.new_rate = rate;
      for (int i = 0; i < fl.n_mm; ++i) {
        const std::uint32_t m = fl.links[fl.mm_hop[i]];
        LinkFill& ms = fill_links_[m];
        ms.res -= rate;
        ms.wsum -= fl.weight;
        ms.stamp++;
        if (--ms.unfrozen > 0) {
          fill_.push_back({std::max(ms.res, 0.0) / ms.wsum, m, ms.stamp, false});
          std::push_heap(fill_.begin(), fill_.end(), FillLater{});
        }
      }
    };
    while (!fill_.empty()) {
      std::pop_heap(fill_.begin(), fill_.end(), FillLater{});
      const FillEntry e = fill_.back();
      fill_.pop_back();
      if (e.flow) {
        if (!flows_[e.id].frozen)
          freeze(e.id, e.level * flows_[e.id].weight);
        continue;
      }
      LinkFill& ls = fill_links_[e.id];
      if (e.stamp != ls.stamp || ls.unfrozen == 0)
        continue;
      ls.bottleneck = true;
      ls.bottleneck_level = std::min(ls.bottleneck_level, e.level);
      for (const Slot& s : links_[e.id].mm) {
        const Flow& fl = flows_[s.flow];
        if (fl.mark == epoch_ && !fl.frozen)
          freeze(s.flow, e.level * fl.weight);
      }
    }
    for (std::uint32_t f : f_)
      if (!flows_[f].frozen) {
        // No link or cap bounds it (cannot happen for a real path); keep what it had.
        flows_[f].frozen = true;
        flows_[f].new_rate = flows_[f].rate;
      }

    // Links shared with fixed flows where the local answer may not be the global one.
    expand_.clear();
    for (std::uint32_t l : l_) {
      const LinkState& ls = links_[l];
      const LinkFill& lf = fill_links_[l];
      if (ls.in_r || lf.in_f == ls.mm.size())
        continue;
      bool changed = false;
      double max_fixed_level = 0;
      for (const Slot& s : ls.mm) {
        const Flow& fl = flows_[s.flow];
        if (fl.mark == epoch_)
          changed = changed || rates_differ(fl.new_rate, fl.rate);
        else
          max_fixed_level = std::max(max_fixed_level, fl.rate / fl.weight);
      }
      if (changed || (lf.bottleneck && max_fixed_level > lf.bottleneck_level * (1 + 1e-12)))
        expand_.push_back(l);
    }
    if (expand_.empty())
      break;
    for (std::uint32_t l : expand_) {
      links_[l].in_r = true;
      r_.push_back(l);
    }
  }

  for (std::uint32_t f : f_)
    if (rates_differ(flows_[f].new_rate, flows_[f].rate))
      commit(f, t);
  for (std::uint32_t l : r_)
    links_[l].in_r = false;
  lonely_dirty_.clear();
}

void Net::commit(std::uint32_t f, double t)
{
  Flow& fl = flows_[f];
  const double old = fl.rate;
  if (cfg_.record_links)
    for (int i = 0; i < fl.n_mm; ++i) {
      const std::uint32_t l = fl.links[fl.mm_hop[i]];
      integrate(l, t);
      aux_[l].rate_sum += fl.new_rate - old;
    }
  if (fl.fab != kNone) {
    // A queued flow's rate is what it injects; the queue model moves its bytes.
    fl.rate = fl.new_rate;
    return;
  }
  fl.remaining -= old * (t - fl.last_t);
  if (fl.remaining < 0)
    fl.remaining = 0;
  fl.last_t = t;
  fl.rate = fl.new_rate;
  fl.version++;
  if (fl.rate > 0)
    push(t + fl.remaining / fl.rate, EventKind::FlowEnd, f, fl.version);
}

} // namespace railyard::sim::fluid
