#include "measured.hpp"

#include "railyard/common/numbers.hpp"

#include <fmt/format.h>

#include <cmath>

namespace railyard::calibration::detail {

std::optional<Measured> read_measured(const std::string& text, const std::string& what, const char* unit, double max,
                                      bool whole, const InputLocation& at)
{
  const LeadingNumber n = leading_number(text);
  if (n.hexadecimal || n.length == 0 || n.length != text.size()) return std::nullopt;
  const char* fix = "rerun the measurement, or correct the value; a row that failed to measure may be deleted";
  if (n.out_of_range)
    throw InputError(at, fmt::format("{} '{}' cannot be represented: it is beyond the range of a double", what, text),
                     fix);
  Measured m;
  if (!std::isfinite(n.value)) {
    m.dropped = fmt::format("{} is {}, not a finite number", what, text);
    return m;
  }
  if (n.value < 0) {
    m.dropped = fmt::format("{} is {} {}, negative", what, text, unit);
    return m;
  }
  if (n.value > max)
    throw InputError(at,
                     fmt::format("{} {} {} cannot be represented: it is above {:.17g} {}, the most a {} may be "
                                 "(units.hpp)",
                                 what, text, unit, max, unit, what),
                     fix);
  if (whole && n.value != std::floor(n.value))
    throw InputError(at, fmt::format("{} {} is not a whole number", what, text), fix);
  m.value = n.value;
  return m;
}

} // namespace railyard::calibration::detail
