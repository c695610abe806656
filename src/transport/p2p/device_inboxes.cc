#include "transport/p2p/device_inboxes.h"

#include "platform/shareable_memory.h"

namespace xccl {

xcclResult_t DeviceInboxes::Create(Bootstrap* bootstrap, const Topology& topology, int device,
                                   size_t bytes) {
  // Whole IPC blocks (AllocateShareable): a block shared with another allocation would open
  // at the wrong bytes in a peer, or not at all.
  int allocated_on = device;
  const xcclResult_t local = AllocateShareable(bytes, &own_, &allocated_on);
  if (local != xcclSuccess) own_ = nullptr;
  device_ = device;
  const xcclResult_t mapped = MapPeerBuffers(
      bootstrap, topology, device, own_,
      /*enable_peer_access: done with the control windows*/ false, "GPU inboxes", &mapped_);
  if (local != xcclSuccess || mapped != xcclSuccess) {
    FreeShareable(device, own_);
    own_ = nullptr;
    return local != xcclSuccess ? local : mapped;
  }
  return xcclSuccess;
}

std::function<void()> DeviceInboxes::TakeRelease() {
  auto release = [mapped = mapped_, own = own_, device = device_]() mutable {
    FreeShareable(device, own);
    ClosePeerBuffers(&mapped);
  };
  mapped_ = PeerBuffers();
  own_ = nullptr;
  return release;
}

}  // namespace xccl
