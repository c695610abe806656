// Turns a failed GPU runtime call into xcclUnhandledDeviceError with the call and the runtime's
// message, recorded for xcclGetLastError.
#pragma once

#include "base/error.h"
#include "platform/gpu.h"

#define XCCL_GPU_TRY(call)                                                          \
  do {                                                                              \
    gpuError_t xccl_gpu_err_ = (call);                                              \
    if (xccl_gpu_err_ != gpuSuccess) {                                              \
      return ::xccl::Fail(xcclUnhandledDeviceError, "%s failed: %s (%s:%d)", #call, \
                          gpuGetErrorString(xccl_gpu_err_), __FILE__, __LINE__);    \
    }                                                                               \
  } while (0)
