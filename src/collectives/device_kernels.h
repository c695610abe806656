// The small kernels of the GPU platform (the pipelined all_gather has its own file): they
// advance the epoch in device memory and wait for signals against it, so that a call captured in a
// graph stays correct on every replay (no epoch value is baked into launch arguments). Every wait
// has a deadline on the global timer; a wait that passes it, or sees the host's abort flag, records
// the failure in host-mapped memory and returns, so the stream drains instead of hanging.
#pragma once

#include <cstdint>

#include "platform/gpu.h"
#include "transport/window.h"

namespace xccl {

// Loads every kernel of the GPU platform into the current device's context. With lazy loading
// (CUDA's default since 12.2) a kernel's first launch loads its module, which waits for the
// device's running work and holds a process-wide lock meanwhile: a rank launching its first
// barrier while its all_gather kernel waits for a peer whose launch is stuck behind that lock
// deadlocks until the deadline (docs/ARCHITECTURE.md, "The GPU platform"). Called at init.
gpuError_t PreloadKernels();

// epoch += 1 (one thread).
gpuError_t LaunchAdvanceEpoch(uint32_t* epoch, gpuStream_t stream);

// Waits until slots[first_slot + r] reaches *epoch for every rank r != skip_rank.
gpuError_t LaunchWaitSlots(const uint32_t* slots, int first_slot, int nranks, int skip_rank,
                           const uint32_t* epoch, uint64_t timeout_ns, DeviceFailureRecord* record,
                           gpuStream_t stream);

// Waits until *slot reaches *epoch; `peer` is the rank that signals it (for a failure record).
gpuError_t LaunchWaitSlot(const uint32_t* slot, int peer, const uint32_t* epoch,
                          uint64_t timeout_ns, DeviceFailureRecord* record, gpuStream_t stream);

// Barrier step: with `advance_epoch`, first *epoch += 1 (this kernel is then the operation's
// only reader and writer of it); then stores *epoch into peers[r][signal_slot] for every peer r
// (release, system scope) and waits until own[wait_first_slot + r] reaches it for every peer.
gpuError_t LaunchBarrier(uint32_t* const* peers, int signal_slot, const uint32_t* own,
                         int wait_first_slot, int rank, int nranks, uint32_t* epoch,
                         bool advance_epoch, uint64_t timeout_ns, DeviceFailureRecord* record,
                         gpuStream_t stream);

// Threads per watched slot in the wait and barrier kernels: a whole warp (wavefront on AMD),
// so that spinning lanes never share one. Bounds the ranks a launch can watch (1024 threads).
#if defined(XCCL_PLATFORM_HIP)
constexpr int kLanesPerSlot = 64;
#else
constexpr int kLanesPerSlot = 32;
#endif
constexpr int kMaxWatchedRanks = 1024 / kLanesPerSlot;

}  // namespace xccl
