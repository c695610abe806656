// The GPU platforms' op buffers: device memory of the rank's device, pinned host staging, and
// copies on the caller's stream (cudaMemcpyDefault: the runtime tells device from host by
// address). Allocation and freeing happen at op create/destroy, never inside a call: cudaFree
// waits for the whole device (docs/ARCHITECTURE.md).
#include "base/error.h"
#include "platform/gpu.h"
#include "platform/gpu/device_bytes_now.h"
#include "platform/gpu/gpu_call.h"
#include "platform/runtime.h"

namespace xccl {

xcclResult_t AllocateOpBuffer(int device, size_t bytes, void** ptr) {
  XCCL_GPU_TRY(gpuSetDevice(device));
  void* memory = nullptr;
  XCCL_GPU_TRY(gpuMalloc(&memory, bytes == 0 ? 256 : bytes));
  // Zeroed before any peer can see it (and before the first call fills it).
  const xcclResult_t zeroed = ZeroDeviceNow(memory, bytes == 0 ? 256 : bytes);
  if (zeroed != xcclSuccess) {
    (void)gpuFree(memory);
    return zeroed;
  }
  *ptr = memory;
  return xcclSuccess;
}

void FreeOpBuffer(int device, void* ptr) {
  if (ptr == nullptr || gpuSetDevice(device) != gpuSuccess) return;
  (void)gpuFree(ptr);
}

bool FreeingWaitsForDevice() { return true; }

xcclResult_t AllocateStaging(size_t bytes, void** ptr) {
  XCCL_GPU_TRY(gpuMallocHost(ptr, bytes == 0 ? 256 : bytes));
  return xcclSuccess;
}

void FreeStaging(void* ptr) {
  if (ptr != nullptr) (void)gpuFreeHost(ptr);
}

xcclResult_t CopyAsync(void* dst, const void* src, size_t bytes, xcclStream_t stream) {
  if (bytes == 0 || dst == src) return xcclSuccess;
  XCCL_GPU_TRY(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDefault, static_cast<gpuStream_t>(stream)));
  return xcclSuccess;
}

xcclResult_t ZeroAsync(void* dst, size_t bytes, xcclStream_t stream) {
  if (bytes == 0) return xcclSuccess;
  XCCL_GPU_TRY(gpuMemsetAsync(dst, 0, bytes, static_cast<gpuStream_t>(stream)));
  return xcclSuccess;
}

xcclResult_t Copy2DAsync(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                         size_t width, size_t height, xcclStream_t stream) {
  if (width == 0 || height == 0) return xcclSuccess;
  XCCL_GPU_TRY(gpuMemcpy2DAsync(dst, dst_pitch, src, src_pitch, width, height, gpuMemcpyDefault,
                                static_cast<gpuStream_t>(stream)));
  return xcclSuccess;
}

xcclResult_t Zero2DAsync(void* dst, size_t pitch, size_t width, size_t height,
                         xcclStream_t stream) {
  if (width == 0 || height == 0) return xcclSuccess;
  XCCL_GPU_TRY(gpuMemset2DAsync(dst, pitch, 0, width, height, static_cast<gpuStream_t>(stream)));
  return xcclSuccess;
}

xcclResult_t SyncStream(xcclStream_t stream) {
  XCCL_GPU_TRY(gpuStreamSynchronize(static_cast<gpuStream_t>(stream)));
  return xcclSuccess;
}

}  // namespace xccl
