// Another process's xcclMemAlloc allocation mapped into this one. GPU (transport/p2p): its IPC
// handle opened once per (exporting process, allocation serial, device) and counted, because a
// handle opens once per process and device (a second open fails "already mapped"), so windows
// and the zero-copy map service share one map. Host (transport/shm): nothing is mapped, *base
// is nullptr (the shm transport copies into other processes instead).
#pragma once

#include <cstdint>

#include "platform/shareable_memory.h"
#include "xccl.h"

namespace xccl {

// The same base for every import of one key until each is released.
xcclResult_t ImportShareable(uint64_t process_token, uint64_t serial, const ShareableExport& from,
                             int device, void** base);

// Drops one import of a key; the last one's map is closed by the next CloseReleasedImports, not
// here: closing waits for every kernel of this process's device, and a release may come from the
// import service while one of them waits for the very peer that asked (docs/ARCHITECTURE.md,
// "Zero-copy all_gather").
void ReleaseImported(uint64_t process_token, uint64_t serial, int device);

// Closes the maps released so far. Only from a thread that may wait for this process's kernels
// (xcclMemAlloc, xcclMemFree, window deregistration), never from the import service.
void CloseReleasedImports();

}  // namespace xccl
