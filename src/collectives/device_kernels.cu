#include "collectives/device_kernels.h"
#include "collectives/device_primitives.cuh"
#include "collectives/ll_all_gather.h"

namespace xccl {

namespace {

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

__global__ void WaitSlotKernel(const uint32_t* slot, int peer, const uint32_t* epoch,
                               uint64_t timeout_ns, DeviceFailureRecord* record) {
  WaitSlot(slot, *epoch, peer, timeout_ns, record);
}

__global__ void BarrierKernel(uint32_t* const* peers, int signal_slot, const uint32_t* own,
                              int wait_first_slot, int rank, int nranks, uint32_t* epoch,
                              bool advance_epoch, uint64_t timeout_ns,
                              DeviceFailureRecord* record) {
  __shared__ uint32_t target;
  if (threadIdx.x == 0) {
    target = *epoch + (advance_epoch ? 1u : 0u);
    if (advance_epoch) *epoch = target;
  }
  __syncthreads();
  if (threadIdx.x % kLanesPerSlot != 0) return;
  const int r = threadIdx.x / kLanesPerSlot;
  if (r >= nranks || r == rank) return;
  GpuStoreReleaseSystem(peers[r] + signal_slot, target);
  WaitSlot(own + wait_first_slot + r, target, r, timeout_ns, record);
}

}  // namespace

gpuError_t PreloadPipelinedAllGather();  // pipelined_all_gather.cu

gpuError_t PreloadKernels() {
  gpuFuncAttributes_t attributes;
  const void* kernels[] = {reinterpret_cast<const void*>(&AdvanceEpochKernel),
                           reinterpret_cast<const void*>(&WaitSlotsKernel),
                           reinterpret_cast<const void*>(&WaitSlotKernel),
                           reinterpret_cast<const void*>(&BarrierKernel)};
  for (const void* kernel : kernels) {
    gpuError_t err = gpuFuncGetAttributes(&attributes, kernel);
    if (err != gpuSuccess) return err;
  }
  gpuError_t err = PreloadPipelinedAllGather();
  return err != gpuSuccess ? err : PreloadLlAllGather();
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

gpuError_t LaunchWaitSlot(const uint32_t* slot, int peer, const uint32_t* epoch,
                          uint64_t timeout_ns, DeviceFailureRecord* record, gpuStream_t stream) {
  WaitSlotKernel<<<1, 1, 0, stream>>>(slot, peer, epoch, timeout_ns, record);
  return gpuGetLastError();
}

gpuError_t LaunchBarrier(uint32_t* const* peers, int signal_slot, const uint32_t* own,
                         int wait_first_slot, int rank, int nranks, uint32_t* epoch,
                         bool advance_epoch, uint64_t timeout_ns, DeviceFailureRecord* record,
                         gpuStream_t stream) {
  BarrierKernel<<<1, kLanesPerSlot * nranks, 0, stream>>>(peers, signal_slot, own, wait_first_slot,
                                                          rank, nranks, epoch, advance_epoch,
                                                          timeout_ns, record);
  return gpuGetLastError();
}

}  // namespace xccl
