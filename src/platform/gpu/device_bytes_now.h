// Device memory set from the host and finished on return. cudaMemcpy from pageable memory and
// cudaMemset of device memory both return before the device has written the bytes (CUDA's
// "API synchronization behavior"), and they run on the legacy default stream, which does not
// order the non-blocking streams xccl and its callers use. A window zeroed that way was seen
// zeroed after the first call had filled it (4 processes sharing one H200, 2026-11-30): a
// rank's whole slot read back as zeros. Set-up code uses these instead.
#pragma once

#include <cstddef>

#include "xccl.h"

namespace xccl {

// Copies bytes from host (or device) memory to device memory; done when it returns.
xcclResult_t CopyToDeviceNow(void* dst, const void* src, size_t bytes);

// Zeroes bytes of device memory; done when it returns.
xcclResult_t ZeroDeviceNow(void* dst, size_t bytes);

}  // namespace xccl
