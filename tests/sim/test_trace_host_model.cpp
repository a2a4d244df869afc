// The host of a traced step as a dependency graph (replay.host_launch: model) beside the recorded host timeline
// (recorded) and the GPU alone (off), and collectives timed by their measured time plus the model's difference
// between two clusters (ReplayOptions::measured_collectives, collective_delta). Expectations come from the traces
// themselves (spans read here from their JSON) and from hand-worked timelines of small traces written here.
#include "../support/trace_files.hpp"
#include "railyard/common/child_process.hpp"
#include "replay_support.hpp"

#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/sim/replay.hpp"
#include "railyard/workloads/readers.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>

using namespace railyard;
namespace fs = std::filesystem;

namespace {

using railyard::test::gunzip;
using railyard::test::json_members_of_tar;

const std::string kTraces = std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces/kineto";

// First GPU start to last GPU end of Kineto traces on one clock, in seconds.
double gpu_span_s(const std::vector<std::string>& texts)
{
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& text : texts) {
    const auto [a, b] = railyard::test::gpu_span_us(text);
    lo = std::min(lo, a);
    hi = std::max(hi, b);
  }
  return (hi - lo) * 1e-6;
}

struct Trace {
  std::string name;
  std::vector<std::string> paths;
  int gpus = 0;  ///< of the traced job (rank r on GPU r)
  double span_s; ///< the trace's own
};

// Every Kineto trace of tests/data/traces (each HTA sampled rank alone: the two are excerpts of different steps whose
// collectives disagree).
std::vector<Trace> traces()
{
  const std::string dlrm = kTraces + "/param_dlrm_8rank_v100/dlrm_kineto.tar.gz";
  std::vector<Trace> out{{"dlrm", {dlrm}, 8, gpu_span_s(json_members_of_tar(dlrm))}};
  for (const auto& [name, rel, gpus] : {std::tuple{"hta_nccl", "/hta/nccl_parser_config/nccl_data.json.gz", 2},
                                        std::tuple{"hta_sampled_0", "/hta/trace_filter/sampled_rank-0.json.gz", 128},
                                        std::tuple{"hta_sampled_1", "/hta/trace_filter/sampled_rank-1.json.gz", 128},
                                        std::tuple{"hta_control", "/hta/trace_diff_control/control.json.gz", 8}})
    out.push_back({name, {kTraces + rel}, gpus, gpu_span_s({gunzip(kTraces + rel)})});
  return out;
}

// The job's cluster with its links `scale` times as fast: up to 8 GPUs one node of 150 GB/s NVLink; beyond, DGX H100
// nodes on a rail-optimized fabric of 400 Gb/s NICs and links.
topo::ClusterSpec cluster(int gpus, double scale)
{
  if (gpus <= 8) return test::one_node(gpus, 150 * scale);
  topo::ClusterSpec s = test::h100_nodes(gpus / 8);
  s.nic_bandwidth = units::Gbps(400 * scale);
  s.fabric_bandwidth = units::Gbps(400 * scale);
  return s;
}

struct Replayed {
  double step_s = 0, host_bound_s = 0;
};

// A replay with measured collectives; with `recorded`, a collective moves by the model's time on `spec` minus on
// `recorded` (each call alone on its node, NCCL's default choice), as `railyard run` does for workload.recorded_on.
Replayed replay(const Trace& t, const topo::ClusterSpec& spec, sim::HostLaunch host,
                std::optional<topo::ClusterSpec> recorded = std::nullopt, std::vector<double> slowdown = {})
{
  const auto v = run_in_child([&] {
                   const workloads::Workload w = workloads::read_kineto(t.paths);
                   const topo::Topology topology = topo::build_topology(spec);
                   sim::ReplayOptions o = test::with_nccl(topology);
                   o.comm = sim::CommModel::Analytical;
                   o.host_launch = host;
                   o.measured_collectives = true;
                   o.compute_slowdown = std::move(slowdown);
                   o.trace_ranks = std::vector<int>{};
                   std::unique_ptr<topo::Topology> before;
                   if (recorded) {
                     before = std::make_unique<topo::Topology>(topo::build_topology(*recorded));
                     auto lower_before = sim::nccl_lowering(*before, sim::NcclSettings{}, Seconds(0));
                     o.collective_delta = [&, lower_before](const models::CollectiveCall& c,
                                                            const std::vector<int>& rec, const InputLocation& at) {
                       models::CollectiveCall was = c;
                       was.ranks = rec;
                       return sim::isolated_collective_time(o.lower(c, at), topology, false, 0).seconds() -
                              sim::isolated_collective_time(lower_before(was, at), *before, false, 0).seconds();
                     };
                   }
                   const auto r = sim::replay_workload(w, topology, {}, nullptr, o);
                   return std::vector<double>{r.step_time.seconds(), r.mean.host_bound_s};
                 }).values;
  if (v.size() != 2) return {};
  return {v[0], v[1]};
}

// Sum over one rank's collectives (every rank runs them all) of the model's time with links `scale` times as fast minus
// on the job's own cluster, each call alone at its recorded group size: how much a step can move at most when every
// collective is exposed and nothing absorbs it.
double total_delta_s(const Trace& t, double scale)
{
  const auto v = run_in_child([&] {
                   const workloads::Workload w = workloads::read_kineto(t.paths);
                   const topo::Topology now = topo::build_topology(cluster(t.gpus, scale));
                   const topo::Topology before = topo::build_topology(cluster(t.gpus, 1));
                   auto lower_now = sim::nccl_lowering(now, sim::NcclSettings{}, Seconds(0));
                   auto lower_before = sim::nccl_lowering(before, sim::NcclSettings{}, Seconds(0));
                   double sum = 0;
                   const auto& g = w.graph_of(0);
                   for (workloads::OpId i = 0; i < g.size(); ++i) {
                     const auto& op = g.op(i);
                     if (op.kind != workloads::OpKind::Collective) continue;
                     const auto& comm = w.communicators[w.communicator_of(0, op)];
                     models::CollectiveCall c;
                     c.kind = op.collective();
                     c.bytes = op.bytes;
                     c.ranks = comm.recorded_ranks.empty() ? comm.ranks : comm.recorded_ranks;
                     if (c.ranks.size() <= 1) continue;
                     sum += sim::isolated_collective_time(lower_now(c, {}), now, false, 0).seconds() -
                            sim::isolated_collective_time(lower_before(c, {}), before, false, 0).seconds();
                   }
                   return std::vector<double>{sum};
                 }).values;
  return v.empty() ? std::numeric_limits<double>::quiet_NaN() : v[0];
}

} // namespace

// Unchanged, the step spans what the trace's GPUs spanned, whether the host is modelled or taken as recorded: within
// 2% (the replay starts each kernel at its launch, so it gains each kernel's launch-to-start latency where that
// latency was on the critical path). The GPU alone is never longer.
TEST(TraceHostModel, UnchangedReplaysSpanTheMeasuredSpan)
{
  for (const Trace& t : traces()) {
    for (const auto host : {sim::HostLaunch::Model, sim::HostLaunch::Recorded}) {
      const Replayed r = replay(t, cluster(t.gpus, 1), host);
      EXPECT_NEAR(r.step_s, t.span_s, 0.02 * t.span_s) << t.name << " " << to_string(host);
      EXPECT_GE(r.host_bound_s, 0) << t.name;
      EXPECT_LE(r.host_bound_s, r.step_s) << t.name;
    }
    const Replayed gpu = replay(t, cluster(t.gpus, 1), sim::HostLaunch::Off);
    EXPECT_LE(gpu.step_s, t.span_s * (1 + 1e-9)) << t.name;
    EXPECT_EQ(gpu.host_bound_s, 0) << t.name;
  }
}

// Half and double the NVLink bandwidth against the node the trace is said to be recorded on. Every collective moves
// by the model's difference (summed here over the trace's own collectives at their recorded group sizes): the step
// moves in the same direction and by no more than that sum. The pinned host (recorded) cannot wait for the slower
// collectives at its synchronisations, so it moves no more than the host model; HTA's control trace (rank 3 of 8
// A100s) has a main thread that blocks in cudaStreamSynchronize after its all-reduces, so its step grows.
TEST(TraceHostModel, NetworkWhatIfMovesTheStepWithinTheCollectivesChange)
{
  for (const Trace& t : traces()) {
    const topo::ClusterSpec base = cluster(t.gpus, 1);
    const double unchanged = replay(t, base, sim::HostLaunch::Model, base).step_s;
    EXPECT_NEAR(unchanged, replay(t, base, sim::HostLaunch::Model).step_s, 1e-12) << t.name;
    const double slower = total_delta_s(t, 0.5), faster = total_delta_s(t, 2);
    ASSERT_GT(slower, 0) << t.name;
    ASSERT_LT(faster, 0) << t.name;
    const double half = replay(t, cluster(t.gpus, 0.5), sim::HostLaunch::Model, base).step_s - unchanged;
    const double twice = replay(t, cluster(t.gpus, 2), sim::HostLaunch::Model, base).step_s - unchanged;
    EXPECT_GE(half, -1e-12) << t.name;
    EXPECT_LE(half, slower + 1e-12) << t.name;
    EXPECT_LE(twice, 1e-12) << t.name;
    EXPECT_GE(twice, faster - 1e-12) << t.name;
    const double pinned_unchanged = replay(t, base, sim::HostLaunch::Recorded, base).step_s;
    const double pinned_half =
        replay(t, cluster(t.gpus, 0.5), sim::HostLaunch::Recorded, base).step_s - pinned_unchanged;
    EXPECT_LE(pinned_half, half + 1e-9) << t.name;
    if (t.name == "hta_control") {
      EXPECT_GT(half, 0.1 * slower) << "the host waits for the slower all-reduces";
      EXPECT_GT(half, pinned_half + 1e-6) << "the pinned host cannot wait";
    }
  }
}

namespace {

// A one-rank Kineto trace written here: one host thread that launches K1 (100 us on stream 7), waits for it in
// cudaStreamSynchronize (which returns 2 us after K1 ends), works 5 us, then launches K2 (50 us). Without the sync,
// the host launches K2 5 us after K1 instead (it runs ahead).
std::string small_trace(bool sync)
{
  nlohmann::json ev = nlohmann::json::array();
  auto runtime = [&](const char* name, double ts, double dur, int corr) {
    ev.push_back({{"ph", "X"},
                  {"cat", "cuda_runtime"},
                  {"name", name},
                  {"pid", 1},
                  {"tid", 1},
                  {"ts", ts},
                  {"dur", dur},
                  {"args", {{"correlation", corr}}}});
  };
  auto kernel = [&](const char* name, double ts, double dur, int corr) {
    ev.push_back({{"ph", "X"},
                  {"cat", "kernel"},
                  {"name", name},
                  {"pid", 0},
                  {"tid", 7},
                  {"ts", ts},
                  {"dur", dur},
                  {"args", {{"correlation", corr}, {"stream", 7}}}});
  };
  runtime("cudaLaunchKernel", 0, 5, 1);
  kernel("K1", 10, 100, 1); // ends at 110
  if (sync) {
    runtime("cudaStreamSynchronize", 20, 92, 2); // returns at 112: 2 us after K1
    runtime("cudaLaunchKernel", 117, 5, 3);      // 5 us of host work after the sync
    kernel("K2", 125, 50, 3);
  } else {
    runtime("cudaLaunchKernel", 10, 5, 3); // 5 us after the first launch returned
    kernel("K2", 110, 50, 3);
  }
  return nlohmann::json{{"traceEvents", ev}, {"distributedInfo", {{"rank", 0}, {"world_size", 1}}}}.dump();
}

Trace write_small(bool sync)
{
  const fs::path p = fs::temp_directory_path() / (std::string("railyard_host_model_") + (sync ? "sync" : "ahead") +
                                                  std::to_string(::getpid()) + ".json");
  std::ofstream(p) << small_trace(sync);
  return {p.stem().string(), {p.string()}, 1, sync ? 165e-6 : 150e-6};
}

} // namespace

// The timelines worked by hand (times from the first launch, the replay's 0). K1 runs 0..100. With the sync: the host
// waits until K1 ends, plus 2 us, works 5 us and launches K2 at 107: K2 runs 107..157, and the GPU idles 7 us waiting
// for the host. On a GPU twice as slow (a straggler: every kernel takes twice as long), K1 runs 0..200, the sync
// returns at 202 and K2 runs 207..307; the recorded host launches K2 at 107 whatever happens, so K2 waits only for its
// stream: 200..300, as on the GPU alone. A host that ran ahead keeps running ahead: K2 follows K1 on its stream,
// 200..300, in every mode.
TEST(TraceHostModel, SynchronisationsWaitForTheNewGpuTime)
{
  const Trace s = write_small(true), a = write_small(false);
  const topo::ClusterSpec one = cluster(1, 1);
  const Replayed unchanged = replay(s, one, sim::HostLaunch::Model);
  EXPECT_NEAR(unchanged.step_s, 157e-6, 1e-12);
  EXPECT_NEAR(unchanged.host_bound_s, 7e-6, 1e-12);
  EXPECT_NEAR(replay(s, one, sim::HostLaunch::Model, std::nullopt, {2.0}).step_s, 307e-6, 1e-12);
  EXPECT_NEAR(replay(s, one, sim::HostLaunch::Model, std::nullopt, {2.0}).host_bound_s, 7e-6, 1e-12);
  EXPECT_NEAR(replay(s, one, sim::HostLaunch::Recorded, std::nullopt, {2.0}).step_s, 300e-6, 1e-12);
  EXPECT_NEAR(replay(s, one, sim::HostLaunch::Off, std::nullopt, {2.0}).step_s, 300e-6, 1e-12);
  for (const auto host : sim::kHostLaunchModes)
    EXPECT_NEAR(replay(a, one, host, std::nullopt, {2.0}).step_s, 300e-6, 1e-12) << to_string(host);
  fs::remove(s.paths[0]);
  fs::remove(a.paths[0]);
}

// What the reader makes of the host: one thread; the sync waits for K1 with a 2 us wake-up; K1 and K2 point at
// their launches; the host's work between calls is the recorded gap.
TEST(TraceHostModel, ReaderBuildsTheHostCalls)
{
  const Trace s = write_small(true);
  const workloads::Workload w = workloads::read_kineto(s.paths);
  const auto& g = w.graph_of(0);
  const auto calls = g.host_calls();
  ASSERT_EQ(calls.size(), 3U);
  ASSERT_EQ(g.host_threads().size(), 1U);
  EXPECT_EQ(g.launch_call(0), 0U);
  EXPECT_EQ(g.launch_call(1), 2U);
  EXPECT_EQ(calls[0].waits, workloads::kNone);
  EXPECT_EQ(calls[1].waits, 0U);
  EXPECT_NEAR(calls[1].tail_s, 2e-6, 1e-15);
  EXPECT_NEAR(calls[1].gap_s, 15e-6, 1e-15);
  EXPECT_NEAR(calls[2].gap_s, 5e-6, 1e-15);
  EXPECT_NEAR(calls[0].start_s, -10e-6, 1e-15); // on the clock of the measured starts: the first kernel at 0
  fs::remove(s.paths[0]);
}

// A communicator of one rank moves nothing (issue 16: a one-member DP group was charged an HBM copy of its buffer):
// a 1 GiB all-reduce on it between two 10 us kernels leaves the step at 20 us, even with a kernel model that would
// time a copy (memory at 1 TB/s: 2 ms for the copy's 2 GiB).
TEST(TraceHostModel, OneMemberCollectivesCostNothing)
{
  workloads::Workload w;
  w.add_communicator("dp", workloads::GroupKind::DP, {0});
  workloads::RankGraphBuilder b;
  const auto k1 = b.add(workloads::Op::make_compute(1e9, Bytes(0), 0), "k1");
  const auto ar =
      b.add(workloads::Op::make_collective(models::CollectiveKind::AllReduce, Bytes(1 << 30), 0, -1, 0), "ar");
  const auto k2 = b.add(workloads::Op::make_compute(1e9, Bytes(0), 0), "k2");
  b.add_dep(ar, k1);
  b.add_dep(k2, ar);
  w.add_rank(b.finish());
  calibration::Profile p = test::flops_only_profile(1e14); // 1e9 FLOPs: 10 us
  p.kernel->memory_bandwidth = BytesPerSec(1e12);
  const auto v = run_in_child([&] {
                   const topo::Topology t = topo::build_topology(cluster(1, 1));
                   sim::ReplayOptions o = test::with_nccl(t);
                   o.comm = sim::CommModel::Analytical;
                   const auto r = sim::replay_workload(w, t, {}, &p, o);
                   return std::vector<double>{r.step_time.seconds()};
                 }).values;
  ASSERT_EQ(v.size(), 1U);
  EXPECT_NEAR(v[0], 20e-6, 1e-12);
}
