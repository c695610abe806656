// The host platform's op buffers: plain memory (256-byte aligned, like device allocations, so
// the layouts' alignment assumptions hold everywhere) and immediate copies.
#include <cstdlib>
#include <cstring>

#include "base/error.h"
#include "platform/runtime.h"

namespace xccl {

xcclResult_t AllocateOpBuffer(int /*device*/, size_t bytes, void** ptr) {
  const size_t rounded = (bytes + 255) / 256 * 256;
  void* memory = aligned_alloc(256, rounded == 0 ? 256 : rounded);
  if (memory == nullptr)
    return Fail(xcclSystemError, "cannot allocate %zu bytes of host memory", bytes);
  memset(memory, 0, rounded == 0 ? 256 : rounded);
  *ptr = memory;
  return xcclSuccess;
}

void FreeOpBuffer(int /*device*/, void* ptr) { free(ptr); }

bool FreeingWaitsForDevice() { return false; }

xcclResult_t AllocateStaging(size_t bytes, void** ptr) { return AllocateOpBuffer(0, bytes, ptr); }

void FreeStaging(void* ptr) { free(ptr); }

xcclResult_t CopyAsync(void* dst, const void* src, size_t bytes, xcclStream_t /*stream*/) {
  if (bytes > 0 && dst != src) memmove(dst, src, bytes);
  return xcclSuccess;
}

xcclResult_t ZeroAsync(void* dst, size_t bytes, xcclStream_t /*stream*/) {
  if (bytes > 0) memset(dst, 0, bytes);
  return xcclSuccess;
}

xcclResult_t Copy2DAsync(void* dst, size_t dst_pitch, const void* src, size_t src_pitch,
                         size_t width, size_t height, xcclStream_t /*stream*/) {
  for (size_t row = 0; row < height; ++row)
    memmove(static_cast<char*>(dst) + row * dst_pitch,
            static_cast<const char*>(src) + row * src_pitch, width);
  return xcclSuccess;
}

xcclResult_t Zero2DAsync(void* dst, size_t pitch, size_t width, size_t height,
                         xcclStream_t /*stream*/) {
  for (size_t row = 0; row < height; ++row) memset(static_cast<char*>(dst) + row * pitch, 0, width);
  return xcclSuccess;
}

xcclResult_t SyncStream(xcclStream_t /*stream*/) { return xcclSuccess; }

}  // namespace xccl
