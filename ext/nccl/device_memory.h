// Device memory for the shim: the GPU runtime on cuda/hip builds, the heap on the host
// platform (where xccl's "device memory" is host memory). This header and its source stay
// free of nccl_abi.h, whose cudaStream_t would clash with the GPU runtime's own.
#pragma once

#include <cstddef>
#include <string>

namespace xccl_shim {
namespace device {

// Each returns 0, or an ncclResult_t value (ncclUnhandledCudaError, ncclSystemError) with
// *error saying what failed.
int Alloc(void** ptr, size_t bytes, std::string* error);
int Free(void* ptr, std::string* error);
// Synchronous copies (they wait for the legacy default stream, where xccl ran).
int ToDevice(void* dst, const void* src, size_t bytes, std::string* error);
int ToHost(void* dst, const void* src, size_t bytes, std::string* error);

}  // namespace device
}  // namespace xccl_shim
