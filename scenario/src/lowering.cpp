// Each `collectives:` entry of a scenario resolved as NCCL would and lowered (lowering.hpp).
#include "railyard/scenario/lowering.hpp"

#include "railyard/sim/nccl_resolve.hpp"

#include <algorithm>

namespace railyard::scenario {

using namespace railyard::sim; // NCCL resolution of one call

LoweredSpec lower_spec(const CollectiveSpec& spec, const topo::Topology& topology, const Scenario& scenario,
                       std::size_t max_steps)
{
  LoweredSpec out;
  if (!spec.is_group()) {
    const NcclCommunicator comm(spec.call.ranks, topology, scenario.nccl);
    out.call = comm.resolve(spec.call, spec.where);
    out.schedule = lower_checked(comm.lowering_input(out.call, scenario.step_overhead), spec.where, max_steps);
    return out;
  }
  std::vector<models::Schedule> members;
  out.call = spec.call;
  for (std::size_t i = 0; i < spec.group.size(); ++i) {
    const InputLocation& w = i < spec.group_where.size() ? spec.group_where[i] : spec.where;
    const NcclCommunicator comm(spec.group[i].ranks, topology, scenario.nccl);
    const auto call = comm.resolve(spec.group[i], w);
    if (i == 0) {
      out.call.algorithm = call.algorithm;
      out.call.protocol = call.protocol;
    }
    members.push_back(lower_checked(comm.lowering_input(call, scenario.step_overhead), w, max_steps));
  }
  if (!spec.sends.empty()) {
    double largest = 0;
    std::vector<int> gpus;
    for (const auto& t : spec.sends) {
      largest = std::max(largest, t.bytes.bytes());
      gpus.push_back(t.src);
      gpus.push_back(t.dst);
    }
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    models::CollectiveCall p2p;
    p2p.kind = models::CollectiveKind::SendRecv;
    p2p.ranks = gpus;
    p2p.algorithm = models::Algorithm::Ring;
    p2p.protocol = models::p2p_protocol(Bytes(largest));
    const auto li = lowering_input(p2p, topology, scenario.nccl, scenario.step_overhead);
    members.push_back(models::lower_p2p(spec.sends, p2p_lanes(gpus, topology, scenario.nccl), topology.gpus_per_node(),
                                        li.costs, scenario.step_overhead));
    if (spec.group.empty()) {
      out.call.algorithm = p2p.algorithm;
      out.call.protocol = p2p.protocol;
    }
  }
  out.schedule = models::merge_group(members, topology.gpus_per_node());
  out.schedule.kind = out.call.kind;
  out.call.ranks = out.schedule.gpus;
  out.call.channels = static_cast<int>(out.schedule.channels.size());
  return out;
}

} // namespace railyard::scenario
