// Bounds a warning that a peer or a port scan can repeat without end (a refused connection, a
// failed map): the first kBurst pass, then at most one per kIntervalMs, each carrying the count
// of those dropped since the last one passed, and whoever owns the limiter reports what is left
// when it goes (Remaining). Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>

namespace xccl {

class RepeatLimiter {
 public:
  static constexpr int kBurst = 5;
  static constexpr int64_t kIntervalMs = 1000;

  // True: log this one; *dropped is how many were not logged since the one before it.
  bool Admit(uint64_t* dropped) {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (passed_ < kBurst || now >= next_) {
      ++passed_;
      *dropped = dropped_;
      dropped_ = 0;
      next_ = now + std::chrono::milliseconds(kIntervalMs);
      return true;
    }
    ++dropped_;
    return false;
  }
  // Those dropped since the last one logged (and forgets them).
  uint64_t Remaining() {
    std::lock_guard<std::mutex> lock(mutex_);
    const uint64_t left = dropped_;
    dropped_ = 0;
    return left;
  }

 private:
  std::mutex mutex_;
  int passed_ = 0;
  uint64_t dropped_ = 0;
  std::chrono::steady_clock::time_point next_{};
};

}  // namespace xccl
