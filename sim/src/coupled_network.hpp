// The network of `communication: coupled` (sim/README.md, "Collective-level flows"): each channel of a lowered
// collective is ONE fluid flow over the multiset of links its steps use. A ring channel is a pipeline (NCCL's FIFO
// slots fill, every edge carries data at the rate of the slowest), so all its edges share one rate r, and on a link
// that k of its edges cross it consumes k x r. Rates are max-min fair with such multiplicities: progressive filling
// where a flow's demand on a link is its multiplicity there (a per-link byte share of the flow's reference bytes, for
// patterns whose edges carry different amounts). Solves are incremental (solve()): only flows on the links the
// changes touch are re-filled, and the set grows only where a rate changed next to other flows. Flows end on the
// caller's event calendar: the network posts each flow's end date, a version outdates earlier posts when its rate
// changes.
#pragma once

#include "railyard/common/slot_pool.hpp"
#include "railyard/sim/fluid.hpp"
#include "railyard/topologies/topology.hpp"

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <vector>

namespace railyard::sim::coupled {

/// A flow's demand on one link: it moves `k` x its reference bytes there (k edges of equal bytes cross the link).
struct Load {
  std::uint32_t link = 0;
  double k = 0;
};

class Network {
public:
  /// `post(flow, version, date)`: put the flow's end on the calendar; an end whose version is no longer the flow's is
  /// stale (end() ignores it).
  using PostEnd = std::function<void(std::uint32_t flow, std::uint32_t version, double at)>;

  Network(const topo::Topology& topology, bool record_links, double sample_interval_s);

  /// A flow of `ref_bytes` (its size: at rate r it ends after ref_bytes / r) that consumes k x r on each link of its
  /// loads and never runs faster than `cap` (bytes per second; infinity: no cap), entering the network at `t`. Rates
  /// are solved at the next solve(). Returns its id.
  std::uint32_t add(double t, std::span<const Load> loads, double ref_bytes, double cap, std::uint64_t owner);
  /// Whether flows were added or removed since the last solve.
  [[nodiscard]] bool dirty() const { return !dirty_links_.empty() || !dirty_flows_.empty(); }
  /// Re-solves the rates the changes since the last solve can move (incrementally: see solve() in the .cpp), and
  /// posts the end of every flow whose rate changed.
  void solve(double t, const PostEnd& post);
  /// A posted end has come: if it is current, the flow leaves the network and its owner is returned through
  /// `owner` (true); a stale end returns false.
  bool end(std::uint32_t flow, std::uint32_t version, double t, std::uint64_t& owner);
  /// Integrates the link statistics up to `t` (the end of the run) and closes the last samples.
  void finish(double t);

  /// Max-min rates (bytes per second of reference bytes) of a set of flows alone on the network, by the same
  /// progressive filling as solve(): for a collective's time alone (the congestion factor's denominator).
  std::vector<double> rates_alone(const std::vector<std::vector<Load>>& flows, const std::vector<double>& caps) const;

  /// Link totals and samples, as the fluid backend reports them (no queues: max_queue, marks and pauses are 0).
  [[nodiscard]] FluidReport take_report();

private:
  struct FlowRec {
    std::vector<Load> loads;
    std::vector<std::uint32_t> pos; ///< position in the load's link list, per load
    double remaining = 0, rate = 0, last_t = 0, cap = 0;
    std::uint64_t owner = 0;
    std::uint32_t version = 0, mark = 0;
    bool active = false, fresh = false; ///< fresh: added since the last solve, no rate yet
    double new_rate = 0, solve_cap = 0; ///< solve()'s scratch
  };
  struct LinkRec {
    double capacity = 0;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> flows; ///< (flow, its load index)
    std::uint32_t mark = 0, local = 0; ///< solver scratch: component epoch, index in the component
    bool dirty = false, in_r = false;
    // statistics
    double rate = 0, last_t = 0; ///< bytes per second on the link now, since last_t
    double bytes = 0;
    std::uint64_t flows_total = 0;
    std::uint32_t max_flows = 0;
    // the open sample
    std::uint64_t bin = 0;
    double bin_bytes = 0;
    std::uint32_t bin_max_flows = 0;
  };

  void integrate(std::uint32_t link, double t);
  void mark_dirty(std::uint32_t link);

  const topo::Topology& topo_;
  bool record_links_;
  double interval_;
  std::vector<LinkRec> links_;
  SlotPool<FlowRec> flows_;
  std::vector<std::uint32_t> dirty_links_, dirty_flows_;
  std::vector<std::uint32_t> comp_links_, comp_flows_, r_links_;
  std::uint32_t epoch_ = 0;
  std::uint64_t flows_started_ = 0;
  double first_start_ = -1, last_end_ = 0;
  std::vector<LinkSample> samples_;
};

} // namespace railyard::sim::coupled
