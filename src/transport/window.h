// The control window every rank maps for its peers: 32-bit signal slots, never reset, compared
// wrap-safe against the epoch (base/epoch.h): the transport's own words here, then the ranges the
// ops ask for by name (transport/slot_map.h). The layout is the same on every platform; the
// host keeps it in shared memory (transport/shm), GPUs in IPC-mapped device memory.
#pragma once

#include <cstdint>

namespace xccl {

// Where each signal of a rank's control window lives. Slots are 32-bit and never reset.
struct ControlLayout {
  static constexpr int kReadyEpoch = 0;  // epoch whose receive buffer is published below
  static constexpr int kRecvAddrLo = 1;
  static constexpr int kRecvAddrHi = 2;
  static constexpr int kAbort = 3;        // 0, or 1 + the rank this rank saw fail
  static constexpr int kDeviceEpoch = 4;  // GPU: the epoch, advanced on the device
  static constexpr int kSleepers = 5;     // host: waiters asleep on a slot of this window
  static constexpr int kRecvBytesLo = 6;  // the published receive buffer's size ...
  static constexpr int kRecvBytesHi = 7;
  static constexpr int kRecvBlockLo = 8;  // ... and the size of every put into it (0: any)
  static constexpr int kRecvBlockHi = 9;
  static constexpr int kRecvWriters = 10;  // host: peers' puts now copying into the buffer
  static constexpr int kRecvClosed = 11;   // host: the epoch whose buffer its owner gave up
  static constexpr int kReadyFirst = 12;   // host: first epoch of the published buffer's range
  static constexpr int kRecvChunk = 13;    // host: the pipelined puts' piece size (0: whole)
  // host: the slot raised by the put of the buffer's block 0 (block s: this + s), so that a put
  // is held to the block its flag names; -1 (as uint32_t): none
  static constexpr int kRecvBlockSignal = 14;
  // The first of the slots the ops ask for by name (transport/slot_map.h).
  static constexpr int kFirstOpSlot = 16;
  // A put's signal_slot when nothing waits on that put alone (the next put of its queue
  // signals).
  static constexpr int kNoSignal = -1;
};

// GPU platforms: a device wait that gives up (deadline, abort) says so to the host here.
// In host-mapped memory: written by device waits, read by the host.
struct DeviceFailureRecord {
  // 0, or (peer + 1) << 8 | code: the xcclResult_t of the first wait that gave up and the rank
  // it was waiting for, set together by one CAS, so that the host never reads a code whose rank
  // is not written yet.
  uint32_t failure;
  uint32_t abort;  // set by the host: every wait gives up at once
  uint32_t pad[2];
};

}  // namespace xccl
