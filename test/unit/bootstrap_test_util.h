// What the bootstrap tests share: elapsed time and message checks.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <thread>

#include "base/error.h"
#include "transport/bootstrap/bootstrap.h"

namespace xccl {
namespace bootstrap_test {

using Ms = std::chrono::milliseconds;
using SteadyClock = std::chrono::steady_clock;

inline int64_t ElapsedMs(SteadyClock::time_point since) {
  return std::chrono::duration_cast<Ms>(SteadyClock::now() - since).count();
}

inline bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// Runs `call` (blocked: its peer never comes) on another thread, aborts `boot` after `delay`, and
// expects the call to fail within 2 s with a message naming the abort.
inline void ExpectAbortUnblocks(Bootstrap* boot, const std::function<xcclResult_t()>& call,
                                Ms delay) {
  xcclResult_t rc = xcclSuccess;
  std::string message;
  const auto start = SteadyClock::now();
  std::thread t([&] {
    rc = call();
    message = ThreadLastError();
  });
  std::this_thread::sleep_for(delay);
  boot->Abort();
  t.join();
  EXPECT_NE(xcclSuccess, rc);
  EXPECT_TRUE(Contains(message, "Abort")) << message;
  EXPECT_LT(ElapsedMs(start), 2000);
}

}  // namespace bootstrap_test
}  // namespace xccl
