// The GPU platforms' shareable memory: gpuMalloc'd device memory and its IPC handle.
#include "platform/shareable_memory.h"

#include <cstdint>
#include <cstring>

#include "base/error.h"
#include "platform/gpu.h"
#include "platform/gpu/gpu_call.h"

namespace xccl {

namespace {

static_assert(sizeof(gpuIpcMemHandle_t) <= sizeof(ShareableExport::bytes), "the handle fits");

// gpuMalloc may carve small allocations out of one larger block, and an IPC handle maps the whole
// block at its start: a peer would see the wrong bytes, and a second handle of the same block
// fails to open ("already mapped"). Whole 2 MiB blocks are never shared (CUDA programming guide,
// Interprocess Communication).
constexpr size_t kIpcGranularity = size_t{2} << 20;

}  // namespace

xcclResult_t AllocateShareable(size_t bytes, void** ptr, int* device) {
  XCCL_GPU_TRY(gpuGetDevice(device));
  if (bytes > SIZE_MAX - kIpcGranularity)
    return Fail(xcclInvalidArgument, "xcclMemAlloc: %zu bytes is more than any device holds",
                bytes);
  XCCL_GPU_TRY(gpuMalloc(ptr, (bytes + kIpcGranularity - 1) / kIpcGranularity * kIpcGranularity));
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
