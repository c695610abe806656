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
    if (GpuLoadAcquireSystem(&record->abort) != 0) return false;
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

__global__ void AdvanceEpochKernel(uint32_t* epoch) { *epoch = *epoch + 1; }

__global__ void WaitSlotsKernel(const uint32_t* slots, int first_slot, int nranks, int skip_rank,
                                const uint32_t* epoch, uint64_t timeout_ns,
                                DeviceFailureRecord* record) {
  const int r = threadIdx.x;
  if (r >= nranks || r == skip_rank) return;
  WaitSlot(slots + first_slot + r, *epoch, r, timeout_ns, record);
}

__global__ void BarrierKernel(uint32_t* const* peers, int signal_slot, const uint32_t* own,
                              int wait_first_slot, int rank, int nranks, const uint32_t* epoch,
                              uint64_t timeout_ns, DeviceFailureRecord* record) {
  const int r = threadIdx.x;
  if (r >= nranks || r == rank) return;
  const uint32_t target = *epoch;
  GpuStoreReleaseSystem(peers[r] + signal_slot, target);
  WaitSlot(own + wait_first_slot + r, target, r, timeout_ns, record);
}

}  // namespace

gpuError_t LaunchAdvanceEpoch(uint32_t* epoch, gpuStream_t stream) {
  AdvanceEpochKernel<<<1, 1, 0, stream>>>(epoch);
  return gpuGetLastError();
}

gpuError_t LaunchWaitSlots(const uint32_t* slots, int first_slot, int nranks, int skip_rank,
                           const uint32_t* epoch, uint64_t timeout_ns,
                           DeviceFailureRecord* record, gpuStream_t stream) {
  WaitSlotsKernel<<<1, nranks, 0, stream>>>(slots, first_slot, nranks, skip_rank, epoch,
                                            timeout_ns, record);
  return gpuGetLastError();
}

gpuError_t LaunchBarrier(uint32_t* const* peers, int signal_slot, const uint32_t* own,
                         int wait_first_slot, int rank, int nranks, const uint32_t* epoch,
                         uint64_t timeout_ns, DeviceFailureRecord* record, gpuStream_t stream) {
  BarrierKernel<<<1, nranks, 0, stream>>>(peers, signal_slot, own, wait_first_slot, rank, nranks,
                                          epoch, timeout_ns, record);
  return gpuGetLastError();
}

}  // namespace xccl
