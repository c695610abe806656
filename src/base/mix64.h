// splitmix64's finaliser (Steele, Lea and Flood, "Fast splittable pseudorandom number
// generators", 2014): every input bit moves every output bit. Header-only, for the library and
// its perf harness.
#pragma once

#include <cstdint>

namespace xccl {

inline uint64_t SplitMix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace xccl
