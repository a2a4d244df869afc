// The one 64-bit mixing function of Railyard (ECMP hashing, QP spreading, hash tables, seeded streams), and the one
// (src, dst) pair key, spelled once.
#pragma once

#include <cstdint>

namespace railyard {

/// splitmix64's finaliser (Steele, Lea and Flood 2014, "Fast splittable pseudorandom number generators"): every input
/// bit flips each output bit with probability about 1/2.
constexpr std::uint64_t splitmix64(std::uint64_t x)
{
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// An ordered pair of ids (a source and a destination GPU) as one 64-bit key: src in the high half, dst in the low.
constexpr std::uint64_t pair_key(int src, int dst)
{
  return (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst);
}

} // namespace railyard
