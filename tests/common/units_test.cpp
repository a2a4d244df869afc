// Units: decimal and binary prefixes, bits versus bytes, and the typed arithmetic between them.
// 1 Gb/s = 1e9 bits/s = 1e9 / 8 bytes/s; 1 GB = 1e9 bytes; 1 GiB = 2^30 bytes (IEC 80000-13).
#include "railyard/common/units.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

using namespace railyard;

TEST(Units, BitsPerSecondAreAnEighthOfBytesPerSecond)
{
  EXPECT_DOUBLE_EQ(parse_bandwidth("400 Gb/s").value(), parse_bandwidth("50 GB/s").value());
  EXPECT_DOUBLE_EQ(parse_bandwidth("400 Gb/s").value(), 400e9 / 8);
  EXPECT_EQ(units::Gbps(400), units::GBps(50));
  EXPECT_DOUBLE_EQ(parse_bandwidth("400Gbps").value(), 400e9 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("450GBps").value(), 450e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100 Mb/s").value(), 100e6 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1.6 Tb/s").value(), 1.6e12 / 8);
  EXPECT_DOUBLE_EQ(parse_bandwidth("3 TB/s").value(), 3e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12 B/s").value(), 12);
}

TEST(Units, Times)
{
  EXPECT_DOUBLE_EQ(parse_seconds("1.5 us").value(), 1.5e-6);
  EXPECT_DOUBLE_EQ(parse_seconds("2 ms").value(), 2e-3);
  EXPECT_DOUBLE_EQ(parse_seconds("300ns").value(), 300e-9);
  EXPECT_DOUBLE_EQ(parse_seconds("5 s").value(), 5.0);
  EXPECT_DOUBLE_EQ(parse_seconds("7 ps").value(), 7e-12);
  EXPECT_DOUBLE_EQ(units::us(0.5).value(), units::ns(500).value()); // equal to the last bit is not promised
  EXPECT_DOUBLE_EQ(units::ms(1).value(), units::us(1000).value());
}

TEST(Units, DecimalAndBinarySizes)
{
  EXPECT_DOUBLE_EQ(parse_bytes("4 MiB").value(), 4.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_bytes("1 GB").value(), 1e9);
  EXPECT_DOUBLE_EQ(parse_bytes("1 GiB").value(), 1073741824.0); // 2^30
  EXPECT_DOUBLE_EQ(parse_bytes("2 KiB").value(), 2048);
  EXPECT_DOUBLE_EQ(parse_bytes("2 KB").value(), 2000);
  EXPECT_DOUBLE_EQ(parse_bytes("128").value(), 128);               // a plain count means bytes
  EXPECT_DOUBLE_EQ(parse_bytes("1 TiB").value(), 1099511627776.0); // 2^40
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
  EXPECT_DOUBLE_EQ(t.value(), 0.02);
  EXPECT_DOUBLE_EQ((units::GBps(50) * t).value(), 1e9);
  EXPECT_DOUBLE_EQ((units::GB(1) / units::seconds(0.02)).value(), 50e9);
  EXPECT_DOUBLE_EQ(units::GBps(100) / units::GBps(50), 2.0);
  Seconds sum = units::us(1);
  sum += units::us(2);
  EXPECT_DOUBLE_EQ(sum.value(), 3e-6);
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
