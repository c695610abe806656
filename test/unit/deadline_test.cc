// Deadlines of every timeout the parameters accept lie in the future (no wrap into the past).
#include "base/deadline.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

namespace xccl {
namespace {

// XCCL_TIMEOUT_MS accepts up to INT64_MAX / 10^6 ms; in nanoseconds from steady_clock's now()
// that overflowed, and every wait then timed out at once.
TEST(Deadline, TheLongestAcceptedTimeoutIsNotExpired) {
  const int64_t longest_accepted = std::numeric_limits<int64_t>::max() / 1000000;
  for (const int64_t ms : {longest_accepted, longest_accepted - 1, longest_accepted / 2,
                           kMaxTimeoutMs + 1, kMaxTimeoutMs}) {
    SCOPED_TRACE(ms);
    const Deadline deadline(ms);
    EXPECT_FALSE(deadline.Expired());
    EXPECT_EQ(deadline.timeout_ms(), ms);  // as asked, for messages
    EXPECT_GT(deadline.RemainingMs(), kMaxTimeoutMs - 60000);
    EXPECT_LE(deadline.RemainingMs(), kMaxTimeoutMs);
  }
}

TEST(Deadline, ShortAndZeroTimeoutsKeepTheirLength) {
  EXPECT_TRUE(Deadline(0).Expired());
  EXPECT_TRUE(Deadline(-5).Expired());
  const Deadline minute(60000);
  EXPECT_FALSE(minute.Expired());
  EXPECT_GT(minute.RemainingMs(), 59000);
  EXPECT_LE(minute.RemainingMs(), 60000);
}

}  // namespace
}  // namespace xccl
