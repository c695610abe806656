// Every C entry point runs its body through GuardedCall: C++ exceptions never cross the C
// boundary, and a failure's message is kept on the communicator for xcclGetLastError(comm)
// (and per thread for xcclGetLastError(NULL); a later successful call does not erase it).
#pragma once

#include <exception>
#include <new>

#include "api/comm_handle.h"
#include "base/error.h"

namespace xccl {

template <typename Body>
xcclResult_t GuardedCall(const char* op, xcclComm_t comm_for_error, Body&& body) {
  const CallInFlight in_flight(comm_for_error);
  xcclResult_t result;
  try {
    result = body();
  } catch (const std::bad_alloc&) {
    result = Fail(xcclSystemError, "%s: out of host memory", op);
  } catch (const std::exception& e) {
    result = Fail(xcclInternalError, "%s: unexpected exception: %s", op, e.what());
  } catch (...) {
    result = Fail(xcclInternalError, "%s: unexpected exception", op);
  }
  if (result != xcclSuccess) RememberLastError(comm_for_error);
  return result;
}

}  // namespace xccl
