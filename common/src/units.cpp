#include "railyard/common/units.hpp"

#include "railyard/common/numbers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace railyard {
namespace {

struct Unit {
  std::string_view name;
  double factor;
};

// What a quantity may hold (units.hpp, namespace limits), and how a message says it.
struct Range {
  const char* quantity;
  const char* unit;
  double max;
  bool zero_allowed;
  const char* words;
};

constexpr Range kSizeRange{"size", "B", limits::kMaxBytes, true,
                           "zero or more and at most 2^53 B (9007199254740992 B, 8 PiB)"};
constexpr Range kTimeRange{"time", "s", limits::kMaxSeconds, true, "zero or more and at most 1e6 s (11.6 days)"};
constexpr Range kRateRange{"bandwidth", "B/s", limits::kMaxBytesPerSec, false,
                           "greater than zero and at most 1e15 B/s (1 PB/s)"};

// `shown` is the value as the user wrote it, quoted, or the number with its base unit.
double in_range(double v, const std::string& shown, const Range& r)
{
  if (!std::isfinite(v))
    throw std::invalid_argument(fmt::format("{} is not a finite number; a {} must be {}", shown, r.quantity, r.words));
  if (v < 0) throw std::invalid_argument(fmt::format("{} is negative; a {} must be {}", shown, r.quantity, r.words));
  const bool too_low = r.zero_allowed ? v < 0 : !(v > 0);
  if (too_low || v > r.max)
    throw std::invalid_argument(fmt::format("{} is outside the allowed range of a {}: {}", shown, r.quantity, r.words));
  return v;
}

double checked(double v, const Range& r)
{
  return in_range(v, fmt::format("{:g} {}", v, r.unit), r);
}

template <size_t N>
double parse_with(const std::string& raw, const std::array<Unit, N>& table, const Range& range, bool unitless_ok)
{
  std::string_view text(raw);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front())))
    text.remove_prefix(1);
  const LeadingNumber n = leading_number(text);
  if (n.hexadecimal)
    throw std::invalid_argument(fmt::format("'{}' is hexadecimal; write the {} in decimal", raw, range.quantity));
  if (n.length == 0) throw std::invalid_argument(fmt::format("'{}' does not start with a number", raw));
  std::string unit(text.substr(n.length));
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }), unit.end());
  double factor = 0;
  if (unit.empty() && unitless_ok) factor = 1;
  for (const auto& u : table)
    if (unit == u.name) factor = u.factor;
  if (factor == 0) {
    std::string accepted;
    for (const auto& u : table)
      accepted += (accepted.empty() ? "" : ", ") + std::string(u.name);
    throw std::invalid_argument(fmt::format("'{}' has {} unit '{}'; write the {} with one of: {}", raw,
                                            unit.empty() ? "no" : "unknown", unit, range.quantity, accepted));
  }
  if (n.out_of_range)
    throw std::invalid_argument(
        fmt::format("'{}' is beyond the range of a double; a {} must be {}", raw, range.quantity, range.words));
  return in_range(n.value * factor, "'" + raw + "'", range);
}

constexpr std::array<Unit, 9> kByteUnits{{{"B", 1},
                                          {"KB", units::kKB},
                                          {"MB", units::kMB},
                                          {"GB", units::kGB},
                                          {"TB", 1e12},
                                          {"KiB", units::kKiB},
                                          {"MiB", units::kMiB},
                                          {"GiB", units::kGiB},
                                          {"TiB", units::kGiB * 1024.0}}};
constexpr std::array<Unit, 5> kTimeUnits{{{"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"ns", 1e-9}, {"ps", 1e-12}}};
constexpr std::array<Unit, 10> kRateUnits{{{"B/s", 1},
                                           {"KB/s", 1e3},
                                           {"MB/s", 1e6},
                                           {"GB/s", 1e9},
                                           {"GBps", 1e9},
                                           {"TB/s", 1e12},
                                           {"Mb/s", 1e6 / 8},
                                           {"Gb/s", 1e9 / 8},
                                           {"Gbps", 1e9 / 8},
                                           {"Tb/s", 1e12 / 8}}};

} // namespace

Bytes parse_bytes(const std::string& text)
{
  return Bytes(parse_with(text, kByteUnits, kSizeRange, true));
}
Seconds parse_seconds(const std::string& text)
{
  return Seconds(parse_with(text, kTimeUnits, kTimeRange, false));
}
BytesPerSec parse_bandwidth(const std::string& text)
{
  return BytesPerSec(parse_with(text, kRateUnits, kRateRange, false));
}

Bytes checked_bytes(double v)
{
  return Bytes(checked(v, kSizeRange));
}
Seconds checked_seconds(double v)
{
  return Seconds(checked(v, kTimeRange));
}
BytesPerSec checked_bandwidth(double v)
{
  return BytesPerSec(checked(v, kRateRange));
}

std::string format_bytes(Bytes b)
{
  const double v = b.bytes();
  if (v >= units::kGiB)
    return fmt::format("{:g} GiB", v / units::kGiB);
  if (v >= units::kMiB)
    return fmt::format("{:g} MiB", v / units::kMiB);
  if (v >= units::kKiB)
    return fmt::format("{:g} KiB", v / units::kKiB);
  return fmt::format("{:g} B", v);
}

std::string format_seconds(Seconds s)
{
  const double v = s.seconds();
  if (v >= 1.0)
    return fmt::format("{:.6g} s", v);
  if (v >= 1e-3)
    return fmt::format("{:.6g} ms", v * 1e3);
  return fmt::format("{:.6g} us", v * 1e6);
}

std::string format_bandwidth(BytesPerSec r) { return fmt::format("{:.6g} GB/s", r.bytes_per_sec() / units::kGB); }

} // namespace railyard
