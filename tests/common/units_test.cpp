// Units: decimal and binary prefixes, bits versus bytes, and the typed arithmetic between them.
// 1 Gb/s = 1e9 bits/s = 1e9 / 8 bytes/s; 1 GB = 1e9 bytes; 1 GiB = 2^30 bytes (IEC 80000-13).
#include "railyard/common/units.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

using namespace railyard;

TEST(Units, BitsPerSecondAreAnEighthOfBytesPerSecond)
{
  EXPECT_DOUBLE_EQ(parse_bandwidth("400 Gb/s").bytes_per_sec(), parse_bandwidth("50 GB/s").bytes_per_sec());
  EXPECT_DOUBLE_EQ(parse_bandwidth("400 Gb/s").bytes_per_sec(), 400e9 / 8);
  EXPECT_EQ(units::Gbps(400), units::GBps(50));
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps").bytes_per_sec(), 400e9 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("450GBps").bytes_per_sec(), 450e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100 Mb/s").bytes_per_sec(), 100e6 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1.6 Tb/s").bytes_per_sec(), 1.6e12 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("3 TB/s").bytes_per_sec(), 3e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12 B/s").bytes_per_sec(), 12);
}

TEST(Units, Times)
{
  EXPECT_DOUBLE_EQ(parse_seconds("1.5 us").seconds(), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse_seconds("2 ms").seconds(), 2e-3);
  EXPECT_DOUBLE_EQ(parse_seconds("300ns").seconds(), 300e-9);
  EXPECT_DOUBLE_EQ(parse_seconds("5 s").seconds(), 5.0);
  EXPECT_DOUBLE_EQ(parse_seconds("7 ps").seconds(), 7e-12);
  EXPECT_DOUBLE_EQ(units::us(0.5).seconds(), units::ns(500).seconds()); // equal to the last bit is not promised
  EXPECT_DOUBLE_EQ(units::ms(1).seconds(), units::us(1000).seconds());
}

TEST(Units, DecimalAndBinarySizes)
{
  EXPECT_DOUBLE_EQ(parse_bytes("4 MiB").bytes(), 4.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("1 GB").bytes(), 1e9);
  EXPECT_DOUBLE_EQ(parse_bytes("1 GiB").bytes(), 1073741824.0); // 2^30
  EXPECT_DOUBLE_EQ(parse_bytes("2 KiB").bytes(), 2048);
  EXPECT_DOUBLE_EQ(parse_bytes("2 KB").bytes(), 2000);
  EXPECT_DOUBLE_EQ(parse_bytes("128").bytes(), 128);               // a plain count means bytes
  EXPECT_DOUBLE_EQ(parse_bytes("1 TiB").bytes(), 1099511627776.0); // 2^40
  EXPECT_EQ(units::GiB(1), units::MiB(1024));
}

TEST(Units, MissingOrUnknownUnitsAreRejectedWithTheAcceptedSpellings)
{
  // Bandwidth and time need a unit: a bare 400 could be bits or bytes, seconds or microseconds.
  EXPECT_THROW(parse_bandwidth("400"), std::invalid_argument);
  EXPECT_THROW(parse_seconds("1.5"), std::invalid_argument);
  EXPECT_THROW(parse_bytes("4 MiBs"), std::invalid_argument);
  EXPECT_THROW(parse_bandwidth("fast"), std::invalid_argument);
  try {
    (void)parse_bandwidth("400 Gbit");
    FAIL() << "expected invalid_argument";
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("Gbit"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Gb/s"), std::string::npos) << msg; // lists what is accepted
  }
}

TEST(Units, TypedArithmetic)
{
  // 1 GB over 50 GB/s takes 1e9 / 50e9 = 0.02 s; the rate times the time gives the bytes back.
  const Seconds t = units::GB(1) / units::GBps(50);
  EXPECT_DOUBLE_EQ(t.seconds(), 0.02);
  EXPECT_DOUBLE_EQ((units::GBps(50) * t).bytes(), 1e9);
  EXPECT_DOUBLE_EQ((units::GB(1) / units::seconds(0.02)).bytes_per_sec(), 50e9);
  EXPECT_DOUBLE_EQ(units::GBps(100) / units::GBps(50), 2.0);
  Seconds sum = units::us(1);
  sum += units::us(2);
  EXPECT_DOUBLE_EQ(sum.seconds(), 3e-6);
  EXPECT_LT(units::us(1), units::us(2));
}

TEST(Units, HumanReadableForms)
{
  EXPECT_EQ(format_bandwidth(units::Gbps(400)), "50 GB/s");
  EXPECT_EQ(format_seconds(units::us(1.5)), "1.5 us");
  EXPECT_EQ(format_seconds(units::ms(2)), "2 ms");
  EXPECT_EQ(format_seconds(units::seconds(3)), "3 s");
  EXPECT_EQ(format_bytes(units::MiB(4)), "4 MiB");
  EXPECT_EQ(format_bytes(units::GiB(2)), "2 GiB");
  EXPECT_EQ(format_bytes(units::bytes(100)), "100 B");
}

namespace {

// The message of the std::invalid_argument that `f` throws; "(no error)" when it throws none.
template <class F>
std::string refusal(F&& f)
{
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

bool says(const std::string& msg, const std::string& part)
{
  return msg.find(part) != std::string::npos;
}

} // namespace

TEST(UnitRanges, EachQuantityTakesItsWholeRangeAndNothingBeyond)
{
  // Sizes: 0 to 2^53 B. 8192 TiB = 2^13 x 2^40 B = 2^53 B exactly; one TiB more is outside.
  EXPECT_DOUBLE_EQ(parse_bytes("8192 TiB").bytes(), 9007199254740992.0);
  EXPECT_DOUBLE_EQ(parse_bytes("0 B").bytes(), 0.0);
  EXPECT_TRUE(says(refusal([] { (void)parse_bytes("8193 TiB"); }), "outside the allowed range of a size"));
  // Times: 0 to 1e6 s.
  EXPECT_DOUBLE_EQ(parse_seconds("1000000 s").seconds(), 1e6);
  EXPECT_DOUBLE_EQ(parse_seconds("0 s").seconds(), 0.0);
  EXPECT_TRUE(says(refusal([] { (void)parse_seconds("1000001 s"); }), "at most 1e6 s"));
  // Bandwidths: above 0, at most 1e15 B/s = 1000 TB/s.
  EXPECT_DOUBLE_EQ(parse_bandwidth("1000 TB/s").bytes_per_sec(), 1e15);
  EXPECT_TRUE(says(refusal([] { (void)parse_bandwidth("1001 TB/s"); }), "at most 1e15 B/s"));
  EXPECT_TRUE(says(refusal([] { (void)parse_bandwidth("0 Gb/s"); }), "greater than zero"));
}

TEST(UnitRanges, NonFiniteNegativeHexAndOverflowAreRefusedWithTheRange)
{
  const std::string nan_size = refusal([] { (void)parse_bytes("nan MiB"); });
  EXPECT_TRUE(says(nan_size, "'nan MiB' is not a finite number")) << nan_size;
  EXPECT_TRUE(says(nan_size, "2^53 B")) << nan_size; // the range is in the message
  EXPECT_TRUE(says(refusal([] { (void)parse_seconds("inf s"); }), "not a finite number"));
  EXPECT_TRUE(says(refusal([] { (void)parse_seconds("1e308 s"); }), "outside the allowed range of a time"));
  EXPECT_TRUE(says(refusal([] { (void)parse_bytes("1e30 B"); }), "outside the allowed range of a size"));
  // 2^64 B = 18446744073709551616 B: wraps a 64-bit count, and is far above 2^53.
  EXPECT_TRUE(says(refusal([] { (void)parse_bytes("18446744073709551616 B"); }), "outside the allowed range"));
  EXPECT_TRUE(says(refusal([] { (void)parse_bytes("-1 MiB"); }), "zero or more"));
  EXPECT_TRUE(says(refusal([] { (void)parse_seconds("-1 us"); }), "zero or more"));
  EXPECT_TRUE(says(refusal([] { (void)parse_bytes("1e400 B"); }), "beyond the range of a double"));
  // std::stod reads "0x10" as 16: refused, not read as 16 MiB.
  EXPECT_TRUE(says(refusal([] { (void)parse_bytes("0x10 MiB"); }), "hexadecimal"));
  // A size overflowing only after the unit: 1e300 TiB = 1e300 x 2^40 B is inf.
  EXPECT_TRUE(says(refusal([] { (void)parse_bytes("1e300 TiB"); }), "not a finite number"));
}

TEST(UnitRanges, CheckedConstructorsApplyTheSameRanges)
{
  EXPECT_DOUBLE_EQ(checked_bytes(9007199254740992.0).bytes(), 9007199254740992.0);
  EXPECT_DOUBLE_EQ(checked_seconds(1e6).seconds(), 1e6);
  EXPECT_DOUBLE_EQ(checked_bandwidth(1e15).bytes_per_sec(), 1e15);
  EXPECT_TRUE(says(refusal([] { (void)checked_bytes(9007199254740994.0); }), "outside the allowed range of a size"));
  EXPECT_TRUE(says(refusal([] { (void)checked_seconds(std::nan("")); }), "not a finite number"));
  EXPECT_TRUE(says(refusal([] { (void)checked_seconds(-1e-9); }), "is negative; a time must be zero or more"));
  EXPECT_TRUE(says(refusal([] { (void)checked_bandwidth(0); }), "greater than zero"));
}
