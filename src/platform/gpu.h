// The one place that maps GPU runtime names between CUDA and HIP, in the manner of MSCCL++'s
// gpu.hpp: xccl's GPU code is written once against the gpu* names below.
#pragma once

#include "base/host_device.h"

#if defined(XCCL_PLATFORM_HIP)
// Built against ROCm 5.2 (Debian's packages) and meant for later ROCm as well, so only names
// present from 5.2 on: pinned host memory is hipHostMalloc/hipHostFree with hipHostMallocMapped
// (hipHostAlloc was deprecated for much of 5.x/6.x). hipError_t is [[nodiscard]] in HIP: calls
// whose result is deliberately dropped are cast to void. Should a name differ between ROCm
// releases, guard it here by HIP_VERSION (hip/hip_version.h).
#include <hip/hip_runtime.h>

using gpuError_t = hipError_t;
using gpuStream_t = hipStream_t;
using gpuEvent_t = hipEvent_t;
using gpuIpcMemHandle_t = hipIpcMemHandle_t;
using gpuGraph_t = hipGraph_t;
using gpuGraphExec_t = hipGraphExec_t;
using gpuDeviceProp_t = hipDeviceProp_t;
using gpuFuncAttributes_t = hipFuncAttributes;
constexpr gpuError_t gpuSuccess = hipSuccess;
constexpr gpuError_t gpuErrorPeerAccessAlreadyEnabled = hipErrorPeerAccessAlreadyEnabled;
constexpr gpuError_t gpuErrorNotReady = hipErrorNotReady;
constexpr gpuError_t gpuErrorInvalidValue = hipErrorInvalidValue;
#define gpuMemcpyDeviceToDevice hipMemcpyDeviceToDevice
// The DMA queues' copies: SDMA engines only (no compute units) where the ROCm has the kind
// (HIP 6.2 and later); plain device-to-device copies (which HIP may run on a blit kernel) before.
#if defined(HIP_VERSION) && HIP_VERSION >= 60200000
#define gpuMemcpyQueueKind hipMemcpyDeviceToDeviceNoCU
#else
#define gpuMemcpyQueueKind hipMemcpyDeviceToDevice
#endif
#define gpuMemcpyDefault hipMemcpyDefault
using gpuMemcpyKind = hipMemcpyKind;
#define gpuStreamNonBlocking hipStreamNonBlocking
#define gpuEventDisableTiming hipEventDisableTiming
#define gpuIpcMemLazyEnablePeerAccess hipIpcMemLazyEnablePeerAccess
#define gpuHostAllocMapped hipHostMallocMapped
#define gpuGetErrorString hipGetErrorString
#define gpuGetLastError hipGetLastError
#define gpuGetDevice hipGetDevice
#define gpuSetDevice hipSetDevice
#define gpuGetDeviceCount hipGetDeviceCount
#define gpuMalloc hipMalloc
#define gpuFree hipFree
#define gpuHostAlloc hipHostMalloc
#define gpuFreeHost hipHostFree
#define gpuHostGetDevicePointer hipHostGetDevicePointer
#define gpuMemcpy hipMemcpy
#define gpuMemcpyAsync hipMemcpyAsync
#define gpuMemsetAsync hipMemsetAsync
#define gpuMemcpy2DAsync hipMemcpy2DAsync
#define gpuMemset2DAsync hipMemset2DAsync
#define gpuMemGetInfo hipMemGetInfo
#define gpuMemset hipMemset
#define gpuStreamCreateWithFlags hipStreamCreateWithFlags
#define gpuStreamCreateWithPriority hipStreamCreateWithPriority
#define gpuDeviceGetStreamPriorityRange hipDeviceGetStreamPriorityRange
#define gpuStreamDestroy hipStreamDestroy
#define gpuStreamSynchronize hipStreamSynchronize
#define gpuStreamWaitEvent hipStreamWaitEvent
#define gpuEventCreateWithFlags hipEventCreateWithFlags
#define gpuEventRecord hipEventRecord
#define gpuEventDestroy hipEventDestroy
#define gpuIpcGetMemHandle hipIpcGetMemHandle
#define gpuIpcOpenMemHandle hipIpcOpenMemHandle
#define gpuIpcCloseMemHandle hipIpcCloseMemHandle
#define gpuDeviceCanAccessPeer hipDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess hipDeviceEnablePeerAccess
#define gpuDeviceSynchronize hipDeviceSynchronize
#define gpuMemcpyHostToDevice hipMemcpyHostToDevice
#define gpuMemcpyDeviceToHost hipMemcpyDeviceToHost
#define gpuStreamCaptureModeThreadLocal hipStreamCaptureModeThreadLocal
#define gpuStreamCaptureModeRelaxed hipStreamCaptureModeRelaxed
#define gpuThreadExchangeStreamCaptureMode hipThreadExchangeStreamCaptureMode
using gpuStreamCaptureMode = hipStreamCaptureMode;
#define gpuGetErrorName hipGetErrorName
#define gpuGetDeviceProperties hipGetDeviceProperties
#define gpuFuncGetAttributes hipFuncGetAttributes
#define gpuPointerGetAttributes hipPointerGetAttributes
using gpuPointerAttributes_t = hipPointerAttribute_t;
#define gpuEventCreate hipEventCreate
#define gpuEventSynchronize hipEventSynchronize
#define gpuEventElapsedTime hipEventElapsedTime
#define gpuStreamBeginCapture hipStreamBeginCapture
#define gpuStreamEndCapture hipStreamEndCapture
#define gpuGraphInstantiateWithFlags hipGraphInstantiateWithFlags
#define gpuGraphLaunch hipGraphLaunch
#define gpuGraphDestroy hipGraphDestroy
#define gpuGraphExecDestroy hipGraphExecDestroy
inline gpuError_t gpuMallocHost(void** ptr, size_t bytes) { return hipHostMalloc(ptr, bytes, 0); }
inline gpuError_t gpuMultiprocessorCount(int device, int* count) {
  return hipDeviceGetAttribute(count, hipDeviceAttributeMultiprocessorCount, device);
}
// Whether a stream is capturing.
using gpuStreamCaptureStatus = hipStreamCaptureStatus;
constexpr gpuStreamCaptureStatus gpuStreamCaptureStatusNone = hipStreamCaptureStatusNone;
#define gpuStreamIsCapturing hipStreamIsCapturing
// hipGraphUpload arrived in ROCm 6; before it, the first launch uploads.
inline gpuError_t gpuGraphUpload(gpuGraphExec_t exec, gpuStream_t stream) {
#if HIP_VERSION >= 60000000
  return hipGraphUpload(exec, stream);
#else
  (void)exec;
  (void)stream;
  return hipSuccess;
#endif
}

#else  // CUDA
#include <cuda_runtime.h>

using gpuError_t = cudaError_t;
using gpuStream_t = cudaStream_t;
using gpuEvent_t = cudaEvent_t;
using gpuIpcMemHandle_t = cudaIpcMemHandle_t;
using gpuGraph_t = cudaGraph_t;
using gpuGraphExec_t = cudaGraphExec_t;
using gpuDeviceProp_t = cudaDeviceProp;
using gpuFuncAttributes_t = cudaFuncAttributes;
constexpr gpuError_t gpuSuccess = cudaSuccess;
constexpr gpuError_t gpuErrorPeerAccessAlreadyEnabled = cudaErrorPeerAccessAlreadyEnabled;
constexpr gpuError_t gpuErrorNotReady = cudaErrorNotReady;
constexpr gpuError_t gpuErrorInvalidValue = cudaErrorInvalidValue;
#define gpuMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define gpuMemcpyQueueKind cudaMemcpyDeviceToDevice  // copy engines for device-to-device
#define gpuMemcpyDefault cudaMemcpyDefault
using gpuMemcpyKind = cudaMemcpyKind;
#define gpuStreamNonBlocking cudaStreamNonBlocking
#define gpuEventDisableTiming cudaEventDisableTiming
#define gpuIpcMemLazyEnablePeerAccess cudaIpcMemLazyEnablePeerAccess
#define gpuHostAllocMapped cudaHostAllocMapped
#define gpuGetErrorString cudaGetErrorString
#define gpuGetLastError cudaGetLastError
#define gpuGetDevice cudaGetDevice
#define gpuSetDevice cudaSetDevice
#define gpuGetDeviceCount cudaGetDeviceCount
#define gpuMalloc cudaMalloc
#define gpuFree cudaFree
#define gpuHostAlloc cudaHostAlloc
#define gpuFreeHost cudaFreeHost
#define gpuHostGetDevicePointer cudaHostGetDevicePointer
#define gpuMemcpy cudaMemcpy
#define gpuMemcpyAsync cudaMemcpyAsync
#define gpuMemsetAsync cudaMemsetAsync
#define gpuMemcpy2DAsync cudaMemcpy2DAsync
#define gpuMemset2DAsync cudaMemset2DAsync
#define gpuMemGetInfo cudaMemGetInfo
#define gpuMemset cudaMemset
#define gpuStreamCreateWithFlags cudaStreamCreateWithFlags
#define gpuStreamCreateWithPriority cudaStreamCreateWithPriority
#define gpuDeviceGetStreamPriorityRange cudaDeviceGetStreamPriorityRange
#define gpuStreamDestroy cudaStreamDestroy
#define gpuStreamSynchronize cudaStreamSynchronize
#define gpuStreamWaitEvent cudaStreamWaitEvent
#define gpuEventCreateWithFlags cudaEventCreateWithFlags
#define gpuEventRecord cudaEventRecord
#define gpuEventDestroy cudaEventDestroy
#define gpuIpcGetMemHandle cudaIpcGetMemHandle
#define gpuIpcOpenMemHandle cudaIpcOpenMemHandle
#define gpuIpcCloseMemHandle cudaIpcCloseMemHandle
#define gpuDeviceCanAccessPeer cudaDeviceCanAccessPeer
#define gpuDeviceEnablePeerAccess cudaDeviceEnablePeerAccess
#define gpuDeviceSynchronize cudaDeviceSynchronize
#define gpuMemcpyHostToDevice cudaMemcpyHostToDevice
#define gpuMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define gpuStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define gpuStreamCaptureModeRelaxed cudaStreamCaptureModeRelaxed
#define gpuThreadExchangeStreamCaptureMode cudaThreadExchangeStreamCaptureMode
using gpuStreamCaptureMode = cudaStreamCaptureMode;
#define gpuGetErrorName cudaGetErrorName
#define gpuGetDeviceProperties cudaGetDeviceProperties
#define gpuFuncGetAttributes cudaFuncGetAttributes
#define gpuPointerGetAttributes cudaPointerGetAttributes
using gpuPointerAttributes_t = cudaPointerAttributes;
#define gpuEventCreate cudaEventCreate
#define gpuEventSynchronize cudaEventSynchronize
#define gpuEventElapsedTime cudaEventElapsedTime
#define gpuStreamBeginCapture cudaStreamBeginCapture
#define gpuStreamEndCapture cudaStreamEndCapture
#define gpuGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define gpuGraphLaunch cudaGraphLaunch
#define gpuGraphDestroy cudaGraphDestroy
#define gpuGraphExecDestroy cudaGraphExecDestroy
#define gpuGraphUpload cudaGraphUpload
inline gpuError_t gpuMallocHost(void** ptr, size_t bytes) { return cudaMallocHost(ptr, bytes); }
inline gpuError_t gpuMultiprocessorCount(int device, int* count) {
  return cudaDeviceGetAttribute(count, cudaDevAttrMultiProcessorCount, device);
}
// Whether a stream is capturing.
using gpuStreamCaptureStatus = cudaStreamCaptureStatus;
constexpr gpuStreamCaptureStatus gpuStreamCaptureStatusNone = cudaStreamCaptureStatusNone;
#define gpuStreamIsCapturing cudaStreamIsCapturing
#endif

// Device side: system-scope acquire load and release store of a 32-bit signal, and the global
// nanosecond timer that deadlines are measured on.
#if defined(__CUDACC__) || defined(__HIPCC__)
__device__ inline unsigned int GpuLoadAcquireSystem(const unsigned int* address) {
#if defined(XCCL_PLATFORM_HIP)
  return __hip_atomic_load(address, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  unsigned int value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(address) : "memory");
  return value;
#endif
}

__device__ inline void GpuStoreReleaseSystem(unsigned int* address, unsigned int value) {
#if defined(XCCL_PLATFORM_HIP)
  __hip_atomic_store(address, value, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  asm volatile("st.release.sys.global.u32 [%0], %1;" ::"l"(address), "r"(value) : "memory");
#endif
}

// Device-scope acquire load and release store: signals between the blocks of one kernel, which
// stay in the L2 instead of reaching the system's coherence point.
__device__ inline unsigned int GpuLoadAcquireDevice(const unsigned int* address) {
#if defined(XCCL_PLATFORM_HIP)
  return __hip_atomic_load(address, __ATOMIC_ACQUIRE, __HIP_MEMORY_SCOPE_AGENT);
#else
  unsigned int value;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(address) : "memory");
  return value;
#endif
}

__device__ inline void GpuStoreReleaseDevice(unsigned int* address, unsigned int value) {
#if defined(XCCL_PLATFORM_HIP)
  __hip_atomic_store(address, value, __ATOMIC_RELEASE, __HIP_MEMORY_SCOPE_AGENT);
#else
  asm volatile("st.release.gpu.global.u32 [%0], %1;" ::"l"(address), "r"(value) : "memory");
#endif
}

// Relaxed, system-scope 64-bit load and store: single-copy atomic for an aligned word, so a
// reader sees either the old 8 bytes or the new ones, never a mix (flag-in-line protocols rely on
// it).
__device__ inline unsigned long long GpuLoadRelaxedSystem64(const unsigned long long* address) {
#if defined(XCCL_PLATFORM_HIP)
  return __hip_atomic_load(address, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  unsigned long long value;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(value) : "l"(address) : "memory");
  return value;
#endif
}

__device__ inline void GpuStoreRelaxedSystem64(unsigned long long* address,
                                               unsigned long long value) {
#if defined(XCCL_PLATFORM_HIP)
  __hip_atomic_store(address, value, __ATOMIC_RELAXED, __HIP_MEMORY_SCOPE_SYSTEM);
#else
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(address), "l"(value) : "memory");
#endif
}

__device__ inline unsigned long long GpuGlobalTimerNs() {
#if defined(XCCL_PLATFORM_HIP)
#if defined(__HIP_DEVICE_COMPILE__)
  // s_memrealtime counts at 100 MHz on gfx9 parts.
  return wall_clock64() * 10ull;
#else
  return 0;
#endif
#else
  unsigned long long ns;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
  return ns;
#endif
}
#endif
