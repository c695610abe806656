// Host memory: the host platform's node transport. The control window of every rank of this node
// in shared memory (shm_window), one ShmConnection per peer of this node, and the waits on this
// rank's own slots, whoever raises them (ranks of other nodes through the net transport, which
// lands their ops where this transport's NetEndpoint says). A put
// copies straight into the peer's receive buffer, published per call in the peer's window (memcpy
// for a rank of this process, process_vm_writev for another), then raises one of the peer's slots;
// small blocks go through the receive region in the peer's window instead, copied by the calling
// thread.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "base/deadline.h"
#include "base/failure.h"
#include "base/params.h"
#include "base/topology.h"
#include "platform/runtime.h"
#include "transport/connection.h"
#include "transport/net/net_transport.h"
#include "transport/shm/dma_queue.h"
#include "transport/shm/futex_signal.h"
#include "transport/shm/shm_window.h"
#include "transport/transport.h"

namespace xccl {

class Bootstrap;
class ShmTransport;

// One peer of this node, through shared memory. Queued puts run in order on a DMA queue's worker
// thread, as a copy engine would (a queue serves a fixed set of peers: at most kMaxDmaQueues per
// rank, docs/ARCHITECTURE.md "Communicator creation"); PutToRegion and Signal run on the caller.
class ShmConnection final : public Connection {
 public:
  ShmConnection(ShmTransport* transport, int peer, TransportKind kind, DmaQueue* queue)
      : Connection(peer, kind), transport_(transport), queue_(queue) {}

  // Queued: waits until the peer published its receive buffer for `epoch`, copies `bytes` from
  // `src` to that buffer + `dst_offset`, then sets the peer's `signal_slot` to `epoch`. `dst` is
  // always nullptr here (shm maps no op buffers: they are published per operation).
  void Put(uint32_t epoch, void* dst, size_t dst_offset, const void* src, size_t bytes,
           int signal_slot) override;
  // Calling thread: `bytes` into the peer's region at `region_offset`, the put's size beside
  // the slot (by epoch parity), then the peer's `signal_slot` <- epoch. Past the region: nothing
  // is written and the connection's flush fails.
  void PutToRegion(uint32_t epoch, size_t region_offset, const void* src, size_t bytes,
                   int signal_slot) override;
  // The peer's slot `slot` <- epoch (release, and a wake of its sleepers).
  void Signal(int slot, uint32_t epoch) override;
  xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure) override;

 private:
  ShmTransport* transport_;
  DmaQueue* queue_;  // the transport's, shared with other peers'
};

// The host's NetEndpoint too: ops from ranks of other nodes land in this rank's window.
class ShmTransport final : public Transport, public DirectPuts, public NetEndpoint {
 public:
  // `geometry`: its slot counts (the receive region sizes itself from XCCL_EAGER_BYTES).
  ShmTransport(const Topology& topology, const Params& params, const WindowGeometry& geometry,
               int64_t timeout_ms);
  ShmTransport(const ShmTransport&) = delete;
  ShmTransport& operator=(const ShmTransport&) = delete;

  // Collective: maps the window of every rank of this node, proves cross-process copies work,
  // starts the DMA queues (one per peer of this node, up to kMaxDmaQueues, each then serving
  // several peers in order).
  xcclResult_t Init(Bootstrap* bootstrap);

  const char* name() const override { return "shm"; }
  static constexpr int kMaxDmaQueues = 16;
  int queue_count() const override { return static_cast<int>(queues_.size()); }
  Connection& connection(int peer) override { return *connections_[peer]; }
  DirectPuts* direct_puts() override { return this; }
  const DeviceView* device_view() const override { return nullptr; }

  xcclResult_t BeginOperation(xcclStream_t /*stream: calls are synchronous*/, bool /*queued*/,
                              PlatformFailure* /*failure*/) override {
    return xcclSuccess;
  }
  xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure) override;

  // Gives up at the deadline, at an abort, an announced failure or a dead peer.
  // One slot after the other (the calling thread waits).
  xcclResult_t WaitSlotsRaisedBy(int first_slot, uint32_t epoch, const std::vector<int>& raiser,
                                 const char* what, const Deadline& deadline, xcclStream_t stream,
                                 PlatformFailure* failure) override;
  xcclResult_t WaitSlot(int slot, uint32_t epoch, int peer, const char* what,
                        const Deadline& deadline, xcclStream_t /*stream*/,
                        PlatformFailure* failure) override;
  xcclResult_t Copy(void* dst, const void* src, size_t bytes, xcclStream_t stream) override {
    return CopyAsync(dst, src, bytes, stream);
  }
  // Two eager blocks per slice: a rank one operation ahead writes the other
  // (collectives/region/inboxes.h).
  size_t slice_bytes() const override { return 2 * eager_limit_; }
  size_t slice_cap_bytes() const override { return slice_bytes(); }  // made whole at init
  const char* Received(int /*carrier: one region*/, size_t region_offset) const override {
    return windows_.data(topology_.rank) + region_offset;
  }
  bool PutEnd(int slot, uint32_t epoch, size_t* end) const override;

  // Nothing to map: op buffers are published per operation (PublishRecvBuffer).
  xcclResult_t MapPeerBuffers(Bootstrap* bootstrap, void* local,
                              std::unique_ptr<PeerMappings>* out) override;

  void WatchRemotePeers(RemotePeers* remote) override { remote_ = remote; }
  // Waits fail on the host itself, as they happen.
  xcclResult_t PollAsyncFailure(PlatformFailure* /*failure*/) override { return xcclSuccess; }
  // Marks this rank failed in its window (peers' waits see it) and stops its queued puts.
  void Abort(int failed_peer) override;

  // DirectPuts.
  void PublishRecvRange(uint32_t first, uint32_t last, void* recv, size_t bytes, size_t block,
                        size_t chunk, int block_signal) override;
  void CloseRecvBuffer(uint32_t epoch, const Deadline& deadline) override;
  // Peers of this node only (a put to another node is the net transport's connection's).
  xcclResult_t PutNow(int peer, uint32_t epoch, const void* src, size_t dst_offset, size_t bytes,
                      int signal_slot, PlatformFailure* failure) override;

  // NetEndpoint: ops from peers of other nodes land in this rank's region and published
  // receive buffer, as a shm put does.
  size_t net_slice_bytes() const override { return slice_bytes(); }
  const char* net_slice_setting() const override { return "XCCL_EAGER_BYTES"; }
  char* NetRegion(int peer, size_t slice_offset) const override {
    return windows_.data(topology_.rank) + peer * slice_bytes() + slice_offset;
  }
  xcclResult_t NetPutDestination(int peer, const NetOp& op, char** dst,
                                 PlatformFailure* failure) override;
  void NetPutEnded(int peer, const NetOp& op) override;
  void NetRaise(int peer, const NetOp& op) override;

 private:
  friend class ShmConnection;

  // The put of ShmConnection::Put and PutNow.
  xcclResult_t CopyToPeer(int peer, uint32_t epoch, const void* src, size_t dst_offset,
                          size_t bytes, int signal_slot, PlatformFailure* failure);
  void SignalPeer(int peer, int slot, uint32_t value);
  // The word, after the ops' slots, holding where in its slice the region put that last raised
  // the signalled slot `slot` for an epoch of this parity ended (a peer one operation ahead writes
  // the other parity's).
  int PutEndWord(int slot, uint32_t epoch) const {
    return geometry_.slot_count + static_cast<int>(epoch & 1) * geometry_.signalled_slots + slot;
  }
  size_t region_bytes() const { return topology_.nranks * slice_bytes(); }
  std::function<xcclResult_t(PlatformFailure*)> Watcher(int peer);
  std::function<xcclResult_t(PlatformFailure*)> StopCheck(int peer);
  bool AbortedOrAnnounced(int peer, const char* doing, PlatformFailure* failure) const;
  bool AnnouncedFailure(PlatformFailure* failure) const;
  bool IsRemote(int peer) const {
    return topology_.node_of_rank[peer] != topology_.node_of_rank[topology_.rank];
  }
  // Whether a rank of this node in another process is gone (dead or a zombie).
  bool AnyPeerProcessDied() const;
  xcclResult_t ProbePeers(Bootstrap* bootstrap);
  static void InitSlots(uint32_t* slots, size_t count, void* self);

  Topology topology_;
  Params params_;
  WindowGeometry geometry_;
  int64_t timeout_ms_;
  size_t eager_limit_ = 0;
  WaitPolicy wait_policy_;
  ShmWindows windows_;
  RemotePeers* remote_ = nullptr;                         // where ranks of other nodes take part
  std::vector<std::unique_ptr<DmaQueue>> queues_;         // before connections_, which use them
  std::vector<std::unique_ptr<Connection>> connections_;  // null for this rank and other nodes
  std::atomic<bool> aborted_{false};
};

}  // namespace xccl
