// This rank's transport to the other ranks: a Connection per peer, the waits on this rank's own
// control slots, its inboxes, and what only some transports offer, asked for as capabilities
// (DirectPuts, a DeviceView). The communicator holds one, PeerTransports, which takes each peer's
// connection from the transport chosen for it (CreateTransports); the node transports (shm on
// the host platform, p2p on cuda and hip) implement it too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "base/deadline.h"
#include "base/failure.h"
#include "base/params.h"
#include "base/topology.h"
#include "transport/connection.h"
#include "transport/device_view.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;

// Receive buffers published per call, that peers' puts (Connection::Put with dst nullptr) land
// in straight (the shm transport).
class DirectPuts {
 public:
  virtual ~DirectPuts() = default;
  // Makes `recv` (`bytes` long) writable by peers for operation `epoch`. `block`: the size every
  // put into it must have (0: any). `block_signal`: the slot a put of block s raises is
  // block_signal + s, and such a put must stay in block s (ControlLayout::kNoSignal: puts are
  // held to whole blocks only). A put that does not fit, or is not `block` long, fails with
  // xcclInvalidUsage instead of writing past the buffer or leaving part of it stale: ranks that
  // passed different counts fail. NULL publishes only the block size (a call through inboxes),
  // so that a peer's direct put fails at once.
  void PublishRecvBuffer(uint32_t epoch, void* recv, size_t bytes, size_t block, int block_signal) {
    PublishRecvRange(epoch, epoch, recv, bytes, block, /*chunk=*/0, block_signal);
  }
  // The same for an operation that spans epochs `first`..`last` (a pipelined one: each piece
  // signals its own epoch). With `chunk` > 0 a put must start at a multiple of `chunk` within a
  // block and end where the piece its epoch names ends: min((epoch - first + 1) * chunk, block)
  // (a whole block put with `last`; chunk 0: whole blocks only).
  virtual void PublishRecvRange(uint32_t first, uint32_t last, void* recv, size_t bytes,
                                size_t block, size_t chunk, int block_signal) = 0;
  // After a failed operation: refuses puts not yet started and waits (bounded by `deadline`) for
  // those copying now, so that the caller gets its buffer back.
  virtual void CloseRecvBuffer(uint32_t epoch, const Deadline& deadline) = 0;
  // Connection::Put into the published buffer, made by the calling thread: the caller serves as
  // one more queue, which spares a thread hand-off and on a machine with few cores keeps a copy
  // running on each.
  virtual xcclResult_t PutNow(int peer, uint32_t epoch, const void* src, size_t dst_offset,
                              size_t bytes, int signal_slot, PlatformFailure* failure) = 0;
};

// Every rank's op buffer (a fused op's window) as this rank addresses it; closes the mappings it
// opened when destroyed, whatever became of the communicator.
class PeerMappings {
 public:
  explicit PeerMappings(std::vector<void*> at) : at_(std::move(at)) {}
  virtual ~PeerMappings() = default;
  // nullptr where puts go into the buffer the peer publishes per operation (DirectPuts).
  void* at(int rank) const { return at_[rank]; }

 protected:
  std::vector<void*> at_;
};

// The ranks of other nodes as a node transport's waits see them: their slots are raised in this
// rank's memory, but their links are the net transport's (docs/ARCHITECTURE.md, "Transports per
// peer").
class RemotePeers {
 public:
  virtual ~RemotePeers() = default;
  // This rank is about to wait for a rank of another node: its links are polled now.
  virtual void Kick() = 0;
  // `peer`'s links failed (false while healthy).
  virtual bool PeerFailed(int peer, PlatformFailure* failure) const = 0;
  // This rank failed: ops it launched for them may never reach the net (GPU), so none is waited
  // for any more.
  virtual void GiveUp() = 0;
};

// WaitSlotsRaisedBy's raiser for a rank that is not waited for.
inline constexpr int kUnwatched = -1;

class Transport {
 public:
  virtual ~Transport() = default;
  virtual const char* name() const = 0;
  // This rank's DMA queues (worker threads, copy-engine streams); 0 where puts run on the
  // operation's stream.
  virtual int queue_count() const = 0;
  virtual Connection& connection(int peer) = 0;
  // Capabilities: nullptr where the transport has none.
  virtual DirectPuts* direct_puts() = 0;
  // Device-side signals: waits and flags are stream-ordered device work, a wait returns once
  // enqueued and reports a deadline later (PollAsyncFailure); the view is what kernels address.
  virtual const DeviceView* device_view() const = 0;

  // Starts an operation on `stream` (host: nothing, calls are synchronous). `queued`: it puts on
  // connections (GPU: the device epoch advances on the stream and the queues fork from there).
  virtual xcclResult_t BeginOperation(xcclStream_t stream, bool queued,
                                      PlatformFailure* failure) = 0;
  // Around the enqueue of every collective's kernels, on every rank (collectives/launch_gate.h):
  // where ranks of this process share a device, Enter waits until each of them has reached the
  // call, Leave (with `wait`) until each has enqueued it; without `wait` (the call failed half
  // way) Leave only keeps the count (ProcessClique, docs/ARCHITECTURE.md "Ranks sharing a GPU").
  // Elsewhere nothing. Every rank enters at the same calls with the same `region_bytes` (the
  // most one source puts into a slice during the call, from the call's arguments; 0: none), so
  // Enter may also be collective: the p2p transport on one node grows its inboxes there
  // (docs/ARCHITECTURE.md, "The GPU platform", the window).
  virtual xcclResult_t EnterLaunchGate(xcclStream_t /*stream*/, size_t /*region_bytes*/,
                                       PlatformFailure* /*failure*/) {
    return xcclSuccess;
  }
  virtual xcclResult_t LeaveLaunchGate(bool /*wait*/, PlatformFailure* /*failure*/) {
    return xcclSuccess;
  }
  // Every connection flushed; the first failure.
  virtual xcclResult_t Flush(const Deadline& deadline, PlatformFailure* failure) = 0;

  // Until this rank's slot `slot`, raised by `peer`, reaches `epoch` (wrap-safe); `what` names
  // it in a failure. Host: the calling thread waits. Device: a wait on `stream` (the operation's,
  // or one forked from it after BeginOperation).
  virtual xcclResult_t WaitSlot(int slot, uint32_t epoch, int peer, const char* what,
                                const Deadline& deadline, xcclStream_t stream,
                                PlatformFailure* failure) = 0;
  // Until slot `first_slot + r` reaches `epoch` for every rank r but this one, raised by
  // `raiser[r]` (r itself, or the rank of this node that forwards r's block; kUnwatched: r is
  // not waited for). Device: one wait kernel for all of them, so that a call launches few
  // kernels.
  virtual xcclResult_t WaitSlotsRaisedBy(int first_slot, uint32_t epoch,
                                         const std::vector<int>& raiser, const char* what,
                                         const Deadline& deadline, xcclStream_t stream,
                                         PlatformFailure* failure) = 0;
  // A copy that is part of an operation (into the output, out of an inbox), on `stream`: the
  // runtime's CopyAsync, or a kernel where copy-engine copies of ranks sharing a GPU could hold
  // each other up (p2p). The runtime's error text on failure.
  virtual xcclResult_t Copy(void* dst, const void* src, size_t bytes, xcclStream_t stream) = 0;

  // Every rank's receive region, where peers' Connection::PutToRegion land: one slice of this
  // many bytes per rank now (host: XCCL_EAGER_BYTES twice, GPU: the inbox per source, grown at
  // the launch gate); how a slice is used is the algorithm's (collectives/region/inboxes.h).
  virtual size_t slice_bytes() const = 0;
  // What a slice may grow to (GPU on one node: XCCL_WINDOW_BYTES per source; elsewhere
  // slice_bytes()): plans cut their pieces by it, and the launch gate makes a slice hold them.
  virtual size_t slice_cap_bytes() const = 0;
  // The most one PutToRegion may carry (the net's pinned staging across nodes on GPUs).
  virtual size_t region_put_limit() const { return slice_cap_bytes(); }
  // Where the bytes `carrier` put at `region_offset` of this rank's region are, once its slot was
  // raised (a rank of another node's land in the net transport's memory on GPUs).
  virtual const char* Received(int carrier, size_t region_offset) const = 0;
  // Where, within its slice, the region put that raised `slot` to `epoch` ended (its offset in
  // the slice plus its bytes; a peer one epoch ahead keeps it), so that ranks that passed
  // different counts, or split a block differently, fail instead of copying a stale tail; false
  // where the host cannot know it (stream-ordered puts).
  virtual bool PutEnd(int slot, uint32_t epoch, size_t* end) const = 0;

  // Collective: every rank's `local` op buffer made reachable for Connection::Put.
  virtual xcclResult_t MapPeerBuffers(Bootstrap* bootstrap, void* local,
                                      std::unique_ptr<PeerMappings>* out) = 0;

  // Where the communicator spans nodes: waits for slots raised by ranks of other nodes ask
  // `remote` about them, and a failure the node transport sees tells it (a node transport makes
  // no connection to them). nullptr before the net transport goes.
  virtual void WatchRemotePeers(RemotePeers* /*remote*/) {}
  // The rank to name when this rank aborts because of `failed_peer` (a root cause the transport
  // saw first, where `failed_peer` is this rank itself).
  virtual int RootCause(int failed_peer) const { return failed_peer; }

  // A failure that a device-side wait recorded since init, or xcclSuccess.
  virtual xcclResult_t PollAsyncFailure(PlatformFailure* failure) = 0;
  // Marks this rank failed (peers' waits see it) and makes queued work give up at once.
  virtual void Abort(int failed_peer) = 0;
};

// `slots` control slots in whole pages, so that what follows them is aligned for any copy.
inline size_t SlotPageBytes(int slots) {
  return (static_cast<size_t>(slots) * sizeof(uint32_t) + 4095) / 4096 * 4096;
}

// What every rank's window holds: the control slots the ops asked for (transport/slot_map.h),
// and on GPUs what the collectives carve after them (collectives/device_engine.h); the host
// platform's shm windows size their data themselves.
struct WindowGeometry {
  int slot_count = 0;        // SlotMap::end()
  int signalled_slots = 0;   // SlotMap::signalled_end(): the slots a connection may raise
  size_t staging_bytes = 0;  // after the slots: a staging area the engines share (the LL buffers)
  size_t inbox_bytes = 0;    // then one inbox of this size per source rank
  // The slots' bytes in a device window; the staging area follows them.
  size_t control_bytes() const { return SlotPageBytes(slot_count); }
};

// xcclInternalError unless the counts come from a laid map (the transport's own words, then
// the signalled slots within the whole): a window made from an empty geometry would put the
// ops' slots on the transport's words.
xcclResult_t CheckSlotCounts(const WindowGeometry& geometry);

// Collective over every rank: maps the window of every rank of this node (`geometry`, the same
// on every rank) and connects each peer with the transport that reaches it: this build's node
// transport (shm on the host platform, p2p on GPUs) and, where the communicator spans nodes, the
// net transport (docs/ARCHITECTURE.md, "Transports per peer").
xcclResult_t CreateTransports(Bootstrap* bootstrap, const Topology& topology, const Params& params,
                              const WindowGeometry& geometry, int64_t timeout_ms,
                              std::unique_ptr<Transport>* out);

}  // namespace xccl
