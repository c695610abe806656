// A stream-ordered copy by a kernel instead of the copy engines, for ranks that share one GPU:
// their copy-engine copies meet in the device's few copy channels, where a copy queued behind a
// waiting kernel of one rank holds up a copy that kernel waits for from another rank
// (docs/ARCHITECTURE.md, "GPU ranks across nodes"). Device or host-mapped pinned memory.
#pragma once

#include <cstddef>

#include "platform/gpu.h"

namespace xccl {

// Loads the kernel into the current device's context (lazy loading, see PreloadSignalKernels).
gpuError_t PreloadCopyKernel();

gpuError_t LaunchCopyKernel(void* dst, const void* src, size_t bytes, gpuStream_t stream);

}  // namespace xccl
