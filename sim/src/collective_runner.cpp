#include "railyard/sim/collective_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

namespace railyard::sim {

void execute_schedule(FlowNetwork& net, const models::Schedule& schedule, int rank, std::uint64_t tag_base)
{
  struct Channel {
    std::size_t step = 0;
    int pending = 0;
    bool in_overhead = false;
  };
  const int me = schedule.gpus[rank];
  std::vector<Channel> channels(schedule.channels.size());
  std::vector<RequestId> requests;
  std::vector<int> request_channel;

  // Posts the receives and sends of channel c's current step; steps without receives complete at once.
  auto begin_step = [&](int c) {
    Channel& ch = channels[c];
    const auto& steps = schedule.channels[c];
    while (ch.step < steps.size()) {
      const models::Step& st = steps[ch.step];
      const models::Pattern& p = schedule.patterns[st.pattern];
      const std::uint64_t tag = tag_base + static_cast<std::uint64_t>(c);
      for (int peer : p.recvs(rank)) {
        requests.push_back(net.irecv(me, schedule.gpus[peer], tag));
        request_channel.push_back(c);
        ++ch.pending;
      }
      for (int peer : p.sends(rank))
        net.isend(me, schedule.gpus[peer], tag, st.wire_bytes);
      if (ch.pending > 0)
        return;
      if (st.overhead.value() > 0) {
        requests.push_back(net.timer(net.now() + st.overhead));
        request_channel.push_back(c);
        ch.pending = 1;
        ch.in_overhead = true;
        return;
      }
      ++ch.step;
    }
  };

  for (int c = 0; c < static_cast<int>(channels.size()); ++c)
    begin_step(c);
  while (!requests.empty()) {
    const std::size_t i = net.wait_any(requests);
    const int c = request_channel[i];
    requests[i] = requests.back();
    requests.pop_back();
    request_channel[i] = request_channel.back();
    request_channel.pop_back();
    Channel& ch = channels[c];
    if (--ch.pending > 0)
      continue;
    const models::Step& st = schedule.channels[c][ch.step];
    if (!ch.in_overhead && st.overhead.value() > 0) {
      requests.push_back(net.timer(net.now() + st.overhead));
      request_channel.push_back(c);
      ch.pending = 1;
      ch.in_overhead = true;
      continue;
    }
    ch.in_overhead = false;
    ++ch.step;
    begin_step(c);
  }
}

std::vector<CollectiveTiming> run_schedules(Simulation& sim, const std::vector<models::Schedule>& schedules)
{
  const int gpus = sim.topology().num_gpus();
  // For every GPU, the collectives it takes part in and its communicator rank in each.
  std::vector<std::vector<std::pair<std::size_t, int>>> work(gpus);
  for (std::size_t i = 0; i < schedules.size(); ++i)
    for (int r = 0; r < schedules[i].nranks(); ++r)
      work.at(schedules[i].gpus[r]).emplace_back(i, r);

  std::vector<CollectiveTiming> timings(schedules.size(), {Seconds(std::numeric_limits<double>::infinity()), Seconds(0)});
  FlowNetwork& net = sim.network();
  for (int g = 0; g < gpus; ++g) {
    if (work[g].empty())
      continue;
    sim.spawn(g, fmt::format("gpu{}", g), [&net, &schedules, &timings, items = &work[g]] {
      for (const auto& [index, rank] : *items) {
        CollectiveTiming& t = timings[index];
        t.start = std::min(t.start, net.now());
        // Tags: 64 channels per collective index keep back-to-back collectives on separate connections.
        execute_schedule(net, schedules[index], rank, static_cast<std::uint64_t>(index) * 64);
        t.end = std::max(t.end, net.now());
      }
    });
  }
  sim.run();
  for (auto& t : timings)
    if (t.start.value() == std::numeric_limits<double>::infinity())
      t.start = Seconds(0);
  return timings;
}

} // namespace railyard::sim
