#include "collectives/all_gather/ll_all_gather.h"
#include "transport/p2p/device_copy.cuh"

namespace xccl {

namespace {

constexpr int kThreads = 256;

// Data word `i` of a block of `bytes` (little-endian, zero past the end): a 4-byte load where the
// word is whole and aligned, bytes otherwise (a block may start and end anywhere).
__device__ inline uint32_t ReadWord(const char* block, size_t bytes, size_t i) {
  const size_t at = i * 4;
  if (at + 4 <= bytes && (reinterpret_cast<uintptr_t>(block + at) & 3) == 0)
    return *reinterpret_cast<const uint32_t*>(block + at);
  uint32_t word = 0;
  for (size_t k = 0; k < 4 && at + k < bytes; ++k)
    word |= static_cast<uint32_t>(static_cast<unsigned char>(block[at + k])) << (8 * k);
  return word;
}

__device__ inline void WriteWord(char* block, size_t bytes, size_t i, uint32_t word) {
  const size_t at = i * 4;
  if (at + 4 <= bytes && (reinterpret_cast<uintptr_t>(block + at) & 3) == 0) {
    *reinterpret_cast<uint32_t*>(block + at) = word;
    return;
  }
  for (size_t k = 0; k < 4 && at + k < bytes; ++k)
    block[at + k] = static_cast<char>((word >> (8 * k)) & 0xFFu);
}

// One thread waits until the line carries `flag`; false on the deadline or an abort (GiveUp).
__device__ inline bool WaitLine(const unsigned long long* line, uint32_t flag, int peer,
                                uint64_t timeout_ns, DeviceFailureRecord* record,
                                unsigned long long* value) {
  *value = GpuLoadRelaxedSystem64(line);
  if (static_cast<uint32_t>(*value >> 32) == flag) return true;
  const unsigned long long start = GpuGlobalTimerNs();
  unsigned int polls = 0;
  for (;;) {
    *value = GpuLoadRelaxedSystem64(line);
    if (static_cast<uint32_t>(*value >> 32) == flag) return true;
    if ((++polls & 1023u) == 0 && GiveUp(start, peer, timeout_ns, record)) return false;
  }
}

__global__ void __launch_bounds__(kThreads) LlAllGatherKernel(LlAllGatherArgs a) {
  const int b = blockIdx.x;
  uint32_t* counter = a.counters + b;  // only this block uses it
  __shared__ uint32_t shared_flag;
  if (threadIdx.x == 0) shared_flag = *counter + 1;
  __syncthreads();
  const uint32_t flag = shared_flag;
  const uint32_t parity = (flag - 1) & 1u;
  const size_t words = (a.bytes + 3) / 4;
  if (a.nranks > 1) {
    const int peer = (a.rank + 1 + b) % a.nranks;
    const int src = (a.rank - 1 - b + 2 * a.nranks) % a.nranks;
    auto* to_peer = reinterpret_cast<unsigned long long*>(a.region_at_peer[peer] +
                                                          LlLayout::BufferOffset(a.rank, parity));
    const unsigned long long tag = static_cast<unsigned long long>(flag) << 32;
    for (size_t i = threadIdx.x; i < words; i += blockDim.x)
      GpuStoreRelaxedSystem64(to_peer + i, tag | ReadWord(a.send, a.bytes, i));
    const auto* from_src = reinterpret_cast<const unsigned long long*>(
        a.own_region + LlLayout::BufferOffset(src, parity));
    char* out = a.recv + static_cast<size_t>(src) * a.bytes;
    for (size_t i = threadIdx.x; i < words; i += blockDim.x) {
      unsigned long long line = 0;
      if (!WaitLine(from_src + i, flag, src, a.timeout_ns, a.record, &line)) break;
      WriteWord(out, a.bytes, i, static_cast<uint32_t>(line));
    }
  }
  char* own = a.recv + static_cast<size_t>(a.rank) * a.bytes;
  if (b == 0 && own != a.send) CopyBytes<false>(own, a.send, a.bytes, threadIdx.x, blockDim.x);
  __syncthreads();  // every thread has read `flag` before the counter moves on
  if (threadIdx.x == 0) *counter = flag;
}

}  // namespace

gpuError_t PreloadLlAllGather() {
  gpuFuncAttributes_t attributes;
  return gpuFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&LlAllGatherKernel));
}

gpuError_t LaunchLlAllGather(const LlAllGatherArgs& args, gpuStream_t stream) {
  const unsigned blocks = static_cast<unsigned>(args.nranks > 1 ? args.nranks - 1 : 1);
  LlAllGatherKernel<<<blocks, kThreads, 0, stream>>>(args);
  return gpuGetLastError();
}

}  // namespace xccl
