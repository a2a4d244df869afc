#include "railyard/common/units.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace railyard {
namespace {

struct Unit {
  std::string_view name;
  double factor;
};

// Splits "400 Gb/s" into (400, "Gb/s"). Throws when there is no leading number.
std::pair<double, std::string> split_number(const std::string& text)
{
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    throw std::invalid_argument(fmt::format("'{}' does not start with a number", text));
  }
  std::string unit = text.substr(pos);
  unit.erase(std::remove_if(unit.begin(), unit.end(), [](unsigned char c) { return std::isspace(c); }), unit.end());
  return {v, unit};
}

template <size_t N>
double parse_with(const std::string& text, const std::array<Unit, N>& table, const char* what, bool unitless_ok)
{
  auto [v, unit] = split_number(text);
  if (unit.empty() && unitless_ok)
    return v;
  for (const auto& u : table)
    if (unit == u.name)
      return v * u.factor;
  std::string accepted;
  for (const auto& u : table)
    accepted += (accepted.empty() ? "" : ", ") + std::string(u.name);
  throw std::invalid_argument(
      fmt::format("'{}' has {} unit '{}'; write the {} with one of: {}", text, unit.empty() ? "no" : "unknown", unit,
                  what, accepted));
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

Bytes parse_bytes(const std::string& text) { return Bytes(parse_with(text, kByteUnits, "size", true)); }
Seconds parse_seconds(const std::string& text) { return Seconds(parse_with(text, kTimeUnits, "time", false)); }
BytesPerSec parse_bandwidth(const std::string& text)
{
  return BytesPerSec(parse_with(text, kRateUnits, "bandwidth", false));
}

std::string format_bytes(Bytes b)
{
  const double v = b.value();
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
  const double v = s.value();
  if (v >= 1.0)
    return fmt::format("{:.6g} s", v);
  if (v >= 1e-3)
    return fmt::format("{:.6g} ms", v * 1e3);
  return fmt::format("{:.6g} us", v * 1e6);
}

std::string format_bandwidth(BytesPerSec r) { return fmt::format("{:.6g} GB/s", r.value() / units::kGB); }

} // namespace railyard
