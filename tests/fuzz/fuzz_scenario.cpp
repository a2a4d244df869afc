// The scenario loader on YAML text held in memory (what `railyard run` reads). The input stands for a file in
// examples/, so the profiles the examples name (../calibration/profiles/*.yaml) are found and read as in a real run.
#include "fuzz_support.hpp"

#include "railyard/common/yaml.hpp"
#include "railyard/scenario/scenario.hpp"

namespace scn = railyard::scenario;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  static const std::string name = std::string(RAILYARD_SOURCE_DIR) + "/examples/fuzz_input.yaml";
  const std::string text = railyard::fuzz::as_text(data, size);
  railyard::fuzz::expect_only_input_errors(
      [&] { (void)scn::parse_scenario(railyard::YamlNode::load_string(text, name)); });
  return 0;
}
