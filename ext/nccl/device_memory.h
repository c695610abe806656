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
// A private non-blocking stream (nullptr on the host platform), for the shim's own collective
// work: never the legacy default stream, which ranks of one process sharing a GPU share, so that
// one rank's call waiting for its peers would hold theirs behind it until the deadline.
int CreateStream(void** stream, std::string* error);
int DestroyStream(void* stream, std::string* error);
// Copies enqueued on `stream` (done at once on the host platform), and the wait for them.
int ToDeviceAsync(void* dst, const void* src, size_t bytes, void* stream, std::string* error);
int ToHostAsync(void* dst, const void* src, size_t bytes, void* stream, std::string* error);
int Synchronize(void* stream, std::string* error);

}  // namespace device
}  // namespace xccl_shim
