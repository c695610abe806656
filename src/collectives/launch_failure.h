// A kernel launch's runtime error as an operation's failure (GPU builds: the device engines).
#pragma once

#include "base/failure.h"
#include "platform/gpu.h"

namespace xccl {

inline xcclResult_t LaunchFailure(gpuError_t err, int rank, const char* what,
                                  PlatformFailure* failure) {
  if (err == gpuSuccess) return xcclSuccess;
  return SetFailure(failure, xcclUnhandledDeviceError, rank, "%s: %s", what,
                    gpuGetErrorString(err));
}

}  // namespace xccl
