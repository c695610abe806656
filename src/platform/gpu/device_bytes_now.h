// Device memory set from the host and finished on return. cudaMemcpy from pageable memory and
// cudaMemset of device memory both return before the device has written the bytes (CUDA's
// "API synchronization behavior"), and they run on the legacy default stream, which does not
// order the non-blocking streams xccl and its callers use, so a window zeroed that way can be
// zeroed after the first call has filled it (docs/perf-history.md, fifth round). Set-up code
// uses these instead.
#pragma once

#include <cstddef>

#include "xccl.h"

namespace xccl {

// Copies bytes from host (or device) memory to device memory; done when it returns.
xcclResult_t CopyToDeviceNow(void* dst, const void* src, size_t bytes);

// Zeroes bytes of device memory; done when it returns.
xcclResult_t ZeroDeviceNow(void* dst, size_t bytes);

}  // namespace xccl
