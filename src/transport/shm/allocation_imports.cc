// The host build maps no other process's memory: the shm transport copies into it
// (process_vm_writev) instead. GPU builds map through transport/p2p/allocation_imports.cc.
#include "transport/allocation_imports.h"

#if defined(XCCL_PLATFORM_HOST)

namespace xccl {

xcclResult_t ImportShareable(uint64_t, uint64_t, const ShareableExport&, int, void** base) {
  *base = nullptr;
  return xcclSuccess;
}

void ReleaseImported(uint64_t, uint64_t, int) {}

void CloseReleasedImports() {}

}  // namespace xccl

#endif
