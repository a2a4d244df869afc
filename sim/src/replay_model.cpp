// The analytical collective model of the replay: a lowered schedule timed alone on the fabric (replay.hpp).
#include "railyard/sim/replay.hpp"

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

namespace railyard::sim {

Seconds isolated_collective_time(const models::Schedule& s, const topo::Topology& t, bool pxn, std::uint64_t seed)
{
  std::size_t rounds = 0;
  for (const auto& ch : s.channels)
    rounds = std::max(rounds, ch.size());
  // Rounds repeat (a ring's chunk loops): the time of a round depends only on each channel's pattern, bytes and
  // overhead.
  using Signature = std::vector<std::tuple<std::uint32_t, double, double, double>>;
  std::map<Signature, double> memo;
  std::vector<int> load(t.num_links(), 0);
  struct Flow {
    topo::Path path;
    double bytes;
    double latency;
  };
  std::vector<Flow> flows;
  Signature sig;
  double total = s.launch.value();
  for (std::size_t j = 0; j < rounds; ++j) {
    sig.clear();
    for (const auto& ch : s.channels)
      if (j < ch.size())
        sig.emplace_back(ch[j].pattern, ch[j].wire_bytes.value(), ch[j].overhead.value(),
                         ch[j].overhead_inter ? ch[j].overhead_inter->value() : -1.0);
      else
        sig.emplace_back(~std::uint32_t{0}, 0.0, 0.0, 0.0);
    if (auto it = memo.find(sig); it != memo.end()) {
      total += it->second;
      continue;
    }
    flows.clear();
    double overhead = 0;
    for (std::size_t c = 0; c < s.channels.size(); ++c) {
      if (j >= s.channels[c].size()) continue;
      const models::Step& st = s.channels[c][j];
      const models::Pattern& p = s.patterns[st.pattern];
      // The per-hop latency a rank pays after its receives: the inter-node one where it receives across nodes.
      for (int r = 0; r < p.nranks(); ++r)
        if (!p.recvs(r).empty())
          overhead = std::max(overhead, st.overhead_inter && p.receives_inter_node(r) ? st.overhead_inter->value()
                                                                                      : st.overhead.value());
      for (int r = 0; r < p.nranks(); ++r) {
        const auto peers = p.sends(r);
        for (std::size_t i = 0; i < peers.size(); ++i) {
          const int src = s.gpus[r], dst = s.gpus[peers[i]];
          if (src == dst) continue;
          Flow f{t.route(src, dst, c, seed, pxn), st.wire_bytes.value() * p.send_weight(r, i), 0};
          f.latency = t.path_latency(f.path).value();
          for (auto l : f.path)
            ++load[l];
          flows.push_back(std::move(f));
        }
      }
    }
    double round = 0;
    for (const Flow& f : flows) {
      double rate = std::numeric_limits<double>::infinity();
      for (auto l : f.path)
        rate = std::min(rate, t.link(l).bandwidth.value() / load[l]);
      round = std::max(round, f.latency + (f.bytes > 0 ? f.bytes / rate : 0.0));
    }
    for (const Flow& f : flows)
      for (auto l : f.path)
        load[l] = 0;
    round += overhead;
    memo.emplace(sig, round);
    total += round;
  }
  return Seconds(total);
}

} // namespace railyard::sim
