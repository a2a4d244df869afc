// The analytical collective models of the replay: a lowered schedule timed alone on the fabric, and a profile's fitted
// collective cost (replay.hpp).
#include "railyard/sim/replay.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <vector>

namespace railyard::sim {

Seconds isolated_collective_time(const models::Schedule& s, const topo::Topology& t, bool pxn, std::uint64_t seed)
{
  std::size_t rounds = 0;
  for (const auto& ch : s.channels)
    rounds = std::max(rounds, ch.size());
  // No step (a call of zero bytes): nothing is launched, as NCCL returns at once for count 0 and the collective
  // runner posts nothing.
  if (rounds == 0) return Seconds(0);
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
  double total = s.launch.seconds();
  for (std::size_t j = 0; j < rounds; ++j) {
    sig.clear();
    for (const auto& ch : s.channels)
      if (j < ch.size())
        sig.emplace_back(ch[j].pattern, ch[j].wire_bytes.bytes(), ch[j].overhead.seconds(),
                         ch[j].overhead_inter ? ch[j].overhead_inter->seconds() : -1.0);
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
          overhead = std::max(overhead, st.overhead_inter && p.receives_inter_node(r) ? st.overhead_inter->seconds()
                                                                                      : st.overhead.seconds());
      for (int r = 0; r < p.nranks(); ++r) {
        const auto peers = p.sends(r);
        for (std::size_t i = 0; i < peers.size(); ++i) {
          const int src = s.gpus[r], dst = s.gpus[peers[i]];
          if (src == dst) continue;
          Flow f{t.route(src, dst, c, seed, pxn), st.wire_bytes.bytes() * p.send_weight(r, i), 0};
          f.latency = t.path_latency(f.path).seconds();
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
        rate = std::min(rate, t.link(l).bandwidth.bytes_per_sec() / load[l]);
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

namespace {

std::string entry_name(const calibration::CollectiveFit& f)
{
  return fmt::format("{} {}/{} over {}, {} ranks on {} node{} (line {})", models::to_string(f.collective),
                     calibration::algorithm_name(f.algorithm), calibration::protocol_name(f.protocol),
                     calibration::to_string(f.link), f.nranks, f.nodes, f.nodes == 1 ? "" : "s", f.line);
}

} // namespace

ProfileCollectiveCost profile_collective_cost(const calibration::Profile& profile, const models::CollectiveCall& call,
                                              const topo::Topology& topology)
{
  ProfileCollectiveCost out;
  std::set<int> nodes;
  for (int g : call.ranks)
    nodes.insert(topology.node_of(g));
  out.nodes = static_cast<int>(nodes.size());
  const int nranks = static_cast<int>(call.ranks.size());
  const auto link = out.nodes == 1 ? calibration::LinkKind::NvLink : calibration::LinkKind::Network;
  const std::string what =
      fmt::format("{} {}/{} over {}, {} ranks on {} node{}", models::to_string(call.kind),
                  calibration::algorithm_name(call.algorithm), calibration::protocol_name(call.protocol),
                  calibration::to_string(link), nranks, out.nodes, out.nodes == 1 ? "" : "s");

  // Exactly the measured shape: a fit is not carried to another rank or node count, whose latency and per-link
  // bandwidth the measurement says nothing about.
  const calibration::CollectiveFit* exact = nullptr;
  const calibration::CollectiveFit* chosen_by_nccl = nullptr;
  std::vector<std::string> near; // same collective and link, other shapes or algorithms, for the reason
  for (const auto& f : profile.collectives) {
    if (f.collective != call.kind || f.link != link) continue;
    if (f.nranks != nranks || f.nodes != out.nodes) {
      near.push_back(fmt::format("{}/{} with {} ranks on {} node{}", calibration::algorithm_name(f.algorithm),
                                 calibration::protocol_name(f.protocol), f.nranks, f.nodes, f.nodes == 1 ? "" : "s"));
      continue;
    }
    if (f.algorithm == call.algorithm && f.protocol == call.protocol)
      exact = &f;
    else if (!f.algorithm && !f.protocol)
      chosen_by_nccl = &f;
    else
      near.push_back(fmt::format("{}/{} with {} ranks on {} node{}", calibration::algorithm_name(f.algorithm),
                                 calibration::protocol_name(f.protocol), f.nranks, f.nodes, f.nodes == 1 ? "" : "s"));
  }
  out.fit = exact ? exact : chosen_by_nccl;
  if (!out.fit) {
    std::string have;
    for (const auto& n : near)
      have += (have.empty() ? "" : "; ") + n;
    out.reason = fmt::format("the profile has no entry for {}{}", what,
                             have.empty() ? std::string(" nor for this collective over this link")
                                          : fmt::format(" (it has {})", have));
    return out;
  }
  out.time = out.fit->time(call.bytes, nranks);
  out.extrapolated =
      out.fit->measured_max.bytes() > 0 && (call.bytes < out.fit->measured_min || call.bytes > out.fit->measured_max);
  out.reason = exact ? fmt::format("entry {}: the algorithm and protocol NCCL's model chose", entry_name(*out.fit))
                     : fmt::format("entry {}: NCCL's own choice as measured; the profile has no {}/{} entry for this "
                                   "shape",
                                   entry_name(*out.fit), calibration::algorithm_name(call.algorithm),
                                   calibration::protocol_name(call.protocol));
  if (out.extrapolated)
    out.reason +=
        fmt::format("; {} lies outside the measured sizes {}..{}, the piece extrapolates", format_bytes(call.bytes),
                    format_bytes(out.fit->measured_min), format_bytes(out.fit->measured_max));
  return out;
}

} // namespace railyard::sim
