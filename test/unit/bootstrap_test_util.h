// What the bootstrap tests share: elapsed time and message checks.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

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

}  // namespace bootstrap_test
}  // namespace xccl
