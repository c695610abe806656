// The one interface the algorithms (src/collectives) run on. A platform owns a rank's control
// window (32-bit signal slots mapped on every rank of the node), its DMA queues (one per peer)
// and the copy primitives. host implements it with shared memory, worker threads and
// cross-process copies; cuda and hip implement the same roles with IPC-mapped device memory,
// copy-engine streams and stream-ordered flag operations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;
struct Topology;

// Where each signal of a rank's control window lives. Slots are 32-bit and never reset.
struct ControlLayout {
  static constexpr int kReadyEpoch = 0;  // epoch whose receive buffer is published below
  static constexpr int kRecvAddrLo = 1;
  static constexpr int kRecvAddrHi = 2;
  static constexpr int kAbort = 3;  // 0, or 1 + the rank this rank saw fail
  static constexpr int kFirstPeerSlot = 16;
  static int Arrival(int src) { return kFirstPeerSlot + src; }
  static int BarrierFrom(int src, int nranks) { return kFirstPeerSlot + nranks + src; }
  static int SlotCount(int nranks) { return kFirstPeerSlot + 2 * nranks; }
};

// What a failed wait or copy knows: which rank it was waiting for, and why.
struct PlatformFailure {
  xcclResult_t result = xcclSuccess;
  int peer = -1;
  std::string message;
};

class Platform {
 public:
  virtual ~Platform() = default;
  virtual const char* name() const = 0;
  virtual int queue_count() const = 0;

  // Makes `recv` writable by peers for operation `epoch` (host: publishes its address).
  virtual void PublishRecvBuffer(uint32_t epoch, void* recv) = 0;
  // Copies within this rank, on the calling thread / stream.
  virtual void LocalCopy(void* dst, const void* src, size_t bytes) = 0;
  // Enqueues on peer's DMA queue: wait until the peer published its receive buffer for
  // `epoch`, copy `bytes` from `src` to that buffer + `dst_offset`, then set the peer's slot
  // `signal_slot` to `epoch`.
  virtual void EnqueuePut(int peer, uint32_t epoch, const void* src, size_t dst_offset,
                          size_t bytes, int signal_slot) = 0;
  // Largest block the eager path carries (0: none). An eager put copies into the peer's inbox
  // in its window on the calling thread and signals at once: no queue hand-off and no wait for
  // the peer's receive buffer, which is what small calls are made of. The receiver copies out.
  virtual size_t eager_limit() const = 0;
  virtual void EagerPut(int peer, uint32_t epoch, const void* src, size_t bytes,
                        int signal_slot) = 0;
  // This rank's inbox holding `src`'s block of operation `epoch` (valid once it arrived). Two
  // inboxes alternate by epoch parity: a peer can be at most one operation ahead.
  virtual const void* EagerInbox(uint32_t epoch, int src) const = 0;
  // The same put as EnqueuePut, made by the calling thread (host) or on the caller's stream
  // (GPU) instead of a queue: the caller serves as one more queue, which on the host spares a
  // thread hand-off and on a machine with few cores keeps a copy running on each.
  virtual xcclResult_t PutFromCaller(int peer, uint32_t epoch, const void* src, size_t dst_offset,
                                     size_t bytes, int signal_slot, PlatformFailure* failure) = 0;
  // Sets the peer's slot to `value` (release).
  virtual void Signal(int peer, int slot, uint32_t value) = 0;
  // Waits until this rank's slot reaches `epoch` (wrap-safe), watching `peer` for failure.
  virtual xcclResult_t WaitLocal(int slot, uint32_t epoch, int peer, const Deadline& deadline,
                                 PlatformFailure* failure) = 0;
  // Waits until every queued put has finished; the first failure of any is returned.
  virtual xcclResult_t DrainQueues(const Deadline& deadline, PlatformFailure* failure) = 0;
  // Marks this rank failed (peers' waits see it) and makes queued work give up at once.
  virtual void Abort(int failed_peer) = 0;
};

// Creates the platform for this rank: allocates and maps every control window of the node
// (collective over `bootstrap`), starts the DMA queues.
xcclResult_t CreatePlatform(Bootstrap* bootstrap, const Topology& topology, int64_t timeout_ms,
                            std::unique_ptr<Platform>* out);

}  // namespace xccl
