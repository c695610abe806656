// A GPU runtime error met while enqueueing (a put, a trigger, a wait kernel), kept until the
// operation's flush reports it: enqueueing calls return nothing, so the first error waits here.
#pragma once

#include <string>

#include "base/failure.h"
#include "platform/gpu.h"

namespace xccl {

class KeptLaunchError {
 public:
  // Keeps the first error since the last Take; `what` names the launch.
  void Keep(gpuError_t err, const char* what) {
    if (err != gpuSuccess && first_.empty())
      first_ = std::string(what) + ": " + gpuGetErrorString(err);
  }
  // The kept error as `rank`'s failure (then forgotten), or xcclSuccess.
  xcclResult_t Take(int rank, PlatformFailure* failure) {
    if (first_.empty()) return xcclSuccess;
    const xcclResult_t result =
        SetFailure(failure, xcclUnhandledDeviceError, rank, "%s", first_.c_str());
    first_.clear();
    return result;
  }

 private:
  std::string first_;
};

}  // namespace xccl
