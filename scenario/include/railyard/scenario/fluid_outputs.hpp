// The fluid backend's report as files: flows.csv, links.csv and the summary.json "network" object.
#pragma once

#include "railyard/common/output_dir.hpp"
#include "railyard/common/units.hpp"
#include "railyard/sim/fluid.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

namespace railyard::scenario {

/// flows.csv: id, src, dst, tag, qp, bytes, start, end, arrival, fct, hops and the link ids of the path.
void write_flows_csv(const sim::FluidReport& report, std::ostream& out);
/// links.csv: per link and sampling interval with activity: utilisation, deepest queue, ECN marks, pause time.
void write_links_csv(const sim::FluidReport& report, std::ostream& out);
/// How many links summary.json's "network.hottest_links" lists, and trace.json's counter tracks show.
inline constexpr std::size_t kHottestLinks = 10;
/// From the first transfer's start to the last flow's end, seconds; 0 when nothing moved.
double span_of(const sim::FluidReport& report);
/// The `n` most used network links (NIC ports and switch links, not NVLink or PCIe), by bytes over capacity, most used
/// first, ties by link id.
std::vector<std::size_t> hottest_links(const sim::FluidReport& report, std::size_t n);
/// The summary.json "network" object: configuration, FCT percentiles, queues, pauses, marks, ECMP balance, and the
/// kHottestLinks most used network links (NIC ports and switch links) over `span_s`, from the first transfer's start
/// to the last flow's end: utilisation (bytes / (capacity x span)), bytes, deepest queue, ECN marks, pause time.
nlohmann::ordered_json fluid_summary(const sim::FluidReport& report, const sim::FluidConfig& config);
/// Writes flows.csv and links.csv into `folder` as `config` recorded them, and returns the summary's "network" object
/// with `records` (what each file holds, or why it was not written) under "records".
nlohmann::ordered_json write_network_outputs(const sim::FluidReport& report, const sim::FluidConfig& config,
                                             const std::map<std::string, std::string>& records, OutputDir& folder);

} // namespace railyard::scenario
