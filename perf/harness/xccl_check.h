// Reporting a failed xccl call the way an operator needs it: which rank, which call, the result
// code's text and the library's own explanation (xcclGetLastError).
#pragma once

#include "xccl.h"

namespace xccl_perf {

class RankSync;

// A rank that failed mid-run: tells every other rank to stop waiting for it (sync.Abort), aborts
// its communicator if it has one (then *comm is NULL) and returns false, for `return Fail()`.
bool AbandonRank(RankSync& sync, xcclComm_t* comm);

// Prints the failure to stderr when result is not xcclSuccess; returns result == xcclSuccess.
// comm may be NULL (before init succeeds), in which case the thread's last error is shown.
bool XcclOk(xcclResult_t result, const char* call, int rank, xcclComm_t comm);

}  // namespace xccl_perf

// Evaluates an xccl call; on failure reports it and runs `on_error` (a statement such as
// "return Fail(...)"), so that call sites stay one line.
#define XCCL_PERF_CHECK(call, rank, comm, on_error)            \
  do {                                                         \
    if (!::xccl_perf::XcclOk((call), #call, (rank), (comm))) { \
      on_error;                                                \
    }                                                          \
  } while (0)
