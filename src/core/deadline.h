// A point in time after which a wait gives up. Every blocking wait in xccl takes one.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "core/timeout_limit.h"

namespace xccl {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Deadline(int64_t timeout_ms)
      : timeout_ms_(timeout_ms),
        end_(Clock::now() + std::chrono::milliseconds(std::min(timeout_ms, kMaxTimeoutMs))) {}
  bool Expired() const { return Clock::now() >= end_; }
  int64_t timeout_ms() const { return timeout_ms_; }
  // Milliseconds left (0 once expired).
  int64_t RemainingMs() const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end_ - Clock::now());
    return left.count() > 0 ? left.count() : 0;
  }

 private:
  int64_t timeout_ms_;
  Clock::time_point end_;
};

}  // namespace xccl
