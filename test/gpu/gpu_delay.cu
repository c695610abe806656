// The delay kernel of gpu_delay.h, compiled as CUDA or HIP (the test suite's only kernel). It
// takes one thread of one SM: ranks sharing a GPU keep the rest for their collectives, which
// spin while they wait for the held rank.
#include "gpu/gpu_delay.h"
#include "platform/gpu.h"

namespace xccl_test {
namespace gpu {
namespace {

// The library's global nanosecond timer (GpuGlobalTimerNs): it runs at the same rate whatever
// the SM clock does, where a cycle count would stretch or shrink the hold with the boost state.
__global__ void DelayKernel(unsigned long long nanoseconds) {
  const unsigned long long start = GpuGlobalTimerNs();
  while (GpuGlobalTimerNs() - start < nanoseconds) {
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
