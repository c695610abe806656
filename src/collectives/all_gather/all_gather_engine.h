// all_gather's device engine (GPU builds, all_gather_engine.cu; docs/ARCHITECTURE.md, "The GPU
// platform"): the kernel engine (LL path and pipelined rings) over the p2p transport's window, or,
// where it does not run, the word that calls go through the inboxes. The host build has none.
#pragma once

#include <cstddef>
#include <memory>

#include "base/failure.h"
#include "base/params.h"
#include "base/topology.h"
#include "collectives/all_gather/gather_tail.h"
#include "transport/slot_map.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

class AllGatherEngine {
 public:
  virtual ~AllGatherEngine() = default;
  // Whether calls run as the kernel engine; else as queued puts through the inboxes (the dma
  // engine, all_gather.cc; also every communicator that spans nodes, whose kernels could not
  // reach the ranks of other nodes).
  virtual bool kernel() const = 0;
  // The kernel engine's inbox per source for a call of `bytes` per rank and `tail`: its rings,
  // unless the call takes the LL path (LaunchGate::Enter).
  virtual size_t RegionBytes(size_t bytes, const GatherTail& tail) const = 0;
  // Enqueues the all_gather of `bytes` per rank, and of `tail`, on `stream` as one kernel;
  // failures of the device side are reported later through Transport::PollAsyncFailure, launch
  // failures here. `direct_at` [nranks]: where each source may write straight
  // (collectives/zero_copy_targets.h).
  virtual xcclResult_t Run(Transport& transport, const void* send, void* recv, size_t bytes,
                           const GatherTail& tail, char* const* direct_at, xcclStream_t stream,
                           PlatformFailure* failure) = 0;
};

// Before the slot map is laid: the kernel engine's device-only slots, and what it carves of the
// window (the LL buffers as staging, and where `inboxes`, an inbox per source from
// XCCL_WINDOW_BYTES); xcclInvalidUsage where the inbox is too small to tune.
xcclResult_t PlanAllGatherWindow(const Params& params, const Topology& topology, bool inboxes,
                                 SlotMap* slots, WindowGeometry* geometry);

// After the transport: loads the kernels, tunes the kernel engine for `geometry`, finds its slots
// and chooses the engine, the same on every rank (comm/shared_settings.h).
xcclResult_t CreateAllGatherEngine(const Params& params, const Topology& topology,
                                   const WindowGeometry& geometry, const SlotMap& slots,
                                   const Transport& transport,
                                   std::unique_ptr<AllGatherEngine>* out);

}  // namespace xccl
