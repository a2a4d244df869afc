// Runs lowered collectives: every GPU's actor executes its part of each schedule, in the order given.
#pragma once

#include "railyard/models/lowering.hpp"
#include "railyard/sim/simulation.hpp"

#include <vector>

namespace railyard::sim {

struct CollectiveTiming {
  Seconds start{0}; ///< earliest time a member rank began the collective
  /// When the last member rank began it. Collectives run back to back per rank, so a rank that finished the previous
  /// one early begins the next early and mostly waits for the others; from here on every member is in.
  Seconds last_start{0};
  Seconds end{0};   ///< latest time a member rank finished it
  [[nodiscard]] Seconds duration() const { return end - start; }
};

/// Executes one rank's part of a schedule through `net`, blocking the calling actor until the rank is done: its
/// last receive has arrived (and been processed) and its sends have been transferred.
/// Connection tags are `tag_base` + channel, so concurrent collectives must use distinct tag bases.
void execute_schedule(FlowNetwork& net, const models::Schedule& schedule, int rank, std::uint64_t tag_base);

/// How run_schedules drives the ranks.
enum class RankExecution {
  Auto,   ///< event-driven clients where the backend supports them (fluid), else actors
  Actors, ///< one SimGrid actor per GPU running execute_schedule
};

/// Runs the schedules in order on every GPU (each rank starts its next collective when it finished its previous one)
/// and returns each collective's timing. Ranks are actors, or event-driven clients of the network that follow the
/// same rules (sim/README.md, "The fluid backend").
std::vector<CollectiveTiming> run_schedules(Simulation& sim, const std::vector<models::Schedule>& schedules,
                                            RankExecution execution = RankExecution::Auto);

} // namespace railyard::sim
