// GEMMs in the replay: timed by waves of output tiles (calibration::GemmTiling), and sharing the GPU's SMs with the
// NCCL kernels of collectives that run at the same time (one SM per channel, NVIDIA/nccl src/enqueue.cc).
#include "replay_support.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/sim/replay.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace railyard;
using namespace railyard::workloads;

namespace {

constexpr double kPeak = 100e12; // FLOP/s at efficiency 1
constexpr int kSms = 100;

using railyard::test::one_node;

// Tiles of 128 x 128 on 100 SMs, no launch overhead, memory never the limit.
calibration::Profile tiled_profile()
{
  calibration::Profile p = railyard::test::flops_only_profile(kPeak);
  p.kernel->gemm = calibration::GemmTiling{128, 128, "test", kSms, "test", 0};
  return p;
}

// The GEMM: [12800 x 1280] over k = 4096: 100 x 10 = 1000 tiles, 10 waves on 100 SMs.
const GemmShape kGemm{12800, 1280, 4096, 1};
// One tile: 2 x 128 x 128 x 4096 FLOPs at peak / SMs.
const double kTile = 2.0 * 128 * 128 * 4096 / (kPeak / kSms);

// Two ranks; each runs the GEMM on stream 0 and, on stream 1 at the same time, an all-reduce of both.
Workload gemm_beside_allreduce()
{
  Workload w;
  w.source = "test";
  const int c = w.add_communicator("tp", GroupKind::TP, {0, 1});
  for (int r = 0; r < 2; ++r) {
    RankGraphBuilder b;
    const OpId g = b.add(Op::make_compute(kGemm.flops(), Bytes(0), 0), "gemm");
    b.set_gemm(g, kGemm);
    b.add(Op::make_collective(CollectiveKind::AllReduce, units::MiB(64), c, -1, 1), "all-reduce");
    w.add_rank(b.finish());
  }
  return w;
}

struct GemmRun {
  double gemm_s = 0;
  int channels = 0;
};

// Replays with the all-reduce taking `collective_s` (ReplayOptions::collective_time) and its lowered schedule's
// channel count recorded as the lowering hands it over.
GemmRun run(double collective_s, bool nccl_sms)
{
  const topo::Topology t = topo::build_topology(one_node(2));
  const calibration::Profile prof = tiled_profile();
  GemmRun out;
  sim::ReplayOptions o;
  o.comm = sim::CommModel::Analytical;
  o.nccl_sms = nccl_sms;
  o.lower = [&](const models::CollectiveCall& call, const InputLocation& where) {
    const sim::NcclSettings nccl;
    auto s = models::lower(sim::lowering_input(sim::resolve_call(call, t, nccl, where), t, nccl, Seconds(0)));
    out.channels = static_cast<int>(s.channels.size());
    return s;
  };
  o.collective_time = [&](const models::CollectiveCall&, const InputLocation&) {
    return std::optional<Seconds>(collective_s);
  };
  const Workload w = gemm_beside_allreduce();
  const auto r = sim::replay_workload(w, t, {}, &prof, o);
  for (const auto& e : r.events)
    if (e.rank == 0 && w.graph_of(0).name(e.op) == "gemm") out.gemm_s = e.end_s - e.start_s;
  return out;
}

} // namespace

// Alone, the GEMM takes its 10 full waves, the roofline of its FLOPs.
TEST(ReplayGemm, AloneTakesItsWaves)
{
  const GemmRun r = run(0, false);
  EXPECT_NEAR(r.gemm_s, 10 * kTile, 1e-12);
  EXPECT_NEAR(r.gemm_s, kGemm.flops() / kPeak, 1e-12);
}

// With the all-reduce running longer than it, the GEMM's 1000 tiles run on the SMs the c channels leave:
// ceil(1000 / (100 - c)) waves.
TEST(ReplayGemm, SharesTheSmsWithNcclChannels)
{
  const GemmRun r = run(1.0, true);
  ASSERT_GT(r.channels, 0);
  ASSERT_LT(r.channels, kSms);
  EXPECT_NEAR(r.gemm_s, std::ceil(1000.0 / (kSms - r.channels)) * kTile, 1e-12);
  EXPECT_GT(r.gemm_s, 10 * kTile);
  // Turned off: all SMs.
  EXPECT_NEAR(run(1.0, false).gemm_s, 10 * kTile, 1e-12);
}

// An all-reduce that ends while the GEMM runs: the part of the GEMM done by then went at the shared rate, the rest
// at the full one: t_c + (1 - t_c / slow) fast.
TEST(ReplayGemm, RegainsTheSmsWhenTheCollectiveEnds)
{
  const double fast = 10 * kTile;
  const int channels = run(1.0, true).channels;
  const double slow = std::ceil(1000.0 / (kSms - channels)) * kTile;
  const double tc = 0.25 * slow;
  EXPECT_NEAR(run(tc, true).gemm_s, tc + (1 - tc / slow) * fast, 1e-12);
}
