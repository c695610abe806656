// The p2p transport's signal kernels: they advance the epoch in device memory and wait for slots
// against it, so that a call captured in a graph stays correct on every replay (no epoch value is
// baked into launch arguments). Every wait has a deadline on the global timer; a wait that passes
// it, or sees the host's abort flag, records the failure in host-mapped memory and returns, so the
// stream drains instead of hanging.
#pragma once

#include <cstdint>

#include "platform/gpu.h"
#include "transport/window.h"

namespace xccl {

// Loads these kernels into the current device's context at init. With lazy loading (CUDA's
// default since 12.2) a kernel's first launch loads its module, which waits for the device's
// running work and holds a process-wide lock meanwhile: a rank launching its first wait while a
// peer's kernel waits for this rank deadlocks until the deadline (docs/ARCHITECTURE.md).
gpuError_t PreloadSignalKernels();

// epoch += 1 (one thread).
gpuError_t LaunchAdvanceEpoch(uint32_t* epoch, gpuStream_t stream);

// *slot = *epoch in one 32-bit release store (a peer's signal where copies are kernels: a byte
// copy could show a waiter a torn value).
gpuError_t LaunchSignalEpoch(uint32_t* slot, const uint32_t* epoch, gpuStream_t stream);

// Waits until base[first_slot + r] reaches *epoch for every rank r of `watch_mask` (bit r),
// where base is `remote_slots` for the ranks of `remote_mask` (bit r: rank r is on another node,
// its proxy raises host-mapped slots) and `slots` for the others.
gpuError_t LaunchWaitSlots(const uint32_t* slots, const uint32_t* remote_slots,
                           uint32_t remote_mask, uint32_t watch_mask, int first_slot, int nranks,
                           const uint32_t* epoch, uint64_t timeout_ns, DeviceFailureRecord* record,
                           gpuStream_t stream);

// Waits until *slot reaches *epoch; `peer` is the rank that signals it (for a failure record).
gpuError_t LaunchWaitSlot(const uint32_t* slot, int peer, const uint32_t* epoch,
                          uint64_t timeout_ns, DeviceFailureRecord* record, gpuStream_t stream);

// Threads per watched slot in the multi-slot waits: a whole warp (wavefront on AMD), so that
// spinning lanes never share one. Bounds the ranks a launch can watch (1024 threads).
#if defined(XCCL_PLATFORM_HIP)
constexpr int kLanesPerSlot = 64;
#else
constexpr int kLanesPerSlot = 32;
#endif
constexpr int kMaxWatchedRanks = 1024 / kLanesPerSlot;
static_assert(kMaxWatchedRanks <= 32, "LaunchWaitSlots' remote_mask holds a bit per rank");

}  // namespace xccl
