// The `network:` section of a scenario, read into the simulator's configuration.
#pragma once

#include "railyard/common/yaml.hpp"
#include "railyard/sim/simulation.hpp"

namespace railyard::scenario {

/// What `network.outputs` asks of flows.csv and links.csv: `true`, `false`, or `auto` (the default): recorded when the
/// run's records are estimated to fit kAutoRecordBytes, else only the aggregates (summary.json's per-link totals, pause
/// time, marks, queues) are kept, and the summary says what was not recorded and how to ask for it. Records never change
/// what is simulated (tests/cli/test_cli_records.cpp), so `auto` only bounds memory and output size.
enum class Record { Auto, On, Off };
struct RecordChoice {
  Record flows = Record::Auto;
  Record links = Record::Auto;
};
/// The records `auto` keeps: 256 MiB of flow records or of link samples (about 2 million flows of a 4-hop path, or
/// 5 million link samples), each.
inline constexpr double kAutoRecordBytes = 256.0 * 1024 * 1024;

/// Reads a scenario's `network:` section into `config` and `records`: backend, pxn, time_precision, and for the fluid
/// backend ecmp, qps_per_connection, spray_max_paths, cc, dcqcn, pfc, mtu, time_step and outputs. Fluid-only fields
/// under the simgrid backend, unknown names and out-of-range values are InputErrors naming the field. `config`'s
/// record_flows and record_links are left on; the run decides them from `records`.
void parse_network(const YamlNode& network, sim::SimulationConfig& config, RecordChoice& records);

} // namespace railyard::scenario
