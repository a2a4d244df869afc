// PFC in the fluid backend: pause at XOFF, resume at XON, headroom, propagation upstream, head-of-line blocking, per
// priority; and its bad input.
#include "railyard/common/child_process.hpp"

#include "railyard/models/cc/pfc.hpp"
#include "railyard/sim/simulation.hpp"
#include "replay_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

using namespace railyard;

namespace {

using test::one_spine;

struct Send {
  int src, dst;
  double bytes;
  int priority = 3;
};

struct Outcome {
  std::vector<double> arrival; ///< per send
  double bytes_sent = 0, bytes_received = 0;
  sim::FluidStats stats;
  std::vector<std::string> link_names;
  std::vector<sim::QueueStep> steps;
};

Outcome run(const std::vector<Send>& sends, sim::FluidConfig fluid, bool keep_steps = false)
{
  // Outcome travels from the child as numbers: arrivals, totals, then per link (paused, max_ingress, kind flags).
  const auto values = railyard::run_in_child([&] {
                        const topo::Topology t = topo::build_topology(one_spine());
                        sim::SimulationConfig config;
                        config.backend = sim::Backend::Fluid;
                        config.fluid = fluid;
                        sim::Simulation s(t, config);
                        auto& net = s.network();
                        std::vector<double> arrival(sends.size(), -1);
                        std::vector<double> steps;
                        s.fluid()->on_queue_step([&](const sim::QueueStep& st) {
                          if (keep_steps)
                            steps.insert(steps.end(), {st.t0, st.t1, double(st.link), double(st.priority),
                                                       st.paused ? 1.0 : 0.0, st.sent, st.queue});
                        });
                        for (std::size_t i = 0; i < sends.size(); ++i)
                          s.fluid()->set_priority(sends[i].src, sends[i].dst, i, sends[i].priority);
                        std::set<int> gpus;
                        for (const auto& x : sends) {
                          gpus.insert(x.src);
                          gpus.insert(x.dst);
                        }
                        for (int g : gpus)
                          s.spawn(g, "gpu", [&net, &sends, &arrival, g] {
                            std::vector<sim::RequestId> reqs;
                            std::vector<std::size_t> which;
                            for (std::size_t i = 0; i < sends.size(); ++i)
                              if (sends[i].dst == g) {
                                reqs.push_back(net.irecv(g, sends[i].src, i));
                                which.push_back(i);
                              }
                            for (std::size_t i = 0; i < sends.size(); ++i)
                              if (sends[i].src == g) net.isend(g, sends[i].dst, i, Bytes(sends[i].bytes));
                            while (!reqs.empty()) {
                              const auto k = net.wait_any(reqs);
                              arrival[which[k]] = net.now().seconds();
                              reqs.erase(reqs.begin() + static_cast<long>(k));
                              which.erase(which.begin() + static_cast<long>(k));
                            }
                          });
                        s.run();
                        const auto& rep = s.fluid()->report();
                        std::vector<double> out = arrival;
                        out.push_back(net.totals().bytes_sent);
                        out.push_back(net.totals().bytes_received);
                        out.push_back(rep.stats.overflow_bytes);
                        out.push_back(double(rep.stats.pause_events));
                        out.push_back(double(rep.stats.links.size()));
                        for (const auto& l : rep.stats.links)
                          out.insert(out.end(), {l.paused, l.max_ingress});
                        out.push_back(double(steps.size()));
                        out.insert(out.end(), steps.begin(), steps.end());
                        return out;
                      }).values;
  Outcome o;
  std::size_t i = 0;
  o.arrival.assign(values.begin(), values.begin() + static_cast<long>(sends.size()));
  i = sends.size();
  o.bytes_sent = values[i++];
  o.bytes_received = values[i++];
  o.stats.overflow_bytes = values[i++];
  o.stats.pause_events = static_cast<std::uint64_t>(values[i++]);
  const auto links = static_cast<std::size_t>(values[i++]);
  o.stats.links.resize(links);
  for (auto& l : o.stats.links) {
    l.paused = values[i++];
    l.max_ingress = values[i++];
  }
  const auto nsteps = static_cast<std::size_t>(values[i++]);
  for (std::size_t k = 0; k + 7 <= nsteps; k += 7) {
    sim::QueueStep st;
    st.t0 = values[i + k];
    st.t1 = values[i + k + 1];
    st.link = static_cast<std::uint32_t>(values[i + k + 2]);
    st.priority = static_cast<int>(values[i + k + 3]);
    st.paused = values[i + k + 4] != 0;
    st.sent = values[i + k + 5];
    st.queue = values[i + k + 6];
    o.steps.push_back(st);
  }
  return o;
}

sim::FluidConfig pfc_only()
{
  sim::FluidConfig f;
  f.pfc = models::cc::pfc_defaults(f.mtu);
  f.pfc.enabled = true;
  f.record_flows = false;
  f.record_links = false;
  return f;
}

std::vector<Send> incast(double bytes)
{
  // Eight senders on leaves 1 and 2 into GPU 0 on leaf 0.
  std::vector<Send> s;
  for (int g = 4; g < 12; ++g)
    s.push_back({g, 0, bytes});
  return s;
}

topo::LinkId link_between(const topo::Topology& t, const std::string& from, const std::string& to)
{
  for (topo::LinkId l = 0; l < t.num_links(); ++l)
    if (t.link_name(l) == from + "->" + to) return l;
  throw std::runtime_error("no link " + from + "->" + to);
}

// An 8:1 incast with PFC and no congestion control: the receiver's port is oversubscribed 8x, queues reach XOFF,
// and the pauses climb the tree: the spine's port to leaf 0, the leaves' uplinks to the spine, the senders' NICs.
// Nothing overflows the headroom and every byte arrives; the receiver's port stays busy, so the incast takes
// (8 S) / B after the first byte.
TEST(Pfc, IncastPausesPropagateUpstreamAndNothingIsLost)
{
  const double S = 8.0 * 1024 * 1024, B = 50e9;
  const Outcome o = run(incast(S), pfc_only());
  EXPECT_EQ(o.stats.overflow_bytes, 0.0);
  EXPECT_EQ(o.bytes_sent, o.bytes_received);
  EXPECT_EQ(o.bytes_sent, 8 * S);
  EXPECT_GT(o.stats.pause_events, 0U);

  const topo::Topology t = topo::build_topology(one_spine());
  const auto spine_to_leaf0 = link_between(t, "spine0", "leaf0");
  const auto leaf1_up = link_between(t, "leaf1", "spine0");
  const auto nic4_up = link_between(t, "nic4.0", "leaf1");
  EXPECT_GT(o.stats.links[spine_to_leaf0].paused, 0) << "the congested port pauses the spine";
  EXPECT_GT(o.stats.links[leaf1_up].paused, 0) << "the spine's queue pauses the leaf uplink";
  EXPECT_GT(o.stats.links[nic4_up].paused, 0) << "the leaf's queue pauses the sender's NIC";

  const double xoff = models::cc::pfc_defaults(Bytes(4096)).xoff.bytes();
  for (topo::LinkId l = 0; l < t.num_links(); ++l) {
    const double headroom =
        models::cc::required_headroom(t.link(l).bandwidth, t.link(l).latency, pfc_only().pfc.response_time, Bytes(4096))
            .bytes();
    EXPECT_LE(o.stats.links[l].max_ingress, xoff + headroom) << t.link_name(l);
  }
  const double last = *std::max_element(o.arrival.begin(), o.arrival.end());
  EXPECT_NEAR(last, 8 * S / B, 0.02 * 8 * S / B) << "the bottleneck never idles";
}

// A paused egress sends nothing on that priority, and pausing happens at all in this run.
TEST(Pfc, APausedLinkSendsNothing)
{
  const Outcome o = run(incast(4.0 * 1024 * 1024), pfc_only(), true);
  int paused_steps = 0;
  for (const auto& st : o.steps)
    if (st.paused) {
      ++paused_steps;
      EXPECT_EQ(st.sent, 0.0) << "link " << st.link << " at " << st.t0;
    }
  EXPECT_GT(paused_steps, 0);
}

// Head-of-line blocking and priorities. A victim flow from leaf 3 to GPU 1 on leaf 0 shares only the spine's port to
// leaf 0 with the incast into GPU 0; its own last hop is idle. On the incast's priority it waits whenever that port is
// paused; on another priority it is never paused and ends sooner.
TEST(Pfc, HeadOfLineBlockingOnTheSamePriorityOnly)
{
  const double S = 8.0 * 1024 * 1024, V = 4.0 * 1024 * 1024;
  auto with_victim = [&](int priority) {
    auto sends = incast(S);
    sends.push_back({12, 1, V, priority});
    return sends;
  };
  const Outcome same = run(with_victim(3), pfc_only(), true);
  const Outcome other = run(with_victim(5), pfc_only(), true);
  const double v_same = same.arrival.back(), v_other = other.arrival.back();
  EXPECT_GT(v_same, 1.5 * v_other) << "victim on the paused priority " << v_same << " s, on its own " << v_other;

  const topo::Topology t = topo::build_topology(one_spine());
  const auto spine_to_leaf0 = static_cast<std::uint32_t>(link_between(t, "spine0", "leaf0"));
  // While priority 3 is paused on that port, priority 5 keeps moving through it.
  bool overlap = false;
  for (const auto& p3 : other.steps)
    if (p3.link == spine_to_leaf0 && p3.priority == 3 && p3.paused)
      for (const auto& p5 : other.steps)
        if (p5.link == spine_to_leaf0 && p5.priority == 5 && p5.t0 == p3.t0) {
          EXPECT_FALSE(p5.paused);
          overlap = overlap || p5.sent > 0;
        }
  EXPECT_TRUE(overlap);
  EXPECT_EQ(other.stats.overflow_bytes, 0.0);
  EXPECT_EQ(same.bytes_sent, same.bytes_received);
}

// ---- PFC's resume delay and the FIFO egress queue ----

/// The bottleneck port's steps in time order, and its idle time between its first and its last byte: what it could
/// have sent in those steps and did not, over its capacity.
struct PortActivity {
  double first = -1, last = -1, idle_s = 0, sent = 0;
};

PortActivity port_activity(const Outcome& o, std::uint32_t link, double capacity)
{
  std::vector<sim::QueueStep> steps;
  for (const auto& st : o.steps)
    if (st.link == link) steps.push_back(st);
  std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.t0 < b.t0; });
  PortActivity a;
  std::size_t first = steps.size(), last = 0;
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i].sent > 0) {
      first = std::min(first, i);
      last = i;
      a.sent += steps[i].sent;
    }
  if (first == steps.size()) return a;
  a.first = steps[first].t0;
  a.last = steps[last].t1;
  // Inner steps only: the first and last may be partly before the first byte or after the last.
  for (std::size_t i = first + 1; i < last; ++i)
    a.idle_s += std::max(0.0, capacity * (steps[i].t1 - steps[i].t0) - steps[i].sent) / capacity;
  return a;
}

/// Times a link went from paused to running: RESUMEs that took effect.
int resumes(const Outcome& o, std::uint32_t link)
{
  std::vector<sim::QueueStep> steps;
  for (const auto& st : o.steps)
    if (st.link == link) steps.push_back(st);
  std::sort(steps.begin(), steps.end(), [](const auto& a, const auto& b) { return a.t0 < b.t0; });
  int n = 0;
  for (std::size_t i = 1; i < steps.size(); ++i)
    n += steps[i - 1].paused && !steps[i].paused;
  return n;
}

// A 2:1 incast from leaf 1 into GPU 0: every byte for nic0.0 enters leaf 0 through one ingress port, the spine's, so
// that port's counter is the bottleneck queue. When it falls below XON the spine port resumes one cable latency L
// later; meanwhile the bottleneck sends what it holds, at most XON. With XON >= B (2 L + response) (the RESUME's
// flight, the upstream's reaction and the first new byte's flight, all at the drain rate B) the queue cannot empty
// before new bytes come: the port never idles and the incast takes 2 S / B after the first byte, plus the path.
TEST(Pfc, ResumeBeforeTheQueueRunsDryWhenXonCoversTheRoundTrip)
{
  const double S = 4.0 * 1024 * 1024, B = 50e9;
  const sim::FluidConfig f = pfc_only();
  const topo::Topology t = topo::build_topology(one_spine());
  const auto spine_to_leaf0 = static_cast<std::uint32_t>(link_between(t, "spine0", "leaf0"));
  const auto port = static_cast<std::uint32_t>(link_between(t, "leaf0", "nic0.0"));
  const double L = t.link(spine_to_leaf0).latency.seconds();
  ASSERT_GE(f.pfc.xon.bytes(), B * (2 * L + f.pfc.response_time.seconds()))
      << "the defaults no longer cover the round trip: this test's premise";

  const Outcome o = run({{4, 0, S}, {5, 0, S}}, f, true);
  EXPECT_EQ(o.stats.overflow_bytes, 0.0);
  EXPECT_GT(resumes(o, spine_to_leaf0), 0) << "the spine port must pause and resume for this to test anything";
  const PortActivity a = port_activity(o, port, B);
  EXPECT_NEAR(a.sent, 2 * S, 1e-6 * S);
  EXPECT_LT(a.idle_s, 1e-12) << "the port idled while bytes waited behind a pause";
  // GPU 4 -> NIC -> leaf1 -> spine0 -> leaf0 -> NIC -> GPU 0: 0.5 + 1 + 0.6 + 0.6 + 1 + 0.5 us.
  const double path = 4.2e-6, step = std::min(f.time_step.seconds(), L + f.pfc.response_time.seconds());
  const double last = std::max(o.arrival[0], o.arrival[1]);
  EXPECT_GE(last, 2 * S / B + path);
  EXPECT_LE(last, 2 * S / B + path + 2 * step);
}

// The same incast with XON below B L: after each XON crossing the bottleneck holds at most XON, which lasts XON / B,
// and nothing new can reach it before the RESUME has crossed the cable, L after the crossing. So every RESUME of the
// spine port costs the bottleneck at least L - XON / B of idle time: real PFC behaviour with such thresholds.
TEST(Pfc, XonBelowTheResumeDelayIdlesTheBottleneckAfterEveryResume)
{
  const double S = 4.0 * 1024 * 1024, B = 50e9;
  sim::FluidConfig f = pfc_only();
  f.pfc.xoff = Bytes(16 * 1024);
  f.pfc.xon = Bytes(8 * 1024);
  const topo::Topology t = topo::build_topology(one_spine());
  const auto spine_to_leaf0 = static_cast<std::uint32_t>(link_between(t, "spine0", "leaf0"));
  const auto port = static_cast<std::uint32_t>(link_between(t, "leaf0", "nic0.0"));
  const double L = t.link(spine_to_leaf0).latency.seconds();
  const double idle_per_resume = L - f.pfc.xon.bytes() / B;
  ASSERT_GT(idle_per_resume, 0);

  const Outcome o = run({{4, 0, S}, {5, 0, S}}, f, true);
  EXPECT_EQ(o.stats.overflow_bytes, 0.0) << "headroom is sized per link, whatever XOFF is";
  EXPECT_EQ(o.bytes_sent, o.bytes_received);
  const int n = resumes(o, spine_to_leaf0);
  ASSERT_GT(n, 10);
  const PortActivity a = port_activity(o, port, B);
  EXPECT_GE(a.idle_s, n * idle_per_resume * (1 - 1e-6)) << n << " resumes";
  EXPECT_GE(std::max(o.arrival[0], o.arrival[1]), 2 * S / B + 4.2e-6 + n * idle_per_resume * (1 - 1e-6));
}

// An egress queue is first in, first out. Flows A (S_A) and V (S_V > S_A) start together at line rate B into one
// 50 GB/s port with thresholds so high that nothing pauses: the port sends B, half of it A's while both arrive. A's
// last byte arrives at S_A / B, behind a queue of (2 B - B) S_A / B = S_A, so it leaves at 2 S_A / B; V's last byte
// leaves when all S_A + S_V have, at (S_A + S_V) / B. A queue that served each flow in proportion to its backlog
// would keep A's last bytes behind V's arrivals until V ended.
TEST(Pfc, EgressQueueIsFirstInFirstOut)
{
  const double SA = 1024.0 * 1024, SV = 8.0 * 1024 * 1024, B = 50e9, path = 4.2e-6;
  sim::FluidConfig f = pfc_only();
  f.pfc.xoff = Bytes(1024.0 * 1024 * 1024);
  f.pfc.xon = Bytes(1000.0 * 1024 * 1024);
  const Outcome o = run({{4, 0, SA}, {8, 0, SV}}, f, true);
  EXPECT_EQ(o.stats.pause_events, 0U);
  const double step = f.time_step.seconds();
  EXPECT_NEAR(o.arrival[0], 2 * SA / B + path, step);
  EXPECT_NEAR(o.arrival[1], (SA + SV) / B + path, step);
}

// ---- bad input ----

YamlNode yaml(const std::string& text)
{
  return YamlNode::load_string(text, "pfc.yaml");
}

TEST(PfcInput, ThresholdBelowOneMtuIsRefusedNamingIt)
{
  try {
    models::cc::parse_pfc(yaml("pfc:\n  enabled: true\n  xoff: 2 KiB\n").at("pfc"), Bytes(4096));
    FAIL() << "accepted an XOFF below one MTU";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "pfc.yaml");
    EXPECT_EQ(e.where().line, 3);
    EXPECT_EQ(e.where().field, "pfc.xoff");
    EXPECT_NE(e.rule().find("below one MTU"), std::string::npos) << e.what();
    EXPECT_FALSE(e.fix().empty());
  }
  EXPECT_THROW(models::cc::parse_pfc(yaml("pfc:\n  xoff: 64 KiB\n  xon: 1000\n").at("pfc"), Bytes(4096)), InputError);
  EXPECT_THROW(models::cc::parse_pfc(yaml("pfc:\n  headroom: 100\n").at("pfc"), Bytes(4096)), InputError);
}

TEST(PfcInput, XonAboveXoffIsRefused)
{
  try {
    models::cc::parse_pfc(yaml("pfc:\n  xoff: 64 KiB\n  xon: 128 KiB\n").at("pfc"), Bytes(4096));
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().field, "pfc.xon");
    EXPECT_EQ(e.where().line, 3);
  }
}

// The headroom a port needs: rate x (2 x latency + response) + 2 MTU; 400 Gb/s, 1 us, 0: 50e9 x 2e-6 + 8192.
TEST(PfcInput, RequiredHeadroomFormula)
{
  EXPECT_DOUBLE_EQ(models::cc::required_headroom(units::Gbps(400), units::us(1), Seconds(0), Bytes(4096)).bytes(),
                   50e9 * 2e-6 + 2 * 4096);
}

} // namespace
