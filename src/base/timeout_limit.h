// The longest wait any deadline in xccl stands for.
#pragma once

#include <cstdint>

namespace xccl {

// Far enough for any real timeout (about 35 years), near enough that now() plus it cannot
// overflow steady_clock's 64-bit nanoseconds: longer timeouts (XCCL_TIMEOUT_MS accepts up to
// INT64_MAX / 10^6) are cut to it rather than wrapping into a deadline in the past.
constexpr int64_t kMaxTimeoutMs = int64_t{1} << 40;

}  // namespace xccl
