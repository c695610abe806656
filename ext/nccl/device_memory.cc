#include "device_memory.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#if defined(XCCL_SHIM_PLATFORM_CUDA)
#include <cuda_runtime.h>
#define XCCL_SHIM_GPU(name) cuda##name
using GpuError = cudaError_t;
#elif defined(XCCL_SHIM_PLATFORM_HIP)
#include <hip/hip_runtime.h>
#define XCCL_SHIM_GPU(name) hip##name
using GpuError = hipError_t;
#endif

namespace xccl_shim {
namespace device {

namespace {
constexpr int kUnhandledCudaError = 1;  // ncclUnhandledCudaError
constexpr int kSystemError = 2;         // ncclSystemError
}  // namespace

#if defined(XCCL_SHIM_PLATFORM_CUDA) || defined(XCCL_SHIM_PLATFORM_HIP)

namespace {
int Check(GpuError e, const char* what, std::string* error) {
  if (e == XCCL_SHIM_GPU(Success)) return 0;
  *error = std::string(what) + " failed: " + XCCL_SHIM_GPU(GetErrorString)(e);
  return kUnhandledCudaError;
}
}  // namespace

int Alloc(void** ptr, size_t bytes, std::string* error) {
  return Check(XCCL_SHIM_GPU(Malloc)(ptr, bytes), "device allocation", error);
}
int Free(void* ptr, std::string* error) {
  return Check(XCCL_SHIM_GPU(Free)(ptr), "device free", error);
}
using GpuStream = XCCL_SHIM_GPU(Stream_t);
int CreateStream(void** stream, std::string* error) {
  GpuStream created = nullptr;
  const int r =
      Check(XCCL_SHIM_GPU(StreamCreateWithFlags)(&created, XCCL_SHIM_GPU(StreamNonBlocking)),
            "stream creation", error);
  *stream = created;
  return r;
}
int DestroyStream(void* stream, std::string* error) {
  return Check(XCCL_SHIM_GPU(StreamDestroy)(static_cast<GpuStream>(stream)), "stream destroy",
               error);
}
int ToDeviceAsync(void* dst, const void* src, size_t bytes, void* stream, std::string* error) {
  return Check(XCCL_SHIM_GPU(MemcpyAsync)(dst, src, bytes, XCCL_SHIM_GPU(MemcpyHostToDevice),
                                          static_cast<GpuStream>(stream)),
               "copy to device", error);
}
int ToHostAsync(void* dst, const void* src, size_t bytes, void* stream, std::string* error) {
  return Check(XCCL_SHIM_GPU(MemcpyAsync)(dst, src, bytes, XCCL_SHIM_GPU(MemcpyDeviceToHost),
                                          static_cast<GpuStream>(stream)),
               "copy to host", error);
}
int Synchronize(void* stream, std::string* error) {
  return Check(XCCL_SHIM_GPU(StreamSynchronize)(static_cast<GpuStream>(stream)),
               "stream synchronize", error);
}

#else  // host platform

int Alloc(void** ptr, size_t bytes, std::string* error) {
  // Page-aligned like a GPU allocation, so registration-minded callers see the same shape. A
  // size within a page of SIZE_MAX would round to 0 (a 4 KiB block handed out as a huge one).
  if (bytes > SIZE_MAX - 4095) {
    *error = "cannot allocate " + std::to_string(bytes) + " bytes";
    return kSystemError;
  }
  size_t rounded = (bytes + 4095) / 4096 * 4096;
  *ptr = aligned_alloc(4096, rounded ? rounded : 4096);
  if (*ptr) return 0;
  *error = "out of host memory";
  return kSystemError;
}
int Free(void* ptr, std::string*) {
  free(ptr);
  return 0;
}
int CreateStream(void** stream, std::string*) {
  *stream = nullptr;
  return 0;
}
int DestroyStream(void*, std::string*) { return 0; }
int ToDeviceAsync(void* dst, const void* src, size_t bytes, void*, std::string*) {
  memcpy(dst, src, bytes);
  return 0;
}
int ToHostAsync(void* dst, const void* src, size_t bytes, void*, std::string*) {
  memcpy(dst, src, bytes);
  return 0;
}
int Synchronize(void*, std::string*) { return 0; }

#endif

}  // namespace device
}  // namespace xccl_shim
