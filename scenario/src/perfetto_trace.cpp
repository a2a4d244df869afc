// Chrome trace JSON of a replay (replay.hpp): what Perfetto (ui.perfetto.dev) and chrome://tracing open.
#include "railyard/scenario/perfetto_trace.hpp"
#include "railyard/scenario/fluid_outputs.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <map>
#include <ostream>
#include <set>

namespace railyard::scenario {

using namespace railyard::sim; // the simulator this layer drives

namespace {

std::string json_string(const std::string& s)
{
  return nlohmann::json(s).dump();
}

// Microseconds with 3 decimals (nanoseconds): fixed text for equal times.
std::string us(double seconds)
{
  return fmt::format("{:.3f}", seconds * 1e6);
}

/// The process of the network's counter tracks (ranks are processes 0..N-1).
constexpr int kNetworkPid = 1 << 30;

std::string category(workloads::OpKind k)
{
  return std::string(workloads::to_string(k));
}

} // namespace

void write_chrome_trace(const ReplayResult& result, const workloads::Workload& w, std::ostream& out)
{
  out << "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&] {
    if (!first) out << ",\n";
    first = false;
  };
  std::map<int, std::set<workloads::StreamId>> streams;
  for (const auto& e : result.events)
    streams[e.rank].insert(e.stream);
  for (int r : result.traced_ranks) {
    sep();
    out << fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":{}}}}})", r,
                       json_string(fmt::format("rank {}", r)));
    sep();
    out << fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":{}}}}})", r, r);
    const auto& labels = w.graph_of(r).stream_labels();
    for (auto s : streams[r]) {
      std::string label = s == workloads::kUnordered ? "unordered" : fmt::format("stream {}", s);
      if (auto it = labels.find(s); it != labels.end()) label = it->second;
      sep();
      out << fmt::format(R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":{}}}}})", r, s,
                         json_string(label));
    }
  }
  for (const auto& e : result.events) {
    const workloads::RankGraph& g = w.graph_of(e.rank);
    const workloads::Op& op = g.op(e.op);
    std::string args = fmt::format(R"("op":{})", e.op);
    if (op.kind == workloads::OpKind::Compute && op.flops > 0) args += fmt::format(R"(,"flops":{})", op.flops);
    if (op.bytes.bytes() > 0) args += fmt::format(R"(,"bytes":{})", op.bytes.bytes());
    const int comm = w.communicator_of(e.rank, op);
    if (comm >= 0) args += fmt::format(R"(,"communicator":{})", json_string(w.communicators[comm].name));
    if (op.kind == workloads::OpKind::Send || op.kind == workloads::OpKind::Recv)
      args += fmt::format(R"(,"peer":{})", w.peer_global_rank(e.rank, op));
    sep();
    out << fmt::format(R"({{"ph":"X","name":{},"cat":"{}","pid":{},"tid":{},"ts":{},"dur":{},"args":{{{}}}}})",
                       json_string(g.name(e.op)), category(op.kind), e.rank, e.stream, us(e.start_s),
                       us(e.end_s - e.start_s), args);
  }
  // The network beside the ranks: a counter track per hottest link (fluid backend, links recorded), its utilisation
  // and queue per sampling interval; an interval with no sample (the link idle) reads 0.
  if (result.network && !result.network->links.empty()) {
    const FluidReport& net = *result.network;
    sep();
    out << fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"network: hottest links"}}}})",
                       kNetworkPid);
    sep();
    out << fmt::format(R"({{"ph":"M","name":"process_sort_index","pid":{},"args":{{"sort_index":-1}}}})", kNetworkPid);
    // One pass over the samples (in time order) for all the tracks: per tracked link, its name and the end of its
    // previous sample (-1 before the first).
    std::map<std::uint32_t, std::pair<std::string, double>> tracks;
    for (std::size_t l : hottest_links(net, kHottestLinks))
      tracks.emplace(static_cast<std::uint32_t>(l), std::make_pair(json_string(net.link_info[l].name), -1.0));
    auto counter = [&](const std::string& name, double t, double utilisation, double queue) {
      sep();
      out << fmt::format(R"({{"ph":"C","name":{},"pid":{},"ts":{},"args":{{"utilisation":{},"queue_kB":{}}}}})", name,
                         kNetworkPid, us(t), utilisation, queue / 1e3);
    };
    for (const LinkSample& s : net.links) {
      const auto it = tracks.find(s.link);
      if (it == tracks.end()) continue;
      auto& [name, idle_from] = it->second;
      if (idle_from >= 0 && s.time > idle_from * (1 + 1e-12)) counter(name, idle_from, 0, 0);
      counter(name, s.time, s.utilisation, s.max_queue);
      idle_from = s.time + s.interval;
    }
    for (const auto& [link, track] : tracks)
      if (track.second >= 0) counter(track.first, track.second, 0, 0);
  }
  out << "\n]}\n";
}

} // namespace railyard::scenario
