// The GPU platforms' side stream: a non-blocking stream of the op's device (of the device's
// greatest priority where asked) and two events without timing (cheapest to record and wait on).
// Created at op create and destroyed with the op, never inside a call: stream and event creation
// may synchronise with the device.
#include "platform/side_stream.h"

#include "base/error.h"
#include "platform/gpu.h"
#include "platform/gpu/gpu_call.h"

namespace xccl {

xcclResult_t CreateSideStream(int device, SideStream* side, StreamPriority priority) {
  *side = SideStream();
  XCCL_GPU_TRY(gpuSetDevice(device));
  gpuStream_t stream = nullptr;
  gpuEvent_t fork = nullptr, join = nullptr;
  const char* failed = "stream creation";
  gpuError_t err = gpuSuccess;
  if (priority == StreamPriority::kHighest) {
    int least = 0, greatest = 0;
    err = gpuDeviceGetStreamPriorityRange(&least, &greatest);
    if (err == gpuSuccess)
      err = gpuStreamCreateWithPriority(&stream, gpuStreamNonBlocking, greatest);
  } else {
    err = gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking);
  }
  if (err == gpuSuccess) {
    failed = "event creation";
    err = gpuEventCreateWithFlags(&fork, gpuEventDisableTiming);
  }
  if (err == gpuSuccess) err = gpuEventCreateWithFlags(&join, gpuEventDisableTiming);
  side->stream = stream;
  side->fork = fork;
  side->join = join;
  if (err != gpuSuccess) {
    DestroySideStream(device, side);
    return Fail(xcclUnhandledDeviceError, "side stream on device %d: %s failed: %s", device, failed,
                gpuGetErrorString(err));
  }
  return xcclSuccess;
}

void DestroySideStream(int device, SideStream* side) {
  if (side->stream == nullptr && side->fork == nullptr && side->join == nullptr) return;
  if (gpuSetDevice(device) == gpuSuccess) {
    if (side->stream != nullptr) {
      (void)gpuStreamSynchronize(static_cast<gpuStream_t>(side->stream));
      (void)gpuStreamDestroy(static_cast<gpuStream_t>(side->stream));
    }
    if (side->fork != nullptr) (void)gpuEventDestroy(static_cast<gpuEvent_t>(side->fork));
    if (side->join != nullptr) (void)gpuEventDestroy(static_cast<gpuEvent_t>(side->join));
  }
  *side = SideStream();
}

xcclResult_t ForkSideStream(const SideStream& side, xcclStream_t from) {
  XCCL_GPU_TRY(gpuEventRecord(static_cast<gpuEvent_t>(side.fork), static_cast<gpuStream_t>(from)));
  XCCL_GPU_TRY(gpuStreamWaitEvent(static_cast<gpuStream_t>(side.stream),
                                  static_cast<gpuEvent_t>(side.fork), 0));
  return xcclSuccess;
}

xcclResult_t JoinSideStream(const SideStream& side, xcclStream_t into) {
  XCCL_GPU_TRY(
      gpuEventRecord(static_cast<gpuEvent_t>(side.join), static_cast<gpuStream_t>(side.stream)));
  XCCL_GPU_TRY(
      gpuStreamWaitEvent(static_cast<gpuStream_t>(into), static_cast<gpuEvent_t>(side.join), 0));
  return xcclSuccess;
}

}  // namespace xccl
