// What kernels address of a p2p transport: this rank's window and the device tables of every
// peer's, loaded once per launch (docs/ARCHITECTURE.md, "The GPU platform": peer bases from a
// table, never re-read per store). Plain pointers, so that portable code can hand them to a GEMM
// plugin's tile-wait entry.
#pragma once

#include <cstddef>
#include <cstdint>

#include "transport/window.h"

namespace xccl {

struct DeviceView {
  int rank = 0, nranks = 0;
  uint32_t* own_slots = nullptr;           // this rank's control slots (ControlLayout, SlotMap)
  uint32_t* device_epoch = nullptr;        // own_slots + ControlLayout::kDeviceEpoch
  uint32_t* const* peer_slots = nullptr;   // device table: [peer] -> that peer's control slots
  char* const* staging_at_peer = nullptr;  // device table: [peer] -> its staging area
  const char* own_staging = nullptr;
  char* const* inbox_at_peer = nullptr;  // device table: [peer] -> this rank's inbox there
  const char* own_inbox = nullptr;       // this rank's inboxes: source s at s * inbox_bytes
  size_t inbox_bytes = 0;
  uint64_t timeout_ns = 0;                // XCCL_TIMEOUT_MS, for the device waits
  DeviceFailureRecord* record = nullptr;  // where those waits report giving up
};

}  // namespace xccl
