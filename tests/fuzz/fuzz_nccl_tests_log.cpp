// The nccl-tests log parser (calibration/) on text in memory, with the checks `railyard calibrate` runs on a log.
#include "fuzz_support.hpp"

#include "railyard/calibration/nccl_tests_log.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  namespace cal = railyard::calibration;
  const std::string text = railyard::fuzz::as_text(data, size);
  railyard::fuzz::expect_only_input_errors([&] {
    const cal::NcclTestsLog log = cal::parse_nccl_tests_text(text, "all_reduce_perf.log");
    (void)cal::nccl_tests_nranks(log);
    (void)log.gpu_models();
    (void)log.hosts();
    cal::validate_nccl_tests_log(log);
  });
  return 0;
}
