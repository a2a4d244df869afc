// The ASTRA-sim 1.0 text workload reader (read_astrasim1_workload) on one file, read twice: with the options its
// header gives and with them set as a scenario would (16 ranks, model-parallel groups of 4).
#include "fuzz_support.hpp"

#include "railyard/workloads/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  namespace wl = railyard::workloads;
  wl::LayerWorkloadOptions given; // as a scenario sets them: 16 ranks, model-parallel groups of 4
  given.world_size = 16;
  given.model_parallel = 4;
  railyard::fuzz::read_workload_file_twice(
      data, size, "workload.txt", given,
      [](const std::string& path, const wl::LayerWorkloadOptions& o) { return wl::read_astrasim1_workload(path, o); });
  return 0;
}
