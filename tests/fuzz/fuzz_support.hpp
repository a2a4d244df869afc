// What every fuzz target shares: the one rule they check (a reader either returns or throws railyard::InputError;
// anything else is a finding), and the scratch files given to the readers that take paths.
#pragma once

#include "railyard/common/error.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <typeinfo>
#include <unistd.h>
#include <vector>

namespace railyard::fuzz {

/// Runs `read`. An InputError is the reader refusing bad input, as it should. Any other exception would reach the
/// user as exit 3 (a bug): it is reported with its type and message, then abort() makes libFuzzer save the input.
/// RAILYARD_FUZZ_VERBOSE=1 prints whether each input was accepted or why it was refused (to check seeds).
template <class F>
void expect_only_input_errors(F&& read)
{
  static const bool verbose = std::getenv("RAILYARD_FUZZ_VERBOSE") != nullptr;
  try {
    read();
    if (verbose) std::fprintf(stderr, "railyard fuzz: accepted\n");
  } catch (const InputError& e) {
    if (verbose) std::fprintf(stderr, "railyard fuzz: refused: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "railyard fuzz: FINDING: %s escaped the reader (only railyard::InputError may): %s\n",
                 typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "railyard fuzz: FINDING: a non-std exception escaped the reader\n");
    std::abort();
  }
}

/// A property that must hold whatever the input (a round trip, an output that must be valid): abort when it does not.
inline void require(bool ok, std::string_view what)
{
  if (ok) return;
  std::fprintf(stderr, "railyard fuzz: FINDING: %.*s\n", static_cast<int>(what.size()), what.data());
  std::abort();
}

inline std::string as_text(const std::uint8_t* data, std::size_t size)
{
  return {reinterpret_cast<const char*>(data), size};
}

/// Readers that take several files (Chakra: comm_group.json and one trace per rank; Kineto: one trace per rank) get
/// them in one fuzz input, joined by this line; tests/fuzz/make_seeds.py builds such seeds from real traces.
inline constexpr std::string_view kFileSeparator = "\n#railyard-fuzz-next-file\n";

inline std::vector<std::string> split_files(const std::string& input, std::size_t max_files)
{
  std::vector<std::string> files;
  std::size_t start = 0;
  while (files.size() + 1 < max_files) {
    const std::size_t at = input.find(kFileSeparator, start);
    if (at == std::string::npos) break;
    files.push_back(input.substr(start, at - start));
    start = at + kFileSeparator.size();
  }
  files.push_back(input.substr(start));
  return files;
}

/// A private folder for the files of one input, in RAM when /dev/shm exists; emptied before each input and removed
/// when the fuzzer exits normally.
class ScratchDir {
public:
  ScratchDir()
  {
    namespace fs = std::filesystem;
    const fs::path base = fs::is_directory("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    dir_ = base / ("railyard-fuzz-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  ~ScratchDir()
  {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  void clear()
  {
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      std::filesystem::remove_all(e.path());
  }
  /// Writes `bytes` to `name` in the folder and returns its path. A failed write aborts: the harness cannot go on,
  /// and the run must not pass unnoticed.
  std::string write(const std::string& name, const std::string& bytes)
  {
    const std::filesystem::path p = dir_ / name;
    std::ofstream out(p, std::ios::binary);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      std::fprintf(stderr, "railyard fuzz: cannot write %s\n", p.c_str());
      std::abort();
    }
    return p.string();
  }
  [[nodiscard]] std::string path(const std::string& name) const { return (dir_ / name).string(); }

private:
  std::filesystem::path dir_;
};

/// The scratch folder of this process (one per fuzzer process; libFuzzer runs inputs one at a time).
inline ScratchDir& scratch()
{
  static ScratchDir dir;
  return dir;
}

/// The layer-wise text workload readers (SimAI, ASTRA-sim 1.0, AICB physical) on one input written as `file_name`,
/// read twice: with the options the file itself gives, and with `given` (set as a scenario would set them).
template <class Options, class Read>
void read_workload_file_twice(const std::uint8_t* data, std::size_t size, const char* file_name, const Options& given,
                              Read read)
{
  auto& dir = scratch();
  dir.clear();
  const std::string path = dir.write(file_name, as_text(data, size));
  expect_only_input_errors([&] { (void)read(path, Options{}); });
  expect_only_input_errors([&] { (void)read(path, given); });
}

} // namespace railyard::fuzz
