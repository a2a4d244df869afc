// Reading a whole input file (scenario, profile, nccl-tests log) with the checks every reader needs: a folder, a
// device that never ends (/dev/zero) or a file too large to be what it claims is refused before it is read whole.
#pragma once

#include <cstdint>
#include <string>

namespace railyard {

/// Largest scenario, profile or calibration log read: 64 MiB. The largest shipped profile or example is tens of
/// KiB; a file this size is a mistake (a trace given as a scenario, /dev/zero), and reading it whole costs memory.
inline constexpr std::uint64_t kMaxTextInputBytes = 64ULL << 20;

/// The bytes of `path`. Throws InputError naming the file when it cannot be opened or read, is a folder, or holds
/// more than `max_bytes` (checked from its size up front for a regular file, while reading for a pipe or device).
std::string read_input_file(const std::string& path, std::uint64_t max_bytes = kMaxTextInputBytes);

} // namespace railyard
