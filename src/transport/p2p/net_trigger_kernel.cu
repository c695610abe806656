#include "transport/p2p/device_wait.cuh"
#include "transport/p2p/net_trigger_ring.h"

namespace xccl {

namespace {

__global__ void NetTriggerKernel(NetTriggerRing ring, uint32_t kind, int peer, int slot,
                                 uint32_t bytes, uint32_t counted, const uint32_t* epoch,
                                 uint64_t timeout_ns, DeviceFailureRecord* record) {
  // Streams of several calls of this rank may trigger at once: positions are claimed.
  const uint32_t position = atomicAdd(ring.claimed, 1u);
  const unsigned long long start = GpuGlobalTimerNs();
  unsigned int polls = 0;
  while (position - GpuLoadAcquireSystem(ring.consumed) >= NetTriggerRing::kEntries) {
    if ((++polls & 1023u) == 0 && GiveUp(start, peer, timeout_ns, record)) return;
  }
  NetTriggerEntry* entry = ring.entries + position % NetTriggerRing::kEntries;
  entry->kind = kind;
  entry->peer = peer;
  entry->slot = slot;
  entry->epoch = *epoch;
  entry->bytes = bytes;
  entry->counted = counted;
  GpuStoreReleaseSystem(&entry->seq, position + 1);
}

}  // namespace

gpuError_t PreloadNetTriggerKernel() {
  gpuFuncAttributes_t attributes;
  return gpuFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&NetTriggerKernel));
}

gpuError_t LaunchNetTrigger(const NetTriggerRing& ring, uint32_t kind, int peer, int slot,
                            uint32_t bytes, bool counted, const uint32_t* epoch,
                            uint64_t timeout_ns, DeviceFailureRecord* record, gpuStream_t stream) {
  NetTriggerKernel<<<1, 1, 0, stream>>>(ring, kind, peer, slot, bytes, counted ? 1u : 0u, epoch,
                                        timeout_ns, record);
  return gpuGetLastError();
}

}  // namespace xccl
