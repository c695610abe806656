// EpochReached: the wrap-safe comparison every waiter uses (docs/ARCHITECTURE.md, "Control window
// and epochs").
#include "base/epoch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>

namespace xccl {
namespace {

// Reference on unwrapped 64-bit counters: the signal has reached the target when the true
// (never wrapped) count of the signal is at or beyond the true target.
bool ReferenceReached(uint64_t current_unwrapped, uint64_t target_unwrapped) {
  return current_unwrapped >= target_unwrapped;
}

TEST(EpochTest, AtAndAcrossTheWrap) {
  const uint32_t near_wrap[] = {0xFFFFFFFEu, 0xFFFFFFFFu, 0u, 1u};
  // Each value in order is one step after the previous one, so a later value has reached every
  // earlier one and an earlier value has not reached any later one.
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 4; ++j) {
      SCOPED_TRACE("current " + std::to_string(near_wrap[i]) + " target " +
                   std::to_string(near_wrap[j]));
      EXPECT_EQ(EpochReached(near_wrap[i], near_wrap[j]), i >= j);
    }
  }
  // The naive comparison would get these wrong.
  EXPECT_TRUE(EpochReached(0u, 0xFFFFFFFEu));
  EXPECT_TRUE(EpochReached(5u, 0xFFFFFFF0u));
  EXPECT_FALSE(EpochReached(0xFFFFFFFEu, 1u));
  EXPECT_FALSE(EpochReached(0xFFFFFFF0u, 5u));
}

TEST(EpochTest, HalfRangeBoundaries) {
  const uint32_t targets[] = {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
  for (uint32_t target : targets) {
    SCOPED_TRACE("target " + std::to_string(target));
    EXPECT_TRUE(EpochReached(target, target));
    EXPECT_TRUE(EpochReached(target + 1u, target));
    EXPECT_TRUE(EpochReached(target + 0x7FFFFFFFu, target));  // delta 2^31 - 1
    EXPECT_FALSE(EpochReached(target - 1u, target));
    EXPECT_FALSE(EpochReached(target - 0x7FFFFFFFu, target));  // delta -(2^31 - 1)
  }
}

TEST(EpochTest, ConstexprUsable) {
  static_assert(EpochReached(0u, 0xFFFFFFFFu), "0 follows 0xFFFFFFFF");
  static_assert(!EpochReached(0xFFFFFFFFu, 0u), "0xFFFFFFFF precedes 0");
  SUCCEED();
}

TEST(EpochTest, RandomSweepAgainstUnwrappedReference) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  // Unwrapped counters up to 2^40: many laps of the 32-bit counter.
  std::uniform_int_distribution<uint64_t> base_dist(0, (uint64_t{1} << 40));
  std::uniform_int_distribution<int64_t> forward(0, (int64_t{1} << 31) - 1);
  std::uniform_int_distribution<int64_t> backward(-((int64_t{1} << 31) - 1), -1);
  std::uniform_int_distribution<int64_t> small(-4, 4);
  int checked = 0;
  for (int i = 0; i < 200000; ++i) {
    // Targets far enough from 0 that the unwrapped current value stays non-negative.
    const uint64_t target = (uint64_t{1} << 32) + base_dist(rng);
    int64_t delta;
    switch (i % 3) {
      case 0:
        delta = forward(rng);
        break;
      case 1:
        delta = backward(rng);
        break;
      default:
        delta = small(rng);
        break;  // near equality, where off-by-one bugs live
    }
    const uint64_t current = static_cast<uint64_t>(static_cast<int64_t>(target) + delta);
    const bool expected = ReferenceReached(current, target);
    ASSERT_EQ(expected, delta >= 0);
    const bool got = EpochReached(static_cast<uint32_t>(current), static_cast<uint32_t>(target));
    if (got != expected) {
      ADD_FAILURE() << "EpochReached(" << static_cast<uint32_t>(current) << ", "
                    << static_cast<uint32_t>(target) << ") = " << got << ", delta " << delta;
      if (++checked > 10) return;
    }
  }
}

TEST(EpochTest, RandomSweepAroundTheWrap) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  // Targets within a few thousand steps of the wrap, deltas both ways.
  std::uniform_int_distribution<int64_t> near(-4096, 4096);
  std::uniform_int_distribution<int64_t> delta_dist(-((int64_t{1} << 31) - 1),
                                                    (int64_t{1} << 31) - 1);
  for (int i = 0; i < 100000; ++i) {
    const int64_t target_unwrapped = (int64_t{1} << 32) + near(rng);
    const int64_t delta = (i % 2) ? delta_dist(rng) : near(rng);
    const int64_t current_unwrapped = target_unwrapped + delta;
    ASSERT_EQ(EpochReached(static_cast<uint32_t>(current_unwrapped),
                           static_cast<uint32_t>(target_unwrapped)),
              ReferenceReached(static_cast<uint64_t>(current_unwrapped),
                               static_cast<uint64_t>(target_unwrapped)))
        << "target " << target_unwrapped << " delta " << delta;
  }
}

}  // namespace
}  // namespace xccl
