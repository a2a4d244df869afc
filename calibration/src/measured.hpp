// A measured number of an nccl-tests log row or a calibration CSV row (a size, a time, a bandwidth): kept, dropped
// with a reason, or refused. NaN, inf and negative values are what a failed or garbled measurement prints: the row
// is dropped and calibrate reports it with its line. A value no double holds (1e400) or one beyond its quantity's
// range (units.hpp: a size above 2^53 B, a time above 1e6 s) cannot be represented at all: the file is refused.
#pragma once

#include "railyard/common/error.hpp"

#include <optional>
#include <string>

namespace railyard::calibration::detail {

struct Measured {
  double value = 0;
  std::string dropped; ///< why the row is dropped ("time is -5 us, negative"); empty when it is kept
};

/// `text` read as a measurement of `what` (in `unit`, at most `max` of it, `whole` for counts of bytes or
/// elements); std::nullopt when `text` is not a number at all (the caller's structural error). Throws InputError at
/// `at` when the value cannot be represented or is above `max`.
std::optional<Measured> read_measured(const std::string& text, const std::string& what, const char* unit, double max,
                                      bool whole, const InputLocation& at);

} // namespace railyard::calibration::detail
