// The memory check of a generated training step: the workloads memory model (workloads/memory.hpp) per pipeline
// stage, NCCL's buffers of each stage's communicators on this topology, and the GPU's capacity from its datasheet
// (or `training.memory_limit_GiB`). A layout that does not fit is refused with the breakdown and the changes that
// would make it fit (scenario/README.md, "Memory").
#pragma once

#include "railyard/scenario/workload_spec.hpp"
#include "railyard/sim/nccl_resolve.hpp"
#include "railyard/topologies/topology.hpp"
#include "railyard/workloads/memory.hpp"

#include <functional>
#include <string>
#include <vector>

namespace railyard::calibration {
struct Profile;
}

namespace railyard::scenario {

/// NCCL's default buffers of one connection (NVIDIA/nccl src/init.cc, DEFAULT_LL_BUFFSIZE, DEFAULT_LL128_BUFFSIZE
/// and DEFAULT_BUFFSIZE from src/include/device.h): LL 8 lines x 512 threads x NCCL_STEPS 8 x 16 bytes = 512 KiB,
/// LL128 120 elements x 640 threads x 8 steps x 8 bytes = 4,915,200 bytes, Simple 4 MiB.
inline constexpr double kNcclConnectionBufferBytes = 524288.0 + 4915200.0 + 4194304.0;

struct GpuMemoryReport {
  std::string job;                            ///< the job of a `jobs:` scenario, else empty
  std::vector<workloads::StageMemory> stages; ///< with NCCL's buffers filled in
  int peak_stage = 0;                         ///< the stage whose GPUs need the most
  double capacity_bytes = 0;                  ///< 0: unknown (no datasheet for the profile's GPU, no limit given)
  std::string capacity_source;
  bool checked = false; ///< compared with the capacity (training.memory_check and a known capacity)
  [[nodiscard]] double peak_bytes() const
  {
    return stages.empty() ? 0 : stages[static_cast<std::size_t>(peak_stage)].total_bytes();
  }
};

/// "weights 12.5, gradients 25.0, optimizer states 74.9, activations 8.8 (of 1 forward passes held), NCCL buffers
/// 0.2 GiB": one stage's parts, for messages and the run's summary line.
std::string memory_breakdown(const workloads::StageMemory& m);

/// Bytes of NCCL buffers one rank holds: for each of its communicators of two ranks or more, one receive connection
/// per channel NCCL sets up (the communicator's channels after ncclTopoPostset), each with the three protocols'
/// default buffers. `global` maps a workload rank to its GPU on the topology.
double nccl_buffer_bytes(const workloads::Workload& w, int rank, const topo::Topology& topology,
                         const sim::NcclSettings& settings, const std::function<int(int)>& global);

/// The memory report of a generated workload (spec.kind == Megatron) of `world` ranks. Refuses (InputError at the
/// training section, exit 2) a layout whose peak exceeds the capacity when spec.memory_check, naming the stage, the
/// breakdown, the capacity and which single changes fit.
GpuMemoryReport check_gpu_memory(const WorkloadSpec& spec, const workloads::Workload& w, const topo::Topology& topology,
                                 const sim::NcclSettings& settings, const calibration::Profile* profile,
                                 const std::function<int(int)>& global, const std::string& job = "");

} // namespace railyard::scenario
