// Same node, GPU: every rank's window in device memory (its control slots and the staging area,
// all set to the epoch base; the inboxes are device_inboxes.h's), mapped by every rank of the
// node (peer_map), and this rank's failure record in host-mapped memory, where its device waits
// report a deadline or an abort.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

#include "base/failure.h"
#include "base/topology.h"
#include "transport/p2p/peer_map.h"
#include "transport/window.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;

class DeviceWindows {
 public:
  DeviceWindows() = default;
  // Frees nothing: the owner calls Release with the device current (and not at all where it
  // cannot make it current).
  ~DeviceWindows() = default;
  DeviceWindows(const DeviceWindows&) = delete;
  DeviceWindows& operator=(const DeviceWindows&) = delete;

  // Collective: allocates `window_bytes` of slots on `device` (each `epoch_base`, the abort slot
  // 0), maps every rank's window (peer access enabled between devices) and makes the failure
  // record. Every rank takes part even after a local failure.
  xcclResult_t Create(Bootstrap* bootstrap, const Topology& topology, int device,
                      size_t window_bytes, uint32_t epoch_base);

  // Rank `rank`'s window and its control slots, as this process addresses them.
  char* window(int rank) const { return static_cast<char*>(mapped_.at[rank]); }
  uint32_t* slots(int rank) const { return static_cast<uint32_t*>(mapped_.at[rank]); }
  DeviceFailureRecord* record_device() const { return record_device_; }

  // A failure a device wait recorded since init, named after the rank it waited for; or
  // xcclSuccess.
  xcclResult_t PollAsyncFailure(const Topology& topology, int64_t timeout_ms,
                                PlatformFailure* failure) const;
  // Makes every device wait of this rank give up at once.
  void Abort();
  // A failure found on the host (a link to another node failed): recorded as a device wait's
  // would be, {code, peer} in one word unless one is there already, so every device wait of this
  // rank gives up at its next check.
  void RecordHostFailure(int peer, xcclResult_t code);
  // Closes the peers' mappings, then frees this rank's window and record (the device must be
  // current). The owner frees what waits for the device (its tables) first, so no queued store
  // reaches a closed mapping.
  void Release();
  // The same release, to run later (when no other rank of this process can touch the window:
  // ProcessClique); this object holds nothing afterwards.
  std::function<void()> TakeRelease();

 private:
  void* own_ = nullptr;
  PeerBuffers mapped_;
  DeviceFailureRecord* record_ = nullptr;
  DeviceFailureRecord* record_device_ = nullptr;
};

}  // namespace xccl
