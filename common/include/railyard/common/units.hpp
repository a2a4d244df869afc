// Units live in types: Bytes, Seconds, BytesPerSec. Where a formula or a library (SimGrid, a CSV column, JSON) needs
// the raw number, a named conversion says its unit: `b.bytes()`, `t.seconds()`, `r.bytes_per_sec()`; there is no
// unit-less accessor.
//
// Decimal and binary prefixes are both spelled out: 1 GB = 1e9 bytes, 1 GiB = 2^30 bytes, 1 Gb/s = 1.25e8 B/s.
#pragma once

#include <cmath>
#include <compare>
#include <concepts>
#include <cstdint>
#include <string>

namespace railyard {

struct BytesTag {};
struct SecondsTag {};
struct BytesPerSecTag {};

template <class Tag>
class Quantity {
public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(double v) : v_(v) {}
  /// Bytes as a number of bytes.
  [[nodiscard]] constexpr double bytes() const
    requires std::same_as<Tag, BytesTag>
  {
    return v_;
  }
  /// Seconds as a number of seconds.
  [[nodiscard]] constexpr double seconds() const
    requires std::same_as<Tag, SecondsTag>
  {
    return v_;
  }
  /// A rate as bytes per second.
  [[nodiscard]] constexpr double bytes_per_sec() const
    requires std::same_as<Tag, BytesPerSecTag>
  {
    return v_;
  }

  constexpr Quantity& operator+=(Quantity o)
  {
    v_ += o.v_;
    return *this;
  }
  constexpr Quantity& operator-=(Quantity o)
  {
    v_ -= o.v_;
    return *this;
  }
  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.v_ + b.v_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.v_ - b.v_); }
  friend constexpr Quantity operator*(Quantity a, double k) { return Quantity(a.v_ * k); }
  friend constexpr Quantity operator*(double k, Quantity a) { return Quantity(a.v_ * k); }
  friend constexpr Quantity operator/(Quantity a, double k) { return Quantity(a.v_ / k); }
  friend constexpr double operator/(Quantity a, Quantity b) { return a.v_ / b.v_; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) = default;

private:
  double v_ = 0.0;
};

using Bytes = Quantity<BytesTag>;
using Seconds = Quantity<SecondsTag>;
using BytesPerSec = Quantity<BytesPerSecTag>;

constexpr Seconds operator/(Bytes b, BytesPerSec r) { return Seconds(b.bytes() / r.bytes_per_sec()); }
constexpr Bytes operator*(BytesPerSec r, Seconds t) { return Bytes(r.bytes_per_sec() * t.seconds()); }
constexpr Bytes operator*(Seconds t, BytesPerSec r) { return Bytes(r.bytes_per_sec() * t.seconds()); }
constexpr BytesPerSec operator/(Bytes b, Seconds t) { return BytesPerSec(b.bytes() / t.seconds()); }

namespace units {
constexpr double kKB = 1e3;
constexpr double kMB = 1e6;
constexpr double kGB = 1e9;
constexpr double kKiB = 1024.0;
constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

constexpr Bytes bytes(double v) { return Bytes(v); }
constexpr Bytes KiB(double v) { return Bytes(v * kKiB); }
constexpr Bytes MiB(double v) { return Bytes(v * kMiB); }
constexpr Bytes GiB(double v) { return Bytes(v * kGiB); }
constexpr Bytes KB(double v) { return Bytes(v * kKB); }
constexpr Bytes MB(double v) { return Bytes(v * kMB); }
constexpr Bytes GB(double v) { return Bytes(v * kGB); }
constexpr Seconds seconds(double v) { return Seconds(v); }
constexpr Seconds ms(double v) { return Seconds(v * 1e-3); }
constexpr Seconds us(double v) { return Seconds(v * 1e-6); }
constexpr Seconds ns(double v) { return Seconds(v * 1e-9); }
/// GB/s: 1e9 bytes per second (nccl-tests reports algbw and busbw in these units).
constexpr BytesPerSec GBps(double v) { return BytesPerSec(v * kGB); }
/// Gb/s: 1e9 bits per second, the unit NIC and switch port speeds are sold in (400 Gb/s = 50 GB/s).
constexpr BytesPerSec Gbps(double v) { return BytesPerSec(v * kGB / 8.0); }
} // namespace units

/// The range every value of a quantity must lie in before it reaches a model, wherever it was read (scenario,
/// profile, trace, log). A field that needs a tighter range (a positive time step, an MTU) checks it on top.
namespace limits {
/// Sizes: 0 to 2^53 B (8 PiB). A double counts bytes exactly only up to 2^53, and sizes are later turned into whole
/// element counts and chunk sizes: above it, two different sizes would become one, and 2^64 B wraps an integer.
inline constexpr double kMaxBytes = 9007199254740992.0;
/// Times: 0 to 1e6 s (11.6 days, far beyond any step or collective). Up to there a double keeps better than 1 ns
/// of resolution (its spacing at 1e6 s is 1.2e-10 s), and the event calendar adds times to the clock: a 1e308 s
/// latency would turn every later time into infinity.
inline constexpr double kMaxSeconds = 1e6;
/// Bandwidths: above 0 and at most 1e15 B/s (1 PB/s, 5,000 times a 1.6 Tb/s port). Zero would make a transfer
/// take forever; a rate beyond this is a typo, not a link.
inline constexpr double kMaxBytesPerSec = 1e15;
} // namespace limits

/// Parses "400 Gb/s", "50 GB/s", "450GBps", "1.5 us", "2 ms", "4 MiB", "1 GB", "128" (bytes only), into the
/// quantity. Throws std::invalid_argument with the accepted spellings when the unit is missing or wrong, and with
/// the allowed range (limits above) when the number is not finite, hexadecimal, or outside that range.
Bytes parse_bytes(const std::string& text);
Seconds parse_seconds(const std::string& text);
BytesPerSec parse_bandwidth(const std::string& text);

/// A plain number as the quantity, when it is finite and in its range (limits above); else std::invalid_argument
/// naming the value and the range. For numbers read without a unit string (profiles, traces, logs).
Bytes checked_bytes(double v);
Seconds checked_seconds(double v);
BytesPerSec checked_bandwidth(double v);

/// Human-readable forms used in reports: "50 GB/s", "1.5 us", "4 MiB".
std::string format_bytes(Bytes b);
std::string format_seconds(Seconds s);
std::string format_bandwidth(BytesPerSec r);

} // namespace railyard
