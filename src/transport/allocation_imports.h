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
void ReleaseImported(uint64_t process_token, uint64_t serial, int device);

}  // namespace xccl
