// What an xcclComm_t points to. Handles are never freed: destroy drops the communicator and
// marks the handle dead, so that a call with a destroyed handle gets a clear
// xcclInvalidArgument instead of a use-after-free. A handle costs a few dozen bytes.
//
// Calls in flight are counted on the handle (GuardedCall), so that destroy or abort from another
// thread - abort is how a caller unblocks a hung call - frees the communicator only after they
// left: a call counts itself before it looks at `magic`, and destroy marks the handle dead before
// it looks at the count (both sequentially consistent), so either the call sees the handle dead
// or destroy sees the call and waits for it.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "comm/communicator.h"
#include "xccl.h"

struct xcclComm {
  static constexpr uint64_t kLive = 0x78636c6c4c495645ull;  // "xcllLIVE"
  static constexpr uint64_t kDead = 0x78636c6c44454144ull;  // "xcllDEAD"
  std::atomic<uint64_t> magic{kLive};
  std::atomic<int> in_flight{0};  // API calls on this handle now running (GuardedCall)
  std::unique_ptr<xccl::Communicator> impl;
  std::mutex last_error_mutex;
  std::string last_error;
};

namespace xccl {

// Resolves a handle for `op`: xcclInvalidArgument for NULL, a destroyed or a foreign handle.
xcclResult_t ResolveComm(xcclComm_t comm, const char* op, Communicator** out);
// Keeps the thread's last error on the handle, for xcclGetLastError(comm).
void RememberLastError(xcclComm_t comm);

// Whether `comm` points to an xccl handle, live or destroyed (handles are never freed).
bool IsHandle(xcclComm_t comm);

// Counts a call on `comm` (if it is a handle) as in flight for its lifetime.
class CallInFlight {
 public:
  explicit CallInFlight(xcclComm_t comm) : comm_(IsHandle(comm) ? comm : nullptr) {
    if (comm_ != nullptr) comm_->in_flight.fetch_add(1);
  }
  ~CallInFlight() {
    if (comm_ != nullptr) comm_->in_flight.fetch_sub(1);
  }
  CallInFlight(const CallInFlight&) = delete;
  CallInFlight& operator=(const CallInFlight&) = delete;

 private:
  xcclComm_t comm_;
};

}  // namespace xccl
