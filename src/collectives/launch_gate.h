// The launch gate around a collective's enqueue (Transport::EnterLaunchGate; docs/ARCHITECTURE.md,
// "Ranks sharing a GPU"): entered before the first kernel is enqueued, left once the last is.
// Left on every path: a call that fails in between still keeps the count of gates passed, so its
// peers fail on their own waits naming this rank rather than at a later gate.
#pragma once

#include "base/failure.h"
#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

class LaunchGate {
 public:
  LaunchGate(Communicator* comm, const char* op) : comm_(comm), op_(op) {}
  ~LaunchGate() {
    PlatformFailure ignored;
    if (entered_) comm_->transport()->LeaveLaunchGate(/*wait=*/false, &ignored);
  }
  LaunchGate(const LaunchGate&) = delete;
  LaunchGate& operator=(const LaunchGate&) = delete;

  // `region_bytes`: the most one source puts into a slice of the receive region during the call
  // (Transport::EnterLaunchGate), the same on every rank.
  xcclResult_t Enter(xcclStream_t stream, size_t region_bytes = 0) {
    PlatformFailure failure;
    entered_ = true;
    if (comm_->transport()->EnterLaunchGate(stream, region_bytes, &failure) == xcclSuccess)
      return xcclSuccess;
    return comm_->RecordFailure(op_, failure);
  }
  // Waits until every rank sharing the device has enqueued the call.
  xcclResult_t Leave() {
    PlatformFailure failure;
    entered_ = false;
    if (comm_->transport()->LeaveLaunchGate(/*wait=*/true, &failure) == xcclSuccess)
      return xcclSuccess;
    return comm_->RecordFailure(op_, failure);
  }

 private:
  Communicator* comm_;
  const char* op_;
  bool entered_ = false;
};

}  // namespace xccl
