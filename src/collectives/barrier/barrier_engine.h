// The barrier's device engine (GPU builds, barrier_engine.cu): one kernel over the p2p
// transport's window where every rank is on this node, else stream-ordered signals on the
// connections and one device wait. Also the closing step of queued operations
// (collectives/queued_operation.h). The host build has none.
#pragma once

#include <memory>

#include "base/failure.h"
#include "base/topology.h"
#include "transport/slot_map.h"
#include "transport/transport.h"
#include "xccl.h"

namespace xccl {

class BarrierEngine {
 public:
  virtual ~BarrierEngine() = default;
  // The barrier on `stream`. `advance_epoch`: an operation of its own (the device epoch advances
  // first); else the closing step of a queued operation, whose BeginOperation advanced it. Across
  // nodes the signals go through the connections (hence a transport that is not const).
  virtual xcclResult_t Run(Transport& transport, bool advance_epoch, xcclStream_t stream,
                           PlatformFailure* failure) = 0;
};

// After the transport: loads the kernel and finds the barrier's slots (barrier_slots.h).
xcclResult_t CreateBarrierEngine(const Topology& topology, const SlotMap& slots,
                                 std::unique_ptr<BarrierEngine>* out);

}  // namespace xccl
