// The `network:` section of a scenario, read into the simulator's configuration.
#pragma once

#include "railyard/common/yaml.hpp"
#include "railyard/sim/simulation.hpp"

namespace railyard::scenario {

/// Reads a scenario's `network:` section into `config`: backend, pxn, time_precision, and for the fluid backend ecmp,
/// qps_per_connection, spray_max_paths, cc, dcqcn, pfc, mtu, time_step and outputs. Fluid-only fields under the
/// simgrid backend, unknown names and out-of-range values are InputErrors naming the field.
void parse_network(const YamlNode& network, sim::SimulationConfig& config);

} // namespace railyard::scenario
