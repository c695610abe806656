// The GPU platforms' shareable memory: gpuMalloc'd device memory and its IPC handle.
#include "platform/shareable_memory.h"

#include <cstring>

#include "base/error.h"
#include "platform/gpu.h"
#include "platform/gpu/gpu_call.h"

namespace xccl {

namespace {

static_assert(sizeof(gpuIpcMemHandle_t) <= sizeof(ShareableExport::bytes), "the handle fits");

}  // namespace

xcclResult_t AllocateShareable(size_t bytes, void** ptr, int* device) {
  XCCL_GPU_TRY(gpuGetDevice(device));
  XCCL_GPU_TRY(gpuMalloc(ptr, bytes));
  return xcclSuccess;
}

void FreeShareable(int device, void* ptr) {
  if (ptr == nullptr || gpuSetDevice(device) != gpuSuccess) return;
  (void)gpuFree(ptr);
}

xcclResult_t ExportShareable(void* base, ShareableExport* out) {
  memset(out, 0, sizeof(*out));
  gpuIpcMemHandle_t handle;
  XCCL_GPU_TRY(gpuIpcGetMemHandle(&handle, base));
  memcpy(out->bytes, &handle, sizeof(handle));
  return xcclSuccess;
}

}  // namespace xccl
