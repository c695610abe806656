#include "collectives/barrier/barrier_kernel.h"
#include "transport/p2p/device_signals.h"
#include "transport/p2p/device_wait.cuh"

namespace xccl {

namespace {

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
  // One warp per peer, as in the transport's multi-slot wait.
  if (threadIdx.x % kLanesPerSlot != 0) return;
  const int r = threadIdx.x / kLanesPerSlot;
  if (r >= nranks || r == rank) return;
  GpuStoreReleaseSystem(peers[r] + signal_slot, target);
  WaitSlot(own + wait_first_slot + r, target, r, timeout_ns, record);
}

}  // namespace

gpuError_t PreloadBarrierKernel() {
  gpuFuncAttributes_t attributes;
  return gpuFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&BarrierKernel));
}

gpuError_t LaunchBarrier(const DeviceView& view, int first_slot, bool advance_epoch,
                         gpuStream_t stream) {
  const int rank = view.rank, nranks = view.nranks;
  BarrierKernel<<<1, kLanesPerSlot * nranks, 0, stream>>>(
      view.peer_slots, first_slot + rank, view.own_slots, first_slot, rank, nranks,
      view.device_epoch, advance_epoch, view.timeout_ns, view.record);
  return gpuGetLastError();
}

}  // namespace xccl
