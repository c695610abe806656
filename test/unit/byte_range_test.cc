// ByteRange::Overlaps against a byte-by-byte count of the addresses two ranges share, on random
// ranges in a small arena (so that many overlap, touch or nest), empty ranges included.
#include "base/byte_range.h"

#include <gtest/gtest.h>

#include <random>

namespace xccl {
namespace {

TEST(ByteRange, OverlapsExactlyWhenSomeByteIsShared) {
  static char arena[256];
  std::mt19937_64 rng(std::random_device{}());
  int overlapping = 0, apart = 0;
  for (int trial = 0; trial < 20000; ++trial) {
    const size_t a_at = rng() % 200, b_at = rng() % 200;
    const size_t a_bytes = rng() % 40, b_bytes = rng() % 40;
    const ByteRange a{arena + a_at, a_bytes}, b{arena + b_at, b_bytes};
    bool shared = false;
    for (size_t i = a_at; i < a_at + a_bytes && !shared; ++i)
      shared = i >= b_at && i < b_at + b_bytes;
    ASSERT_EQ(a.Overlaps(b), shared)
        << "[" << a_at << ", +" << a_bytes << ") against [" << b_at << ", +" << b_bytes << ")";
    ASSERT_EQ(b.Overlaps(a), shared) << "not symmetric";
    (shared ? overlapping : apart)++;
  }
  // Both answers were exercised.
  EXPECT_GT(overlapping, 1000);
  EXPECT_GT(apart, 1000);
}

}  // namespace
}  // namespace xccl
