// The barrier (docs/ARCHITECTURE.md, "barrier") as one kernel over a p2p transport's window: each
// rank stores its epoch into every peer's slot for it and waits until its own slots from every peer
// reach it. Also the closing step of queued operations (collectives/queued_operation.h).
#pragma once

#include <cstdint>

#include "platform/gpu.h"
#include "transport/device_view.h"

namespace xccl {

gpuError_t PreloadBarrierKernel();

// With `advance_epoch`, first *device_epoch += 1 (this kernel is then the operation's only
// reader and writer of it); then *device_epoch into peer_slots[r][first_slot + rank] for every
// peer r (release, system scope) and a wait until own_slots[first_slot + r] reaches it
// (`first_slot`: the barrier's slots, barrier_slots.h).
gpuError_t LaunchBarrier(const DeviceView& view, int first_slot, bool advance_epoch,
                         gpuStream_t stream);

}  // namespace xccl
