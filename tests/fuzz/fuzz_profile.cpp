// The profile reader (calibration/profiles/*.yaml, what `profile:` names). A profile it accepts must also survive
// the writer: profile_to_yaml must not refuse it, and the text written must read back to the same text.
#include "fuzz_support.hpp"

#include "railyard/calibration/profile.hpp"

#include <optional>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  namespace cal = railyard::calibration;
  const std::string text = railyard::fuzz::as_text(data, size);
  std::optional<cal::Profile> p;
  railyard::fuzz::expect_only_input_errors([&] { p = cal::parse_profile(text, "fuzz_profile.yaml"); });
  if (!p) return 0;
  std::string written;
  try {
    written = cal::profile_to_yaml(*p);
    const std::string again = cal::profile_to_yaml(cal::parse_profile(written, "written.yaml"));
    railyard::fuzz::require(again == written, "a profile written by profile_to_yaml reads back differently");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "railyard fuzz: FINDING: an accepted profile does not round-trip: %s\n", e.what());
    std::abort();
  }
  return 0;
}
