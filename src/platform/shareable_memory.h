// Memory other processes of this node can map (xcclMemAlloc) and its export: GPU platforms,
// device memory and its IPC handle; host, page-aligned heap memory (no export; other processes
// reach it through the shm transport's copies). Mapping an export lives in the transport
// (transport/allocation_imports.h).
#pragma once

#include <cstddef>

#include "xccl.h"

namespace xccl {

// An allocation's export, as peers receive it over the bootstrap.
struct ShareableExport {
  unsigned char bytes[64];  // GPU: the IPC handle; host: unused
};

// `bytes` (> 0) on the calling thread's current device; *device says which (host: 0).
xcclResult_t AllocateShareable(size_t bytes, void** ptr, int* device);
void FreeShareable(int device, void* ptr);
// The export of the allocation that starts at `base`.
xcclResult_t ExportShareable(void* base, ShareableExport* out);

}  // namespace xccl
