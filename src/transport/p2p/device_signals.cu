#include "transport/p2p/device_signals.h"
#include "transport/p2p/device_wait.cuh"

namespace xccl {

namespace {

__global__ void AdvanceEpochKernel(uint32_t* epoch) { *epoch = *epoch + 1; }

__global__ void SignalEpochKernel(uint32_t* slot, const uint32_t* epoch) {
  GpuStoreReleaseSystem(slot, *epoch);
}

__global__ void WaitSlotsKernel(const uint32_t* slots, const uint32_t* remote_slots,
                                uint32_t remote_mask, uint32_t watch_mask, int first_slot,
                                int nranks, const uint32_t* epoch, uint64_t timeout_ns,
                                DeviceFailureRecord* record) {
  // One warp per watched slot: spin loops of several threads of one warp are left to the
  // scheduler's divergence handling, separate warps progress independently.
  if (threadIdx.x % kLanesPerSlot != 0) return;
  const int r = threadIdx.x / kLanesPerSlot;
  if (r >= nranks || ((watch_mask >> r) & 1u) == 0) return;
  const uint32_t* base = (remote_mask >> r) & 1u ? remote_slots : slots;
  WaitSlot(base + first_slot + r, *epoch, r, timeout_ns, record);
}

__global__ void WaitSlotKernel(const uint32_t* slot, int peer, const uint32_t* epoch,
                               uint64_t timeout_ns, DeviceFailureRecord* record) {
  WaitSlot(slot, *epoch, peer, timeout_ns, record);
}

}  // namespace

gpuError_t PreloadSignalKernels() {
  gpuFuncAttributes_t attributes;
  const void* kernels[] = {reinterpret_cast<const void*>(&AdvanceEpochKernel),
                           reinterpret_cast<const void*>(&WaitSlotsKernel),
                           reinterpret_cast<const void*>(&WaitSlotKernel),
                           reinterpret_cast<const void*>(&SignalEpochKernel)};
  for (const void* kernel : kernels) {
    const gpuError_t err = gpuFuncGetAttributes(&attributes, kernel);
    if (err != gpuSuccess) return err;
  }
  return gpuSuccess;
}

gpuError_t LaunchAdvanceEpoch(uint32_t* epoch, gpuStream_t stream) {
  AdvanceEpochKernel<<<1, 1, 0, stream>>>(epoch);
  return gpuGetLastError();
}

gpuError_t LaunchSignalEpoch(uint32_t* slot, const uint32_t* epoch, gpuStream_t stream) {
  SignalEpochKernel<<<1, 1, 0, stream>>>(slot, epoch);
  return gpuGetLastError();
}

gpuError_t LaunchWaitSlots(const uint32_t* slots, const uint32_t* remote_slots,
                           uint32_t remote_mask, uint32_t watch_mask, int first_slot, int nranks,
                           const uint32_t* epoch, uint64_t timeout_ns, DeviceFailureRecord* record,
                           gpuStream_t stream) {
  WaitSlotsKernel<<<1, kLanesPerSlot * nranks, 0, stream>>>(
      slots, remote_slots, remote_mask, watch_mask, first_slot, nranks, epoch, timeout_ns, record);
  return gpuGetLastError();
}

gpuError_t LaunchWaitSlot(const uint32_t* slot, int peer, const uint32_t* epoch,
                          uint64_t timeout_ns, DeviceFailureRecord* record, gpuStream_t stream) {
  WaitSlotKernel<<<1, 1, 0, stream>>>(slot, peer, epoch, timeout_ns, record);
  return gpuGetLastError();
}

}  // namespace xccl
