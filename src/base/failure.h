// What a failed wait or copy reports to the collective that made it, and the one function that
// builds it, so that every site fills all of its fields alike.
#pragma once

#include <string>

#include "xccl.h"

namespace xccl {

// A failure's peer when no rank is to blame (or none is known).
constexpr int kNoPeer = -1;

// What a failed wait or copy knows: which rank it was waiting for, and why.
struct PlatformFailure {
  xcclResult_t result = xcclSuccess;
  int peer = kNoPeer;
  std::string message;
};

// Fills *failure with `result`, `peer` and the printf-style message (of any length) and returns
// `result`, so that a failing path ends in `return SetFailure(...)`. A null `failure` (a caller
// that wants no details) is left alone: only the result comes back.
xcclResult_t SetFailure(PlatformFailure* failure, xcclResult_t result, int peer, const char* format,
                        ...) __attribute__((format(printf, 4, 5)));

}  // namespace xccl
