// Device side of the p2p transport's signals: the wrap-safe compare and the deadline-bounded
// wait for a slot, shared by the transport's wait kernels and the collectives' kernels. Included
// by .cu files only.
#pragma once

#include <cstdint>

#include "platform/gpu.h"
#include "transport/window.h"

namespace xccl {

__device__ inline bool Reached(uint32_t current, uint32_t target) {
  return static_cast<int32_t>(current - target) >= 0;
}

// The give-up test of every device wait, made every 1024 polls: true (after recording a
// timeout naming `peer`) once the wait has passed its deadline, or at once when the host set the
// abort flag or another wait of this rank already failed (so that the streams drain in
// microseconds).
__device__ inline bool GiveUp(unsigned long long start, int peer, uint64_t timeout_ns,
                              DeviceFailureRecord* record) {
  if (GpuLoadAcquireSystem(&record->abort) != 0 || GpuLoadAcquireSystem(&record->failure) != 0)
    return true;
  if (GpuGlobalTimerNs() - start <= timeout_ns) return false;
  // xcclTimeout (8) and the rank, in one word (DeviceFailureRecord); the first wait keeps it.
  atomicCAS(&record->failure, 0u, (static_cast<unsigned int>(peer + 1) << 8) | 8u);
  __threadfence_system();
  return true;
}

// One thread waits until *slot reaches `target` (wrap-safe). Returns false on the deadline,
// the host's abort flag, or a failure another wait of this rank recorded (GiveUp).
__device__ inline bool WaitSlot(const uint32_t* slot, uint32_t target, int peer,
                                uint64_t timeout_ns, DeviceFailureRecord* record) {
  if (Reached(GpuLoadAcquireSystem(slot), target)) return true;
  const unsigned long long start = GpuGlobalTimerNs();
  unsigned int polls = 0;
  while (!Reached(GpuLoadAcquireSystem(slot), target)) {
    if ((++polls & 1023u) == 0 && GiveUp(start, peer, timeout_ns, record)) return false;
  }
  return true;
}

}  // namespace xccl
