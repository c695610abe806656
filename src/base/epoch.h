// Signals are monotonic 32-bit counters that are never reset; they wrap. A waiter asks whether
// a signal has reached a target with a wrap-safe difference, never with `cur >= target`, so a
// communicator keeps working across 2^32 operations (and tests preset 0xFFFFFFFE to prove it).
#pragma once

#include <cstdint>

namespace xccl {

// True when `current` is at or past `target`, modulo 2^32 (valid while they differ by < 2^31).
constexpr bool EpochReached(uint32_t current, uint32_t target) {
  return static_cast<int32_t>(current - target) >= 0;
}

}  // namespace xccl
