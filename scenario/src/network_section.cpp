// The `network:` section of a scenario: which backend moves the bytes and, for the fluid one, path choice, congestion
// control, PFC and what it records.
#include "railyard/scenario/network_section.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <limits>

namespace railyard::scenario {

using namespace railyard::sim; // the simulator this layer drives

void parse_network(const YamlNode& net, SimulationConfig& config, RecordChoice& records)
{
  net.expect_keys({"backend", "pxn", "time_precision", "ecmp", "qps_per_connection", "spray_max_paths", "cc", "dcqcn",
                   "pfc", "mtu", "time_step", "queue_steps", "outputs"});
  if (auto b = net.get("backend")) {
    const std::string name = b->as_string();
    const auto* k = std::find_if(kBackends.begin(), kBackends.end(), [&](Backend x) { return to_string(x) == name; });
    if (k != kBackends.end())
      config.backend = *k;
    else
      b->fail(fmt::format("unknown network backend '{}'", name),
              "use 'simgrid' (SimGrid's max-min solver, the reference) or 'fluid' (Railyard's flow-level network: "
              "faster at scale, with DCQCN and PFC)");
  }
  config.pxn = net.bool_or("pxn", true);
  if (auto p = net.get("time_precision")) {
    const double v = p->as_double();
    if (!(v > 0 && v <= 1e-5))
      p->fail(fmt::format("time_precision {} is outside (0, 1e-5]", v),
              "use 1e-9 (exact) up to 1e-6 (faster); 1e-5 already moves results by ~3% (DESIGN.md)");
    config.time_precision = v;
  }

  FluidConfig& f = config.fluid;
  // Everything below is the fluid backend's; with simgrid it would be silently ignored, so refuse it.
  for (const char* key : {"ecmp", "qps_per_connection", "spray_max_paths", "cc", "dcqcn", "pfc", "mtu", "time_step",
                          "queue_steps", "outputs"})
    if (auto n = net.get(key); n && config.backend != Backend::Fluid)
      n->fail(fmt::format("'{}' needs the fluid backend: the simgrid backend hashes every transfer anew and has no "
                          "congestion control, queues or flow records",
                          key),
              "add 'backend: fluid' to this network section, or remove this field");
  if (auto e = net.get("ecmp")) {
    const std::string m = e->as_string();
    if (m == "per_flow")
      f.ecmp = EcmpMode::PerFlow;
    else if (m == "per_qp")
      f.ecmp = EcmpMode::PerQp;
    else if (m == "spray")
      f.ecmp = EcmpMode::Spray;
    else
      e->fail(fmt::format("unknown ECMP mode '{}'", m),
              "use per_flow (every transfer hashes anew), per_qp (a fixed path per QP) or spray (ideal spreading "
              "over all equal-cost paths)");
  }
  if (auto q = net.get("qps_per_connection")) {
    f.qps_per_connection = static_cast<int>(q->as_int(1, 128, "NCCL_IB_QPS_PER_CONNECTION: 1 (default) to 128"));
  }
  if (auto s = net.get("spray_max_paths")) {
    f.spray_max_paths = static_cast<std::size_t>(
        s->as_int(1, std::numeric_limits<std::int64_t>::max(), "how many equal-cost paths spraying may use"));
  }
  if (auto m = net.get("mtu")) {
    f.mtu = m->as_bytes();
    if (f.mtu.bytes() < 256 || f.mtu.bytes() > 9216)
      m->fail(fmt::format("mtu = {} B is outside 256..9216", f.mtu.bytes()), "RoCE uses 1024, 2048 or 4096 bytes");
  }
  if (auto c = net.get("cc")) {
    const std::string name = c->as_string();
    if (name == "none")
      f.cc = CongestionControl::None;
    else if (name == "dcqcn")
      f.cc = CongestionControl::Dcqcn;
    else
      c->fail(fmt::format("unknown congestion control '{}'", name), "use none (max-min sharing) or dcqcn");
  }
  if (auto d = net.get("dcqcn")) {
    if (f.cc != CongestionControl::Dcqcn)
      d->fail("a dcqcn section is given but cc is not dcqcn", "add 'cc: dcqcn' to the network section");
    f.dcqcn = models::cc::parse_dcqcn(*d);
  }
  f.pfc = models::cc::pfc_defaults(f.mtu);
  if (auto p = net.get("pfc")) f.pfc = models::cc::parse_pfc(*p, f.mtu);
  if (auto t = net.get("time_step")) {
    f.time_step = t->as_seconds();
    // Below 10 ns (a 500-byte packet at 400 Gb/s) the fluid premise is gone and every active queue costs an event
    // per step; above 100 us DCQCN's timers (55 us) fall between steps.
    if (!(f.time_step.seconds() >= 1e-8 && f.time_step.seconds() <= 1e-4))
      t->fail(fmt::format("time_step = {} s is outside [10 ns, 100 us]", f.time_step.seconds()),
              "give the queue model's step, e.g. '1 us' (DCQCN's timers are tens of microseconds)");
  }
  if (auto q = net.get("queue_steps")) {
    const std::string m = q->as_string();
    if (m == "adaptive")
      f.adaptive_steps = true;
    else if (m == "fixed")
      f.adaptive_steps = false;
    else
      q->fail(fmt::format("queue_steps = '{}' is neither adaptive nor fixed", m),
              "write 'adaptive' (the default: coupled communication integrates queues only while a port is congested) "
              "or 'fixed' (every time_step, as per-transfer flows always do)");
    if (!f.queues())
      q->fail("queue_steps is given but no queue is modelled (neither cc: dcqcn nor pfc is on)",
              "add 'cc: dcqcn' or 'pfc: {enabled: true}', or remove queue_steps");
  }
  if (auto o = net.get("outputs")) {
    o->expect_keys({"flows", "links", "sample_interval"});
    auto choice = [&](std::string_view key) {
      const auto v = o->get(key);
      if (!v) return Record::Auto;
      const std::string s = v->as_string();
      if (s == "auto") return Record::Auto;
      if (s == "true") return Record::On;
      if (s == "false") return Record::Off;
      v->fail(fmt::format("{} = '{}' is not true, false or auto", key, s),
              fmt::format("write '{}: true' to record every row, 'false' for none, or 'auto' (the default: recorded "
                          "when the records fit 256 MiB)",
                          key));
    };
    records.flows = choice("flows");
    records.links = choice("links");
    if (auto s = o->get("sample_interval")) {
      f.sample_interval = s->as_seconds();
      // links.csv holds a row per active link and interval: below 100 ns (a 4 KiB packet at 400 Gb/s takes 82 ns)
      // rows describe no more than one packet; the memory estimate bounds the rows of long runs.
      if (!(f.sample_interval.seconds() >= 1e-7 && f.sample_interval.seconds() <= 1.0))
        s->fail(fmt::format("sample_interval = {} s is outside [100 ns, 1 s]", f.sample_interval.seconds()),
                "give a time such as '10 us'");
    }
  }
}

} // namespace railyard::scenario
