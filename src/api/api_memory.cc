// Memory and registration entry points of the C API: xcclMemAlloc/Free, windows and local
// registrations.
#include "api/api_guard.h"
#include "api/comm_handle.h"
#include "comm/communicator.h"
#include "transport/user_memory.h"

using namespace xccl;

extern "C" {

xcclResult_t xcclMemAlloc(void** ptr, size_t size) {
  return GuardedCall("xcclMemAlloc", nullptr, [&]() -> xcclResult_t {
    if (ptr == nullptr) return Fail(xcclInvalidArgument, "xcclMemAlloc: ptr is NULL");
    if (size == 0) return Fail(xcclInvalidArgument, "xcclMemAlloc: size is 0");
    const xcclResult_t result = AllocateUserMemory(size, ptr);
    if (result != xcclSuccess)
      return Fail(result, "xcclMemAlloc of %zu bytes: %s", size, ThreadLastError().c_str());
    return xcclSuccess;
  });
}

xcclResult_t xcclMemFree(void* ptr) {
  return GuardedCall("xcclMemFree", nullptr, [&]() -> xcclResult_t {
    if (ptr == nullptr) return xcclSuccess;
    const xcclResult_t result = FreeUserMemory(ptr);
    if (result != xcclSuccess) return Fail(result, "xcclMemFree: %s", ThreadLastError().c_str());
    return xcclSuccess;
  });
}

xcclResult_t xcclCommWindowRegister(xcclComm_t comm, void* buff, size_t size, xcclWindow_t* win,
                                    int winFlags) {
  const char* op = "xcclCommWindowRegister";
  return GuardedCall(op, comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, op, &impl));
    // A flag this build does not know is refused before the collective part, as NULL comm is:
    // every rank passes the same flags, so every rank refuses alike.
    if (winFlags != XCCL_WIN_DEFAULT)
      return Fail(xcclInvalidArgument, "%s: unknown winFlags 0x%x", op, winFlags);
    Communicator::OperationGuard exclusive(impl);
    XCCL_TRY(exclusive.Acquire(op));
    XCCL_TRY(impl->CheckHealthy(op));
    const xcclResult_t result =
        impl->windows().Register(impl->bootstrap(), impl->topology(), buff, size, win);
    if (result != xcclSuccess)
      return Fail(result, "%s on rank %d: %s", op, impl->rank(), ThreadLastError().c_str());
    return xcclSuccess;
  });
}

xcclResult_t xcclCommWindowDeregister(xcclComm_t comm, xcclWindow_t win) {
  const char* op = "xcclCommWindowDeregister";
  return GuardedCall(op, comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, op, &impl));
    Communicator::OperationGuard exclusive(impl);
    XCCL_TRY(exclusive.Acquire(op));
    const xcclResult_t result = impl->windows().Deregister(win);
    if (result != xcclSuccess) return Fail(result, "%s: %s", op, ThreadLastError().c_str());
    return xcclSuccess;
  });
}

xcclResult_t xcclCommRegister(const xcclComm_t comm, void* buff, size_t size, void** handle) {
  const char* op = "xcclCommRegister";
  return GuardedCall(op, comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, op, &impl));
    const xcclResult_t result = impl->registrations().Register(buff, size, handle);
    if (result != xcclSuccess) return Fail(result, "%s: %s", op, ThreadLastError().c_str());
    return xcclSuccess;
  });
}

xcclResult_t xcclCommDeregister(const xcclComm_t comm, void* handle) {
  const char* op = "xcclCommDeregister";
  return GuardedCall(op, comm, [&]() -> xcclResult_t {
    Communicator* impl = nullptr;
    XCCL_TRY(ResolveComm(comm, op, &impl));
    const xcclResult_t result = impl->registrations().Deregister(handle);
    if (result != xcclSuccess) return Fail(result, "%s: %s", op, ThreadLastError().c_str());
    return xcclSuccess;
  });
}

}  // extern "C"
