// The Chakra reader. One input is either one rank's .et file, or several files joined by kFileSeparator: first
// comm_group.json (empty: none), then rank 0, rank 1, ... (at most 16 ranks).
#include "fuzz_support.hpp"

#include "railyard/workloads/readers.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
  namespace fz = railyard::fuzz;
  const std::vector<std::string> files = fz::split_files(fz::as_text(data, size), 17);
  auto& dir = fz::scratch();
  dir.clear();
  if (files.size() == 1) {
    dir.write("trace.0.et", files[0]);
  } else {
    if (!files[0].empty()) dir.write("comm_group.json", files[0]);
    for (std::size_t r = 1; r < files.size(); ++r)
      dir.write("trace." + std::to_string(r - 1) + ".et", files[r]);
  }
  fz::expect_only_input_errors([&] { (void)railyard::workloads::read_chakra(dir.path("trace")); });
  return 0;
}
