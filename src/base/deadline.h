// A point in time after which a wait gives up. Every blocking wait in xccl takes one.
#pragma once

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>

#include "base/timeout_limit.h"

namespace xccl {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // Already passed: a wait given it makes one non-blocking attempt.
  Deadline() = default;
  // now + timeout_ms, cut to kMaxTimeoutMs so that huge timeouts cannot overflow the clock;
  // zero or negative is already expired. timeout_ms() keeps the value asked for, for messages.
  explicit Deadline(int64_t timeout_ms)
      : timeout_ms_(timeout_ms),
        end_(Clock::now() +
             std::chrono::milliseconds(std::clamp<int64_t>(timeout_ms, 0, kMaxTimeoutMs))) {}

  // Ends at a time already computed (the earliest of several, a peer's stated limit).
  static Deadline At(Clock::time_point end, int64_t timeout_ms = 0) {
    Deadline d;
    d.timeout_ms_ = timeout_ms;
    d.end_ = end;
    return d;
  }
  // Later than any other deadline: the neutral start of a search for the earliest.
  static Deadline Never() { return At(Clock::time_point::max(), INT64_MAX); }

  bool Expired() const { return Clock::now() >= end_; }
  int64_t timeout_ms() const { return timeout_ms_; }
  Clock::time_point end() const { return end_; }
  // Milliseconds left (0 once expired), rounded down.
  int64_t RemainingMs() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end_ - Clock::now());
    return left.count() > 0 ? left.count() : 0;
  }
  // The timeout for poll(2): rounded up, so that a poll that returns 0 has reached the
  // deadline rather than woken a fraction of a millisecond early, and clamped to an int.
  int PollTimeoutMs() const {
    auto left = end_ - Clock::now();
    if (left <= Clock::duration::zero()) return 0;
    auto ms = std::chrono::ceil<std::chrono::milliseconds>(left).count();
    return static_cast<int>(std::min<int64_t>(ms, INT_MAX));
  }

  // Ordered by when they end (std::min of two deadlines is the one that ends first).
  friend bool operator<(const Deadline& a, const Deadline& b) { return a.end_ < b.end_; }
  friend bool operator>(const Deadline& a, const Deadline& b) { return b < a; }
  friend bool operator<=(const Deadline& a, const Deadline& b) { return !(b < a); }
  friend bool operator>=(const Deadline& a, const Deadline& b) { return !(a < b); }

 private:
  int64_t timeout_ms_ = 0;
  Clock::time_point end_{};
};

}  // namespace xccl
