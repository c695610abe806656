// The delay kernel of gpu_delay.h, compiled as CUDA or HIP (the test suite's only kernel). It
// takes one thread of one SM: ranks sharing a GPU keep the rest for their collectives, which
// spin while they wait for the held rank.
#if defined(XCCL_PLATFORM_HIP)
#include <hip/hip_runtime.h>
#else
#include <cuda_runtime.h>
#endif

#include "gpu/gpu_delay.h"

namespace xccl_test {
namespace gpu {
namespace {

// Nanoseconds of a clock that runs at the same rate whatever the SM clock does (a cycle count
// would stretch or shrink the hold with the GPU's boost state).
__device__ unsigned long long NowNs() {
#if defined(XCCL_PLATFORM_HIP)
#if defined(__HIP_DEVICE_COMPILE__)
  return wall_clock64() * 10ull;  // s_memrealtime: 100 MHz on gfx9 parts
#else
  return 0;
#endif
#else
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
#endif
}

__global__ void DelayKernel(unsigned long long nanoseconds) {
  const unsigned long long start = NowNs();
  while (NowNs() - start < nanoseconds) {
#if !defined(XCCL_PLATFORM_HIP)
    __nanosleep(1000);  // let the SM's other warps (peers' kernels) issue meanwhile
#endif
  }
}

}  // namespace

Error LaunchDelay(StreamHandle stream, uint64_t nanoseconds) {
  DelayKernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(nanoseconds));
  return GetLastError();
}

}  // namespace gpu
}  // namespace xccl_test
