// Same node, host memory: every rank's control window in shared memory (shm_window), one
// ShmConnection per peer, and the waits on this rank's own slots. A put copies straight into
// the peer's receive buffer, published per call in the peer's window (memcpy for a rank of this
// process, process_vm_writev for another), then raises one of the peer's slots; small blocks go
// through inboxes in the peer's window instead, copied by the calling thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "core/deadline.h"
#include "core/failure.h"
#include "core/params.h"
#include "core/topology.h"
#include "transport/connection.h"
#include "transport/shm/dma_queue.h"
#include "transport/shm/futex_signal.h"
#include "transport/shm/shm_window.h"

namespace xccl {

class Bootstrap;
class ShmTransport;

// One peer of this node, through shared memory. Queued puts run in order on the connection's
// worker thread (its DMA queue), as a copy engine would; PutNow and InboxPut run on the caller.
class ShmConnection {
 public:
  ShmConnection(ShmTransport* transport, int peer, TransportKind kind,
                std::unique_ptr<DmaQueue> queue)
      : transport_(transport), peer_(peer), kind_(kind), queue_(std::move(queue)) {}
  TransportKind kind() const { return kind_; }

  // Queued: waits until the peer published its receive buffer for `epoch`, copies `bytes` from
  // `src` to that buffer + `dst_offset`, then sets the peer's `signal_slot` to `epoch`
  // (ControlLayout::kNoSignal: no slot). A put that does not fit the published buffer, or is
  // not its block size, fails with xcclInvalidUsage instead of writing past it.
  void Put(uint32_t epoch, const void* src, size_t dst_offset, size_t bytes, int signal_slot);
  // The same put made by the calling thread.
  xcclResult_t PutNow(uint32_t epoch, const void* src, size_t dst_offset, size_t bytes,
                      int signal_slot, PlatformFailure* failure);
  // Calling thread: `bytes` into the peer's inbox for this rank (by epoch parity), the block's
  // size beside it, then the peer's `signal_slot` <- epoch.
  void InboxPut(uint32_t epoch, const void* src, size_t bytes, int signal_slot);
  // The peer's slot `slot` <- value (release, and a wake of its sleepers).
  void Signal(int slot, uint32_t value);
  // Until every queued put has run; the first failure since the last flush.
  xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure);

 private:
  ShmTransport* transport_;
  int peer_;
  TransportKind kind_;
  std::unique_ptr<DmaQueue> queue_;
};

class ShmTransport {
 public:
  ShmTransport(const Topology& topology, const Params& params, int64_t timeout_ms);
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  // Collective: maps every rank's window, proves cross-process copies work, starts a worker
  // queue per peer.
  xcclResult_t Init(Bootstrap* bootstrap);

  ShmConnection& connection(int peer) { return *connections_[peer]; }
  int peer_count() const { return topology_.nranks - 1; }
  // Largest block an inbox holds (the eager path).
  size_t inbox_limit() const { return eager_limit_; }

  // Makes `recv` (`bytes` long, puts of `block` bytes each; 0: any) writable by peers for
  // `epoch`; NULL publishes only the block size (a call through the inboxes).
  void PublishRecvBuffer(uint32_t epoch, void* recv, size_t bytes, size_t block);
  // After a failed operation: refuses puts not yet started, waits for those copying now.
  void CloseRecvBuffer(uint32_t epoch, const Deadline& deadline);
  // This rank's inbox holding `src`'s block of `epoch`, and that block's size as its put left it.
  const void* Inbox(uint32_t epoch, int src) const { return InboxOf(topology_.rank, epoch, src); }
  size_t InboxBlockBytes(uint32_t epoch, int src) const;
  // Until this rank's slot `slot`, raised by `peer`, reaches `epoch` (wrap-safe); `what` names
  // it in a failure. Gives up at the deadline, at an abort, an announced failure or a dead peer.
  xcclResult_t WaitSlot(int slot, uint32_t epoch, int peer, const char* what,
                        const Deadline& deadline, PlatformFailure* failure);
  // Marks this rank failed in its window (peers' waits see it) and stops its queued puts.
  void Abort(int failed_peer);

 private:
  friend class ShmConnection;

  // The put of ShmConnection::Put / PutNow.
  xcclResult_t CopyToPeer(int peer, uint32_t epoch, const void* src, size_t dst_offset,
                          size_t bytes, int signal_slot, PlatformFailure* failure);
  void SignalPeer(int peer, int slot, uint32_t value);
  char* InboxOf(int owner, uint32_t epoch, int src) const;
  std::function<xcclResult_t(PlatformFailure*)> Watcher(int peer);
  std::function<xcclResult_t(PlatformFailure*)> StopCheck(int peer);
  bool AbortedOrAnnounced(int peer, const char* doing, PlatformFailure* failure) const;
  bool AnnouncedFailure(PlatformFailure* failure) const;
  xcclResult_t ProbePeers(Bootstrap* bootstrap);
  static void InitSlots(uint32_t* slots, size_t count, void* self);

  Topology topology_;
  Params params_;
  int64_t timeout_ms_;
  size_t eager_limit_ = 0;
  WaitPolicy wait_policy_;
  ShmWindows windows_;
  std::vector<std::unique_ptr<ShmConnection>> connections_;  // null for this rank
  std::atomic<bool> aborted_{false};
};

}  // namespace xccl
