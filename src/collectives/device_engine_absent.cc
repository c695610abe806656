// The host build runs every collective on the host (collectives/all_gather/all_gather.cc,
// barrier.cc): it has no device engine and its shm windows size themselves.
#include "collectives/device_engine.h"

#if defined(XCCL_PLATFORM_HOST)

namespace xccl {

xcclResult_t PlanDeviceWindow(const Params& /*params*/, const Topology& /*topology*/,
                              SlotMap* /*slots*/, WindowGeometry* geometry) {
  *geometry = WindowGeometry{};
  return xcclSuccess;
}

xcclResult_t CreateDeviceEngine(const Params& /*params*/, const Topology& /*topology*/,
                                const WindowGeometry& /*geometry*/, const SlotMap& /*slots*/,
                                const Transport& /*transport*/,
                                std::unique_ptr<DeviceEngine>* out) {
  out->reset();
  return xcclSuccess;
}

}  // namespace xccl

#endif
