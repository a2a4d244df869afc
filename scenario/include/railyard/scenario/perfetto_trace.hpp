// A replay's timeline as a file Perfetto opens.
#pragma once

#include "railyard/sim/replay.hpp"
#include "railyard/workloads/op_graph.hpp"

#include <iosfwd>

namespace railyard::scenario {

/// Chrome trace JSON (the format Perfetto and chrome://tracing open): one process per traced rank, one thread per
/// stream, one complete event per op; times in microseconds with 3 decimals, so equal results give equal files. With
/// a flows replay on the fluid backend that recorded links.csv (network.outputs.links: true), a process "network:
/// hottest links" holds a counter track per hottest link (fluid_outputs.hpp's hottest_links): its utilisation and
/// queue (kB) per sampling interval, 0 while it is idle.
void write_chrome_trace(const sim::ReplayResult& result, const workloads::Workload& workload, std::ostream& out);

} // namespace railyard::scenario
