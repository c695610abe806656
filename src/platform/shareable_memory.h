// Memory that peers of this node can map (xcclMemAlloc) and the mapping of a peer process's
// allocation into this one. GPU platforms: device memory exported by IPC handle, and imports
// cached per (exporting process, allocation serial, device) with a reference count, because a
// handle opens once per process and device (a second open fails "already mapped"). Host: page-
// aligned heap memory, which other processes reach only through the shm transport's copies, so
// an import gives nullptr.
#pragma once

#include <cstddef>
#include <cstdint>

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
// The allocation `serial` of process `process_token`, mapped on `device` (the caller's); the
// same base for every import of one key until each is released. *base nullptr where the platform
// maps no other process's memory (host).
xcclResult_t ImportShareable(uint64_t process_token, uint64_t serial, const ShareableExport& from,
                             int device, void** base);
void ReleaseImported(uint64_t process_token, uint64_t serial, int device);

}  // namespace xccl
