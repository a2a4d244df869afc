// `railyard calibrate` on one input file: an nccl-tests log, or a calibration CSV of calibration/cuda/ (told apart by
// its first lines, as calibrate does). What calibrate returns must be a profile the writer accepts and reads back.
#include "fuzz_support.hpp"

#include "railyard/calibration/calibrate.hpp"
#include "railyard/calibration/calibration_csv.hpp"

#include <optional>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  namespace cal = railyard::calibration;
  const std::string text = railyard::fuzz::as_text(data, size);
  auto& dir = railyard::fuzz::scratch();
  dir.clear();
  const std::string path = dir.write(cal::is_calibration_csv(text) ? "nccl_sweep.csv" : "all_reduce_perf.log", text);
  std::optional<cal::CalibrationResult> result;
  railyard::fuzz::expect_only_input_errors([&] { result = cal::calibrate({path}, cal::CalibrateOptions{}); });
  if (!result) return 0;
  try {
    (void)cal::parse_profile(cal::profile_to_yaml(result->profile), "calibrated.yaml");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "railyard fuzz: FINDING: calibrate returned a profile that does not write and read back: %s\n",
                 e.what());
    std::abort();
  }
  return 0;
}
