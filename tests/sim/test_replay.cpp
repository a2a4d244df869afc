// Workload replay against closed forms: the 1F1B bubble, overlap accounting of a send, a lowered collective replayed
// like the collective runner runs it, breakdowns that add up, deterministic timelines.
#include "railyard/common/child_process.hpp"
#include "replay_support.hpp"

#include "railyard/sim/collective_runner.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/sim/replay.hpp"
#include "railyard/workloads/generator.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <unistd.h>

using namespace railyard;
using namespace railyard::workloads;

namespace {

using railyard::test::flops_only_profile;
using railyard::test::one_node;

} // namespace

// Pipeline-only training with free communication: with equal stages taking t_f + t_b per micro-batch, 1F1B takes
// (m + p - 1)(t_f + t_b) and every stage idles (p - 1)(t_f + t_b) of it: the bubble fraction (p - 1)/(m + p - 1)
// (Narayanan et al. 2021, section 2.2.1). Stage compute from the FLOPs closed form: a GPT layer is
// 24 b s h^2 + 4 b s^2 h forward and twice that backward.
TEST(Replay, OneFOneBBubbleFractionEmergesFromThePipeline)
{
  const int p = 4, m = 8;
  MegatronConfig c;
  c.model.layers = 8;
  c.model.hidden = 1024;
  c.model.heads = 16;
  c.model.seq_length = 512;
  c.model.vocab = 128; // LM head and embedding under 0.5% of a stage: the stages are equal to that precision
  c.parallel.pp = p;
  c.training.micro_batch = 1;
  c.training.global_batch = m;
  c.training.recompute = Recompute::None;
  const double peak = 100e12;
  const auto out = run_in_child([&] {
                     const Workload w = generate_megatron(c, p);
                     const topo::Topology t = topo::build_topology(one_node(p));
                     const calibration::Profile prof = flops_only_profile(peak);
                     sim::ReplayOptions o;
                     o.comm = sim::CommModel::Ideal;
                     const auto r = sim::replay_workload(w, t, {}, &prof, test::with_nccl(t, o));
                     std::vector<double> v{r.step_time.seconds()};
                     for (const auto& rk : r.ranks)
                       v.push_back(rk.breakdown.bubble_s);
                     return v;
                   }).values;
  const double b = 1, s = c.model.seq_length, h = c.model.hidden, layers_per_stage = 2;
  const double fb = 3 * layers_per_stage * (24 * b * s * h * h + 4 * b * s * s * h) / peak; // t_f + t_b
  const double step = (m + p - 1) * fb;
  EXPECT_NEAR(out[0], step, step * 0.005);
  for (int r = 0; r < p; ++r)
    EXPECT_NEAR(out[1 + r] / out[0], double(p - 1) / (m + p - 1), 0.005) << "stage " << r;
}

// Interleaving v model chunks per stage shrinks the bubble to (p - 1)/(v m + p - 1) of the step (Narayanan et al.
// 2021, section 2.2.2: the bubble time divides by v while the work stays).
TEST(Replay, InterleavedScheduleShrinksTheBubble)
{
  const int p = 4, m = 8, v = 2;
  MegatronConfig c;
  c.model.layers = 16;
  c.model.hidden = 1024;
  c.model.heads = 16;
  c.model.seq_length = 512;
  c.model.vocab = 128;
  c.parallel.pp = p;
  c.parallel.virtual_stages = v;
  c.training.global_batch = m;
  c.training.recompute = Recompute::None;
  const auto out = run_in_child([&] {
                     const Workload w = generate_megatron(c, p);
                     const topo::Topology t = topo::build_topology(one_node(p));
                     const calibration::Profile prof = flops_only_profile(100e12);
                     sim::ReplayOptions o;
                     o.comm = sim::CommModel::Ideal;
                     const auto r = sim::replay_workload(w, t, {}, &prof, test::with_nccl(t, o));
                     return std::vector<double>{r.step_time.seconds(), r.ranks[0].breakdown.bubble_s};
                   }).values;
  EXPECT_NEAR(out[1] / out[0], double(p - 1) / (v * m + p - 1), 0.01);
}

namespace {

// Rank 0 computes `work` on stream 0 while stream 1 sends `bytes` to rank 1; rank 1 receives, then computes `work`.
Workload send_while_computing(double work_s, double bytes)
{
  Workload w;
  const int pp = w.add_communicator("pp0", GroupKind::PP, {0, 1});
  RankGraphBuilder a;
  OpId c0 = a.add(Op::make_compute(0, Bytes(0), 0), "work");
  a.set_measured(c0, std::nullopt, Seconds(work_s));
  a.add(Op::make_send(pp, 1, Bytes(bytes), 0, 1), "send");
  RankGraphBuilder b;
  OpId rv = b.add(Op::make_recv(pp, 0, Bytes(bytes), 0, 0), "recv");
  OpId c1 = b.add(Op::make_compute(0, Bytes(0), 0), "work");
  b.set_measured(c1, std::nullopt, Seconds(work_s));
  (void)rv;
  w.add_rank(a.finish());
  w.add_rank(b.finish());
  return w;
}

} // namespace

// A send overlapped with compute is hidden on the sender and exposed on the receiver. With the analytical model a
// transfer inside a node takes its path latency (GPU -> NVSwitch -> GPU: two hops) plus bytes over the NVLink
// bandwidth. Rank 0 finishes at `work` and then waits (bubble: it has pipeline peers) for rank 1, which waits for the
// transfer (exposed PP communication) and then works.
TEST(Replay, SendOverlappedWithComputeIsHiddenOnTheSenderAndExposedOnTheReceiver)
{
  const double work = 1e-3, bytes = 64e6, B = 100e9, hop = 0.5e-6;
  const double transfer = 2 * hop + bytes / B;
  for (auto mode : {sim::CommModel::Analytical, sim::CommModel::Flows}) {
    const auto out =
        run_in_child([&] {
          const Workload w = send_while_computing(work, bytes);
          const topo::Topology t = topo::build_topology(one_node(2, 100, 0.5));
          sim::ReplayOptions o;
          o.comm = mode;
          const auto r = sim::replay_workload(w, t, {}, nullptr, test::with_nccl(t, o));
          const auto& a = r.ranks[0].breakdown;
          const auto& b = r.ranks[1].breakdown;
          const auto pp = static_cast<std::size_t>(GroupKind::PP);
          return std::vector<double>{r.step_time.seconds(), a.compute_s,     a.exposed_s[pp], a.bubble_s, a.comm_s[pp],
                                     b.compute_s,           b.exposed_s[pp], b.bubble_s,      b.total(),  a.total()};
        }).values;
    const std::string m = sim::to_string(mode);
    EXPECT_NEAR(out[0], transfer + work, 1e-9) << m;
    EXPECT_NEAR(out[1], work, 1e-12) << m;
    EXPECT_NEAR(out[2], 0, 1e-12) << m; // hidden behind rank 0's compute
    EXPECT_NEAR(out[3], transfer, 1e-9) << m;
    EXPECT_NEAR(out[4], transfer, 1e-9) << m; // it was under way all the same
    EXPECT_NEAR(out[5], work, 1e-12) << m;
    EXPECT_NEAR(out[6], transfer, 1e-9) << m; // the sender had sent: waiting for bytes, not for work
    EXPECT_NEAR(out[7], 0, 1e-12) << m;
    EXPECT_NEAR(out[8], out[0], 1e-12) << m; // the breakdown adds up to the step
    EXPECT_NEAR(out[9], out[0], 1e-12) << m;
  }
}

namespace {

Workload one_collective(int n, CollectiveKind kind, double bytes)
{
  Workload w;
  std::vector<int> all(n);
  std::iota(all.begin(), all.end(), 0);
  const int c = w.add_communicator("world", GroupKind::DP, all);
  for (int r = 0; r < n; ++r) {
    RankGraphBuilder b;
    b.add(Op::make_collective(kind, Bytes(bytes), c, -1, 0), "collective");
    w.add_rank(b.finish());
  }
  return w;
}

} // namespace

// A collective op replays exactly as the collective runner runs the same lowered schedule (Flows), and the
// analytical model of that schedule alone on the fabric agrees with it (symmetric ring: max-min shares are exact).
TEST(Replay, CollectiveOpMatchesTheCollectiveRunnerAndTheAnalyticalModel)
{
  const int n = 8;
  const double bytes = 256e6;
  for (auto kind : {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
    const auto flows = run_in_child([&] {
                         const topo::Topology t = topo::build_topology(one_node(n));
                         const auto r =
                             sim::replay_workload(one_collective(n, kind, bytes), t, {}, nullptr, test::with_nccl(t));
                         return std::vector<double>{r.step_time.seconds(), r.flows.bytes_sent, r.flows.bytes_received};
                       }).values;
    const auto runner = run_in_child([&] {
                          const topo::Topology t = topo::build_topology(one_node(n));
                          models::CollectiveCall call;
                          call.kind = kind;
                          call.bytes = Bytes(bytes);
                          call.ranks.resize(n);
                          std::iota(call.ranks.begin(), call.ranks.end(), 0);
                          call.label = "world";
                          const sim::NcclSettings defaults;
                          const auto resolved = sim::resolve_call(call, t, defaults, {});
                          const models::Schedule s =
                              models::lower(sim::lowering_input(resolved, t, defaults, Seconds(0)));
                          sim::Simulation sim(t, {});
                          const auto timings = sim::run_schedules(sim, {s});
                          return std::vector<double>{timings.at(0).duration().seconds(),
                                                     sim::isolated_collective_time(s, t, true, 1).seconds()};
                        }).values;
    const auto analytical = run_in_child([&] {
                              const topo::Topology t = topo::build_topology(one_node(n));
                              sim::ReplayOptions o;
                              o.comm = sim::CommModel::Analytical;
                              return std::vector<double>{sim::replay_workload(one_collective(n, kind, bytes), t, {},
                                                                              nullptr, test::with_nccl(t, o))
                                                             .step_time.seconds()};
                            }).values;
    const std::string name = models::to_string(kind);
    EXPECT_NEAR(flows[0], runner[0], runner[0] * 1e-9) << name;
    EXPECT_GT(flows[1], 0) << name;
    EXPECT_EQ(flows[1], flows[2]) << name; // every byte sent was received
    EXPECT_NEAR(analytical[0], runner[1], runner[1] * 1e-12) << name;
    EXPECT_NEAR(analytical[0], flows[0], flows[0] * 0.01) << name;
  }
}

// A generated step with TP, PP and DP on two 4-GPU nodes of a rail-optimized fabric replays with every flow
// delivered, and each rank's breakdown adds up to the step time; the analytical model is close to the flows.
TEST(Replay, GeneratedStepOnARailClusterAddsUp)
{
  MegatronConfig c;
  c.model.layers = 4;
  c.model.hidden = 512;
  c.model.heads = 8;
  c.model.seq_length = 256;
  c.model.vocab = 1024;
  c.parallel.tp = 2;
  c.parallel.pp = 2;
  c.training.global_batch = 8; // dp 2: 4 micro-batches
  topo::ClusterSpec spec;
  spec.kind = topo::ClusterKind::RailOptimized;
  spec.nodes = 2;
  spec.gpus_per_node = 4;
  spec.leaf_downlinks = 4;
  auto run = [&](sim::CommModel mode) {
    return run_in_child([&] {
             const Workload w = generate_megatron(c, 8);
             const topo::Topology t = topo::build_topology(spec);
             const calibration::Profile prof = flops_only_profile(50e12);
             sim::ReplayOptions o;
             o.comm = mode;
             const auto r = sim::replay_workload(w, t, {}, &prof, test::with_nccl(t, o));
             std::vector<double> v{r.step_time.seconds(), r.flows.bytes_sent, r.flows.bytes_received,
                                   static_cast<double>(r.flows.flows_sent),
                                   static_cast<double>(r.flows.flows_received)};
             for (const auto& rk : r.ranks)
               v.push_back(rk.breakdown.total());
             return v;
           })
        .values;
  };
  const auto f = run(sim::CommModel::Flows);
  EXPECT_GT(f[3], 0);
  EXPECT_EQ(f[1], f[2]);
  EXPECT_EQ(f[3], f[4]);
  for (int r = 0; r < 8; ++r)
    EXPECT_NEAR(f[5 + r], f[0], f[0] * 1e-9) << "rank " << r;
  const auto a = run(sim::CommModel::Analytical);
  EXPECT_NEAR(a[0], f[0], f[0] * 0.10);
  const auto i = run(sim::CommModel::Ideal);
  EXPECT_LT(i[0], a[0]);
}

// The discrete-event executor and the SimGrid actors run the same rules: equal step times and breakdowns.
TEST(Replay, EventExecutorMatchesTheSimGridActors)
{
  MegatronConfig c;
  c.model.layers = 4;
  c.model.hidden = 512;
  c.model.heads = 8;
  c.model.seq_length = 256;
  c.model.vocab = 1024;
  c.parallel.tp = 2;
  c.parallel.pp = 2;
  c.parallel.virtual_stages = 2;
  c.parallel.zero_stage = 3;
  c.training.global_batch = 8;
  c.training.recompute = Recompute::Full;
  for (auto mode : {sim::CommModel::Analytical, sim::CommModel::Ideal}) {
    auto run = [&](bool events) {
      return run_in_child([&] {
               const Workload w = generate_megatron(c, 8);
               const topo::Topology t = topo::build_topology(one_node(8));
               const calibration::Profile prof = flops_only_profile(50e12);
               sim::ReplayOptions o;
               o.comm = mode;
               o.discrete_events = events;
               const auto r = sim::replay_workload(w, t, {}, &prof, test::with_nccl(t, o));
               std::vector<double> v{r.step_time.seconds(), static_cast<double>(r.ops_executed)};
               for (const auto& rk : r.ranks) {
                 const auto& b = rk.breakdown;
                 v.insert(v.end(), {b.compute_s, b.exposed_total(), b.bubble_s, b.idle_s});
               }
               return v;
             })
          .values;
    };
    const auto a = run(true), b = run(false);
    ASSERT_EQ(a.size(), b.size());
    // SimGrid's clock rounds to its precision of 1 ns (surf/precision), so a few ns apart at most.
    for (std::size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 1e-8 + 1e-9 * a[0]) << sim::to_string(mode) << " value " << i;
  }
}

// Compute ops without measured durations need a kernel model: an InputError naming the file, rank and op.
TEST(Replay, ComputeWithoutProfileIsRefused)
{
  MegatronConfig c;
  c.model.layers = 2;
  c.model.hidden = 256;
  c.model.heads = 4;
  c.model.seq_length = 128;
  c.model.vocab = 512;
  c.training.global_batch = 2;
  const Workload w = generate_megatron(c, 2);
  const topo::Topology t = topo::build_topology(one_node(2));
  try {
    sim::replay_workload(w, t, {}, nullptr, test::with_nccl(t));
    FAIL() << "accepted";
  } catch (const InputError& e) {
    EXPECT_NE(e.where().field.find("rank 0"), std::string::npos);
    EXPECT_NE(e.fix().find("profile"), std::string::npos);
  }
}

// Two ranks that each receive before they send wait for each other forever (eager sends do not help: neither send is
// ever issued). Every driver of the engine (the event loop; SimGrid actors with analytical, ideal and flows) refuses
// the workload as an input error naming a waiting rank and its receive, instead of returning a step that looks
// complete or hanging.
TEST(Replay, ACycleOfReceivesIsRefusedByEveryDriver)
{
  struct Case {
    sim::CommModel comm;
    bool events;
  };
  for (const Case c : {Case{sim::CommModel::Analytical, true}, Case{sim::CommModel::Ideal, true},
                       Case{sim::CommModel::Analytical, false}, Case{sim::CommModel::Flows, false}}) {
    const auto out = run_in_child([&] {
                       Workload w;
                       const int pp = w.add_communicator("pp0", GroupKind::PP, {0, 1});
                       for (int r = 0; r < 2; ++r) {
                         RankGraphBuilder b;
                         b.add(Op::make_recv(pp, 1 - r, Bytes(1e6), 0, 0), "recv first");
                         b.add(Op::make_send(pp, 1 - r, Bytes(1e6), 0, 0), "send after");
                         w.add_rank(b.finish());
                       }
                       const topo::Topology t = topo::build_topology(one_node(2));
                       sim::ReplayOptions o;
                       o.comm = c.comm;
                       o.discrete_events = c.events;
                       try {
                         sim::replay_workload(w, t, {}, nullptr, test::with_nccl(t, o));
                       } catch (const InputError& e) {
                         const std::string what = e.what();
                         return std::vector<double>{1, what.find("deadlocked") != std::string::npos ? 1.0 : 0.0,
                                                    what.find("recv first") != std::string::npos ? 1.0 : 0.0,
                                                    e.where().field.rfind("rank ", 0) == 0 ? 1.0 : 0.0};
                       }
                       return std::vector<double>{0, 0, 0, 0};
                     }).values;
    const std::string m = sim::to_string(c.comm) + (c.events ? " (event loop)" : " (actors)");
    EXPECT_EQ(out[0], 1) << m << ": not refused";
    EXPECT_EQ(out[1], 1) << m << ": the message does not say it deadlocked";
    EXPECT_EQ(out[2], 1) << m << ": the message does not name the waiting op";
    EXPECT_EQ(out[3], 1) << m << ": the field does not name the rank";
  }
}
