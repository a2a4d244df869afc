// The network of `communication: coupled` (sim/README.md, "Collective-level flows"): each channel of a lowered
// collective is ONE fluid flow over the multiset of links its steps use. A ring channel is a pipeline (NCCL's FIFO
// slots fill, every edge carries data at the rate of the slowest), so all its edges share one rate r, and on a link
// that k of its edges cross it consumes k x r. Rates are max-min fair with such multiplicities: progressive filling
// where a flow's demand on a link is its multiplicity there (a per-link byte share of the flow's reference bytes, for
// patterns whose edges carry different amounts). Solves are incremental (solve()): only flows on the links the
// changes touch are re-filled, and the set grows only where a rate changed next to other flows. Flows end on the
// caller's event calendar: the network posts each flow's end date, a version outdates earlier posts when its rate
// changes.
//
// With DCQCN or PFC on (FluidConfig::queues()), switch egress ports become fluid queues (coupled_queues.cpp): each
// edge QP of a flow is a lane with its own path and reaction point, the flow runs at its max-min share over the host
// links unless a lane's DCQCN rate holds it back, and queues, ECN marks and PFC pauses are integrated only for the
// lanes that cross a port offered more than its capacity, holding bytes or paused.
#pragma once

#include "railyard/common/slot_pool.hpp"
#include "railyard/models/cc/dcqcn.hpp"
#include "railyard/sim/event_calendar.hpp"
#include "railyard/sim/fluid.hpp"
#include "railyard/topologies/topology.hpp"

#include <array>
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

/// One QP (or sprayed path) of an edge of a coupled flow, for the queue model: its path and the bytes it moves per
/// reference byte of the flow.
struct LaneSpec {
  std::vector<std::uint32_t> links;
  double w = 0;
  std::uint32_t qps = 1; ///< alike QPs it stands for (channels merged as copies, QPs of one path)
  /// Bytes its sender may hold back while its DCQCN rate is below the flow's (its share of NCCL's connection buffer):
  /// a ring's edge lags the others by at most its FIFO before it holds the whole ring back.
  double window = 0;
};

class Network {
public:
  /// `post(flow, version, date)`: put the flow's end on the calendar; an end whose version is no longer the flow's is
  /// stale (end() ignores it).
  using PostEnd = std::function<void(std::uint32_t flow, std::uint32_t version, double at)>;

  /// `config`: sampling (record_links, sample_interval) and, when config.queues(), the queue model (cc, dcqcn, pfc,
  /// mtu, time_step, adaptive_steps); `seed` draws the ECN marks' CNP thresholds.
  Network(const topo::Topology& topology, const FluidConfig& config, std::uint64_t seed);

  /// A flow of `ref_bytes` (its size: at rate r it ends after ref_bytes / r) that consumes k x r on each link of its
  /// loads and never runs faster than `cap` (bytes per second; infinity: no cap), entering the network at `t`. Rates
  /// are solved at the next solve(). With queues on, `lanes` (its edge QPs) replace `loads`: hops before a lane's
  /// first switch queue share max-min, the queue model moves the bytes from there. Returns its id.
  std::uint32_t add(double t, std::span<const Load> loads, double ref_bytes, double cap, std::uint64_t owner,
                    std::span<const LaneSpec> lanes = {});
  /// Whether flows were added or removed since the last solve.
  [[nodiscard]] bool dirty() const { return !dirty_links_.empty() || !dirty_flows_.empty(); }
  /// Re-solves the rates the changes since the last solve can move (incrementally: see solve() in the .cpp), and
  /// posts the end of every flow whose rate changed.
  void solve(double t, const PostEnd& post);
  /// A posted end has come: if it is current and the flow's bytes all arrived, the flow leaves the network, its owner
  /// is returned through `owner` and the date its last byte arrived through `at` (true). A stale end returns false;
  /// so does the end of a flow's injection while the queue model still holds its bytes (its end is posted again once
  /// they arrive).
  bool end(std::uint32_t flow, std::uint32_t version, double t, std::uint64_t& owner, double& at);
  /// Whether the queue model runs (DCQCN or PFC on).
  [[nodiscard]] bool queues() const { return queues_; }
  /// The queue model: the next date it must be advanced to (a step's end, a CNP or a PAUSE taking effect, a lane's own
  /// date); infinity when nothing changes until flows come or go.
  [[nodiscard]] double next_time();
  /// The queue model: integrates queues and processes its events up to `t` (re-solving rates at the dates before `t`
  /// where they change, posting ends through `post`; changes at `t` itself wait for the caller's solve(), after
  /// every other change at `t`). Call before any add(), end() or solve() at `t`.
  void advance(double t, const PostEnd& post);
  /// Integrates the link statistics up to `t` (the end of the run) and closes the last samples.
  void finish(double t);

  /// Max-min rates (bytes per second of reference bytes) of a set of flows alone on the network, by the same
  /// progressive filling as solve(): for a collective's time alone (the congestion factor's denominator).
  std::vector<double> rates_alone(const std::vector<std::vector<Load>>& flows, const std::vector<double>& caps) const;

  /// Link totals and samples, as the fluid backend reports them (no queues: max_queue, marks and pauses are 0).
  [[nodiscard]] FluidReport take_report();

private:
  struct FlowRec {
    std::vector<Load> loads;        ///< links whose max-min share it takes
    std::vector<std::uint32_t> pos; ///< position in the load's link list, per load
    std::vector<Load> extra;        ///< queues on: links at and after its lanes' first queue (statistics only)
    std::vector<std::uint32_t> lanes;
    double remaining = 0, rate = 0, last_t = 0, cap = 0;
    double ref = 0, base_cap = 0, end_at = 0;
    std::uint64_t owner = 0;
    std::uint32_t version = 0, mark = 0;
    std::uint32_t paused = 0;               ///< lanes whose host link is paused: the flow stops
    std::uint32_t drain_pos = 0;            ///< draining: its lanes before this one are done
    bool active = false, fresh = false;     ///< fresh: added since the last solve, no rate yet
    bool draining = false, drained = false; ///< injected everything / the queues delivered everything
    bool drain_listed = false;              ///< on drain_check_
    double new_rate = 0, solve_cap = 0;     ///< solve()'s scratch
  };
  static constexpr int kMaxQueues = 8;
  /// An edge QP of a flow crossing switch queues (coupled_queues.cpp).
  struct LaneRec {
    std::uint32_t flow = 0;
    double w = 0, total = 0, injected = 0, delivered = 0, last_delivery = 0, latency = 0;
    double window = 0, t = 0; ///< t: injected, delivered and the reaction point hold up to this date
    double offer = 0;         ///< bytes per second it sends now (its ports' offered load counts it)
    std::uint32_t qps = 1, gen = 0, ver = 0;
    std::uint32_t hot = 0;   ///< hot ports on its path: stepped while any
    std::uint32_t group = 0; ///< stepped: the group it steps with
    std::uint32_t gpos = 0;  ///< stepped: its place in the group's lanes
    std::uint32_t seen = 0;  ///< split_group()'s scratch
    double step_t0 = 0;      ///< stepped: when its last step began (its last byte's date is interpolated in it)
    std::uint8_t nq = 0;
    bool active = false, full = false; ///< full: its window is full, the flow runs at its DCQCN rate
    bool stepped = false;              ///< integrated in steps (else it keeps its own dates: pass mode)
    std::array<std::uint32_t, kMaxQueues> port{}, ingress{}, pos{};
    std::array<double, kMaxQueues> backlog{}, arriving{};
    std::uint32_t host_pos = 0;
    models::cc::ReactionPoint rp;
    double hazard = 0, threshold = 1, last_cnp = 0;
    double hazard_rate = 0; ///< hazard gained per second over its last step
    /// Over its step under way: the dates between which every packet it sent left marked (a port above K_max);
    /// marked_off <= marked_on: none.
    double marked_on = 0, marked_off = 0;
    std::uint64_t rng = 0;
    /// Catching up (its window holds bytes and its DCQCN rate is above its share): what it would send beyond its share
    /// (DCQCN rate - share), else 0; its host link grants it at most its level of that (catch_rate()).
    double want = 0;
    std::uint32_t cpos = 0; ///< catching up: its place in its host link's `catching`
  };
  /// Queue-model state of a link: as a switch egress port, and as the ingress of the switch after it (PFC).
  struct QLink {
    std::vector<std::pair<std::uint32_t, std::uint8_t>> lanes; ///< (lane, its queue index) queued here
    std::vector<std::uint32_t> host_lanes;                     ///< lanes whose first queue this (host) link feeds
    /// Host link: its lanes catching up. What their flows' shares leave of its capacity is shared among them by
    /// max-min on what each wants beyond its share: each gets min(want, level) (infinity: all they want).
    std::vector<std::uint32_t> catching;
    double level = std::numeric_limits<double>::infinity();
    bool catch_listed = false; ///< on catch_dirty_
    double offer_sum = 0;      ///< host link: what its lanes send now (bytes per second)
    bool offer_listed = false; ///< on offer_touched_
    double queue = 0, in_rate = 0, headroom = 0;
    double stepped_offer = 0;   ///< what its stepped lanes offer (the rest passes through first)
    std::uint32_t stepped = 0;  ///< its stepped lanes
    std::uint32_t hstepped = 0; ///< PFC on: stepped lanes whose host link this is (its counter joins them)
    std::uint32_t group = 0;    ///< the group of its stepped lanes (or of its PFC watch), while it has either
    std::uint32_t seen = 0;     ///< split_group()'s scratch
    double ingress = 0, ingress_prev = 0, excess = 0;
    double slope = 0; ///< bytes per second its queue moved by over its group's last step
    double max_queue = 0, marks = 0, max_ingress = 0;
    int stage = 0;
    bool queued = false, overloaded = false, watched = false;
    bool hot = false, heat_listed = false; ///< hot: offered more than its capacity, holding bytes or paused
    bool paused = false, pause_pending = false, resume_pending = false;
    std::uint64_t pause_events = 0;
  };
  /// Stepped lanes joined by the ports they cross (and, with PFC, by their host link's counter): nothing but the
  /// max-min rates of their flows couples two groups, so each steps on its own clock, cut only by its own lanes' CNPs
  /// and its own links' PAUSEs. A lane that becomes stepped joins the group of its ports (merging the groups it
  /// bridges, each brought to that date first); a group whose lanes left is split into its parts at its next step.
  struct Group {
    double t = 0;   ///< its lanes, ports and counters are integrated up to t
    double end = 0; ///< its step under way ends then
    std::uint32_t ver = 0;
    std::vector<std::uint32_t> lanes; ///< stepped lanes
    std::vector<std::uint32_t> order; ///< the ports its lanes cross, by (stage, id): upstream first
    std::vector<std::uint32_t> watch; ///< PFC: ingress links with a nonzero counter or a pause state
    bool live = false, split_due = false;
  };
  enum class QEventKind : std::uint8_t { Cnp, PauseOn, PauseOff };
  struct QEvent {
    std::uint32_t a, gen;
    QEventKind kind;
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
    double bin_max_queue = 0, bin_marks = 0, bin_paused = 0;
    bool paused = false; ///< PFC: its sender is paused (integrate() counts the time)
    double paused_total = 0;
  };

  void integrate(std::uint32_t link, double t);
  void close_bin(std::uint32_t link, double start, double len);
  void mark_dirty(std::uint32_t link);
  /// solve()'s shortcut when only caps changed, of flows that share no link: false (nothing done) otherwise.
  bool solve_alone(double t, const PostEnd& post);
  /// A solve's new rate for a flow at `t`: set_rate(), then its end posted anew (an earlier post is outdated).
  void apply_rate(std::uint32_t f, double r, double t, const PostEnd& post);
  /// Sets a flow's rate at `t`: its bytes so far, its links' rates and its lanes' ports' offered rates follow.
  void set_rate(std::uint32_t f, double r, double t);
  /// Leaves the max-min links (its injection ended, or it ended).
  void detach(std::uint32_t f, double t);
  void release(std::uint32_t f, double t);

  // coupled_queues.cpp
  void init_queues();
  /// Its last byte entered the network: the lanes' residue joins their first queue (or arrives, with none held).
  void finish_injection(std::uint32_t f, double t);
  /// Pass mode: brings a lane to `t` at its flow's current rate and its reaction point's (no queue holds a byte).
  void sync_lane(std::uint32_t lane, double t);
  /// Pass mode: the next date the lane changes on its own (a DCQCN event, its window filling, its last byte sent).
  void schedule_lane(std::uint32_t lane);
  /// From `t`, the first of: its reaction point's next timer, byte-counter or held-decrease event, its window filling
  /// or emptying, its last byte sent (a draining flow's lane). `idle_waits`: a reaction point whose rate does not
  /// matter yet (at or above its share, window empty) gives no date (schedule_lane(); a step's horizon takes them all).
  [[nodiscard]] double lane_next_change(const LaneRec& lr, double t, bool idle_waits) const;
  /// The lanes' sends over a step or a sync: what the flow injected for them, at most the DCQCN rate x dt.
  [[nodiscard]] double lane_send(const LaneRec& lr, double t1, double dt) const;
  /// After a send of `sent` bytes over [t0, t1]: the reaction point's events in it (each at its date; t0 = t1: all at
  /// t1), then the window's state and the reaction point's new rate reach the flow's cap.
  void lane_after_send(std::uint32_t lane, double t0, double t1, double sent);
  /// The noted flows whose lanes have all delivered their bytes end (posted at t).
  void check_drains(double t, const PostEnd& post);
  /// A lane of the flow sent or delivered: if it drains, check_drains() looks at it.
  void note_drain(std::uint32_t f);
  [[nodiscard]] static bool lane_done(const LaneRec& lr);
  /// Its ports' offered load follows its send rate; whether it catches up (and how much it wants) follows its state.
  void update_offer(std::uint32_t lane);
  /// The most it may send per second now: its DCQCN rate, or while that is above its share (catching up), its share
  /// plus what its host link grants it (the sum of its lanes' sends never exceeds the host link's capacity).
  [[nodiscard]] double catch_rate(const LaneRec& lr) const;
  /// Its new want (0: not catching up): it joins or leaves its host link's catching lanes, which settle() looks at.
  void set_want(std::uint32_t lane, double want);
  /// The link's flows' shares moved: if lanes catch up behind it, settle() shares out what is left again.
  void touch_catch(std::uint32_t link);
  /// The host links whose catching lanes changed share their spare capacity again at `t` (their pass-mode lanes
  /// brought to `t` at the old grant first), then the ports whose offers changed become hot or cold: until neither
  /// moves.
  void settle(double t);
  /// Around a flow's change of rate at `t` in pass mode: its lanes catch up at the old rate, then look ahead.
  void begin_rate_change(std::uint32_t f, double t);
  void end_rate_change(std::uint32_t f);
  /// The ports whose state may have changed (offered load, queue, pause) become hot or cold at `t`: the lanes of a hot
  /// port are stepped (brought to `t` first), a lane with no hot port left goes back to its own dates.
  void process_heat(double t);
  void list_heat(std::uint32_t port);
  void set_stepped(std::uint32_t lane, bool on, double t);
  void add_lanes(std::uint32_t f, double t, std::span<const LaneSpec> lanes);
  void remove_lanes(std::uint32_t f);
  [[nodiscard]] double injected_ref(const FlowRec& fr, double t) const;
  /// Bytes of the lane its flow injected by `t` and it has not sent yet (what its window holds).
  [[nodiscard]] double lane_lag(const LaneRec& lr, double t) const;
  /// Bytes per second its flow injects into it now.
  [[nodiscard]] double lane_share(const LaneRec& lr) const;
  void refresh_cap(std::uint32_t f);
  void set_offered(std::uint32_t port, double delta);
  /// Integrates a group's lanes and ports from its clock to t1.
  void step(std::uint32_t g, double t1);
  /// The group of the link's stepped lanes or PFC watch, or kNoGroup.
  [[nodiscard]] std::uint32_t group_of(std::uint32_t link) const;
  [[nodiscard]] std::uint32_t new_group(double t);
  /// Brings the group to t (a shorter step) and starts its next step there.
  void cut_group(std::uint32_t g, double t);
  /// Merges group `o` into `g` at t (both brought to t first).
  void merge_groups(std::uint32_t g, std::uint32_t o, double t);
  /// Its lanes may fall apart (some left): the parts become groups of their own, on its clock. Returns the new ones.
  void split_group(std::uint32_t g, std::vector<std::uint32_t>& parts);
  /// Its next step: one time_step, or longer while nothing its lanes and ports hold changes within it (see the .cpp);
  /// posted on group_dates_.
  void schedule_group(std::uint32_t g);
  /// The date before which nothing a group's lanes, ports or counters hold changes beyond what one step integrates.
  [[nodiscard]] double group_horizon(const Group& G) const;
  /// Its step under way ends at `end` (an earlier post is void).
  void post_group(std::uint32_t g, double end);
  void drop_group(std::uint32_t g);
  /// Drops the group if it holds no lane and watches no PFC counter; whether it did.
  bool drop_if_idle(std::uint32_t g);
  /// The order of the ports a step serves: up*/down* (so a step's departures feed the next hop in the same step), by
  /// (stage, id).
  [[nodiscard]] auto port_before() const
  {
    return [this](std::uint32_t a, std::uint32_t b) {
      return q_[a].stage != q_[b].stage ? q_[a].stage < q_[b].stage : a < b;
    };
  }
  void order_insert(std::uint32_t g, std::uint32_t port);
  void order_erase(std::uint32_t g, std::uint32_t port);
  /// A group's step has come: its parts step to its end and start the next.
  void run_group(std::uint32_t g);
  void queue_event(const QEvent& e, double t);
  void set_pause(std::uint32_t link, bool on, double t);

  const topo::Topology& topo_;
  FluidConfig cfg_;
  std::uint64_t seed_;
  bool record_links_;
  double interval_;
  bool queues_;
  std::vector<LinkRec> links_;
  SlotPool<FlowRec> flows_;
  std::vector<std::uint32_t> dirty_links_, dirty_flows_;
  std::vector<std::uint32_t> comp_links_, comp_flows_, r_links_, alone_;
  std::uint32_t epoch_ = 0;
  std::uint64_t flows_started_ = 0;
  double first_start_ = -1, last_end_ = 0;
  std::vector<LinkSample> samples_;

  // queue model
  std::vector<QLink> q_;
  SlotPool<LaneRec> lanes_;
  std::uint64_t lanes_started_ = 0, lanes_live_ = 0;
  EventCalendar<QEvent> qevents_;
  /// Draining flows (their injection ended, their queues still hold bytes) one of whose lanes sent or delivered since
  /// check_drains() last looked.
  std::vector<std::uint32_t> drain_check_;
  double step_ = 0; ///< a group's step (time_step, or PFC's bound)
  static constexpr std::uint32_t kNoGroup = std::numeric_limits<std::uint32_t>::max();
  SlotPool<Group> groups_;
  /// Each live group's step end (date, group, version), earliest first; stale versions are skipped.
  struct GroupDate {
    double t;
    std::uint32_t g, ver;
    bool operator>(const GroupDate& o) const { return t != o.t ? t > o.t : g > o.g; }
  };
  std::vector<GroupDate> group_dates_;
  std::vector<std::uint32_t> bfs_, parts_;
  std::uint32_t seen_epoch_ = 0;
  /// A lane of a draining flow left the steps: its flow may be done, check_drains() looks at this date.
  double drain_due_ = std::numeric_limits<double>::infinity();
  /// Pass mode: each lane's next date (date, lane, version), earliest first; stale versions are skipped.
  struct LaneDate {
    double t;
    std::uint32_t lane, ver;
    bool operator>(const LaneDate& o) const { return t != o.t ? t > o.t : lane > o.lane; }
  };
  std::vector<LaneDate> lane_dates_;                       ///< the dates of the lanes not stepped
  std::vector<std::uint32_t> heat_;                        ///< ports to look at in process_heat()
  std::vector<std::uint32_t> catch_dirty_, catch_scratch_; ///< host links whose catching lanes changed
  std::vector<double> wants_;                              ///< settle()'s scratch
  std::vector<std::uint32_t> offer_touched_; ///< host links whose lanes' sends changed (settle() takes their peak)
  double host_peak_ = 0;                     ///< FluidStats::host_peak_load
  std::uint64_t cnps_ = 0, decreases_ = 0;
  double overflow_ = 0;
};

} // namespace railyard::sim::coupled
