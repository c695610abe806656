// Failure reporting inside xccl: every failing path calls Fail(), which records a message for
// xcclGetLastError and logs it at WARN, and returns the result code to propagate.
#pragma once

#include <cstdarg>
#include <string>

#include "xccl.h"

namespace xccl {

// Records `message` (printf-style) as this thread's last error, logs it, returns `result`.
xcclResult_t Fail(xcclResult_t result, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

// The same, logged at INFO only: for failures whose caller decides whether they matter (a net
// connection closed by a peer that is done, at teardown).
xcclResult_t FailQuietly(xcclResult_t result, const char* fmt, ...)
    __attribute__((format(printf, 2, 3)));

// printf into a string (at most 1023 characters), for messages kept beyond one call.
std::string FormatV(const char* fmt, va_list args);

// This thread's last recorded failure message ("" if none).
const std::string& ThreadLastError();
void ClearThreadLastError();

}  // namespace xccl

// Propagates a non-success xcclResult_t to the caller, keeping the message already recorded.
#define XCCL_TRY(expr)                                            \
  do {                                                            \
    xcclResult_t xccl_try_result_ = (expr);                       \
    if (xccl_try_result_ != xcclSuccess) return xccl_try_result_; \
  } while (0)
