// The GPU runtime as the tests see it: every vendor name the suite uses, in one place, so that
// a HIP port is this file's other branch and nothing else. The tests deliberately do not use
// the library's own mapping (src/platform/gpu.h): they check the library from the outside.
#pragma once

#include <cstddef>

#if defined(XCCL_PLATFORM_HIP)
#include <hip/hip_runtime_api.h>
#define XCCL_TEST_GPU(name) hip##name
#else
#include <cuda_runtime_api.h>
#define XCCL_TEST_GPU(name) cuda##name
#endif

namespace xccl_test {
namespace gpu {

using Error = XCCL_TEST_GPU(Error_t);
using StreamHandle = XCCL_TEST_GPU(Stream_t);
using GraphHandle = XCCL_TEST_GPU(Graph_t);
using GraphExecHandle = XCCL_TEST_GPU(GraphExec_t);
constexpr Error kSuccess = XCCL_TEST_GPU(Success);

inline const char* ErrorString(Error error) { return XCCL_TEST_GPU(GetErrorString)(error); }
inline Error GetLastError() { return XCCL_TEST_GPU(GetLastError)(); }
inline Error GetDeviceCount(int* count) { return XCCL_TEST_GPU(GetDeviceCount)(count); }
inline Error SetDevice(int device) { return XCCL_TEST_GPU(SetDevice)(device); }
inline Error GetDevice(int* device) { return XCCL_TEST_GPU(GetDevice)(device); }
inline Error MemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  return XCCL_TEST_GPU(MemGetInfo)(free_bytes, total_bytes);
}

inline Error Malloc(void** ptr, size_t bytes) { return XCCL_TEST_GPU(Malloc)(ptr, bytes); }
inline Error Free(void* ptr) { return XCCL_TEST_GPU(Free)(ptr); }
#if defined(XCCL_PLATFORM_HIP)
inline Error MallocHost(void** ptr, size_t bytes) { return hipHostMalloc(ptr, bytes, 0); }
#else
inline Error MallocHost(void** ptr, size_t bytes) { return cudaMallocHost(ptr, bytes); }
#endif

// Copies and fills are always stream-ordered: the legacy default stream is never used, so no
// implicit synchronisation hides an ordering bug in the library.
inline Error MemcpyAsync(void* dst, const void* src, size_t bytes, StreamHandle stream) {
  return XCCL_TEST_GPU(MemcpyAsync)(dst, src, bytes, XCCL_TEST_GPU(MemcpyDefault), stream);
}
inline Error MemsetAsync(void* dst, int value, size_t bytes, StreamHandle stream) {
  return XCCL_TEST_GPU(MemsetAsync)(dst, value, bytes, stream);
}

// The legacy default stream, which the suite's own work never uses: only a test that checks the
// library leaves nothing queued there (set-up that returns before the device has done it) busies
// it on purpose.
#if defined(XCCL_PLATFORM_HIP)
inline StreamHandle LegacyStream() { return nullptr; }
#else
inline StreamHandle LegacyStream() { return cudaStreamLegacy; }
#endif

inline Error StreamCreateNonBlocking(StreamHandle* stream) {
  return XCCL_TEST_GPU(StreamCreateWithFlags)(stream, XCCL_TEST_GPU(StreamNonBlocking));
}
inline Error StreamDestroy(StreamHandle stream) { return XCCL_TEST_GPU(StreamDestroy)(stream); }
inline Error StreamSynchronize(StreamHandle stream) {
  return XCCL_TEST_GPU(StreamSynchronize)(stream);
}
inline Error DeviceSynchronize() { return XCCL_TEST_GPU(DeviceSynchronize)(); }
// A synchronous copy from pageable memory (staged by the runtime).
inline Error CopyPageableToDevice(void* dst, const void* src, size_t bytes) {
  return XCCL_TEST_GPU(Memcpy)(dst, src, bytes, XCCL_TEST_GPU(MemcpyHostToDevice));
}

// Thread-local capture: each rank's thread captures its own stream while the other ranks'
// threads capture theirs, and a stray unsafe call from another thread does not break it.
inline Error StreamBeginCaptureThreadLocal(StreamHandle stream) {
  return XCCL_TEST_GPU(StreamBeginCapture)(stream, XCCL_TEST_GPU(StreamCaptureModeThreadLocal));
}
inline Error StreamEndCapture(StreamHandle stream, GraphHandle* graph) {
  return XCCL_TEST_GPU(StreamEndCapture)(stream, graph);
}
inline Error GraphInstantiate(GraphExecHandle* exec, GraphHandle graph) {
  return XCCL_TEST_GPU(GraphInstantiateWithFlags)(exec, graph, 0);
}
inline Error GraphLaunch(GraphExecHandle exec, StreamHandle stream) {
  return XCCL_TEST_GPU(GraphLaunch)(exec, stream);
}
inline Error GraphExecDestroy(GraphExecHandle exec) {
  return XCCL_TEST_GPU(GraphExecDestroy)(exec);
}
inline Error GraphDestroy(GraphHandle graph) { return XCCL_TEST_GPU(GraphDestroy)(graph); }

}  // namespace gpu
}  // namespace xccl_test

#undef XCCL_TEST_GPU
