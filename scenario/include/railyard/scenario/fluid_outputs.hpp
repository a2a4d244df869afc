// The fluid backend's report as files: flows.csv, links.csv and the summary.json "network" object.
#pragma once

#include "railyard/common/units.hpp"
#include "railyard/sim/fluid.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <iosfwd>

namespace railyard::scenario {

/// flows.csv: id, src, dst, tag, qp, bytes, start, end, arrival, fct, hops and the link ids of the path.
void write_flows_csv(const sim::FluidReport& report, std::ostream& out);
/// links.csv: per link and sampling interval with activity: utilisation, deepest queue, ECN marks, pause time.
void write_links_csv(const sim::FluidReport& report, Seconds interval, std::ostream& out);
/// How many links summary.json's "network.hottest_links" lists.
inline constexpr std::size_t kHottestLinks = 10;
/// The summary.json "network" object: configuration, FCT percentiles, queues, pauses, marks, ECMP balance, and the
/// kHottestLinks most used network links (NIC ports and switch links) over `span_s`, from the first transfer's start
/// to the last flow's end: utilisation (bytes / (capacity x span)), bytes, deepest queue, ECN marks, pause time.
nlohmann::ordered_json fluid_summary(const sim::FluidReport& report, const sim::FluidConfig& config);

} // namespace railyard::scenario
