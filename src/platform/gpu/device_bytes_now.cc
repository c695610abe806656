#include "platform/gpu/device_bytes_now.h"

#include "platform/gpu.h"
#include "platform/gpu/gpu_call.h"

namespace xccl {

namespace {

// Runs `enqueue` on a private non-blocking stream of the current device and waits for that
// stream alone: never for the whole device, where a peer's kernel may be waiting for this rank.
template <typename Enqueue>
xcclResult_t OnPrivateStreamAndWait(Enqueue enqueue) {
  gpuStream_t stream = nullptr;
  XCCL_GPU_TRY(gpuStreamCreateWithFlags(&stream, gpuStreamNonBlocking));
  gpuError_t err = enqueue(stream);
  if (err == gpuSuccess) err = gpuStreamSynchronize(stream);
  const gpuError_t destroyed = gpuStreamDestroy(stream);
  if (err == gpuSuccess) err = destroyed;
  XCCL_GPU_TRY(err);
  return xcclSuccess;
}

}  // namespace

xcclResult_t CopyToDeviceNow(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return xcclSuccess;
  return OnPrivateStreamAndWait([&](gpuStream_t stream) {
    return gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDefault, stream);
  });
}

xcclResult_t ZeroDeviceNow(void* dst, size_t bytes) {
  if (bytes == 0) return xcclSuccess;
  return OnPrivateStreamAndWait(
      [&](gpuStream_t stream) { return gpuMemsetAsync(dst, 0, bytes, stream); });
}

}  // namespace xccl
