// The host platform's shareable memory: page-aligned heap memory.
#include "platform/shareable_memory.h"

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/error.h"

namespace xccl {

xcclResult_t AllocateShareable(size_t bytes, void** ptr, int* device) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  // Rounded up to whole pages (aligned_alloc's rule), which must not wrap near SIZE_MAX.
  void* memory = bytes > SIZE_MAX - page
                     ? nullptr
                     : std::aligned_alloc(page, (bytes + page - 1) / page * page);
  if (memory == nullptr) return Fail(xcclSystemError, "out of host memory for %zu bytes", bytes);
  *ptr = memory;
  *device = 0;
  return xcclSuccess;
}

void FreeShareable(int, void* ptr) { std::free(ptr); }

xcclResult_t ExportShareable(void*, ShareableExport* out) {
  memset(out, 0, sizeof(*out));
  return xcclSuccess;
}

}  // namespace xccl
