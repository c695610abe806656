#include "platform/runtime.h"

namespace xccl {

const char* PlatformName() { return "host"; }

xcclResult_t DefaultDevice(int /*index*/, int* device) {
  *device = 0;
  return xcclSuccess;
}

}  // namespace xccl
