#include "railyard/sim/collective_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace railyard::sim {

void execute_schedule(FlowNetwork& net, const models::Schedule& schedule, int rank, std::uint64_t tag_base)
{
  // Step timing as lowering.hpp defines it: the receives of step s+1 are posted once those of step s have arrived;
  // its sends go `overhead` after that arrival (the per-hop latency), never before the sends of step s.
  struct Channel {
    std::size_t step = 0;
    int pending = 0;   ///< receives of `step` still in flight
    bool sent = false; ///< sends of `step` posted
    bool has_recv = false;
    double arrived = 0; ///< when the last receive of `step` arrived (or the step began, without receives)
  };
  enum class Kind : char { Recv, SendTimer, FinishTimer };
  const int me = schedule.gpus[rank];
  std::vector<Channel> channels(schedule.channels.size());
  std::vector<RequestId> requests;
  std::vector<int> request_channel;
  std::vector<Kind> request_kind;
  auto add_request = [&](RequestId id, int c, Kind k) {
    requests.push_back(id);
    request_channel.push_back(c);
    request_kind.push_back(k);
  };
  auto tag_of = [&](int c) { return tag_base + static_cast<std::uint64_t>(c); };

  auto post_recvs = [&](int c) {
    Channel& ch = channels[c];
    const models::Step& st = schedule.channels[c][ch.step];
    ch.pending = 0;
    ch.sent = false;
    for (int peer : schedule.patterns[st.pattern].recvs(rank)) {
      add_request(net.irecv(me, schedule.gpus[peer], tag_of(c)), c, Kind::Recv);
      ++ch.pending;
    }
    ch.has_recv = ch.pending > 0;
    ch.arrived = net.now().value();
  };
  auto post_sends = [&](int c) {
    Channel& ch = channels[c];
    const models::Step& st = schedule.channels[c][ch.step];
    const models::Pattern& p = schedule.patterns[st.pattern];
    const auto peers = p.sends(rank);
    for (std::size_t i = 0; i < peers.size(); ++i)
      net.isend(me, schedule.gpus[peers[i]], tag_of(c), st.wire_bytes * p.send_weight(rank, i));
    ch.sent = true;
  };
  auto sends_at = [&](int c, double at) {
    if (at > net.now().value())
      add_request(net.timer(Seconds(at)), c, Kind::SendTimer);
    else
      post_sends(c);
  };
  auto overhead_of = [&](const models::Step& st) {
    const bool inter = st.overhead_inter && schedule.patterns[st.pattern].receives_inter_node(rank);
    return (inter ? *st.overhead_inter : st.overhead).value();
  };
  // Moves channel c through every step that is complete (receives arrived, sends posted).
  auto advance = [&](int c) {
    Channel& ch = channels[c];
    const auto& steps = schedule.channels[c];
    while (ch.step < steps.size() && ch.pending == 0 && ch.sent) {
      const double o = ch.has_recv ? overhead_of(steps[ch.step]) : 0.0;
      const double next_sends = std::max(net.now().value(), ch.arrived + o);
      ++ch.step;
      if (ch.step == steps.size()) {
        // What arrived last still has to be reduced or copied before the rank is done.
        if (next_sends > net.now().value()) add_request(net.timer(Seconds(next_sends)), c, Kind::FinishTimer);
        return;
      }
      post_recvs(c);
      sends_at(c, next_sends);
    }
  };

  const double start = net.now().value();
  for (int c = 0; c < static_cast<int>(channels.size()); ++c) {
    if (schedule.channels[c].empty()) continue;
    post_recvs(c);
    sends_at(c, start + schedule.launch.value());
    advance(c);
  }
  while (!requests.empty()) {
    const std::size_t i = net.wait_any(requests);
    const int c = request_channel[i];
    const Kind kind = request_kind[i];
    requests[i] = requests.back();
    requests.pop_back();
    request_channel[i] = request_channel.back();
    request_channel.pop_back();
    request_kind[i] = request_kind.back();
    request_kind.pop_back();
    Channel& ch = channels[c];
    if (kind == Kind::FinishTimer) continue;
    if (kind == Kind::SendTimer) {
      post_sends(c);
    } else if (--ch.pending == 0) {
      ch.arrived = net.now().value();
    }
    advance(c);
  }
  // A rank is done with a collective when what it sent has left too, as an NCCL kernel ends only once its last
  // slot is written: a rank that only sends must not start its next collective before its data is out.
  net.wait_sends();
}

std::vector<CollectiveTiming> run_schedules(Simulation& sim, const std::vector<models::Schedule>& schedules)
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
    if (t.start.value() == std::numeric_limits<double>::infinity()) t.start = Seconds(0);
  return timings;
}

} // namespace railyard::sim
