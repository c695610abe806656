// The collectives' device engines (GPU builds, device_engine.cu): one per collective that runs
// kernels, each in its op's folder, made together at init. The host build has none
// (device_engine_absent.cc): PlanDeviceWindow carves nothing and CreateDeviceEngine gives nullptr,
// so the algorithms take their portable paths.
#pragma once

#include <memory>

#include "base/params.h"
#include "base/topology.h"
#include "collectives/all_gather/all_gather_engine.h"
#include "collectives/barrier/barrier_engine.h"
#include "collectives/reduce/node_reduce_engine.h"
#include "collectives/reduce/read_reduce_engine.h"
#include "transport/slot_map.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

// One line per collective with a device engine (docs/ARCHITECTURE.md, "Adding a collective").
struct DeviceEngine {
  std::unique_ptr<AllGatherEngine> all_gather;
  std::unique_ptr<BarrierEngine> barrier;
  std::unique_ptr<ReadReduceEngine> read_reduce;  // reduce_scatter's and all_reduce's
  std::unique_ptr<NodeReduceEngine> node_reduce;  // the same across nodes; null on one node
};

// Before the slot map is laid: what the device engines carve of a window for the communicator's
// ranks, their counters among the control slots (asked for in `slots`), the staging area and the
// inboxes (the geometry's slot counts are the caller's to fill once the map is laid);
// xcclInvalidUsage beyond the engines' rank limits or for a window too small to tune.
xcclResult_t PlanDeviceWindow(const Params& params, const Topology& topology, SlotMap* slots,
                              WindowGeometry* geometry);

// After the transport: every engine, the same choices on every rank (comm/shared_settings.h).
xcclResult_t CreateDeviceEngine(const Params& params, const Topology& topology,
                                const WindowGeometry& geometry, const SlotMap& slots,
                                const Transport& transport, std::unique_ptr<DeviceEngine>* out);

}  // namespace xccl
