// The control window every rank maps for its peers: 32-bit signal slots, never reset, compared
// wrap-safe against the epoch (core/epoch.h). The layout is the same on every platform; the
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
  static constexpr int kFirstPeerSlot = 16;
  static int Arrival(int src) { return kFirstPeerSlot + src; }
  // The source whose arrival `slot` signals, or -1 where it is another kind of slot.
  static int ArrivalSource(int slot, int nranks) {
    return slot >= kFirstPeerSlot && slot < kFirstPeerSlot + nranks ? slot - kFirstPeerSlot : -1;
  }
  static int BarrierFrom(int src, int nranks) { return kFirstPeerSlot + nranks + src; }
  // Slots a fused op signals in, kOpSlotsPerSource per source rank; the op gives them their
  // meaning.
  static constexpr int kOpSlotsPerSource = 8;
  static int OpSlot(int src, int index, int nranks) {
    return kFirstPeerSlot + 2 * nranks + src * kOpSlotsPerSource + index;
  }
  // Host: the size of the block `src` last put into this rank's inbox for an epoch of this
  // parity (the inboxes alternate by epoch parity, so a peer one operation ahead writes the other).
  static int InboxBytes(int parity, int src, int nranks) {
    return kFirstPeerSlot + 2 * nranks + nranks * kOpSlotsPerSource + parity * nranks + src;
  }
  static int SlotCount(int nranks) {
    return kFirstPeerSlot + 4 * nranks + nranks * kOpSlotsPerSource;
  }
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
