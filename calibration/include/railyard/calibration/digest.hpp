// Where a fitted number came from: every input file is recorded by path, size and SHA-256, so a profile names the
// exact bytes it was fitted from.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace railyard::calibration {

/// SHA-256 (FIPS 180-4) of `data`, as 64 lowercase hex digits.
std::string sha256_hex(std::string_view data);

struct InputFile {
  std::string path; ///< as the user named it
  std::uint64_t bytes = 0;
  std::string sha256; ///< 64 hex digits
};

/// Reads a whole file (common's read_input_file: not a folder, at most 64 MiB). Throws InputError naming the path
/// when it cannot be opened or read.
std::string read_text_file(const std::string& path);
InputFile describe_input(const std::string& path, std::string_view contents);

} // namespace railyard::calibration
