// ECMP in the fluid backend: per-flow and per-QP hashing, several QPs per connection, ideal spraying, and collisions
// as they show in the flows and in the summary's balance figures. Expected paths come from Topology::route and
// all_paths, the routing the backend documents it uses; expected times from max-min closed forms.
#include "railyard/common/child_process.hpp"

#include "railyard/scenario/fluid_outputs.hpp"
#include "railyard/sim/simulation.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>

namespace scn = railyard::scenario;

using namespace railyard;

namespace {

// 4 leaves x 4 single-GPU nodes, 4 spines (1:1): four equal-cost paths between GPUs on different leaves.
topo::ClusterSpec four_spines()
{
  topo::ClusterSpec s;
  s.kind = topo::ClusterKind::FatTree;
  s.nodes = 16;
  s.gpus_per_node = 1;
  s.leaf_downlinks = 4;
  return s;
}

struct Xfer {
  int src, dst;
  std::uint64_t tag;
  double bytes;
};

struct FlowOut {
  int src, dst, qp;
  std::uint64_t tag;
  double bytes;
  std::vector<std::uint32_t> path;
};

struct Out {
  std::vector<double> arrival;
  std::vector<FlowOut> flows;
  double balance = 0;   ///< max uplink bytes over an even split, worst switch
  double max_flows = 0; ///< most flows on one fabric link at once
};

Out run(const std::vector<Xfer>& xs, sim::FluidConfig fluid, std::uint64_t seed)
{
  const auto v =
      railyard::run_in_child([&] {
        const topo::Topology t = topo::build_topology(four_spines());
        sim::SimulationConfig config;
        config.backend = sim::Backend::Fluid;
        config.seed = seed;
        config.fluid = fluid;
        sim::Simulation s(t, config);
        auto& net = s.network();
        std::vector<double> arrival(xs.size(), -1);
        std::set<int> gpus;
        for (const auto& x : xs) {
          gpus.insert(x.src);
          gpus.insert(x.dst);
        }
        for (int g : gpus)
          s.spawn(g, "gpu", [&net, &xs, &arrival, g] {
            std::vector<sim::RequestId> reqs;
            std::vector<std::size_t> which;
            for (std::size_t i = 0; i < xs.size(); ++i)
              if (xs[i].dst == g) {
                reqs.push_back(net.irecv(g, xs[i].src, xs[i].tag));
                which.push_back(i);
              }
            for (const auto& x : xs)
              if (x.src == g) net.isend(g, x.dst, x.tag, Bytes(x.bytes));
            while (!reqs.empty()) {
              const auto k = net.wait_any(reqs);
              arrival[which[k]] = net.now().seconds();
              reqs.erase(reqs.begin() + static_cast<long>(k));
              which.erase(which.begin() + static_cast<long>(k));
            }
          });
        s.run();
        const auto& rep = s.fluid()->report();
        const auto summary = scn::fluid_summary(rep, config.fluid);
        std::vector<double> out = arrival;
        out.push_back(summary["ecmp_balance"]["max_uplink_over_even"].get<double>());
        out.push_back(summary["ecmp_balance"]["max_flows_on_a_fabric_link"].get<double>());
        out.push_back(double(rep.flows.size()));
        for (const auto& f : rep.flows) {
          out.insert(out.end(), {double(f.src), double(f.dst), double(f.qp), double(f.tag), f.bytes, double(f.hops)});
          for (std::uint32_t h = 0; h < f.hops; ++h)
            out.push_back(rep.paths[f.path_offset + h]);
        }
        return out;
      }).values;
  Out o;
  std::size_t i = xs.size();
  o.arrival.assign(v.begin(), v.begin() + static_cast<long>(xs.size()));
  o.balance = v[i++];
  o.max_flows = v[i++];
  const auto n = static_cast<std::size_t>(v[i++]);
  for (std::size_t k = 0; k < n; ++k) {
    FlowOut f;
    f.src = static_cast<int>(v[i++]);
    f.dst = static_cast<int>(v[i++]);
    f.qp = static_cast<int>(v[i++]);
    f.tag = static_cast<std::uint64_t>(v[i++]);
    f.bytes = v[i++];
    const auto hops = static_cast<std::size_t>(v[i++]);
    for (std::size_t h = 0; h < hops; ++h)
      f.path.push_back(static_cast<std::uint32_t>(v[i++]));
    o.flows.push_back(f);
  }
  return o;
}

sim::FluidConfig mode(sim::EcmpMode m, int qps = 1)
{
  sim::FluidConfig f;
  f.ecmp = m;
  f.qps_per_connection = qps;
  f.record_links = false;
  return f;
}

std::vector<std::uint32_t> as_ids(const topo::Path& p)
{
  return {p.begin(), p.end()};
}

// Path latency of a cross-leaf route: PCIe + NIC + fabric x 2 + NIC + PCIe (defaults 0.5, 1, 0.6 us).
constexpr double kCrossLeafLatency = 0.5e-6 + 1e-6 + 0.6e-6 + 0.6e-6 + 1e-6 + 0.5e-6;
constexpr double kNic = 50e9;

// per_flow: the k-th transfer between a pair takes route(src, dst, k, seed), so repeated transfers spread out.
TEST(FluidEcmp, PerFlowHashesEveryTransferAnew)
{
  std::vector<Xfer> xs;
  for (int k = 0; k < 8; ++k)
    xs.push_back({0, 12, 0, 1e6});
  const Out o = run(xs, mode(sim::EcmpMode::PerFlow), 3);
  const topo::Topology t = topo::build_topology(four_spines());
  std::set<std::vector<std::uint32_t>> distinct;
  ASSERT_EQ(o.flows.size(), 8U);
  std::multiset<std::vector<std::uint32_t>> expected, got;
  for (int k = 0; k < 8; ++k)
    expected.insert(as_ids(t.route(0, 12, static_cast<std::uint64_t>(k), 3)));
  for (const auto& f : o.flows) {
    got.insert(f.path);
    distinct.insert(f.path);
  }
  EXPECT_EQ(got, expected);
  EXPECT_GT(distinct.size(), 1U);
}

// per_qp: a connection keeps its path for every transfer; another tag may hash elsewhere.
TEST(FluidEcmp, PerQpKeepsOnePathPerConnection)
{
  std::vector<Xfer> xs;
  for (std::uint64_t tag = 0; tag < 6; ++tag)
    for (int k = 0; k < 4; ++k)
      xs.push_back({0, 12, tag, 1e6});
  const Out o = run(xs, mode(sim::EcmpMode::PerQp), 3);
  std::map<std::uint64_t, std::set<std::vector<std::uint32_t>>> by_tag;
  std::set<std::vector<std::uint32_t>> all;
  for (const auto& f : o.flows) {
    by_tag[f.tag].insert(f.path);
    all.insert(f.path);
  }
  ASSERT_EQ(by_tag.size(), 6U);
  for (const auto& [tag, paths] : by_tag)
    EXPECT_EQ(paths.size(), 1U) << "tag " << tag;
  EXPECT_GT(all.size(), 1U) << "six connections all on one of four paths";
}

// NCCL_IB_QPS_PER_CONNECTION = 4: each transfer is four flows of S/4 (qp 0..3). Alone on the fabric they share the
// sender's NIC, 50 GB/s / 4 each, so the transfer still takes latency + S / 50 GB/s.
TEST(FluidEcmp, FourQpsSplitATransfer)
{
  const double S = 64e6;
  const Out o = run({{0, 12, 0, S}}, mode(sim::EcmpMode::PerQp, 4), 1);
  ASSERT_EQ(o.flows.size(), 4U);
  std::set<int> qps;
  for (const auto& f : o.flows) {
    EXPECT_EQ(f.bytes, S / 4);
    qps.insert(f.qp);
  }
  EXPECT_EQ(qps, (std::set<int>{0, 1, 2, 3}));
  EXPECT_NEAR(o.arrival[0], kCrossLeafLatency + S / kNic, 1e-12);
}

// Spraying: one flow of S / P on each of the P equal-cost paths, every path once; the NIC is still the limit.
TEST(FluidEcmp, SprayUsesEveryEqualCostPathOnce)
{
  const double S = 64e6;
  const Out o = run({{0, 12, 0, S}}, mode(sim::EcmpMode::Spray), 1);
  const topo::Topology t = topo::build_topology(four_spines());
  std::set<std::vector<std::uint32_t>> expected, got;
  for (const auto& p : t.all_paths(0, 12))
    expected.insert(as_ids(p));
  for (const auto& f : o.flows) {
    got.insert(f.path);
    EXPECT_EQ(f.bytes, S / static_cast<double>(expected.size()));
  }
  EXPECT_EQ(got, expected);
  EXPECT_EQ(o.flows.size(), expected.size());
  EXPECT_NEAR(o.arrival[0], kCrossLeafLatency + S / kNic, 1e-12);
}

// Two connections from leaf 0 to leaf 1, hashed per QP. Where their hashes pick the same leaf-0 uplink they share it
// (25 GB/s each; that uplink carries 2 S, 4x an even split of leaf 0's 2 S over its 4 uplinks); otherwise each runs
// at NIC speed (2x). Whichever the flows' recorded paths show, times and balance must follow; over 24 seeds both
// cases occur (a collision has probability 1/4). Spraying always gives 1x.
TEST(FluidEcmp, CollisionsShowInTimesAndBalance)
{
  const double S = 32e6;
  const std::vector<Xfer> xs{{0, 4, 0, S}, {1, 5, 0, S}};
  int collisions = 0, apart = 0;
  for (std::uint64_t seed = 1; seed <= 24; ++seed) {
    const Out o = run(xs, mode(sim::EcmpMode::PerQp), seed);
    ASSERT_EQ(o.flows.size(), 2U);
    const bool shared = o.flows[0].path[2] == o.flows[1].path[2]; // hop 2: the leaf's uplink
    const double rate = shared ? kNic / 2 : kNic;
    EXPECT_NEAR(o.arrival[0], kCrossLeafLatency + S / rate, 1e-12) << "seed " << seed;
    EXPECT_NEAR(o.arrival[1], kCrossLeafLatency + S / rate, 1e-12) << "seed " << seed;
    EXPECT_DOUBLE_EQ(o.balance, shared ? 4.0 : 2.0) << "seed " << seed;
    EXPECT_EQ(o.max_flows, shared ? 2.0 : 1.0) << "seed " << seed;
    (shared ? collisions : apart)++;
  }
  EXPECT_GT(collisions, 0);
  EXPECT_GT(apart, 0);
  const Out s = run(xs, mode(sim::EcmpMode::Spray), 1);
  EXPECT_NEAR(s.arrival[0], kCrossLeafLatency + S / kNic, 1e-12);
  EXPECT_DOUBLE_EQ(s.balance, 1.0);
}

} // namespace
