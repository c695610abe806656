// Same node, GPU: the cuda and hip platforms' Transport. Each rank owns a window of device
// memory (control slots, a staging area, then one inbox per source rank, as the collectives'
// WindowGeometry asks) that every rank of the node maps (the pointer itself for a rank of this
// process, an IPC handle otherwise). A put is a copy on the peer's copy-engine queue followed on
// the same queue by a 4-byte copy of this rank's device epoch into the peer's slot; a wait is a
// kernel on the operation's stream. Nothing waits on the host inside a call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/params.h"
#include "core/topology.h"
#include "platform/gpu.h"
#include "transport/p2p/copy_engine_queues.h"
#include "transport/p2p/device_windows.h"
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
  void InboxPut(uint32_t epoch, const void* src, size_t bytes, int signal_slot) override;
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

  // Collective: allocates and maps every rank's window, uploads the device tables, makes the
  // copy-engine queues.
  xcclResult_t Init(Bootstrap* bootstrap);

  const char* name() const override { return "p2p"; }
  // The copy-engine streams of this rank; 0 where ranks share its device.
  int queue_count() const override { return queues_.count(); }
  Connection& connection(int peer) override { return *connections_[peer]; }
  DirectPuts* direct_puts() override { return nullptr; }
  const DeviceView* device_view() const override { return &view_; }

  xcclResult_t BeginOperation(xcclStream_t stream, bool queued, PlatformFailure* failure) override;
  // The queues join the operation's stream; a launch failure of the operation so far.
  xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure) override;
  // A one-thread wait kernel on `stream` against the device epoch (read when it runs, so a
  // replayed graph waits for the replay's flags). Its deadline is the kernel's own.
  xcclResult_t WaitSlot(int slot, uint32_t epoch, int peer, const char* what,
                        const Deadline& deadline, xcclStream_t stream,
                        PlatformFailure* failure) override;
  xcclResult_t WaitArrivals(uint32_t epoch, const Deadline& deadline,
                            const std::function<void(int peer)>& on_arrival,
                            PlatformFailure* failure) override;

  size_t inbox_limit() const override { return geometry_.inbox_bytes; }
  const void* Inbox(uint32_t epoch, int src) const override;
  bool InboxBlockBytes(uint32_t /*epoch*/, int /*src*/, size_t* /*bytes*/) const override {
    return false;  // the puts and the wait are stream-ordered
  }

  xcclResult_t MapPeerBuffers(Bootstrap* bootstrap, void* local,
                              std::unique_ptr<PeerMappings>* out) override;

  xcclResult_t PollAsyncFailure(PlatformFailure* failure) override;
  void Abort(int failed_peer) override;

 private:
  friend class P2pConnection;

  // On peer's queue: the data (if any), then (unless kNoSignal) the flag, a copy of this rank's
  // device epoch as the device holds it then.
  void QueuePut(int peer, void* dst, const void* src, size_t bytes, int signal_slot);
  void JoinQueueOf(int peer);
  char* InboxAtPeer(int peer) const;
  uint32_t* Slots(int rank) const { return windows_.slots(rank); }
  // Launch-time failures of the runtime are kept until the operation reports them.
  void Check(gpuError_t err, const char* what);
  xcclResult_t TakeLaunchFailure(PlatformFailure* failure);
  xcclResult_t UploadTables();
  xcclResult_t CreateQueues();
  void Release();

  Topology topology_;
  Params params_;
  WindowGeometry geometry_;
  int device_;
  int64_t timeout_ms_;
  DeviceWindows windows_;  // every rank's window, as this process addresses it
  uint32_t** peer_slots_device_ = nullptr;
  char** staging_device_ = nullptr;  // [peer] -> its staging area
  char** inbox_device_ = nullptr;    // [peer] -> this rank's inbox in its window
  DeviceView view_;
  CopyEngineQueues queues_;                                  // this rank's DMA queues
  std::vector<std::unique_ptr<P2pConnection>> connections_;  // null for this rank
  gpuStream_t stream_ = nullptr;                             // the operation's
  std::string launch_error_;
};

}  // namespace xccl
