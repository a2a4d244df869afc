// The framework's host thread in the replay (sim::HostModel): ops issued in order at a cost each, an op starting no
// earlier than its issue, the host waiting for the device at synchronisation marks. Expectations are the closed forms
// of a host and a device running a chain of kernels.
#include "railyard/sim/replay.hpp"
#include "replay_support.hpp"

#include <gtest/gtest.h>

using namespace railyard;
using namespace railyard::workloads;

namespace {

constexpr double kPeak = 1e12;      // FLOP/s
constexpr double kKernelS = 100e-6; // each kernel's FLOPs take 100 us

// One rank: `n` kernels of 100 us on one stream; `marks` per op (by index) where given.
Workload chain(int n, const std::vector<std::pair<int, std::uint8_t>>& marks)
{
  Workload w;
  w.source = "test";
  RankGraphBuilder b;
  for (int i = 0; i < n; ++i)
    b.add(Op::make_compute(kKernelS * kPeak, Bytes(0), 0), "kernel");
  for (const auto& [op, m] : marks)
    b.add_host_marks(static_cast<OpId>(op), m);
  w.add_rank(b.finish());
  return w;
}

double step(const Workload& w, const sim::HostModel& host)
{
  const topo::Topology t = topo::build_topology(railyard::test::one_node(1));
  const calibration::Profile prof = railyard::test::flops_only_profile(kPeak);
  sim::ReplayOptions o;
  o.comm = sim::CommModel::Analytical;
  o.host = host;
  o.lower = [](const models::CollectiveCall&, const InputLocation&) -> models::Schedule {
    throw std::logic_error("no collectives here");
  };
  return sim::replay_workload(w, t, {}, &prof, o).step_time.seconds();
}

sim::HostModel host(double launch_s, double microbatch_s = 0, double step_s = 0)
{
  sim::HostModel h;
  h.enabled = true;
  h.launch_s = launch_s;
  h.microbatch_s = microbatch_s;
  h.step_s = step_s;
  return h;
}

} // namespace

TEST(ReplayHost, DeviceBoundChainPaysOneLaunch)
{
  // The host issues op i at (i+1) c < the device's start of it, so only the first launch shows: c + n d.
  const double c = 10e-6;
  EXPECT_NEAR(step(chain(10, {{0, kHostMicrobatch}}), host(c)), c + 10 * kKernelS, 1e-12);
}

TEST(ReplayHost, HostBoundChainIsTheHostsIssueTimePlusTheLastKernel)
{
  // c > d: op i starts at its issue (i+1) c; the step ends at n c + d.
  const double c = 300e-6;
  EXPECT_NEAR(step(chain(10, {{0, kHostMicrobatch}}), host(c)), 10 * c + kKernelS, 1e-12);
}

TEST(ReplayHost, MicroBatchAndStepCostsComeBeforeTheOpsTheyOpen)
{
  // Host-bound: m before op 0, m before op 5, s before op 8, c per op; the last op starts at 2 m + s + 10 c.
  const double c = 300e-6, m = 2e-3, s = 5e-3;
  const auto w = chain(10, {{0, kHostMicrobatch}, {5, kHostMicrobatch}, {8, kHostStep}});
  EXPECT_NEAR(step(w, host(c, m, s)), 2 * m + s + 10 * c + kKernelS, 1e-12);
}

TEST(ReplayHost, ASyncWaitsForTheDeviceThenIssuesAgain)
{
  // Device-bound (c < d) with a sync after op 4: ops 0-4 end at c + 5 d; the host resumes then and issues op 5 at
  // c + 5 d + c, so the device idles one launch: 2 c + 10 d. Without the sync: c + 10 d.
  const double c = 10e-6;
  EXPECT_NEAR(step(chain(10, {{0, kHostMicrobatch}, {4, kHostSync}}), host(c)), 2 * c + 10 * kKernelS, 1e-12);
  // A p2p sync mark counts only while the model synchronises after pipeline transfers.
  sim::HostModel h = host(c);
  EXPECT_NEAR(step(chain(10, {{0, kHostMicrobatch}, {4, kHostSyncP2p}}), h), 2 * c + 10 * kKernelS, 1e-12);
  h.sync_after_p2p = false;
  EXPECT_NEAR(step(chain(10, {{0, kHostMicrobatch}, {4, kHostSyncP2p}}), h), c + 10 * kKernelS, 1e-12);
}

TEST(ReplayHost, OffOrWithoutMarksTheDeviceRunsAlone)
{
  // The host model applies to programs with host marks only; off, the step is the device's n d.
  EXPECT_NEAR(step(chain(10, {}), host(300e-6)), 10 * kKernelS, 1e-12);
  EXPECT_NEAR(step(chain(10, {{0, kHostMicrobatch}}), sim::HostModel{}), 10 * kKernelS, 1e-12);
}
