// The one strict way numbers are read from text: decimal only, NaN, inf and overflow told apart from a non-number,
// whole numbers checked against the range their field can take. Every bound below is the type's own (2^63-1 and
// 2^64-1 written out) or the range passed in.
#include "railyard/common/numbers.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

using namespace railyard;

namespace {

std::string error_of(void (*f)())
{
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

bool has(const std::string& s, const std::string& part)
{
  return s.find(part) != std::string::npos;
}

} // namespace

TEST(Numbers, LeadingNumberTellsNanInfOverflowAndHexApart)
{
  EXPECT_EQ(leading_number("4 MiB").length, 1U);
  EXPECT_DOUBLE_EQ(leading_number("1.5e3us").value, 1500.0);
  EXPECT_EQ(leading_number("1.5e3us").length, 5U);
  EXPECT_TRUE(std::isnan(leading_number("nan MiB").value));
  EXPECT_EQ(leading_number("nan MiB").length, 3U);
  EXPECT_TRUE(std::isinf(leading_number("inf s").value));
  EXPECT_TRUE(leading_number("1e400 B").out_of_range); // beyond DBL_MAX ~ 1.8e308
  EXPECT_EQ(leading_number("1e400 B").length, 5U);
  EXPECT_TRUE(leading_number("0x10 MiB").hexadecimal);
  EXPECT_EQ(leading_number("0x10 MiB").length, 0U);
  EXPECT_EQ(leading_number(" 5").length, 0U); // no leading blanks: the caller trims what it means to trim
  EXPECT_DOUBLE_EQ(leading_number("+5").value, 5.0);
  EXPECT_EQ(leading_number("fast").length, 0U);
  EXPECT_FALSE(std::signbit(leading_number("-0").value)); // -0 reads as 0: outputs never print "-0"
}

TEST(Numbers, ParseFiniteRefusesWhatIsNotAFiniteDecimal)
{
  EXPECT_DOUBLE_EQ(parse_finite("2.5"), 2.5);
  EXPECT_DOUBLE_EQ(parse_finite("1e-6"), 1e-6);
  EXPECT_TRUE(has(error_of([] { (void)parse_finite("nan"); }), "not a finite number"));
  EXPECT_TRUE(has(error_of([] { (void)parse_finite("-inf"); }), "not a finite number"));
  EXPECT_TRUE(has(error_of([] { (void)parse_finite("1e999"); }), "beyond the range of a double"));
  EXPECT_TRUE(has(error_of([] { (void)parse_finite("0x1p3"); }), "hexadecimal"));
  EXPECT_TRUE(has(error_of([] { (void)parse_finite("2.5x"); }), "not a number"));
  EXPECT_TRUE(has(error_of([] { (void)parse_finite(""); }), "not a number"));
}

TEST(Numbers, ParseIntegerNamesTheAllowedRange)
{
  EXPECT_EQ(parse_integer("64", 1, 64), 64);
  EXPECT_EQ(parse_integer("+3", 1, 64), 3);
  EXPECT_TRUE(has(error_of([] { (void)parse_integer("65", 1, 64); }), "'65' is outside the allowed range 1..64"));
  EXPECT_TRUE(has(error_of([] { (void)parse_integer("0", 1, 64); }), "outside the allowed range 1..64"));
  // One past int64's largest value, 2^63 = 9223372036854775808: an overflow, reported as outside the range.
  EXPECT_TRUE(has(error_of([] { (void)parse_integer("9223372036854775808", 0, 100); }), "outside the allowed range"));
  EXPECT_EQ(parse_integer("9223372036854775807", 0, std::numeric_limits<std::int64_t>::max()),
            std::numeric_limits<std::int64_t>::max());
  EXPECT_TRUE(has(error_of([] { (void)parse_integer("8.0", 0, 100); }), "not a whole number"));
  EXPECT_TRUE(has(error_of([] { (void)parse_integer("1e3", 0, 10000); }), "not a whole number"));
  EXPECT_TRUE(has(error_of([] { (void)parse_integer("0x10", 0, 100); }), "hexadecimal"));
  EXPECT_EQ(integer_range_words(1, 64), "greater than zero and at most 64");
  EXPECT_EQ(integer_range_words(0, 7), "zero or more and at most 7");
  EXPECT_EQ(integer_range_words(2, 3), "from 2 to 3");
}

TEST(Numbers, ParseUint64TakesEverySeedAndNothingBeyond)
{
  // 2^64 - 1 = 18446744073709551615 is the largest seed; 2^64 and -1 are outside (CLI11 and strtoull wrap them).
  EXPECT_EQ(parse_uint64("18446744073709551615"), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(parse_uint64("0"), 0U);
  EXPECT_TRUE(has(error_of([] { (void)parse_uint64("18446744073709551616"); }),
                  "outside the allowed range 0..18446744073709551615"));
  EXPECT_TRUE(has(error_of([] { (void)parse_uint64("99999999999999999999"); }), "outside the allowed range"));
  EXPECT_TRUE(has(error_of([] { (void)parse_uint64("-1"); }), "'-1' is outside the allowed range"));
  EXPECT_TRUE(has(error_of([] { (void)parse_uint64("0x10"); }), "hexadecimal"));
  EXPECT_TRUE(has(error_of([] { (void)parse_uint64(" 5"); }), "not a whole number"));
}
