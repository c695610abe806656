// A rank "held" on the device: a kernel that keeps its stream busy for a while, so that the
// rank's next xccl call starts late on the GPU although the host enqueued it at once and no
// host synchronisation happens. This is the hold that only the library's device-side ordering
// (epochs, flags, counters, waits in kernels) can absorb; a host sleep before the enqueue (the
// all_gather suite's hold) leaves the stream idle instead.
#pragma once

#include <cstdint>

#include "gpu/gpu_runtime.h"

namespace xccl_test {
namespace gpu {

// Enqueues on `stream` one single-thread kernel that spins for `nanoseconds` of the device's
// global timer (0: returns at once; a warm-up launch). Returns the launch's error.
Error LaunchDelay(StreamHandle stream, uint64_t nanoseconds);

}  // namespace gpu
}  // namespace xccl_test
