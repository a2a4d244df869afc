// The queue model, used when DCQCN or PFC is on.
//
// Flows that cross switch egress ports inject at their max-min rate over the host-side links (NVLink, PCIe, the NIC
// port), capped by their DCQCN reaction point; once a flow has injected its last byte it holds no share of those links.
// In each step of at most `time_step`, every busy egress port, in up*/down* order so a step's departures feed the
// next hop in the same step, serves capacity x dt from its FIFO of arrival batches (fluid_fifo.hpp): bytes leave in
// the order they arrived, and the flows of one batch in proportion. Unpaused priorities share the port in proportion
// to what each has queued. Departing bytes are ECN-marked with RED's probability of the queue they leave, which moves
// linearly over a step until it empties (ecn_draws.hpp, path_marking()); a flow's
// marks form a Poisson-like process whose first arrival after the receiver's CNP interval triggers a CNP (an
// exponential threshold on the accumulated hazard -ln(1 - p) per packet, so a window sees at least one mark with
// probability 1 - prod(1 - p)). Per ingress port and priority the switch counts the bytes that came in there and
// still wait in its egress queues; above XOFF it pauses the upstream egress after the cable latency plus response
// time, below XON it resumes it. Links between and after the queues (the receiver's NIC and PCIe) are not part of
// max-min: they carry what leaves the queue before them, and are sampled so.
#include "ecn_draws.hpp"
#include "fluid_network_impl.hpp"

#include <algorithm>
#include <cmath>

namespace railyard::sim::fluid {

namespace {

int queue_index(const FabricFlow& f, std::uint32_t hop)
{
  for (int k = 0; k < f.nq; ++k)
    if (f.qhop[k] == hop)
      return k;
  return -1;
}

} // namespace

void Net::start_fabric_flow(std::uint32_t f, double line_rate, double t)
{
  const std::uint32_t idx = fab_.acquire();
  FabricFlow& q = fab_[idx];
  q = FabricFlow{};
  Flow& fl = flows_[f];
  q.flow = f;
  fl.fab = idx;
  if (fifos_.size() < links_.size())
    fifos_.resize(links_.size());
  for (int h = 0; h < fl.hops; ++h)
    if (links_[fl.links[h]].queued) {
      q.qhop[q.nq++] = static_cast<std::uint8_t>(h);
      LinkAux& a = aux_[fl.links[h]];
      if (!a.in_busy) {
        a.in_busy = true;
        queue_order_.push_back(fl.links[h]);
      }
    }
  q.cc = cfg_.cc == CongestionControl::Dcqcn;
  if (q.cc) {
    q.rp = models::cc::ReactionPoint(cfg_.dcqcn, BytesPerSec(line_rate), Seconds(t));
    fl.cap = q.rp.rate().bytes_per_sec();
  }
  q.rng = splitmix64(seed_ ^ splitmix64(fl.id + 0x5bd1e995ULL));
  q.threshold = next_exponential(q.rng);
  if (fabric_flows_++ == 0)
    queue_t_ = t;
  queue_order_dirty_ = true;
}

void Net::end_fabric_flow(std::uint32_t f)
{
  Flow& fl = flows_[f];
  FabricFlow& q = fab_[fl.fab];
  for (int k = 0; k < q.nq; ++k) {
    const int h = q.qhop[k];
    remove_slot(aux_[fl.links[h]].fab, fl.pos[h]);
    // It ended when its delivered bytes reached its size up to rounding: drop any residue still listed, so no entry
    // names its slot once a new flow takes it.
    fifos_[fl.links[h]].at(fl.priority).erase_flow(fl.fab);
  }
  if (q.cc)
    report_.stats.rate_decreases += static_cast<std::uint64_t>(q.rp.decreases());
  q.flow = kNone;
  fab_.release(fl.fab);
  fl.fab = kNone;
  --fabric_flows_;
  queue_order_dirty_ = true;
}

void Net::rebuild_queue_order()
{
  std::vector<std::uint32_t> busy;
  for (std::uint32_t l : queue_order_) {
    if (aux_[l].fab.empty())
      aux_[l].in_busy = false;
    else
      busy.push_back(l);
  }
  std::sort(busy.begin(), busy.end(), [&](std::uint32_t a, std::uint32_t b) {
    return aux_[a].stage != aux_[b].stage ? aux_[a].stage < aux_[b].stage : a < b;
  });
  queue_order_.swap(busy);
  queue_order_dirty_ = false;
}

void Net::advance_queues(double t)
{
  if (fabric_flows_ == 0) {
    queue_t_ = std::max(queue_t_, t);
    return;
  }
  while (queue_t_ < t && fabric_flows_ > 0) {
    const double t1 = std::min(t, queue_t_ + step_);
    queue_step(queue_t_, t1);
    queue_t_ = t1;
  }
  queue_t_ = std::max(queue_t_, t);
}

void Net::queue_step(double t0, double t1)
{
  const double dt = t1 - t0;
  if (!(dt > 0))
    return;
  if (queue_order_dirty_)
    rebuild_queue_order();
  const auto& dc = cfg_.dcqcn;
  const double mtu = cfg_.mtu.bytes();
  FluidStats& st = report_.stats;

  // Injection: each sender pushes its rate's worth into its first egress queue.
  for (FabricFlow& q : fab_) {
    if (q.flow == kNone)
      continue;
    Flow& fl = flows_[q.flow];
    q.last_delivery = 0;
    double inj = std::min(fl.rate * dt, fl.bytes - q.injected);
    if (inj < 0)
      inj = 0;
    q.injected += inj;
    q.arriving[0] += inj;
    if (inj < fl.rate * dt && cfg_.record_links) {
      // Its host links' samples integrate its rate over the whole step; it sent only `inj` of it.
      for (int i = 0; i < fl.n_mm; ++i)
        aux_[fl.links[fl.mm_hop[i]]].s_bytes -= fl.rate * dt - inj;
    }
    if (q.injected >= fl.bytes) {
      // Everything is in the network: from now on it takes no share of its host links.
      if (fl.cap != 0) {
        fl.cap = 0;
        mark_flow_dirty(q.flow);
      }
      continue;
    }
    if (q.cc && q.rp.advance(dc, Seconds(t1), Bytes(inj))) {
      fl.cap = q.rp.rate().bytes_per_sec();
      mark_flow_dirty(q.flow);
    }
  }

  // Egress queues, upstream first.
  for (std::uint32_t l : queue_order_) {
    LinkState& ls = links_[l];
    LinkAux& la = aux_[l];
    PortFifos& port = fifos_[l];
    std::array<double, 8> sent_p{}, queue_p{};
    std::uint8_t present = 0;
    // This step's arrivals join the tail of their priority's FIFO as one batch.
    for (auto& [prio, fifo] : port.by_priority)
      fifo.begin_batch();
    for (const Slot& s : la.fab) {
      const Flow& fl = flows_[s.flow];
      FabricFlow& q = fab_[fl.fab];
      const int k = queue_index(q, s.hop);
      present |= static_cast<std::uint8_t>(1U << fl.priority);
      if (q.arriving[k] > 0) {
        port.at(fl.priority).push(fl.fab, static_cast<std::uint8_t>(k), q.arriving[k]);
        q.backlog[k] += q.arriving[k];
        q.arriving[k] = 0;
      }
    }
    double offered = 0;
    for (const auto& [prio, fifo] : port.by_priority)
      if (!((ls.paused_mask >> prio) & 1U))
        offered += fifo.bytes();
    const double service = ls.capacity * dt;
    const double ratio = offered > service ? service / offered : 1.0;
    // Packets leave marked with RED's probability of the queue they leave, which moves linearly over the step until it
    // empties (its bytes held at the start leave first, at the service left after what arrives), as in the coupled
    // model (path_marking()): inside RED's band the mean of a piece's two ends, above K_max every packet. A step with
    // any part above K_max marks its flows' packets there, and their notification points see a mark (dated at the
    // step's end, as every other).
    PathMarking marking;
    if (cfg_.cc == CongestionControl::Dcqcn) {
      double end_queue = 0;
      for (const auto& [prio, fifo] : port.by_priority)
        end_queue += ((ls.paused_mask >> prio) & 1U) ? fifo.bytes() : fifo.bytes() * (1 - ratio);
      const double arrived = std::max(0.0, offered - la.queue);
      const double s_end = !(end_queue > 0) ? empties_at(la.queue, arrived, service) : 1.0;
      marking = path_marking(dc, la.queue, end_queue, s_end);
    }
    const double p = marking.p, hazard = marking.off > marking.on ? kInf : marking.hazard;
    auto leave = [&](std::uint32_t fi, std::uint8_t k, double dep) {
      FabricFlow& q = fab_[fi];
      const Flow& fl = flows_[q.flow];
      q.backlog[k] = std::max(0.0, q.backlog[k] - dep);
      // Links after this queue up to the next one (the receiver's NIC and PCIe after the last) carry what leaves it.
      const int next_hop = k + 1 < q.nq ? q.qhop[k + 1] : fl.hops;
      if (cfg_.record_links)
        for (int h = q.qhop[k] + 1; h < next_hop; ++h) {
          aux_[fl.links[h]].s_bytes += dep;
          touch(fl.links[h]);
        }
      if (k + 1 < q.nq) {
        q.arriving[k + 1] += dep;
      } else {
        q.delivered += dep;
        q.last_delivery += dep;
      }
      if (dep > 0 && hazard > 0)
        q.hazard += hazard == kInf ? kInf : dep / mtu * hazard;
    };
    double sent = 0, queued = 0;
    for (auto& [prio, fifo] : port.by_priority) {
      if (!((ls.paused_mask >> prio) & 1U)) {
        const double out = fifo.serve(fifo.bytes() * ratio, leave);
        sent += out;
        sent_p[prio] += out;
      }
      queue_p[prio] = fifo.bytes();
      queued += queue_p[prio];
    }
    la.queue = queued;
    la.s_bytes += sent;
    la.s_max_queue = std::max(la.s_max_queue, queued);
    const double marks = sent / mtu * p;
    la.s_marks += marks;
    LinkTotals& tot = st.links[l];
    tot.marks += marks;
    tot.max_queue = std::max(tot.max_queue, queued);
    touch(l);
    if (observer_)
      for (int prio = 0; prio < 8; ++prio)
        if ((present >> prio) & 1U)
          observer_(QueueStep{t0, t1, l, prio, static_cast<bool>((ls.paused_mask >> prio) & 1U), sent_p[prio],
                              queue_p[prio], 0.0});
  }

  // Notification points: the first mark after the CNP interval sends a CNP; it reaches the sender about one round
  // trip later (the marked packet's way to the receiver, the CNP's way back).
  if (cfg_.cc == CongestionControl::Dcqcn)
    for (FabricFlow& q : fab_) {
      if (q.flow == kNone || q.hazard < q.threshold)
        continue;
      const Flow& fl = flows_[q.flow];
      if (t1 - q.last_cnp >= dc.cnp_interval.seconds()) {
        q.last_cnp = t1;
        push(t1 + 2 * fl.latency, EventKind::Cnp, q.flow, fl.gen);
        st.cnps++;
      }
      q.hazard = 0;
      q.threshold = next_exponential(q.rng);
    }

  // PFC ingress counters: bytes queued at a flow's egress hop came in over the hop before it.
  if (cfg_.pfc.enabled) {
    for (std::uint32_t l : pfc_watch_) {
      aux_[l].ingress_prev = aux_[l].ingress;
      aux_[l].ingress.fill(0);
    }
    for (std::uint32_t l : queue_order_)
      for (const Slot& s : aux_[l].fab) {
        const Flow& fl = flows_[s.flow];
        const FabricFlow& q = fab_[fl.fab];
        const std::uint32_t in = fl.links[s.hop - 1];
        LinkAux& is = aux_[in];
        if (!is.pfc_watched) {
          is.pfc_watched = true;
          is.ingress.fill(0);
          is.ingress_prev.fill(0);
          pfc_watch_.push_back(in);
        }
        is.ingress[fl.priority] += q.backlog[queue_index(q, s.hop)];
      }
    const auto& pfc = cfg_.pfc;
    std::vector<std::uint32_t> keep;
    for (std::uint32_t in : pfc_watch_) {
      LinkAux& is = aux_[in];
      const LinkState& il = links_[in];
      bool busy = il.paused_mask != 0 || is.pause_pending != 0 || is.resume_pending != 0;
      for (int prio = 0; prio < 8; ++prio) {
        const double occ = is.ingress[prio];
        const auto bit = static_cast<std::uint8_t>(1U << prio);
        busy = busy || occ > 0;
        const double excess = std::max(0.0, occ - (pfc.xoff.bytes() + is.headroom));
        if (excess > is.excess[prio])
          st.overflow_bytes += excess - is.excess[prio];
        is.excess[prio] = excess;
        LinkTotals& tot = st.links[in];
        tot.max_ingress = std::max(tot.max_ingress, occ);
        const bool want_pause = ((il.paused_mask | is.pause_pending) & bit) && !(is.resume_pending & bit);
        // When inside the step the counter crossed the threshold, assuming it moved linearly: the PAUSE (RESUME)
        // frame leaves then and takes effect upstream one cable latency (plus the response time) later.
        auto crossing = [&](double threshold) {
          const double before = is.ingress_prev[prio];
          if ((before - threshold) * (occ - threshold) >= 0 || occ == before)
            return t1;
          return t0 + dt * (threshold - before) / (occ - before);
        };
        if (occ > pfc.xoff.bytes() && !want_pause) {
          is.resume_pending &= static_cast<std::uint8_t>(~bit);
          if (!(il.paused_mask & bit)) {
            is.pause_pending |= bit;
            push(std::max(t1, crossing(pfc.xoff.bytes()) + il.latency + pfc.response_time.seconds()),
                 EventKind::PauseOn, in, static_cast<std::uint32_t>(prio));
          }
        } else if (occ < pfc.xon.bytes() && want_pause) {
          is.resume_pending |= bit;
          push(std::max(t1, crossing(pfc.xon.bytes()) + il.latency), EventKind::PauseOff, in,
               static_cast<std::uint32_t>(prio));
        }
      }
      if (busy)
        keep.push_back(in);
      else
        is.pfc_watched = false;
    }
    pfc_watch_.swap(keep);
  }

  // Flows whose last byte left the last queue end inside this step, at the time that byte left.
  for (std::size_t i = 0; i < fab_.size(); ++i) {
    FabricFlow& q = fab_[i];
    if (q.flow == kNone)
      continue;
    const Flow& fl = flows_[q.flow];
    if (q.injected < fl.bytes || q.delivered < fl.bytes * (1 - 1e-12))
      continue;
    double frac = 1;
    if (q.last_delivery > 0)
      frac = std::clamp((fl.bytes - (q.delivered - q.last_delivery)) / q.last_delivery, 0.0, 1.0);
    end_flow(q.flow, t0 + frac * dt);
  }
}

void Net::on_cnp(std::uint32_t f, std::uint32_t gen, double t)
{
  Flow& fl = flows_[f];
  if (!fl.active || fl.gen != gen || fl.fab == kNone)
    return;
  FabricFlow& q = fab_[fl.fab];
  if (!q.cc)
    return;
  q.rp.advance(cfg_.dcqcn, Seconds(t), Bytes(0));
  q.rp.on_cnp(cfg_.dcqcn, Seconds(t));
  if (q.injected >= fl.bytes)
    return; // all injected: it holds no share of its host links whatever its reaction point's rate
  fl.cap = q.rp.rate().bytes_per_sec();
  mark_flow_dirty(f);
}

void Net::set_pause(std::uint32_t l, int priority, bool on, double t)
{
  LinkState& ls = links_[l];
  LinkAux& a = aux_[l];
  const auto bit = static_cast<std::uint8_t>(1U << priority);
  LinkTotals& tot = report_.stats.links[l];
  if (on) {
    if (!(a.pause_pending & bit))
      return;
    a.pause_pending &= static_cast<std::uint8_t>(~bit);
    if (ls.paused_mask & bit)
      return;
    if (ls.paused_mask == 0) {
      a.pause_since = t;
      a.pause_mark = t;
    }
    ls.paused_mask |= bit;
    report_.stats.pause_events++;
  } else {
    if (!(a.resume_pending & bit))
      return;
    a.resume_pending &= static_cast<std::uint8_t>(~bit);
    a.pause_pending &= static_cast<std::uint8_t>(~bit);
    if (!(ls.paused_mask & bit))
      return;
    ls.paused_mask &= static_cast<std::uint8_t>(~bit);
    if (ls.paused_mask == 0) {
      tot.paused += t - a.pause_since;
      a.s_paused += t - std::max(a.pause_mark, sample_t_);
      a.pause_mark = t;
    }
  }
  touch(l);
  if (!ls.queued)
    mark_dirty(l);
}

} // namespace railyard::sim::fluid
