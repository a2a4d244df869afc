// DCQCN in the fluid backend against the fluid model of Zhu, Ghobadi, Misra and Padhye, "ECN or Delay: Lessons Learnt
// from Analysis of DCQCN and TIMELY", CoNEXT 2016, Section 3 (its equations (1)-(5) with fast recovery). N flows
// share one bottleneck of capacity C; rates R are in packets per second, B (byte counter) in packets, p the RED
// marking probability of the queue:
//   a = 1 - (1-p)^(tau R)                 P[a CNP in one CNP interval tau]
//   b = p / ((1-p)^-B - 1),  c = b (1-p)^(F B)          byte-counter increase events, those past fast recovery
//   d = p / ((1-p)^-(T R) - 1), e = d (1-p)^(F T R)     timer increase events, those past fast recovery
//   dR_C/dt = -R_C alpha a / (2 tau) + (R_T - R_C) R (b + d) / 2
//   dR_T/dt = -(R_T - R_C) a / tau + R_AI R (c + e)
//   dalpha/dt = g / tau' ((1 - (1-p)^(tau' R)) - alpha)
//   dq/dt = N R_C - C
// At the fixed point R_C = C / N and the three rate equations give alpha = 1 - (1-p)^(tau' R) and
//   alpha a^2 = tau^2 R_AI R (b + d)(c + e),
// one equation in p, solved here by bisection; the queue follows from the RED ramp, q* = Kmin + (p* / Pmax)(Kmax - Kmin).
// The simulation is not that ODE: it runs DCQCN's discrete reaction point on a fluid queue with random (seeded)
// marks, as the paper's ns-3 simulations validated its model against; their time averages must land on the fixed point.
#include "railyard/common/child_process.hpp"

#include "railyard/sim/simulation.hpp"

#include <gtest/gtest.h>

#include <cmath>

using namespace railyard;

namespace {

struct FixedPoint {
  double p = 0;     ///< marking probability
  double queue = 0; ///< bytes
};

FixedPoint zhu_fixed_point(const models::cc::DcqcnParams& d, double capacity_Bps, int n, double mtu)
{
  const double R = capacity_Bps / mtu / n;          // packets per second per flow
  const double B = d.byte_counter.bytes() / mtu;    // packets
  const double rai = d.rate_ai.bytes_per_sec() / mtu;       // packets per second
  const double tau = d.cnp_interval.seconds(), tau_p = d.alpha_period.seconds(), T = d.increase_timer.seconds();
  const double F = d.fast_recovery_steps;
  auto pw = [](double p, double x) { return std::exp(x * std::log1p(-p)); };        // (1-p)^x
  auto ev = [](double p, double x) { return p / std::expm1(-x * std::log1p(-p)); }; // p / ((1-p)^-x - 1)
  auto f = [&](double p) {
    const double a = 1 - pw(p, tau * R);
    const double b = ev(p, B), c = b * pw(p, F * B);
    const double dd = ev(p, T * R), e = dd * pw(p, F * T * R);
    const double alpha = 1 - pw(p, tau_p * R);
    return alpha * a * a - tau * tau * rai * R * (b + dd) * (c + e);
  };
  double lo = 1e-12, hi = 0.999;
  for (int i = 0; i < 200; ++i) {
    const double mid = std::sqrt(lo * hi);
    (f(mid) > 0 ? hi : lo) = mid;
  }
  FixedPoint fp;
  fp.p = std::sqrt(lo * hi);
  fp.queue = d.k_min.bytes() + fp.p / d.p_max * (d.k_max.bytes() - d.k_min.bytes());
  return fp;
}

struct Measured {
  double queue = 0, p = 0, utilisation = 0, jain = 0;
};

// N senders on one leaf send long flows to one receiver on the same leaf: the leaf's port to the receiver's NIC is
// the only queue. Time averages are taken over [warmup, duration); the flows end a little after `total`.
Measured simulate(int n, double gbps, double mtu, double total, double warmup, double duration, std::uint64_t seed)
{
  const auto out = railyard::run_in_child([=] {
                     topo::ClusterSpec spec;
                     spec.kind = topo::ClusterKind::FatTree;
                     spec.nodes = 32;
                     spec.gpus_per_node = 1;
                     spec.leaf_downlinks = 32;
                     spec.nic_bandwidth = units::Gbps(gbps);
                     spec.fabric_bandwidth = units::Gbps(gbps);
                     const topo::Topology t = topo::build_topology(spec);
                     sim::SimulationConfig config;
                     config.backend = sim::Backend::Fluid;
                     config.seed = seed;
                     config.fluid.cc = sim::CongestionControl::Dcqcn;
                     config.fluid.dcqcn = models::cc::dcqcn_preset("sigcomm2015");
                     config.fluid.mtu = Bytes(mtu);
                     config.fluid.record_links = false;
                     config.fluid.record_flows = false;
                     sim::Simulation s(t, config);
                     auto& net = s.network();
                     double q_int = 0, p_int = 0, sent = 0, span = 0;
                     std::uint32_t bottleneck = 0;
                     {
                       const auto path = t.route(1, 0, 0, 0);
                       bottleneck = static_cast<std::uint32_t>(path[path.size() - 2]); // leaf -> NIC of GPU 0
                     }
                     const auto params = config.fluid.dcqcn;
                     s.fluid()->on_queue_step([&](const sim::QueueStep& st) {
                       if (st.link != bottleneck || st.t1 <= warmup || st.t0 >= duration)
                         return;
                       const double dt = st.t1 - st.t0;
                       q_int += st.queue * dt;
                       p_int += models::cc::marking_probability(params, Bytes(st.queue)) * dt;
                       sent += st.sent;
                       span += dt;
                     });
                     // Each flow carries its fair share of `total` seconds, so all stay active through the window.
                     const double bytes = units::Gbps(gbps).bytes_per_sec() * total / n;
                     for (int i = 1; i <= n; ++i)
                       s.spawn(i, "tx", [&net, i, bytes] { net.isend(i, 0, 0, Bytes(bytes)); });
                     s.spawn(0, "rx", [&net, n] {
                       std::vector<sim::RequestId> reqs;
                       for (int i = 1; i <= n; ++i)
                         reqs.push_back(net.irecv(0, i, 0));
                       while (!reqs.empty())
                         reqs.erase(reqs.begin() + static_cast<long>(net.wait_any(reqs)));
                     });
                     s.run();
                     const double line_rate = units::Gbps(gbps).bytes_per_sec();
                     return std::vector<double>{q_int / span, p_int / span, sent / span / line_rate};
                   }).values;
  return {out[0], out[1], out[2]};
}

class DcqcnFixedPoint : public ::testing::TestWithParam<int> {};

// 40 Gb/s and 1000-byte packets, the paper's setting, averaged over 50 ms after 40 ms of warm-up (alpha's time
// constant is K / g = 14 ms), and over seeds 1-4 (one seed's CNP draws move the averages by +-10 %). Measured here
// (seeds 1-6, 2026-12-06, with marks at the queue's start-of-step probability and with the mean of the step's two
// ends): per seed the mean queue sits 10-37 % above q* for N = 2..8 (20-22 % over six seeds), and the time average
// of p(q) 21-43 % above p* for N = 2 and 4 (27-34 % over six seeds). The model's fixed point ignores the oscillation
// of the discrete machine around it (the RED ramp and the cliff at Kmax make the average of p(q) exceed p of the
// average) and approximates the receiver's CNP pacing by windows; the paper's own model-versus-ns-3 comparisons show
// gaps of this order. Hence 30 % on the queue and on p of the mean queue, 40 % on the mean of p.
TEST_P(DcqcnFixedPoint, QueueAndMarkingFollowZhuModel)
{
  const int n = GetParam();
  const double gbps = 40, mtu = 1000;
  const auto d = models::cc::dcqcn_preset("sigcomm2015");
  const FixedPoint fp = zhu_fixed_point(d, units::Gbps(gbps).bytes_per_sec(), n, mtu);
  Measured m;
  constexpr int kSeeds = 4;
  for (int seed = 1; seed <= kSeeds; ++seed) {
    const Measured one = simulate(n, gbps, mtu, 0.1, 0.04, 0.09, static_cast<std::uint64_t>(seed));
    m.queue += one.queue / kSeeds;
    m.p += one.p / kSeeds;
    m.utilisation += one.utilisation / kSeeds;
  }
  const double p_of_mean = models::cc::marking_probability(d, Bytes(m.queue));
  RecordProperty("model_queue_bytes", std::to_string(fp.queue));
  RecordProperty("measured_queue_bytes", std::to_string(m.queue));
  RecordProperty("model_p", std::to_string(fp.p));
  RecordProperty("measured_mean_p", std::to_string(m.p));
  EXPECT_NEAR(m.queue, fp.queue, 0.30 * fp.queue) << "N=" << n;
  EXPECT_NEAR(p_of_mean, fp.p, 0.30 * fp.p) << "N=" << n;
  if (n <= 4) { // the queue stays far below Kmax, so the mean of p(q) is the ramp's own average
    EXPECT_NEAR(m.p, fp.p, 0.40 * fp.p) << "N=" << n;
  }
  EXPECT_GT(m.utilisation, 0.97) << "the bottleneck stays busy at the fixed point";
}

INSTANTIATE_TEST_SUITE_P(Flows, DcqcnFixedPoint, ::testing::Values(2, 4, 8),
                         [](const ::testing::TestParamInfo<int>& i) { return "N" + std::to_string(i.param); });

// The fixed point itself: more flows need more marking (the paper's Fig. 3 trend), and it stays inside the RED ramp.
TEST(DcqcnFixedPoint, GrowsWithTheNumberOfFlows)
{
  const auto d = models::cc::dcqcn_preset("sigcomm2015");
  double last = 0;
  for (int n : {1, 2, 4, 8}) {
    const FixedPoint fp = zhu_fixed_point(d, units::Gbps(40).bytes_per_sec(), n, 1000);
    EXPECT_GT(fp.p, last);
    EXPECT_GT(fp.queue, d.k_min.bytes());
    EXPECT_LT(fp.queue, d.k_max.bytes());
    last = fp.p;
  }
}

} // namespace
