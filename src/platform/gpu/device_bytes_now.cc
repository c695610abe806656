#include "platform/gpu/device_bytes_now.h"

#include "base/error.h"
#include "platform/gpu.h"

namespace xccl {

namespace {

// Runs `enqueue` on a private non-blocking stream of the current device and waits for that
// stream alone: never for the whole device, where a peer's kernel may be waiting for this rank.
// `what` names the copy or fill in an error.
template <typename Enqueue>
xcclResult_t OnPrivateStreamAndWait(const char* what, Enqueue enqueue) {
  gpuStream_t stream = nullptr;
  gpuError_t err = gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking);
  if (err != gpuSuccess)
    return Fail(xcclUnhandledDeviceError, "%s: creating a stream failed: %s", what,
                gpuGetErrorString(err));
  const char* step = "enqueueing it";
  err = enqueue(stream);
  if (err == gpuSuccess) {
    step = "waiting for it";
    err = gpuStreamSynchronize(stream);
  }
  const gpuError_t destroyed = gpuStreamDestroy(stream);
  if (err == gpuSuccess && destroyed != gpuSuccess) {
    step = "destroying its stream";
    err = destroyed;
  }
  if (err != gpuSuccess)
    return Fail(xcclUnhandledDeviceError, "%s: %s failed: %s", what, step, gpuGetErrorString(err));
  return xcclSuccess;
}

}  // namespace

xcclResult_t CopyToDeviceNow(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return xcclSuccess;
  return OnPrivateStreamAndWait("copying set-up bytes to the device", [&](gpuStream_t stream) {
    return gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDefault, stream);
  });
}

xcclResult_t ZeroDeviceNow(void* dst, size_t bytes) {
  if (bytes == 0) return xcclSuccess;
  return OnPrivateStreamAndWait("zeroing device memory", [&](gpuStream_t stream) {
    return gpuMemsetAsync(dst, 0, bytes, stream);
  });
}

}  // namespace xccl
