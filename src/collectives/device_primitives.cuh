// Device-side building blocks shared by the GPU platform's kernels: the wrap-safe compare, the
// deadline-bounded wait for a signal, and the block-wide copy. Included by .cu files only.
#pragma once

#include <cstdint>

#include "platform/gpu.h"
#include "collectives/device_kernels.h"

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

// A 16-byte load that bypasses L1: data written by another GPU (or another rank's kernel)
// into this device's memory must not be served from a stale L1 line of an earlier round.
__device__ inline int4 LoadBypassL1(const int4* p) {
#if defined(XCCL_PLATFORM_HIP)
  return *p;  // AMD's L1 is invalidated by the acquire that precedes every such read
#else
  return __ldcg(p);
#endif
}

// dst <- src by the threads [thread, thread + stride) of a block or grid: 16-byte accesses
// where both pointers allow, four loads in flight per thread before their stores, bytes for
// the rest. `kFreshSource`: the source was written by another agent since this SM last read it.
template <bool kFreshSource>
__device__ inline void CopyBytes(char* dst, const char* src, size_t bytes, size_t thread,
                                 size_t stride) {
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0) {
    const size_t vectors = bytes / 16;
    const int4* in = reinterpret_cast<const int4*>(src);
    int4* out = reinterpret_cast<int4*>(dst);
    size_t i = thread;
    for (; i + 3 * stride < vectors; i += 4 * stride) {
      int4 a, b, c, d;
      if (kFreshSource) {
        a = LoadBypassL1(in + i);
        b = LoadBypassL1(in + i + stride);
        c = LoadBypassL1(in + i + 2 * stride);
        d = LoadBypassL1(in + i + 3 * stride);
      } else {
        a = in[i];
        b = in[i + stride];
        c = in[i + 2 * stride];
        d = in[i + 3 * stride];
      }
      out[i] = a;
      out[i + stride] = b;
      out[i + 2 * stride] = c;
      out[i + 3 * stride] = d;
    }
    for (; i < vectors; i += stride) out[i] = kFreshSource ? LoadBypassL1(in + i) : in[i];
    done = vectors * 16;
  }
  for (size_t i = done + thread; i < bytes; i += stride) {
    dst[i] = kFreshSource ? *static_cast<const volatile char*>(src + i) : src[i];
  }
}

}  // namespace xccl
