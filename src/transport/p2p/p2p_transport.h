// GPU: the cuda and hip platforms' Transport. Each rank owns a window of device memory (control
// slots, a staging area, then one inbox per source rank, as the collectives' WindowGeometry
// asks) that every rank of its node maps (the pointer itself for a rank of this process, an IPC
// handle otherwise). A put is a copy on the peer's copy-engine queue followed on the same queue
// by a 4-byte copy of this rank's device epoch into the peer's slot; a wait is a kernel on the
// operation's stream. Nothing waits on the host inside a call.
//
// Slots raised by ranks of other nodes are read in the net endpoint's host-mapped page
// (DeviceNetEndpoint, docs/ARCHITECTURE.md "GPU ranks across nodes"): this transport connects
// only the ranks of its node.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/params.h"
#include "base/topology.h"
#include "platform/gpu.h"
#include "transport/net/proxy/peer_watch.h"
#include "transport/p2p/copy_engine_queues.h"
#include "transport/p2p/device_inboxes.h"
#include "transport/p2p/device_windows.h"
#include "transport/p2p/kept_launch_error.h"
#include "transport/p2p/process_clique.h"
#include "transport/transport.h"

namespace xccl {

class P2pTransport;

// One peer of this node over GPU peer mappings, its puts on the peer's copy-engine queue (the
// operation's stream where ranks share a device).
class P2pConnection final : public Connection {
 public:
  P2pConnection(P2pTransport* transport, int peer, TransportKind kind)
      : Connection(peer, kind), transport_(transport) {}
  void Put(uint32_t epoch, void* dst, size_t dst_offset, const void* src, size_t bytes,
           int signal_slot) override;
  void PutToRegion(uint32_t epoch, size_t region_offset, const void* src, size_t bytes,
                   int signal_slot) override;
  void Signal(int slot, uint32_t epoch) override;
  // The operation's stream waits for this peer's queue.
  xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure) override;

 private:
  P2pTransport* transport_;
};

class P2pTransport final : public Transport {
 public:
  P2pTransport(const Topology& topology, const Params& params, const WindowGeometry& geometry,
               int64_t timeout_ms);
  ~P2pTransport() override { Release(); }
  P2pTransport(const P2pTransport&) = delete;
  P2pTransport& operator=(const P2pTransport&) = delete;

  // Collective: allocates and maps the window of every rank of this node, uploads the device
  // tables, makes the copy-engine queues.
  xcclResult_t Init(Bootstrap* bootstrap);
  // Where the communicator spans nodes, before the first operation: the slots ranks of other
  // nodes raise, as the device reads them.
  void SetRemoteSlots(const uint32_t* remote_slots_device) {
    remote_slots_device_ = remote_slots_device;
  }

  const char* name() const override { return "p2p"; }
  // The copy-engine streams of this rank; 0 where ranks share its device.
  int queue_count() const override { return queues_.count(); }
  Connection& connection(int peer) override { return *connections_[peer]; }
  DirectPuts* direct_puts() override { return nullptr; }
  const DeviceView* device_view() const override { return &view_; }

  xcclResult_t BeginOperation(xcclStream_t stream, bool queued, PlatformFailure* failure) override;
  // Grows the inboxes (collective) where `region_bytes` is more than a slice holds now.
  xcclResult_t EnterLaunchGate(xcclStream_t stream, size_t region_bytes,
                               PlatformFailure* failure) override;
  xcclResult_t LeaveLaunchGate(bool wait, PlatformFailure* failure) override;
  // The queues join the operation's stream; a launch failure of the operation so far.
  xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure) override;
  // A one-thread wait kernel on `stream` against the device epoch (read when it runs, so a
  // replayed graph waits for the replay's flags). Its deadline is the kernel's own.
  xcclResult_t WaitSlot(int slot, uint32_t epoch, int peer, const char* what,
                        const Deadline& deadline, xcclStream_t stream,
                        PlatformFailure* failure) override;
  // One multi-slot wait kernel: a slot raised by a rank of another node is read in the remote
  // slots, the others in this rank's window.
  xcclResult_t WaitSlotsRaisedBy(int first_slot, uint32_t epoch, const std::vector<int>& raiser,
                                 const char* what, const Deadline& deadline, xcclStream_t stream,
                                 PlatformFailure* failure) override;

  // A kernel where ranks share this rank's device (copy_kernel.h), else the copy engine.
  xcclResult_t Copy(void* dst, const void* src, size_t bytes, xcclStream_t stream) override;
  // The region is the inboxes: one per source rank, grown with the calls on one node (0 before the
  // first that needs them), made whole at init across nodes.
  size_t slice_bytes() const override { return slice_; }
  size_t slice_cap_bytes() const override { return geometry_.inbox_bytes; }
  const char* Received(int /*carrier: a rank of this node*/, size_t region_offset) const override {
    return view_.own_inbox + region_offset;
  }
  bool PutEnd(int /*slot*/, uint32_t /*epoch*/, size_t* /*end*/) const override {
    return false;  // the puts and the wait are stream-ordered
  }

  xcclResult_t MapPeerBuffers(Bootstrap* bootstrap, void* local,
                              std::unique_ptr<PeerMappings>* out) override;

  xcclResult_t PollAsyncFailure(PlatformFailure* failure) override;
  int RootCause(int failed_peer) const override;
  void Abort(int failed_peer) override;

  // A peer failed, as the host saw it (the peer watch's thread: a rank of this node died or
  // aborted; the proxy's: a link to another node failed): every device wait of this rank gives
  // up at its next check.
  // The net transport then gives up its launched ops too.
  void RecordPeerFailure(int peer, const PlatformFailure& failure);
  void WatchRemotePeers(RemotePeers* remote) override {
    std::lock_guard<std::mutex> lock(peer_failure_mutex_);
    remote_ = remote;
  }

 private:
  friend class P2pConnection;

  bool IsRemote(int peer) const {
    return topology_.node_of_rank[peer] != topology_.node_of_rank[topology_.rank];
  }

  // On peer's queue: the data (if any), then (unless kNoSignal) the flag, a copy of this rank's
  // device epoch as the device holds it then.
  void QueuePut(int peer, void* dst, const void* src, size_t bytes, int signal_slot);
  void JoinQueueOf(int peer);
  // `bytes` on `stream` by the copy engine, or by a kernel (kernel_copies_).
  gpuError_t StreamCopy(void* dst, const void* src, size_t bytes, gpuMemcpyKind kind,
                        gpuStream_t stream);
  // The peer's region (its window's inboxes) at `region_offset`.
  char* RegionAtPeer(int peer, size_t region_offset) const;
  uint32_t* Slots(int rank) const { return windows_.slots(rank); }
  // Launch-time failures of the runtime are kept until the operation reports them.
  void Check(gpuError_t err, const char* what) { launch_error_.Keep(err, what); }
  xcclResult_t TakeLaunchFailure(PlatformFailure* failure) {
    return launch_error_.Take(topology_.rank, failure);
  }
  xcclResult_t UploadTables();
  // Collective: the inboxes made anew with slices of at least `wanted` bytes (the ranks agree on
  // the largest asked), at a gated call on one node.
  xcclResult_t GrowInboxes(size_t wanted, bool capturing, PlatformFailure* failure);
  xcclResult_t RemakeInboxes(size_t slice, bool keep_old);
  // The kernels' view of the inboxes: the table, this rank's own, the slice (null and 0 while
  // there are none).
  void ShowInboxesInView();
  std::vector<void*> InboxTable() const;
  xcclResult_t CreateQueues();
  void Release();

  Topology topology_;
  Params params_;
  WindowGeometry geometry_;
  int device_;
  int64_t timeout_ms_;
  DeviceWindows windows_;  // every rank's window, as this process addresses it
  DeviceInboxes inboxes_;  // every rank's inboxes, once made
  size_t slice_ = 0;       // each source's inbox in them
  // Some rank may have captured a call into a graph that addresses the inboxes (and their table):
  // once moved they are kept, not freed, until the transport goes, so that replays still land in
  // memory of this rank.
  bool captured_ = false;
  std::vector<std::function<void()>> retired_;
  Bootstrap* bootstrap_ = nullptr;  // the communicator's, which outlives this transport
  uint32_t** peer_slots_device_ = nullptr;
  char** staging_device_ = nullptr;  // [peer] -> its staging area
  char** inbox_device_ = nullptr;    // [peer] -> this rank's inbox in its window
  DeviceView view_;
  CopyEngineQueues queues_;                               // this rank's DMA queues
  std::vector<std::unique_ptr<Connection>> connections_;  // null for this rank
  gpuStream_t stream_ = nullptr;                          // the operation's
  KeptLaunchError launch_error_;
  bool kernel_copies_ = false;  // ranks share this rank's device (copy_kernel.h)
  // The ranks of this process (gate, abort, the end of the windows); gated_: another of them
  // shares this rank's device.
  std::shared_ptr<ProcessClique> clique_;
  bool gated_ = false;
  bool in_gate_ = false;  // between EnterLaunchGate and LeaveLaunchGate of a gated call

  // The slots ranks of other nodes raise (the net endpoint's; null on one node).
  const uint32_t* remote_slots_device_ = nullptr;
  mutable std::mutex peer_failure_mutex_;
  PlatformFailure peer_failure_;   // the first peer failure found on the host (RecordPeerFailure)
  RemotePeers* remote_ = nullptr;  // under peer_failure_mutex_
  // Other processes of this node, whose deaths end this rank's device waits at once. Last, so
  // that it stops before anything its thread touches (RecordPeerFailure) goes.
  PeerWatch watch_;
};

}  // namespace xccl
