// Max-min sharing of the SimGrid backend on the smallest cases that have a closed form.
#include "railyard/common/child_process.hpp"

#include "railyard/sim/simulation.hpp"

#include <gtest/gtest.h>

using namespace railyard;

namespace {

topo::ClusterSpec node_of(int gpus)
{
  topo::ClusterSpec s;
  s.kind = topo::ClusterKind::SingleNode;
  s.gpus_per_node = gpus;
  s.nvlink_bandwidth = units::GBps(100);
  s.nvlink_latency = units::us(1);
  return s;
}

// One flow alone: a + S / B with a = two NVLink hops.
TEST(FlowSharing, OneFlowTakesLatencyPlusSizeOverBandwidth)
{
  const auto out = railyard::run_in_child([] {
    const topo::Topology t = topo::build_topology(node_of(2));
    sim::Simulation s(t, {});
    double done = -1;
    auto& net = s.network();
    s.spawn(0, "tx", [&] {
      net.isend(0, 1, 7, Bytes(1e9));
    });
    s.spawn(1, "rx", [&] {
      net.wait_any({net.irecv(1, 0, 7)});
      done = net.now().seconds();
    });
    s.run();
    return std::vector<double>{done};
  }).values;
  EXPECT_NEAR(out[0], 2e-6 + 1e9 / 100e9, 1e-9);
}

// GPU 0 and GPU 1 both send to GPU 2: they share the NVSwitch -> GPU 2 link, so each gets B/2 and both finish at
// a + S / (B/2). Paths of equal latency are not needed: sharing is equal whatever the route latency.
TEST(FlowSharing, TwoFlowsOnOneLinkEachGetHalf)
{
  const auto out = railyard::run_in_child([] {
    const topo::Topology t = topo::build_topology(node_of(3));
    sim::Simulation s(t, {});
    std::vector<double> done(2, -1);
    auto& net = s.network();
    for (int src : {0, 1})
      s.spawn(src, "tx", [&net, src] {
        net.isend(src, 2, 1, Bytes(1e9));
        });
    s.spawn(2, "rx", [&] {
      std::vector<sim::RequestId> reqs{net.irecv(2, 0, 1), net.irecv(2, 1, 1)};
      std::vector<int> who{0, 1};
      while (!reqs.empty()) {
        const auto i = net.wait_any(reqs);
        done[who[i]] = net.now().seconds();
        reqs.erase(reqs.begin() + static_cast<long>(i));
        who.erase(who.begin() + static_cast<long>(i));
      }
    });
    s.run();
    return done;
  }).values;
  const double expected = 2e-6 + 1e9 / 50e9;
  EXPECT_NEAR(out[0], expected, 1e-9);
  EXPECT_NEAR(out[1], expected, 1e-9);
}

// A timer completes at its time even while a receive is pending.
TEST(FlowSharing, TimerFiresBeforeALongerTransfer)
{
  const auto out = railyard::run_in_child([] {
    const topo::Topology t = topo::build_topology(node_of(2));
    sim::Simulation s(t, {});
    std::vector<double> order;
    auto& net = s.network();
    s.spawn(0, "tx", [&] {
      net.isend(0, 1, 0, Bytes(1e9));
    });
    s.spawn(1, "rx", [&] {
      std::vector<sim::RequestId> reqs{net.irecv(1, 0, 0), net.timer(units::ms(1))};
      const auto first = net.wait_any(reqs);
      order.push_back(double(first));
      order.push_back(net.now().seconds());
      reqs.erase(reqs.begin() + static_cast<long>(first));
      net.wait_any(reqs);
      order.push_back(net.now().seconds());
    });
    s.run();
    return order;
  }).values;
  EXPECT_EQ(out[0], 1.0); // the timer, second in the list
  EXPECT_NEAR(out[1], 1e-3, 1e-12);
  EXPECT_NEAR(out[2], 2e-6 + 1e9 / 100e9, 1e-9);
}

} // namespace
