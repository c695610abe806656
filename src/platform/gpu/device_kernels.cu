#include <algorithm>

#include "platform/gpu/device_kernels.h"

namespace xccl {

namespace {

__device__ inline bool Reached(uint32_t current, uint32_t target) {
  return static_cast<int32_t>(current - target) >= 0;
}

// One thread waits for one slot. Returns false (after recording why) on deadline or abort.
__device__ bool WaitSlot(const uint32_t* slot, uint32_t target, int peer, uint64_t timeout_ns,
                         DeviceFailureRecord* record) {
  const unsigned long long start = GpuGlobalTimerNs();
  unsigned int polls = 0;
  while (!Reached(GpuLoadAcquireSystem(slot), target)) {
    if ((++polls & 1023u) != 0) continue;
    // Give up at once when the host aborted or another wait of this rank already failed: later
    // operations must drain in microseconds, not one deadline each.
    if (GpuLoadAcquireSystem(&record->abort) != 0 || GpuLoadAcquireSystem(&record->code) != 0)
      return false;
    if (GpuGlobalTimerNs() - start > timeout_ns) {
      if (atomicCAS(&record->code, 0u, 8u /* xcclTimeout */) == 0u) {
        atomicExch(reinterpret_cast<unsigned int*>(&record->peer), static_cast<unsigned int>(peer));
      }
      __threadfence_system();
      return false;
    }
  }
  return true;
}

// Grid-stride copy by the threads [thread, thread + stride) of a grid.
__device__ void CopyBytes(char* dst, const char* src, size_t bytes, size_t thread, size_t stride) {
  size_t done = 0;
  if (((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15) == 0) {
    const size_t vectors = bytes / 16;
    const int4* in = reinterpret_cast<const int4*>(src);
    int4* out = reinterpret_cast<int4*>(dst);
    for (size_t i = thread; i < vectors; i += stride) out[i] = in[i];
    done = vectors * 16;
  }
  for (size_t i = done + thread; i < bytes; i += stride) dst[i] = src[i];
}

__global__ void CopyKernel(char* dst, const char* src, size_t bytes) {
  CopyBytes(dst, src, bytes, blockIdx.x * blockDim.x + threadIdx.x, gridDim.x * blockDim.x);
}

__global__ void PutAllKernel(const char* src, size_t bytes, char* const* dsts,
                             uint32_t* const* flags, int nranks, int rank, const uint32_t* epoch,
                             uint32_t* done_counter) {
  const size_t thread = blockIdx.x * blockDim.x + threadIdx.x;
  const size_t stride = gridDim.x * blockDim.x;
  for (int step = 1; step < nranks; ++step) {
    CopyBytes(dsts[(rank + step) % nranks], src, bytes, thread, stride);
  }
  __syncthreads();
  if (threadIdx.x != 0) return;
  __threadfence_system();  // this block's stores before its count
  const uint32_t finished = atomicAdd(done_counter, 1u) + 1u;
  if (finished % gridDim.x != 0) return;
  __threadfence_system();  // every block's stores before the flags
  const uint32_t value = *epoch;
  for (int step = 1; step < nranks; ++step) {
    GpuStoreReleaseSystem(flags[(rank + step) % nranks], value);
  }
}

__global__ void AdvanceEpochKernel(uint32_t* epoch) { *epoch = *epoch + 1; }

__global__ void WaitSlotsKernel(const uint32_t* slots, int first_slot, int nranks, int skip_rank,
                                const uint32_t* epoch, uint64_t timeout_ns,
                                DeviceFailureRecord* record) {
  // One warp per watched slot: spin loops of several threads of one warp are left to the
  // scheduler's divergence handling, separate warps progress independently.
  if (threadIdx.x % kLanesPerSlot != 0) return;
  const int r = threadIdx.x / kLanesPerSlot;
  if (r >= nranks || r == skip_rank) return;
  WaitSlot(slots + first_slot + r, *epoch, r, timeout_ns, record);
}

__global__ void BarrierKernel(uint32_t* const* peers, int signal_slot, const uint32_t* own,
                              int wait_first_slot, int rank, int nranks, const uint32_t* epoch,
                              uint64_t timeout_ns, DeviceFailureRecord* record) {
  if (threadIdx.x % kLanesPerSlot != 0) return;
  const int r = threadIdx.x / kLanesPerSlot;
  if (r >= nranks || r == rank) return;
  const uint32_t target = *epoch;
  GpuStoreReleaseSystem(peers[r] + signal_slot, target);
  WaitSlot(own + wait_first_slot + r, target, r, timeout_ns, record);
}

}  // namespace

gpuError_t LaunchPutAll(const void* src, size_t bytes, char* const* dsts, uint32_t* const* flags,
                        int nranks, int rank, const uint32_t* epoch, uint32_t* done_counter,
                        gpuStream_t stream) {
  PutAllKernel<<<kPutBlocks, 512, 0, stream>>>(static_cast<const char*>(src), bytes, dsts, flags,
                                               nranks, rank, epoch, done_counter);
  return gpuGetLastError();
}

gpuError_t LaunchCopy(void* dst, const void* src, size_t bytes, gpuStream_t stream) {
  if (bytes == 0) return gpuSuccess;
  const size_t per_block = 512 * 16 * 4;
  const unsigned blocks =
      static_cast<unsigned>(std::min<size_t>(264, (bytes + per_block - 1) / per_block));
  CopyKernel<<<blocks, 512, 0, stream>>>(static_cast<char*>(dst), static_cast<const char*>(src),
                                         bytes);
  return gpuGetLastError();
}

gpuError_t LaunchAdvanceEpoch(uint32_t* epoch, gpuStream_t stream) {
  AdvanceEpochKernel<<<1, 1, 0, stream>>>(epoch);
  return gpuGetLastError();
}

gpuError_t LaunchWaitSlots(const uint32_t* slots, int first_slot, int nranks, int skip_rank,
                           const uint32_t* epoch, uint64_t timeout_ns, DeviceFailureRecord* record,
                           gpuStream_t stream) {
  WaitSlotsKernel<<<1, kLanesPerSlot * nranks, 0, stream>>>(slots, first_slot, nranks, skip_rank,
                                                            epoch, timeout_ns, record);
  return gpuGetLastError();
}

gpuError_t LaunchBarrier(uint32_t* const* peers, int signal_slot, const uint32_t* own,
                         int wait_first_slot, int rank, int nranks, const uint32_t* epoch,
                         uint64_t timeout_ns, DeviceFailureRecord* record, gpuStream_t stream) {
  BarrierKernel<<<1, kLanesPerSlot * nranks, 0, stream>>>(peers, signal_slot, own, wait_first_slot,
                                                          rank, nranks, epoch, timeout_ns, record);
  return gpuGetLastError();
}

}  // namespace xccl
