// Numbers read from text (scenarios, profiles, traces, logs, the command line), parsed one strict way. std::stod
// takes "0x10" as hexadecimal, "nan" and "inf" as numbers and "1e400" as an exception that reads like "not a
// number"; these functions read decimal only and say which of those the text is, so a reader can refuse it with
// the reason.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace railyard {

/// The number at the start of a text.
struct LeadingNumber {
  double value = 0;          ///< NaN or +-inf when the text spells them ("nan", "inf", "infinity", any case)
  std::size_t length = 0;    ///< characters read; 0 when the text does not start with a number
  bool out_of_range = false; ///< the digits are beyond a double (1e400) or below its smallest value (1e-400)
  bool hexadecimal = false;  ///< the text starts with 0x or 0X (length is then 0)
};

/// Reads an optional sign, digits with an optional fraction and exponent, or nan/inf. Never hexadecimal, never
/// leading blanks.
LeadingNumber leading_number(std::string_view text);

/// All of `text` as a finite double. Throws std::invalid_argument saying what the text is instead: not a number,
/// hexadecimal, NaN, infinite, or beyond the range of a double.
double parse_finite(std::string_view text);

/// All of `text` as a whole number in [min, max]. Throws std::invalid_argument naming the allowed range.
std::int64_t parse_integer(std::string_view text, std::int64_t min, std::int64_t max);

/// All of `text` as a 64-bit unsigned whole number (seeds): 0..2^64-1, no sign. Throws std::invalid_argument naming
/// the range.
std::uint64_t parse_uint64(std::string_view text);

/// "from 1 to 64", "greater than zero and at most 64", "zero or more and at most 64": the range in words, for fixes.
std::string integer_range_words(std::int64_t min, std::int64_t max);

} // namespace railyard
