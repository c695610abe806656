// The collectives that run as device kernels over a p2p transport's window (GPU builds,
// device_engine.cu): the kernel all_gather engine (LL path and pipelined rings) and the barrier
// kernel. The host build has none (device_engine_absent.cc): PlanDeviceWindow leaves the geometry
// empty and CreateDeviceEngine gives nullptr, so the algorithms take their portable paths.
#pragma once

#include <cstddef>
#include <memory>

#include "base/failure.h"
#include "base/params.h"
#include "base/topology.h"
#include "transport/slot_map.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

class DeviceEngine {
 public:
  virtual ~DeviceEngine() = default;
  // Whether all_gather runs as the kernel engine; else as queued puts through the inboxes (the
  // dma engine, collectives/all_gather/all_gather.cc; also every communicator that spans nodes,
  // whose kernels could not reach the ranks of other nodes).
  virtual bool kernel_all_gather() const = 0;
  // Enqueues the all_gather of `bytes` per rank on `stream` as one kernel; failures of the
  // device side are reported later through Transport::PollAsyncFailure, launch failures here.
  // `direct_at` [nranks]: where each source may write straight
  // (collectives/all_gather/zero_copy_targets.h).
  virtual xcclResult_t AllGather(Transport& transport, const void* send, void* recv, size_t bytes,
                                 char* const* direct_at, xcclStream_t stream,
                                 PlatformFailure* failure) = 0;
  // The barrier as one kernel on `stream`. `advance_epoch`: an operation of its own (the kernel
  // advances the device epoch); else the closing step of a queued operation, whose
  // BeginOperation advanced it. Across nodes: stream-ordered signals on every connection (the
  // net ones through the proxy) and device waits (hence a transport that is not const).
  virtual xcclResult_t Barrier(Transport& transport, bool advance_epoch, xcclStream_t stream,
                               PlatformFailure* failure) = 0;
};

// Before the slot map is laid: what the device engines carve of a window for `nranks` ranks,
// their counters among the control slots (asked for in `slots`), the LL buffers as the staging
// area, then an inbox per source from XCCL_WINDOW_BYTES (the geometry's slot counts are the
// caller's to fill once the map is laid); xcclInvalidUsage beyond the engines' rank limits or for
// a window too small to tune.
xcclResult_t PlanDeviceWindow(const Params& params, const Topology& topology, SlotMap* slots,
                              WindowGeometry* geometry);

// After the transport: loads the kernels, tunes the kernel engine for `geometry`, finds its slots
// and the barrier's in the laid map and chooses the all_gather engine, the same on every rank
// (comm/shared_settings.h).
xcclResult_t CreateDeviceEngine(const Params& params, const Topology& topology,
                                const WindowGeometry& geometry, const SlotMap& slots,
                                const Transport& transport, std::unique_ptr<DeviceEngine>* out);

}  // namespace xccl
