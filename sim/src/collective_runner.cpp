#include "railyard/sim/collective_runner.hpp"

#include <boost/container/small_vector.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <optional>

namespace railyard::sim {

namespace {

/// Where a rank's schedule posts its work: an actor's blocking FlowNetwork calls, or an event-driven client's.
class Poster {
public:
  virtual ~Poster() = default;
  virtual void send(int src, int dst, std::uint64_t tag, Bytes bytes) = 0;
  virtual void recv(int dst, int src, std::uint64_t tag, std::uint64_t cookie) = 0;
  virtual void timer(Seconds at, std::uint64_t cookie) = 0;
};

/// One rank's part of a schedule as a state machine, with the step timing lowering.hpp defines for `Step`: the
/// receives of step s+d are posted once those of step s have arrived and its sends are posted (d the channel's depth:
/// the steps NCCL's connection FIFO holds in flight); its sends go `overhead` after that arrival (the per-hop
/// latency), never before the sends of step s. The owner feeds it the completions of what it posted
/// (`on_complete(cookie)`); it is done when nothing it posted is pending (`pending() == 0`) — its sends may still be
/// in flight.
class RankSchedule {
public:
  RankSchedule(const models::Schedule& schedule, int rank, std::uint64_t tag_base, Poster& poster)
      : schedule_(schedule), rank_(rank), me_(schedule.gpus[rank]), tag_base_(tag_base), poster_(poster),
        channels_(schedule.channels.size())
  {
    for (std::size_t c = 0; c < channels_.size(); ++c)
      channels_[c].depth = static_cast<std::uint8_t>(std::clamp(schedule.depth_of(c), 1, kMaxDepth));
  }

  void start(double now)
  {
    for (int c = 0; c < static_cast<int>(channels_.size()); ++c) {
      Channel& ch = channels_[c];
      const std::size_t steps = schedule_.channels[c].size();
      if (steps == 0) continue;
      while (ch.posted < std::min<std::size_t>(ch.depth, steps))
        post_recvs(c, ch.posted++, now);
      sends_at(c, now + schedule_.launch.seconds(), now);
      advance(c, now);
    }
  }

  void on_complete(std::uint64_t cookie, double now)
  {
    --outstanding_;
    const int c = static_cast<int>(cookie >> 5);
    const auto kind = static_cast<Kind>(cookie & 3);
    const auto slot = static_cast<std::size_t>((cookie >> 2) & 7);
    Channel& ch = channels_[c];
    if (kind == Kind::FinishTimer) return;
    if (kind == Kind::SendTimer) {
      post_sends(c);
    } else if (--ch.pending[slot] == 0) {
      ch.arrived[slot] = now;
    }
    advance(c, now);
  }

  [[nodiscard]] int pending() const { return outstanding_; }

private:
  static constexpr int kMaxDepth = models::kNcclSteps;
  static_assert(kMaxDepth <= 8, "a receive's slot takes 3 bits of its cookie");
  enum class Kind : std::uint8_t { Recv = 0, SendTimer = 1, FinishTimer = 2 };
  struct Channel {
    std::size_t step = 0;   ///< the step whose receives it waits for and whose sends it posts
    std::size_t posted = 0; ///< steps whose receives are posted: step .. posted - 1, at most depth of them
    std::uint8_t depth = 1;
    bool sent = false; ///< sends of `step` posted
    // Per posted step, at slot step % depth: receives still in flight, whether it has any, when the last arrived
    // (or when they were posted, without receives).
    std::array<int, kMaxDepth> pending{};
    std::array<bool, kMaxDepth> has_recv{};
    std::array<double, kMaxDepth> arrived{};
    // This rank's part of the pattern of the last step when it is one receive and one unweighted send (a ring's
    // steps all share one pattern): read once instead of from the pattern's arrays at every step.
    std::uint32_t pattern = kNoPattern;
    bool one_to_one = false, inter = false;
    int recv_gpu = -1, send_gpu = -1;
  };
  static constexpr std::uint32_t kNoPattern = 0xffffffffU;

  /// Refreshes channel c's copy of its part of `st`'s pattern.
  Channel& peers_of(int c, const models::Step& st)
  {
    Channel& ch = channels_[c];
    if (ch.pattern != st.pattern) {
      const models::Pattern& p = schedule_.patterns[st.pattern];
      const auto recvs = p.recvs(rank_), sends = p.sends(rank_);
      ch.pattern = st.pattern;
      ch.one_to_one = recvs.size() == 1 && sends.size() == 1 && p.send_weight(rank_, 0) == 1.0;
      ch.inter = p.receives_inter_node(rank_);
      ch.recv_gpu = recvs.size() == 1 ? schedule_.gpus[recvs[0]] : -1;
      ch.send_gpu = sends.size() == 1 ? schedule_.gpus[sends[0]] : -1;
    }
    return ch;
  }

  static std::uint64_t cookie(int c, Kind k, std::size_t slot = 0)
  {
    return (static_cast<std::uint64_t>(c) << 5) | (static_cast<std::uint64_t>(slot) << 2) |
           static_cast<std::uint64_t>(k);
  }
  [[nodiscard]] std::uint64_t tag_of(int c) const { return tag_base_ + static_cast<std::uint64_t>(c); }

  /// Posts the receives of step s (connections match in FIFO order, so a receive posted early takes its step's send).
  void post_recvs(int c, std::size_t s, double now)
  {
    const models::Step& st = schedule_.channels[c][s];
    Channel& ch = peers_of(c, st);
    const std::size_t slot = s % ch.depth;
    ch.pending[slot] = 0;
    if (ch.one_to_one) {
      poster_.recv(me_, ch.recv_gpu, tag_of(c), cookie(c, Kind::Recv, slot));
      ++outstanding_;
      ++ch.pending[slot];
    } else {
      for (int peer : schedule_.patterns[st.pattern].recvs(rank_)) {
        poster_.recv(me_, schedule_.gpus[peer], tag_of(c), cookie(c, Kind::Recv, slot));
        ++outstanding_;
        ++ch.pending[slot];
      }
    }
    ch.has_recv[slot] = ch.pending[slot] > 0;
    ch.arrived[slot] = now;
  }

  void post_sends(int c)
  {
    const models::Step& st = schedule_.channels[c][channels_[c].step];
    Channel& ch = peers_of(c, st);
    if (ch.one_to_one) {
      poster_.send(me_, ch.send_gpu, tag_of(c), st.wire_bytes);
    } else {
      const models::Pattern& p = schedule_.patterns[st.pattern];
      const auto peers = p.sends(rank_);
      for (std::size_t i = 0; i < peers.size(); ++i)
        poster_.send(me_, schedule_.gpus[peers[i]], tag_of(c), st.wire_bytes * p.send_weight(rank_, i));
    }
    ch.sent = true;
  }

  void sends_at(int c, double at, double now)
  {
    channels_[c].sent = false;
    if (at > now) {
      poster_.timer(Seconds(at), cookie(c, Kind::SendTimer));
      ++outstanding_;
    } else {
      post_sends(c);
    }
  }

  [[nodiscard]] double overhead_of(int c, const models::Step& st)
  {
    const bool inter = st.overhead_inter && peers_of(c, st).inter;
    return (inter ? *st.overhead_inter : st.overhead).seconds();
  }

  // Moves channel c through every step that is complete (receives arrived, sends posted).
  void advance(int c, double now)
  {
    Channel& ch = channels_[c];
    const auto& steps = schedule_.channels[c];
    while (ch.step < steps.size() && ch.sent && ch.pending[ch.step % ch.depth] == 0) {
      const std::size_t slot = ch.step % ch.depth;
      const double o = ch.has_recv[slot] ? overhead_of(c, steps[ch.step]) : 0.0;
      const double next_sends = std::max(now, ch.arrived[slot] + o);
      ++ch.step;
      if (ch.step == steps.size()) {
        // What arrived last still has to be reduced or copied before the rank is done.
        if (next_sends > now) {
          poster_.timer(Seconds(next_sends), cookie(c, Kind::FinishTimer));
          ++outstanding_;
        }
        return;
      }
      if (ch.posted < steps.size()) post_recvs(c, ch.posted++, now); // into the slot the finished step freed
      sends_at(c, next_sends, now);
    }
  }

  const models::Schedule& schedule_;
  const int rank_, me_;
  const std::uint64_t tag_base_;
  Poster& poster_;
  /// Inline for the usual few channels: a rank's state is touched on every completion, so it should not cost a
  /// second cache miss.
  boost::container::small_vector<Channel, 2> channels_;
  int outstanding_ = 0; ///< receives and timers posted and not yet completed
};

/// An actor's posts: requests it then waits on with wait_any.
class ActorPoster final : public Poster {
public:
  explicit ActorPoster(FlowNetwork& net) : net_(net) {}
  void send(int src, int dst, std::uint64_t tag, Bytes bytes) override { net_.isend(src, dst, tag, bytes); }
  void recv(int dst, int src, std::uint64_t tag, std::uint64_t cookie) override
  {
    requests.push_back(net_.irecv(dst, src, tag));
    cookies.push_back(cookie);
  }
  void timer(Seconds at, std::uint64_t cookie) override
  {
    requests.push_back(net_.timer(at));
    cookies.push_back(cookie);
  }
  std::vector<RequestId> requests;
  std::vector<std::uint64_t> cookies;

private:
  FlowNetwork& net_;
};

} // namespace

void execute_schedule(FlowNetwork& net, const models::Schedule& schedule, int rank, std::uint64_t tag_base)
{
  ActorPoster poster(net);
  RankSchedule machine(schedule, rank, tag_base, poster);
  machine.start(net.now().seconds());
  while (!poster.requests.empty()) {
    const std::size_t i = net.wait_any(poster.requests);
    const std::uint64_t cookie = poster.cookies[i];
    poster.requests[i] = poster.requests.back();
    poster.requests.pop_back();
    poster.cookies[i] = poster.cookies.back();
    poster.cookies.pop_back();
    machine.on_complete(cookie, net.now().seconds());
  }
  // A rank is done with a collective when what it sent has left too, as an NCCL kernel ends only once its last
  // slot is written: a rank that only sends must not start its next collective before its data is out.
  net.wait_sends();
}

namespace {

/// One GPU as an event-driven client of the network: runs its collectives in order, each as a RankSchedule, and
/// starts the next when the previous one's receives, timers and sends are all done — the rules execute_schedule
/// follows in an actor, without an actor.
class GpuClient final : public FlowClient, public Poster {
public:
  GpuClient(FlowNetwork& net, const std::vector<models::Schedule>& schedules,
            const std::vector<std::uint64_t>& tag_base, std::vector<CollectiveTiming>& timings,
            const std::vector<std::pair<std::size_t, int>>& items)
      : net_(net), schedules_(schedules), tag_base_(tag_base), timings_(timings), items_(items),
        id_(net.add_client(*this))
  {
  }

  void start_next()
  {
    if (next_ == items_.size()) return;
    const auto [index, rank] = items_[next_];
    const double now = net_.now().seconds();
    CollectiveTiming& t = timings_[index];
    t.start = std::min(t.start, Seconds(now));
    t.last_start = std::max(t.last_start, Seconds(now));
    machine_.emplace(schedules_[index], rank, tag_base_[index], *this);
    machine_->start(now);
    if (machine_->pending() == 0) net_.client_watch_sends(id_);
  }

  void on_complete(std::uint64_t cookie) override
  {
    machine_->on_complete(cookie, net_.now().seconds());
    if (machine_->pending() == 0) net_.client_watch_sends(id_);
  }

  void on_sends_done() override
  {
    CollectiveTiming& t = timings_[items_[next_].first];
    t.end = std::max(t.end, net_.now());
    machine_.reset();
    ++next_;
    start_next();
  }

  void send(int src, int dst, std::uint64_t tag, Bytes bytes) override { net_.client_isend(id_, src, dst, tag, bytes); }
  void recv(int dst, int src, std::uint64_t tag, std::uint64_t cookie) override
  {
    net_.client_irecv(id_, dst, src, tag, cookie);
  }
  void timer(Seconds at, std::uint64_t cookie) override { net_.client_timer(id_, at, cookie); }

private:
  FlowNetwork& net_;
  const std::vector<models::Schedule>& schedules_;
  const std::vector<std::uint64_t>& tag_base_;
  std::vector<CollectiveTiming>& timings_;
  const std::vector<std::pair<std::size_t, int>>& items_;
  const std::uint32_t id_;
  std::size_t next_ = 0;
  std::optional<RankSchedule> machine_;
};

} // namespace

std::vector<CollectiveTiming> run_schedules(Simulation& sim, const std::vector<models::Schedule>& schedules,
                                            RankExecution execution)
{
  const int gpus = sim.topology().num_gpus();
  // For every GPU, the collectives it takes part in and its communicator rank in each.
  std::vector<std::vector<std::pair<std::size_t, int>>> work(gpus);
  for (std::size_t i = 0; i < schedules.size(); ++i)
    for (int r = 0; r < schedules[i].nranks(); ++r)
      work.at(schedules[i].gpus[r]).emplace_back(i, r);

  std::vector<CollectiveTiming> timings(schedules.size(),
                                        {Seconds(std::numeric_limits<double>::infinity()), Seconds(0)});
  // Connection tags: every collective gets its own range, one tag per channel, so back-to-back collectives never
  // share a connection.
  std::vector<std::uint64_t> tag_base(schedules.size(), 0);
  for (std::size_t i = 1; i < schedules.size(); ++i)
    tag_base[i] = tag_base[i - 1] + std::max<std::size_t>(1, schedules[i - 1].channels.size());
  FlowNetwork& net = sim.network();
  if (execution == RankExecution::Auto && net.supports_clients()) {
    // No actor per GPU: one actor starts every GPU's client and waits until the network has nothing left for them.
    std::vector<std::unique_ptr<GpuClient>> clients;
    for (int g = 0; g < gpus; ++g)
      if (!work[g].empty())
        clients.push_back(std::make_unique<GpuClient>(net, schedules, tag_base, timings, work[g]));
    if (!clients.empty()) {
      sim.spawn(0, "collectives", [&net, &clients] {
        for (auto& c : clients) c->start_next();
        net.wait_clients();
      });
      sim.run();
    }
    for (auto& t : timings)
      if (t.start.seconds() == std::numeric_limits<double>::infinity()) t.start = Seconds(0);
    return timings;
  }
  for (int g = 0; g < gpus; ++g) {
    if (work[g].empty()) continue;
    sim.spawn(g, fmt::format("gpu{}", g), [&net, &schedules, &timings, &tag_base, items = &work[g]] {
      for (const auto& [index, rank] : *items) {
        CollectiveTiming& t = timings[index];
        t.start = std::min(t.start, net.now());
        t.last_start = std::max(t.last_start, net.now());
        execute_schedule(net, schedules[index], rank, tag_base[index]);
        t.end = std::max(t.end, net.now());
      }
    });
  }
  sim.run();
  for (auto& t : timings)
    if (t.start.seconds() == std::numeric_limits<double>::infinity()) t.start = Seconds(0);
  return timings;
}

} // namespace railyard::sim
