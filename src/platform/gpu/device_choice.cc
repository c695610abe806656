#include "base/error.h"
#include "platform/gpu.h"
#include "platform/gpu/gpu_call.h"
#include "platform/runtime.h"

namespace xccl {

const char* PlatformName() {
#if defined(XCCL_PLATFORM_HIP)
  return "hip";
#else
  return "cuda";
#endif
}

xcclResult_t DefaultDevice(int index, int* device) {
  if (index < 0) {
    XCCL_GPU_TRY(gpuGetDevice(device));
    return xcclSuccess;
  }
  int count = 0;
  XCCL_GPU_TRY(gpuGetDeviceCount(&count));
  if (count <= 0) return Fail(xcclUnhandledDeviceError, "no GPU is visible");
  *device = index % count;
  return xcclSuccess;
}

}  // namespace xccl
