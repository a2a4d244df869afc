// The congestion examples (examples/incast.yaml, alltoall_fat_tree_2to1.yaml, alltoall_rail_optimized.yaml,
// ring_ecmp_1qp.yaml, ring_ecmp_4qp.yaml, dcqcn_off.yaml, dcqcn_on.yaml) and one scenario written here (two senders
// into one port: ECN marks along the queue's path) through the real binary. Every expected number is derived here from
// the scenario's parameters (written out below, with the example they mirror) and from the laws
// the outputs must obey: a bottleneck cannot carry more than its capacity, max-min shares one link equally, PFC loses
// nothing, a ring step waits for its most loaded link. Nothing is pasted from the simulator's output.
#include "cli_support.hpp"

#include "railyard/common/csv.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace fs = std::filesystem;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
/// 400 Gb/s, the NIC and fabric link rate of every example here, in bytes per second.
constexpr double kLinkBps = 400e9 / 8;
/// Default latencies of topologies/README.md (no example overrides them): PCIe GPU-NIC 0.5 us, NIC-leaf 1 us,
/// switch-switch 0.6 us. A GPU-to-GPU path through a spine crosses each twice.
constexpr double kSwitchHopLatency = 0.6e-6;
constexpr double kSpinePathLatency = 2 * 0.5e-6 + 2 * 1e-6 + 2 * kSwitchHopLatency;
/// PFC's default response time (docs/congestion.md): one 4096 B MTU at 400 Gb/s.
constexpr double kPfcResponse = 4096 / kLinkBps;
/// The queue model's default step (docs/congestion.md), which PFC shortens to at most a cable latency + response.
constexpr double kTimeStep = 1e-6;

using railyard::test::read_file;
using railyard::test::run_cli;
using railyard::test::CliResult;

/// A CSV file with a header line, read as RFC 4180 (common/csv.hpp: CRLF, quoted fields).
class Csv {
public:
  explicit Csv(const fs::path& p)
  {
    const auto records = railyard::parse_csv(read_file(p), p.string());
    if (records.empty()) return;
    const auto& names = records.front().fields;
    for (std::size_t i = 0; i < names.size(); ++i)
      column_[names[i]] = i;
    for (std::size_t r = 1; r < records.size(); ++r)
      rows_.push_back(records[r].fields);
  }
  [[nodiscard]] std::size_t size() const { return rows_.size(); }
  [[nodiscard]] const std::string& at(std::size_t row, const std::string& col) const
  {
    return rows_.at(row).at(column_.at(col));
  }
  [[nodiscard]] double num(std::size_t row, const std::string& col) const { return std::stod(at(row, col)); }

private:
  std::map<std::string, std::size_t> column_;
  std::vector<std::vector<std::string>> rows_;
};

std::vector<std::string> words(const std::string& s)
{
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w)
    out.push_back(w);
  return out;
}

/// One `railyard run` output folder.
struct RunOutput {
  fs::path dir;
  nlohmann::json summary;
  [[nodiscard]] Csv flows() const { return Csv(dir / "flows.csv"); }
  [[nodiscard]] Csv links() const { return Csv(dir / "links.csv"); }
  [[nodiscard]] const nlohmann::json& net() const { return summary.at("network"); }
  [[nodiscard]] double time() const { return summary.at("collectives").at(0).at("time_s").get<double>(); }

  /// Link id -> name, for every link that appears in links.csv.
  [[nodiscard]] std::map<std::string, std::string> link_names() const
  {
    std::map<std::string, std::string> out;
    const Csv l = links();
    for (std::size_t i = 0; i < l.size(); ++i)
      out[l.at(i, "link")] = l.at(i, "name");
    return out;
  }
  /// Per link name, a column of links.csv summed over the samples.
  [[nodiscard]] std::map<std::string, double> link_sum(const std::string& col) const
  {
    std::map<std::string, double> out;
    const Csv l = links();
    for (std::size_t i = 0; i < l.size(); ++i)
      out[l.at(i, "name")] += l.num(i, col);
    return out;
  }
  [[nodiscard]] std::map<std::string, double> link_max(const std::string& col) const
  {
    std::map<std::string, double> out;
    const Csv l = links();
    for (std::size_t i = 0; i < l.size(); ++i)
      out[l.at(i, "name")] = std::max(out[l.at(i, "name")], l.num(i, col));
    return out;
  }
};

/// A scratch folder for this process, removed at exit.
const fs::path& scratch()
{
  struct Dir {
    fs::path path = railyard::test::temp_dir("congestion");
    ~Dir() { fs::remove_all(path); }
  };
  static const Dir dir;
  return dir.path;
}

std::string example(const std::string& name)
{
  return std::string(RAILYARD_SOURCE_DIR) + "/examples/" + name + ".yaml";
}

RunOutput run_scenario(const std::string& scenario, const std::string& out_name)
{
  RunOutput r;
  r.dir = scratch() / out_name;
  const CliResult c = run_cli("run " + scenario + " --out " + r.dir.string());
  EXPECT_EQ(c.exit_code, 0) << scenario << ":\n" << c.output;
  r.summary = nlohmann::json::parse(read_file(r.dir / "summary.json"));
  return r;
}

/// Each example runs once per process; the tests share the outputs.
const RunOutput& example_run(const std::string& name)
{
  static std::map<std::string, RunOutput> runs;
  auto it = runs.find(name);
  if (it == runs.end()) it = runs.emplace(name, run_scenario(example(name), name)).first;
  return it->second;
}

void expect_complete_and_lossless(const RunOutput& r)
{
  EXPECT_EQ(r.summary.at("status"), "complete");
  const auto& f = r.summary.at("flows");
  EXPECT_EQ(f.at("sent"), f.at("received"));
  EXPECT_DOUBLE_EQ(f.at("wire_bytes_sent").get<double>(), f.at("wire_bytes_received").get<double>());
  EXPECT_EQ(r.net().at("overflow_bytes").get<double>(), 0.0)
      << "bytes beyond XOFF + headroom: a switch would drop them";
}

// ---------------------------------------------------------------------------------------------------------------
// examples/incast.yaml: GPUs 8, 9, 16, 17, 24, 25, 32, 33 (two on each of nodes 1-4) send 4 MiB each to GPU 0 over
// their own NICs; GPU 0's NIC nic0.0 hangs off leaf0 (fat tree, leaf_downlinks 8: NIC i on leaf i / 8). One spine, one
// 3.2 Tb/s uplink per leaf (8 NICs' worth): every pair has one path, and the only port offered more than its capacity
// is leaf0->nic0.0 (8 x 50 GB/s into 50 GB/s). dcqcn_off.yaml and dcqcn_on.yaml use the same fabric and incast.

constexpr int kIncastSenders = 8;
constexpr double kIncastBytes = 4 * kMiB;
const std::set<int> kIncastSrc{8, 9, 16, 17, 24, 25, 32, 33};

/// The flows of GPU 0's incast: all start together (one group of sends, each sender in its own p2p round and the
/// rounds spread over 8 p2p channels) and number kIncastSenders.
std::vector<std::size_t> incast_rows(const Csv& flows, double& start, double& last_end)
{
  std::vector<std::size_t> rows;
  start = 1e300;
  last_end = 0;
  for (std::size_t i = 0; i < flows.size(); ++i)
    if (flows.at(i, "dst") == "0") {
      rows.push_back(i);
      start = std::min(start, flows.num(i, "start_s"));
      last_end = std::max(last_end, flows.num(i, "end_s"));
    }
  return rows;
}

/// The names of a flow's links, in path order.
std::vector<std::string> path_names(const RunOutput& r, const Csv& flows, std::size_t row)
{
  const auto names = r.link_names();
  std::vector<std::string> out;
  for (const auto& id : words(flows.at(row, "links")))
    out.push_back(names.at(id));
  return out;
}

/// Without congestion control a sender injects at its NIC's line rate B (the GPU's PCIe link, 64 GB/s, is faster)
/// whenever PFC does not pause its NIC; DCQCN only lowers that. So a flow of S bytes needs S / B of unpaused time to
/// leave its GPU, and its last byte arrives no earlier than start + S / B + (time its NIC was paused) + path latency:
/// every second its NIC spends paused is a second added to its completion.
void expect_paused_time_adds_to_completion(const RunOutput& r, const Csv& flows, std::size_t row)
{
  const auto path = path_names(r, flows, row);
  const auto paused = r.link_sum("pause_s");
  ASSERT_EQ(path.at(1).rfind("nic", 0), 0U) << "GPU -> NIC -> leaf: the NIC's port is the second link";
  const auto it = paused.find(path.at(1));
  const double nic_paused = it == paused.end() ? 0.0 : it->second;
  EXPECT_GE(flows.num(row, "fct_s"), flows.num(row, "bytes") / kLinkBps + nic_paused + kSpinePathLatency - 1e-9)
      << "flow from GPU " << flows.at(row, "src") << ", NIC " << path.at(1) << " paused " << nic_paused << " s";
}

TEST(IncastExample, AllBytesArriveThroughTheLastHopPortWithMarksCnpsAndLosslessPauses)
{
  const RunOutput& r = example_run("incast");
  expect_complete_and_lossless(r);
  const Csv flows = r.flows();
  double start = 0, last_end = 0;
  const auto rows = incast_rows(flows, start, last_end);
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kIncastSenders));
  double bytes = 0;
  std::set<int> senders;
  std::set<std::string> on_paths;
  for (std::size_t i : rows) {
    senders.insert(std::stoi(flows.at(i, "src")));
    bytes += flows.num(i, "bytes");
    EXPECT_DOUBLE_EQ(flows.num(i, "start_s"), start) << "an incast needs every sender at once";
    for (const auto& name : path_names(r, flows, i))
      on_paths.insert(name);
    expect_paused_time_adds_to_completion(r, flows, i);
  }
  EXPECT_EQ(senders, kIncastSrc);
  EXPECT_DOUBLE_EQ(bytes, kIncastSenders * kIncastBytes);
  EXPECT_DOUBLE_EQ(r.summary.at("flows").at("wire_bytes_received").get<double>(), kIncastSenders * kIncastBytes);

  // The last-hop port carries every byte and never more than its capacity, so the incast needs at least N S / B; the
  // receiver's NIC-to-GPU link after it carries the same bytes.
  const double bound = kIncastSenders * kIncastBytes / kLinkBps;
  EXPECT_GE(last_end - start, bound * (1 - 1e-9));
  const auto link_bytes = r.link_sum("bytes");
  EXPECT_NEAR(link_bytes.at("leaf0->nic0.0"), kIncastSenders * kIncastBytes, 1.0);
  EXPECT_NEAR(link_bytes.at("nic0.0->gpu0.0"), kIncastSenders * kIncastBytes, 1.0);
  for (const auto& [name, u] : r.link_max("utilisation"))
    EXPECT_LE(u, 1 + 1e-9) << name;

  // Queues, marks, CNPs and pauses, all on the incast's paths.
  const auto& n = r.net();
  EXPECT_EQ(n.at("cc"), "dcqcn");
  EXPECT_EQ(n.at("dcqcn").at("preset"), "connectx");
  EXPECT_TRUE(on_paths.count(n.at("max_queue_link").get<std::string>())) << n.at("max_queue_link");
  // leaf0's only ingress port for GPU 0's traffic is the spine's, and nic0.0's queue is the only one it feeds here:
  // that counter IS the queue, so a PAUSE of the spine port means the queue passed XOFF, above k_min.
  const double xoff = n.at("pfc").at("xoff_bytes").get<double>();
  const double k_min = n.at("dcqcn").at("k_min_bytes").get<double>();
  ASSERT_LT(k_min, xoff);
  const auto paused = r.link_sum("pause_s");
  ASSERT_TRUE(paused.count("spine0->leaf0"));
  EXPECT_GT(paused.at("spine0->leaf0"), 0) << "8 x 50 GB/s into 50 GB/s: the queue reaches XOFF within a microsecond";
  EXPECT_GE(r.link_max("max_queue_bytes").at("leaf0->nic0.0"), xoff);
  EXPECT_GT(n.at("ecn_marks").get<double>(), 0) << "RED marks above k_min";
  EXPECT_GT(n.at("cnps").get<std::uint64_t>(), 0U);
  EXPECT_GT(n.at("rate_decreases").get<std::uint64_t>(), 0U);
  EXPECT_GT(n.at("pause_events").get<std::uint64_t>(), 0U);
}

// summary.json's hottest links: the incast's last-hop port leads, having carried all N x S bytes, at utilisation
// N S / (B x span), span being flows.csv's first start to last end; the list is sorted, at most ten long, and each
// entry's pause time and deepest queue are links.csv's.
TEST(IncastExample, TheHottestLinkIsTheLastHopPortAtItsUtilisationOverTheSpan)
{
  const RunOutput& r = example_run("incast");
  const Csv flows = r.flows();
  double first = 1e300, last = 0;
  for (std::size_t i = 0; i < flows.size(); ++i) {
    first = std::min(first, flows.num(i, "start_s"));
    last = std::max(last, flows.num(i, "end_s"));
  }
  const auto& n = r.net();
  const double span = last - first;
  EXPECT_NEAR(n.at("span_s").get<double>(), span, 1e-15);
  const auto& hot = n.at("hottest_links");
  ASSERT_FALSE(hot.empty());
  EXPECT_LE(hot.size(), 10U);
  EXPECT_EQ(hot.at(0).at("name"), "leaf0->nic0.0");
  EXPECT_DOUBLE_EQ(hot.at(0).at("bytes").get<double>(), kIncastSenders * kIncastBytes);
  EXPECT_NEAR(hot.at(0).at("utilisation").get<double>(), kIncastSenders * kIncastBytes / (kLinkBps * span), 1e-12);
  const auto paused = r.link_sum("pause_s");
  const auto queues = r.link_max("max_queue_bytes");
  for (std::size_t i = 0; i < hot.size(); ++i) {
    const std::string name = hot.at(i).at("name");
    if (i > 0) {
      EXPECT_LE(hot.at(i).at("utilisation").get<double>(), hot.at(i - 1).at("utilisation").get<double>());
    }
    EXPECT_NE(hot.at(i).at("kind"), "nvlink");
    EXPECT_NE(hot.at(i).at("kind"), "pcie");
    EXPECT_NEAR(hot.at(i).at("pause_s").get<double>(), paused.count(name) ? paused.at(name) : 0.0, 1e-12) << name;
    EXPECT_NEAR(hot.at(i).at("max_queue_bytes").get<double>(), queues.count(name) ? queues.at(name) : 0.0, 1e-6)
        << name;
  }
}

TEST(IncastExample, WithoutCongestionControlEveryFlowGetsAnEqualShareOfTheBottleneck)
{
  // The same scenario with `cc: none` and no PFC: max-min gives each of the N flows B / N at the last-hop port (its
  // only shared link), so every flow completes in N S / B plus the path latency.
  std::istringstream in(read_file(example("incast")));
  std::string text, line;
  while (std::getline(in, line)) {
    if (line.rfind("  cc:", 0) == 0 || line.rfind("  dcqcn:", 0) == 0 || line.rfind("  pfc:", 0) == 0) continue;
    text += line + "\n";
    if (line == "  backend: fluid") text += "  cc: none\n";
  }
  const fs::path file = scratch() / "incast_maxmin.yaml";
  std::ofstream(file) << text;
  const RunOutput r = run_scenario(file.string(), "incast_maxmin");
  expect_complete_and_lossless(r);
  EXPECT_EQ(r.net().at("cc"), "none");
  EXPECT_EQ(r.net().at("pfc"), false);
  EXPECT_EQ(r.net().at("max_queue_bytes").get<double>(), 0.0);
  const Csv flows = r.flows();
  double start = 0, last_end = 0;
  const auto rows = incast_rows(flows, start, last_end);
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kIncastSenders));
  const double expected = kIncastSenders * kIncastBytes / kLinkBps + kSpinePathLatency;
  for (std::size_t i : rows) {
    EXPECT_EQ(flows.at(i, "hops"), "6") << "GPU, NIC, leaf, spine, leaf, NIC, GPU";
    EXPECT_NEAR(flows.num(i, "fct_s"), expected, 1e-3 * expected) << "flow from GPU " << flows.at(i, "src");
  }
}

TEST(EcnMarking, TwoSendersIntoOnePortAreMarkedAlongTheQueuesPath)
{
  // Two GPUs on the incast's leaf send S bytes each to a third at their NICs' line rate C, so the leaf's port to the
  // receiver's NIC (the only queue) grows at 2C - C = C for S / C, to S, then drains at C: its queue passes every
  // level q twice while C departs, and the packets leaving carry RED's probability p(q) of that moment. Marks =
  // 2 / MTU x integral of p(q) dq from 0 to S = 2 / MTU x (p_max (K_max - K_min) / 2 + (S - K_max)) for S > K_max.
  // S = 7 C time_step puts K_max inside a step on the way up and on the way down (at 5.33 and 8.67 of the 14 steps),
  // where the mean of a step's two ends would give p = 0.505 instead of its path's 0.670 (2 x 3.0 marks fewer, -10%).
  // min_decrease_factor 1 keeps the CNPs from cutting the rates, so the queue keeps that shape.
  constexpr double kNicBps = 300e9 / 8, kMtu = 4096, kKmin = 5e3, kKmax = 200e3, kPmax = 0.01;
  const double bytes = 7 * kNicBps * kTimeStep;
  std::ostringstream text;
  text << "name: two_into_one\nseed: 1\n"
       << "cluster:\n  kind: fat_tree\n  nodes: 3\n  gpus_per_node: 1\n  nic: {bandwidth: 300 Gb/s}\n"
       << "  fabric: {leaf_downlinks: 8, link_bandwidth: 300 Gb/s}\n"
       << "network:\n  backend: fluid\n  cc: dcqcn\n"
       << "  dcqcn: {preset: sigcomm2015, k_min: 5 KB, k_max: 200 KB, p_max: 0.01, min_decrease_factor: 1}\n"
       << "  pfc: {enabled: false}\n"
       << "collectives:\n  - group:\n"
       << "      - {op: send, size: " << bytes << " B, from: 1, to: 0}\n"
       << "      - {op: send, size: " << bytes << " B, from: 2, to: 0}\n";
  const fs::path file = scratch() / "two_into_one.yaml";
  {
    std::ofstream out(file);
    out << text.str();
    ASSERT_TRUE(out.good()) << file;
  }
  const RunOutput r = run_scenario(file.string(), "two_into_one");
  expect_complete_and_lossless(r);
  EXPECT_EQ(r.net().at("max_queue_link"), "leaf0->nic0.0");
  EXPECT_NEAR(r.net().at("max_queue_bytes").get<double>(), bytes, 1e-9 * bytes);
  const double marks = 2 / kMtu * (kPmax * (kKmax - kKmin) / 2 + (bytes - kKmax));
  EXPECT_NEAR(r.net().at("ecn_marks").get<double>(), marks, 1e-9 * marks);
  // About 15 expected marks per flow inside one CNP interval (50 us): one CNP each.
  EXPECT_EQ(r.net().at("cnps").get<int>(), 2);
  const Csv flows = r.flows();
  ASSERT_EQ(flows.size(), 2U);
  for (std::size_t i = 0; i < flows.size(); ++i) {
    EXPECT_EQ(flows.num(i, "bytes"), bytes);
    EXPECT_NEAR(flows.num(i, "end_s") - flows.num(i, "start_s"), 2 * bytes / kNicBps, 1e-12) << "2S through C";
  }
}

// ---------------------------------------------------------------------------------------------------------------
// examples/alltoall_fat_tree_2to1.yaml and alltoall_rail_optimized.yaml: 4 nodes x 8 GPUs, alltoall of 32 MiB per GPU,
// so 1 MiB from every GPU to every other.

constexpr int kA2aNodes = 4, kA2aGpusPerNode = 8, kA2aGpus = kA2aNodes * kA2aGpusPerNode;
constexpr double kA2aPiece = 32 * kMiB / kA2aGpus;

TEST(AlltoallExamples, FatTreeIsBoundByItsBisectionAndSlowerThanRailOptimized)
{
  const RunOutput& fat = example_run("alltoall_fat_tree_2to1");
  const RunOutput& rail = example_run("alltoall_rail_optimized");
  expect_complete_and_lossless(fat);
  expect_complete_and_lossless(rail);

  // Fat tree: leaf_downlinks 8 puts one node on each leaf; oversubscription 2 leaves ceil(8 / 2) = 4 uplinks of
  // 400 Gb/s. Every byte between GPUs under different leaves crosses one uplink of its source leaf.
  const int gpus_per_leaf = 8;
  const int uplinks = (8 + 2 - 1) / 2;
  const double leaf_out_bytes = gpus_per_leaf * (kA2aGpus - gpus_per_leaf) * kA2aPiece;
  const double bisection_bound = leaf_out_bytes / (uplinks * kLinkBps);
  EXPECT_GE(fat.time(), bisection_bound * (1 - 1e-9));
  double up_bytes = 0;
  for (const auto& [name, b] : fat.link_sum("bytes"))
    if (name.rfind("leaf", 0) == 0 && name.find("->spine") != std::string::npos) up_bytes += b;
  EXPECT_NEAR(up_bytes, kA2aNodes * leaf_out_bytes, 1e-6 * kA2aNodes * leaf_out_bytes)
      << "every cross-leaf byte crosses exactly one uplink";

  // Any fabric: a node's 8 GPUs send 24 MiB each off the node through its 8 NICs.
  const double nic_bound = kA2aGpusPerNode * (kA2aGpus - kA2aGpusPerNode) * kA2aPiece / (kA2aGpusPerNode * kLinkBps);
  EXPECT_GE(rail.time(), nic_bound * (1 - 1e-9));
  EXPECT_GE(fat.time(), nic_bound * (1 - 1e-9));

  // Rail-optimized with all 4 nodes in one scalable unit (leaf_downlinks 4): PXN brings every piece to the GPU on
  // its destination's rail first, so no byte needs a spine.
  // links.csv lists every link that carried a byte.
  int spine_links = 0;
  for (const auto& [name, b] : rail.link_sum("bytes"))
    spine_links += name.find("spine") != std::string::npos;
  EXPECT_EQ(spine_links, 0);
  EXPECT_EQ(rail.net().at("ecmp_balance").at("switches"), 0);

  // The bisection bound is twice the NIC bound here (4 uplinks for 8 NICs, and every off-node byte leaves the leaf),
  // so a rail-optimized fabric that comes near its NIC bound beats the fat tree.
  EXPECT_GT(fat.time(), rail.time());
}

// ---------------------------------------------------------------------------------------------------------------
// examples/ring_ecmp_1qp.yaml and ring_ecmp_4qp.yaml: ring all-reduce of 128 MiB over 32 GPUs (4 nodes x 8, one node
// per leaf, 8 spines), 8 channels, per-QP ECMP, 1 or 4 QPs per connection.

constexpr int kRingRanks = 32, kRingChannels = 8;
constexpr double kRingBytes = 128 * kMiB;

/// The load of the most loaded network link, in whole connections: a link that carries k of the QPs, each holding
/// 1 / q of its connection's bytes, moves k / q connections' worth. Paths are fixed per QP (per_qp ECMP) and every
/// ring step uses the same connections, so the distinct QPs per link over the run are the QPs on it at once.
struct RingLoad {
  double connections = 0;          ///< max over links between NICs and switches or switches of k / q
  std::size_t switch_port_qps = 0; ///< max over switch egress ports of k
};

RingLoad ring_load(const RunOutput& r, int qps)
{
  const auto names = r.link_names();
  std::map<std::string, std::set<std::tuple<std::string, std::string, std::string, std::string>>> qps_on;
  const Csv flows = r.flows();
  for (std::size_t i = 0; i < flows.size(); ++i)
    for (const auto& id : words(flows.at(i, "links"))) {
      const std::string& name = names.at(id);
      if (name.find("leaf") == std::string::npos && name.find("spine") == std::string::npos)
        continue; // NVLink and PCIe: 450 and 64 GB/s, never the ring's bottleneck next to 50 GB/s NICs
      qps_on[name].emplace(flows.at(i, "src"), flows.at(i, "dst"), flows.at(i, "tag"), flows.at(i, "qp"));
    }
  RingLoad load;
  for (const auto& [name, set] : qps_on) {
    load.connections = std::max(load.connections, static_cast<double>(set.size()) / qps);
    if (name.rfind("leaf", 0) == 0 || name.rfind("spine", 0) == 0)
      load.switch_port_qps = std::max(load.switch_port_qps, set.size());
  }
  return load;
}

TEST(RingEcmpExamples, TimeFollowsTheMostLoadedLinkAndFourQpsSpreadTheLoad)
{
  const RunOutput& one = example_run("ring_ecmp_1qp");
  const RunOutput& four = example_run("ring_ecmp_4qp");
  expect_complete_and_lossless(one);
  expect_complete_and_lossless(four);
  EXPECT_EQ(one.net().at("qps_per_connection"), 1);
  EXPECT_EQ(four.net().at("qps_per_connection"), 4);
  const RingLoad l1 = ring_load(one, 1), l4 = ring_load(four, 4);
  // The summary's collision count is the same maximum, read from the simulator's own link counters.
  EXPECT_EQ(one.net().at("ecmp_balance").at("max_flows_on_a_fabric_link").get<std::size_t>(), l1.switch_port_qps);
  EXPECT_EQ(four.net().at("ecmp_balance").at("max_flows_on_a_fabric_link").get<std::size_t>(), l4.switch_port_qps);
  // 8 connections leave every leaf over 8 uplinks: at least one connection per link, more where QPs collide.
  EXPECT_GE(l1.connections, 1.0);
  EXPECT_GE(l4.connections, 1.0);

  // Ring all-reduce: 2 (n - 1) steps, each moving one chunk of S / (n C) over every connection of every channel at
  // once. On the most loaded link, max-min gives each of its k QPs B / k, so a QP's chunk / q takes chunk L / B with
  // L = k / q, and the step waits for it. Per-step latencies and NCCL's per-hop costs are the same in both runs.
  const double steps = 2.0 * (kRingRanks - 1);
  const double chunk = kRingBytes / (kRingRanks * kRingChannels);
  EXPECT_GE(one.time(), steps * chunk * l1.connections / kLinkBps);
  EXPECT_GE(four.time(), steps * chunk * l4.connections / kLinkBps);
  const double predicted_gain = steps * chunk * (l1.connections - l4.connections) / kLinkBps;
  EXPECT_NEAR(one.time() - four.time(), predicted_gain, std::max(0.05 * std::abs(predicted_gain), 0.01 * one.time()))
      << "loads " << l1.connections << " and " << l4.connections << " connections on the busiest link";

  // What the examples are there to show, for their seed: with 1 QP some uplink draws more connections than with 4
  // QPs (a different hash draw could tie them, and then this says the example no longer shows it).
  EXPECT_GT(l1.connections, l4.connections);
  EXPECT_LT(four.time(), one.time());
}

// ---------------------------------------------------------------------------------------------------------------
// examples/dcqcn_off.yaml and dcqcn_on.yaml: examples/incast.yaml's incast (same one-spine fabric) plus a victim,
// GPU 10 sending 32 MiB to GPU 1 (leaf0's port to nic0.1, which no incast flow uses). PFC on in both.

constexpr double kVictimBytes = 32 * kMiB;

std::size_t victim_row(const Csv& flows)
{
  for (std::size_t i = 0; i < flows.size(); ++i)
    if (flows.at(i, "src") == "10" && flows.at(i, "dst") == "1") return i;
  ADD_FAILURE() << "no flow from GPU 10 to GPU 1";
  return 0;
}

/// Links paused at some time, by name.
std::set<std::string> paused_links(const RunOutput& r)
{
  std::set<std::string> out;
  for (const auto& [name, s] : r.link_sum("pause_s"))
    if (s > 0) out.insert(name);
  return out;
}

TEST(DcqcnExamples, PfcAloneKeepsTheBottleneckBusyAndBlocksTheVictimHeadOfLine)
{
  const RunOutput& off = example_run("dcqcn_off");
  expect_complete_and_lossless(off);
  const auto& n = off.net();
  EXPECT_EQ(n.at("cc"), "none");
  EXPECT_EQ(n.at("ecn_marks").get<double>(), 0.0);
  EXPECT_EQ(n.at("cnps").get<std::uint64_t>(), 0U);
  EXPECT_EQ(n.at("rate_decreases").get<std::uint64_t>(), 0U);
  EXPECT_GT(n.at("pause_time_s").get<double>(), 0);

  // The victim's only path shares leaf1's uplink and the spine's port into leaf0 with the incast (one spine), and its
  // last hop with no other flow.
  const Csv flows = off.flows();
  const std::size_t v = victim_row(flows);
  EXPECT_DOUBLE_EQ(flows.num(v, "bytes"), kVictimBytes);
  const auto victim_path = path_names(off, flows, v);
  const std::vector<std::string> expected_path{"gpu1.2->nic1.2", "nic1.2->leaf1", "leaf1->spine0",
                                               "spine0->leaf0",  "leaf0->nic0.1", "nic0.1->gpu0.1"};
  EXPECT_EQ(victim_path, expected_path);
  for (std::size_t i = 0; i < flows.size(); ++i) {
    if (i == v) continue;
    for (const auto& name : path_names(off, flows, i))
      EXPECT_NE(name, "leaf0->nic0.1") << "the victim's last hop is its own";
  }

  // The bottleneck never idles: every byte for GPU 0 enters leaf0 through the spine's port, whose ingress counter
  // covers nic0.0's queue; after the counter falls below XON the spine resumes within 2 L + response (the RESUME's
  // flight, the reaction, the first new byte's flight), during which the port drains at most B (2 L + response) of
  // the XON bytes it held. With XON above that the queue never runs dry, so the incast ends N S / B after it starts,
  // within a queue step at either end. (tests/sim/test_pfc.cpp checks both sides of this condition step by step.)
  const double xon = n.at("pfc").at("xon_bytes").get<double>();
  ASSERT_GE(xon, kLinkBps * (2 * kSwitchHopLatency + kPfcResponse)) << "the example's premise";
  double start = 0, last_end = 0;
  const auto rows = incast_rows(flows, start, last_end);
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kIncastSenders));
  const double bound = kIncastSenders * kIncastBytes / kLinkBps;
  EXPECT_GE(last_end - start, bound * (1 - 1e-9));
  EXPECT_LE(last_end - start, bound + 2 * kTimeStep);

  // Head-of-line blocking: PFC pauses whole ports, so the victim's NIC is paused with the incast's, although nothing
  // else wants the victim's last hop, and every second of it adds to the victim's completion.
  const auto paused = paused_links(off);
  EXPECT_TRUE(paused.count("spine0->leaf0"));
  EXPECT_TRUE(paused.count("nic1.2->leaf1")) << "the victim's NIC";
  expect_paused_time_adds_to_completion(off, flows, v);
  for (std::size_t i : rows)
    expect_paused_time_adds_to_completion(off, flows, i);
  // Alone at line rate it would need S / B plus the path latency; it needs at least its NIC's paused time more.
  EXPECT_GT(off.link_sum("pause_s").at("nic1.2->leaf1"), 0);
}

TEST(DcqcnExamples, DcqcnCannotStopTheFirstBurstButPausesLessAfterItAndCannotBeatTheBottleneck)
{
  const RunOutput& off = example_run("dcqcn_off");
  const RunOutput& on = example_run("dcqcn_on");
  expect_complete_and_lossless(on);
  const auto &a = off.net(), &b = on.net();
  EXPECT_EQ(b.at("cc"), "dcqcn");
  EXPECT_EQ(b.at("dcqcn").at("preset"), "sigcomm2015");
  const double k_min = b.at("dcqcn").at("k_min_bytes").get<double>();
  const double xoff = b.at("pfc").at("xoff_bytes").get<double>();
  ASSERT_LT(k_min, xoff);
  EXPECT_GT(b.at("ecn_marks").get<double>(), 0);
  EXPECT_GT(b.at("cnps").get<std::uint64_t>(), 0U);
  EXPECT_GT(b.at("rate_decreases").get<std::uint64_t>(), 0U);

  // No CNP can reach a sender before a marked byte has crossed to the receiver and the CNP has come back: one round
  // trip, 2 x the path latency. Until then the senders inject at line rate and the bottleneck's ingress counter grows
  // at (N - 1) B, passing XOFF long before: the first burst pauses the spine port whatever DCQCN does.
  const double to_xoff = xoff / ((kIncastSenders - 1) * kLinkBps);
  ASSERT_LT(to_xoff, 2 * kSpinePathLatency);
  EXPECT_GT(b.at("pause_events").get<std::uint64_t>(), 0U);
  EXPECT_TRUE(paused_links(on).count("spine0->leaf0"));

  // After it the reaction points cut the rates, while without DCQCN every sender offers line rate until it has
  // injected its 4 MiB: less pausing, and fewer PAUSE frames.
  EXPECT_LT(b.at("pause_time_s").get<double>(), a.at("pause_time_s").get<double>());
  EXPECT_LT(b.at("pause_events").get<std::uint64_t>(), a.at("pause_events").get<std::uint64_t>());

  // Nothing beats the bottleneck, and DCQCN only lowers a sender's rate below line rate, so the law of paused time
  // holds for every flow.
  const Csv flows = on.flows();
  double start = 0, last_end = 0;
  const auto rows = incast_rows(flows, start, last_end);
  ASSERT_EQ(rows.size(), static_cast<std::size_t>(kIncastSenders));
  EXPECT_GE(last_end - start, kIncastSenders * kIncastBytes / kLinkBps * (1 - 1e-9));
  for (std::size_t i : rows)
    expect_paused_time_adds_to_completion(on, flows, i);
  expect_paused_time_adds_to_completion(on, flows, victim_row(flows));
}

// ---------------------------------------------------------------------------------------------------------------

class CongestionExampleDeterminism : public ::testing::TestWithParam<const char*> {};

TEST_P(CongestionExampleDeterminism, TwoRunsWriteIdenticalFlowsAndLinks)
{
  const std::string name = GetParam();
  const RunOutput& a = example_run(name);
  const RunOutput b = run_scenario(example(name), name + "_again");
  for (const char* f : {"flows.csv", "links.csv", "summary.json"}) {
    const std::string x = read_file(a.dir / f), y = read_file(b.dir / f);
    EXPECT_FALSE(x.empty()) << f;
    EXPECT_TRUE(x == y) << name << ": " << f << " differs between two runs of the same scenario and seed";
  }
}

INSTANTIATE_TEST_SUITE_P(Examples, CongestionExampleDeterminism,
                         ::testing::Values("incast", "alltoall_fat_tree_2to1", "alltoall_rail_optimized",
                                           "ring_ecmp_1qp", "ring_ecmp_4qp", "dcqcn_off", "dcqcn_on"));

} // namespace
