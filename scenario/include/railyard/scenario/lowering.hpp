// NCCL resolution for a scenario: each `collectives:` entry (a call or a group) resolved with the scenario's `nccl:`
// settings and lowered (sim/nccl_resolve.hpp does one call; this adds groups and sends).
#pragma once

#include "railyard/models/lowering.hpp"
#include "railyard/scenario/scenario.hpp"
#include "railyard/topologies/topology.hpp"

#include <cstddef>

namespace railyard::scenario {

/// A scenario entry (a call or a group) resolved and lowered.
struct LoweredSpec {
  models::CollectiveCall call; ///< as run (for a group: the summary, with its first member's choices)
  models::Schedule schedule;
};
/// `max_steps` (0: none) bounds the steps the schedule may hold: a call that would need more is an InputError at its
/// entry, raised before its steps are allocated (models::ScheduleTooLarge).
LoweredSpec lower_spec(const CollectiveSpec& spec, const topo::Topology& topology, const Scenario& scenario,
                       std::size_t max_steps = 0);

} // namespace railyard::scenario
