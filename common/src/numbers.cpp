#include "railyard/common/numbers.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <system_error>

namespace railyard {
namespace {

bool starts_hex(std::string_view t)
{
  if (!t.empty() && (t.front() == '+' || t.front() == '-')) t.remove_prefix(1);
  return t.size() >= 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X');
}

// std::from_chars refuses a leading '+', which people write; it takes "-" itself.
std::size_t plus_sign(std::string_view t)
{
  return t.size() >= 2 && t[0] == '+' && t[1] != '-' && t[1] != '+' ? 1 : 0;
}

template <class Int>
[[noreturn]] void out_of_range(std::string_view text, Int min, Int max)
{
  throw std::invalid_argument(fmt::format("'{}' is outside the allowed range {}..{}", text, min, max));
}

} // namespace

LeadingNumber leading_number(std::string_view text)
{
  LeadingNumber n;
  if (starts_hex(text)) {
    n.hexadecimal = true;
    return n;
  }
  const std::size_t skip = plus_sign(text);
  const char* begin = text.data() + skip;
  const char* end = text.data() + text.size();
  double v = 0;
  const auto [ptr, ec] = std::from_chars(begin, end, v, std::chars_format::general);
  if (ec == std::errc::invalid_argument) return n;
  n.length = static_cast<std::size_t>(ptr - text.data());
  if (ec == std::errc::result_out_of_range) {
    n.out_of_range = true;
    return n;
  }
  n.value = v == 0 ? 0.0 : v; // -0 reads as 0, so that outputs never print "-0"
  return n;
}

double parse_finite(std::string_view text)
{
  const LeadingNumber n = leading_number(text);
  if (n.hexadecimal)
    throw std::invalid_argument(fmt::format("'{}' is hexadecimal; numbers are read in decimal only", text));
  if (n.length == 0 || n.length != text.size()) throw std::invalid_argument(fmt::format("'{}' is not a number", text));
  if (n.out_of_range)
    throw std::invalid_argument(
        fmt::format("'{}' is beyond the range of a double (magnitudes from about 1e-308 to 1e308)", text));
  if (!std::isfinite(n.value)) throw std::invalid_argument(fmt::format("'{}' is not a finite number", text));
  return n.value;
}

std::int64_t parse_integer(std::string_view text, std::int64_t min, std::int64_t max)
{
  const std::size_t skip = plus_sign(text);
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data() + skip, text.data() + text.size(), v);
  if (ptr != text.data() + text.size() || ec == std::errc::invalid_argument) {
    if (starts_hex(text))
      throw std::invalid_argument(fmt::format("'{}' is hexadecimal; numbers are read in decimal only", text));
    throw std::invalid_argument(fmt::format("'{}' is not a whole number", text));
  }
  if (ec == std::errc::result_out_of_range || v < min || v > max) out_of_range(text, min, max);
  return v;
}

std::uint64_t parse_uint64(std::string_view text)
{
  constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();
  const std::size_t skip = plus_sign(text);
  std::uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data() + skip, text.data() + text.size(), v);
  if (ptr != text.data() + text.size() || ec == std::errc::invalid_argument) {
    // A negative whole number is a number outside the range, not garbage.
    if (text.size() > 1 && text.front() == '-' && text.find_first_not_of("0123456789", 1) == std::string_view::npos)
      out_of_range<std::uint64_t>(text, 0, kMax);
    if (starts_hex(text))
      throw std::invalid_argument(fmt::format("'{}' is hexadecimal; numbers are read in decimal only", text));
    throw std::invalid_argument(fmt::format("'{}' is not a whole number", text));
  }
  if (ec == std::errc::result_out_of_range) out_of_range<std::uint64_t>(text, 0, kMax);
  return v;
}

std::string integer_range_words(std::int64_t min, std::int64_t max)
{
  if (min == 0) return fmt::format("zero or more and at most {}", max);
  if (min == 1) return fmt::format("greater than zero and at most {}", max);
  return fmt::format("from {} to {}", min, max);
}

} // namespace railyard
