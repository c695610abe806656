// The transports of a rank, chosen per peer (docs/ARCHITECTURE.md, "Transports per peer"): the
// build chooses the node transport (GPU memory is reached over p2p mappings, host memory over
// shared memory), and where the communicator spans nodes the net transport reaches the others,
// landing in the memory the platform's net endpoint names. Also the check every transport makes
// of the slot counts it is given.
#include <memory>
#include <utility>

#include "base/error.h"
#include "base/logging.h"
#include "transport/net/net_transport.h"
#include "transport/peer_transports.h"
#include "transport/transport.h"
#include "transport/window.h"
#if defined(XCCL_PLATFORM_HOST)
#include "transport/shm/shm_transport.h"
#else
#include "transport/p2p/device_net_endpoint.h"
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

xcclResult_t CreateTransports(Bootstrap* bootstrap, const Topology& topology, const Params& params,
                              const WindowGeometry& geometry, int64_t timeout_ms,
                              std::unique_ptr<Transport>* out) {
  const bool spans_nodes = topology.node_count > 1;
  std::unique_ptr<NetEndpoint> owned_endpoint;
  NetEndpoint* endpoint = nullptr;
  bool prepared = true;
#if defined(XCCL_PLATFORM_HOST)
  auto node = std::make_unique<ShmTransport>(topology, params, geometry, timeout_ms);
  XCCL_TRY(node->Init(bootstrap));
  XCCL_INFO(kLogInit, "rank %d: shm transport, %d DMA queues (worker threads)", topology.rank,
            node->queue_count());
  endpoint = node.get();  // ops from other nodes land in the shm window
#else
  auto node = std::make_unique<P2pTransport>(topology, params, geometry, timeout_ms);
  XCCL_TRY(node->Init(bootstrap));
  AdviseOnSharedDevice(topology.SharesDeviceInProcess());
  const int sharing = topology.RanksOnMyDevice();
  XCCL_INFO(kLogInit, "rank %d: p2p transport, device %d%s, %d DMA queues (copy-engine streams)",
            topology.rank, topology.ranks[topology.rank].device,
            sharing > 1 ? " (shared with other ranks: allowed, unlike NCCL)" : "",
            node->queue_count());
  if (spans_nodes) {
    P2pTransport* p2p = node.get();
    auto device_endpoint = std::make_unique<DeviceNetEndpoint>(
        topology, params, geometry, node->device_view(),
        [p2p](int peer, const PlatformFailure& failure) { p2p->RecordPeerFailure(peer, failure); });
    prepared = device_endpoint->Create() == xcclSuccess;
    if (!prepared)
      XCCL_WARN(kLogInit, "rank %d: the pinned net staging: %s", topology.rank,
                ThreadLastError().c_str());
    node->SetRemoteSlots(device_endpoint->remote_slots_device());
    endpoint = device_endpoint.get();
    owned_endpoint = std::move(device_endpoint);
  }
#endif
  std::unique_ptr<NetTransport> net;
  if (spans_nodes) {
    net = std::make_unique<NetTransport>(topology, params, geometry.signalled_slots,
                                         node->slice_cap_bytes(), timeout_ms, endpoint);
    const xcclResult_t connected = net->Connect(bootstrap, prepared);
    if (connected != xcclSuccess) {
      // In PeerTransports' order: the proxy before the memory it lands in, the node last.
      net.reset();
      owned_endpoint.reset();
      return connected;
    }
  }
  *out = std::make_unique<PeerTransports>(topology, std::move(node), std::move(owned_endpoint),
                                          std::move(net));
  return xcclSuccess;
}

}  // namespace xccl
