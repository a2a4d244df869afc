// The AICB "physical" CSV reader (read_aicb_physical_workload) on one file, read twice: with the rank range its
// first line gives and with the options set as a scenario would (16 ranks, model-parallel groups of 4).
#include "fuzz_support.hpp"

#include "railyard/workloads/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  namespace fz = railyard::fuzz;
  namespace wl = railyard::workloads;
  auto& dir = fz::scratch();
  dir.clear();
  const std::string path = dir.write("workload.csv", fz::as_text(data, size));
  fz::expect_only_input_errors([&] { (void)wl::read_aicb_physical_workload(path); });
  wl::LayerWorkloadOptions given;
  given.world_size = 16;
  given.model_parallel = 4;
  fz::expect_only_input_errors([&] { (void)wl::read_aicb_physical_workload(path, given); });
  return 0;
}
