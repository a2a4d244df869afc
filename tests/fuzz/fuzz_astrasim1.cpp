// The ASTRA-sim 1.0 text workload reader (read_astrasim1_workload) on one file, read twice: with the options its
// header gives and with them set as a scenario would (16 ranks, model-parallel groups of 4).
#include "fuzz_support.hpp"

#include "railyard/workloads/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  namespace fz = railyard::fuzz;
  namespace wl = railyard::workloads;
  auto& dir = fz::scratch();
  dir.clear();
  const std::string path = dir.write("workload.txt", fz::as_text(data, size));
  fz::expect_only_input_errors([&] { (void)wl::read_astrasim1_workload(path); });
  wl::LayerWorkloadOptions given;
  given.world_size = 16;
  given.model_parallel = 4;
  fz::expect_only_input_errors([&] { (void)wl::read_astrasim1_workload(path, given); });
  return 0;
}
