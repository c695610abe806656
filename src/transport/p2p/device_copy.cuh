// The device-side copy of the collectives' kernels and of the transport's copy kernel: by the
// threads of a block or grid, 16 bytes at a time where the pointers allow. Included by .cu
// files only.
#pragma once

#include <cstdint>

#include "platform/gpu.h"
#include "transport/p2p/device_wait.cuh"

namespace xccl {

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
