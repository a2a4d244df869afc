#include "railyard/models/cc/registry.hpp"

#include "railyard/models/cc/dcqcn.hpp"
#include "railyard/models/cc/pfc.hpp"

#include <fmt/format.h>

namespace railyard::models::cc {

namespace {

std::vector<std::pair<std::string, std::string>> dcqcn_defaults(const DcqcnParams& p)
{
  return {
      {"k_min", fmt::format("{} B", p.k_min.bytes())},
      {"k_max", fmt::format("{} B", p.k_max.bytes())},
      {"p_max", fmt::format("{}", p.p_max)},
      {"cnp_interval", fmt::format("{} us", p.cnp_interval.seconds() * 1e6)},
      {"g", fmt::format("{}", p.g)},
      {"alpha_period", fmt::format("{} us", p.alpha_period.seconds() * 1e6)},
      {"increase_timer", fmt::format("{} us", p.increase_timer.seconds() * 1e6)},
      {"byte_counter", fmt::format("{} B", p.byte_counter.bytes())},
      {"fast_recovery_steps", fmt::format("{}", p.fast_recovery_steps)},
      {"rate_ai", fmt::format("{} Mb/s", p.rate_ai.bytes_per_sec() * 8 / 1e6)},
      {"rate_hai", fmt::format("{} Mb/s", p.rate_hai.bytes_per_sec() * 8 / 1e6)},
  };
}

std::vector<CcModelInfo> build()
{
  std::vector<CcModelInfo> out;
  out.push_back({"none",
                 "max-min fair sharing: progressive filling raises every flow's rate together and freezes the flows "
                 "of each link as it saturates; no queues build. The reference the simgrid backend also computes.",
                 "Bertsekas and Gallager, Data Networks (1992), Section 6.5.2; SimGrid's CM02 model "
                 "(Casanova et al., network_cm02.cpp)",
                 {}});
  for (const auto& name : dcqcn_preset_names()) {
    const DcqcnParams p = dcqcn_preset(name);
    out.push_back({"dcqcn/" + name,
                   "switch egress queue q marks packets with p(q) = 0 (q <= Kmin), Pmax (q - Kmin) / (Kmax - Kmin) "
                   "(Kmin < q <= Kmax), 1 (q > Kmax); the receiver sends at most one CNP per flow per interval when "
                   "a marked packet arrives; the sender cuts R_T = R_C, R_C = R_C (1 - alpha / 2) on a CNP, updates "
                   "alpha = (1 - g) alpha + g F every alpha period, and on each timer / byte-counter event recovers "
                   "R_C = (R_T + R_C) / 2 (fast recovery, F events), then raises R_T by R_AI (additive) or i R_HAI "
                   "(hyper)",
                   name == "sigcomm2015"
                       ? "Zhu et al., Congestion Control for Large-Scale RDMA Deployments, SIGCOMM 2015"
                       : "NVIDIA ConnectX firmware DCQCN (mlxconfig RoCE congestion-control parameters)",
                   dcqcn_defaults(p)});
  }
  const Bytes mtu(4096);
  const PfcParams pfc = pfc_defaults(mtu);
  out.push_back({"pfc",
                 "per ingress port and priority, bytes received and still queued in the switch; above XOFF the "
                 "upstream egress of that priority is paused after the cable latency plus response time, below XON "
                 "it resumes; headroom = rate x (2 latency + response) + 2 MTU absorbs what is in flight",
                 "IEEE 802.1Qbb Priority-based Flow Control",
                 {{"xoff", fmt::format("{} B", pfc.xoff.bytes())},
                  {"xon", "xoff - 2 MTU"},
                  {"headroom", "computed per link"},
                  {"priority", fmt::format("{}", pfc.priority)}}});
  return out;
}

} // namespace

const std::vector<CcModelInfo>& cc_models()
{
  static const std::vector<CcModelInfo> models = build();
  return models;
}

} // namespace railyard::models::cc
