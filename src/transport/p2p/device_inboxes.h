// Same node, GPU: every rank's inboxes (its receive region, one slice per source rank), a device
// allocation of its own beside the control window, mapped by every rank of the node. Made at
// the communicator's first call on one node, so that a communicator that never calls holds
// none (docs/ARCHITECTURE.md, "The GPU platform", the window); across nodes at init, where the
// net endpoint lands in them.
#pragma once

#include <cstddef>
#include <functional>

#include "base/topology.h"
#include "transport/p2p/peer_map.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;

class DeviceInboxes {
 public:
  DeviceInboxes() = default;
  // Frees nothing: the owner runs TakeRelease's function with the device current.
  ~DeviceInboxes() = default;
  DeviceInboxes(const DeviceInboxes&) = delete;
  DeviceInboxes& operator=(const DeviceInboxes&) = delete;

  // Collective over every rank (each takes part whatever failed locally, and all fail
  // together): allocates `bytes` on `device` (current) and maps every rank's of this node.
  xcclResult_t Create(Bootstrap* bootstrap, const Topology& topology, int device, size_t bytes);

  bool made() const { return own_ != nullptr; }
  // Rank `rank`'s inboxes as this process addresses them; null before Create and for a rank of
  // another node.
  char* at(int rank) const {
    return made() ? static_cast<char*>(mapped_.at[static_cast<size_t>(rank)]) : nullptr;
  }
  // Frees this rank's allocation (which waits for the device), then closes the peers' mappings;
  // this object holds nothing afterwards.
  std::function<void()> TakeRelease();

 private:
  void* own_ = nullptr;  // null until Create succeeds, and after TakeRelease
  int device_ = 0;
  PeerBuffers mapped_;
};

}  // namespace xccl
