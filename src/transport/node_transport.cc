// The build chooses the transport between the ranks of a node: GPU memory is reached over p2p
// mappings, host memory over shared memory. Also the check every transport makes of the slot
// counts it is given.
#include <memory>

#include "base/error.h"
#include "base/logging.h"
#include "transport/transport.h"
#include "transport/window.h"
#if defined(XCCL_PLATFORM_HOST)
#include "transport/shm/shm_transport.h"
#else
#include "transport/p2p/p2p_transport.h"
#include "transport/p2p/shared_device_advice.h"
#endif

namespace xccl {

xcclResult_t CheckSlotCounts(const WindowGeometry& geometry) {
  if (geometry.signalled_slots < ControlLayout::kFirstOpSlot ||
      geometry.slot_count < geometry.signalled_slots)
    return Fail(xcclInternalError,
                "a transport window of %d slots, %d of them signalled: not a laid slot map",
                geometry.slot_count, geometry.signalled_slots);
  return xcclSuccess;
}

xcclResult_t CreateNodeTransport(Bootstrap* bootstrap, const Topology& topology,
                                 const Params& params, const WindowGeometry& geometry,
                                 int64_t timeout_ms, std::unique_ptr<Transport>* out) {
#if defined(XCCL_PLATFORM_HOST)
  auto transport = std::make_unique<ShmTransport>(topology, params, geometry, timeout_ms);
  XCCL_TRY(transport->Init(bootstrap));
  XCCL_INFO(kLogInit, "rank %d: shm transport, %d DMA queues (worker threads)", topology.rank,
            transport->queue_count());
#else
  auto transport = std::make_unique<P2pTransport>(topology, params, geometry, timeout_ms);
  XCCL_TRY(transport->Init(bootstrap));
  AdviseOnSharedDevice(topology.SharesDeviceInProcess());
  const int sharing = topology.RanksOnMyDevice();
  XCCL_INFO(kLogInit, "rank %d: p2p transport, device %d%s, %d DMA queues (copy-engine streams)",
            topology.rank, topology.ranks[topology.rank].device,
            sharing > 1 ? " (shared with other ranks: allowed, unlike NCCL)" : "",
            transport->queue_count());
#endif
  *out = std::move(transport);
  return xcclSuccess;
}

}  // namespace xccl
