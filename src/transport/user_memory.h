// The process's xcclMemAlloc allocations: where each lies, its serial (never reused, so that a
// peer's cached mapping of a freed allocation cannot stand for a new one at the same address)
// and the windows that pin it (xcclMemFree refuses a pinned one).
#pragma once

#include <cstddef>
#include <cstdint>

#include "xccl.h"

namespace xccl {

struct UserAllocation {
  char* base = nullptr;
  size_t bytes = 0;
  uint64_t serial = 0;
  int device = 0;
};

xcclResult_t AllocateUserMemory(size_t bytes, void** ptr);
// xcclInvalidArgument for a pointer xcclMemAlloc did not return, xcclInvalidUsage while pinned.
xcclResult_t FreeUserMemory(void* ptr);
// The allocation holding [ptr, ptr + bytes), pinned (PinUserAllocation) when `pin`; false if none.
bool FindUserAllocation(const void* ptr, size_t bytes, bool pin, UserAllocation* out);
void UnpinUserAllocation(uint64_t serial);

}  // namespace xccl
