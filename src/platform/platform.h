// The one interface the algorithms (src/collectives) run on. A platform owns a rank's control
// window (32-bit signal slots mapped on every rank of the node), its DMA queues (one per peer)
// and the copy primitives. host implements it with shared memory, worker threads and
// cross-process copies; cuda and hip implement the same roles with IPC-mapped device memory,
// copy-engine streams and stream-ordered flag operations.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/deadline.h"
#include "core/failure.h"  // PlatformFailure, which every wait and copy below fills
#include "transport/window.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;
struct Params;
struct Topology;

class Platform {
 public:
  virtual ~Platform() = default;
  virtual const char* name() const = 0;
  virtual int queue_count() const = 0;
  // How many streams fused ag_gemm's band GEMMs take in turn when XCCL_AGGEMM_COMPUTE_STREAMS
  // leaves it open (0). GPU: 2, since bands on one stream serialise each band's tail wave, which
  // a second stream overlaps with the next band (docs/perf-history.md, third round). Host: 1
  // (calls are synchronous there, so a side lane runs nothing beside the caller and would only
  // cost a second plugin context).
  virtual int default_compute_streams() const { return 1; }

  // Brackets every operation. GPU: advances the epoch in device memory on `stream` and forks
  // the DMA queues off it. Host: nothing (calls are synchronous).
  virtual void BeginOperation(xcclStream_t stream) = 0;
  // GPU: joins the queues back into the stream and closes with a barrier step, so that no rank
  // overwrites an inbox a slower rank still reads. Host: waits for this rank's queued puts.
  virtual xcclResult_t EndOperation(uint32_t epoch, const Deadline& deadline,
                                    PlatformFailure* failure) = 0;

  // --- Direct puts: a block goes straight into the peer's receive buffer (host platform). ---
  virtual bool direct_puts() const = 0;
  // Makes `recv` (`bytes` long) writable by peers for operation `epoch` (host: publishes its
  // address and size; NULL: an operation through the inboxes, published only so that a peer's
  // direct put fails at once). `block`: the size every put into it must have (0: any size). A put
  // that does not fit, or is not `block` long, fails with xcclInvalidUsage instead of writing past
  // the buffer or leaving part of it stale: ranks that passed different counts fail.
  virtual void PublishRecvBuffer(uint32_t epoch, void* recv, size_t bytes, size_t block) = 0;
  // After a failed operation `epoch`: no peer may write the receive buffer any more (the caller
  // gets it back). Host: refuses puts not yet started and waits (bounded by `deadline`) for
  // those copying now. GPU: nothing (no direct puts).
  virtual void CloseRecvBuffer(uint32_t /*epoch*/, const Deadline& /*deadline*/) {}
  // Enqueues on peer's DMA queue: wait until the peer published its receive buffer for
  // `epoch`, copy `bytes` from `src` to that buffer + `dst_offset`, then set the peer's slot
  // `signal_slot` to `epoch`.
  virtual void EnqueuePut(int peer, uint32_t epoch, const void* src, size_t dst_offset,
                          size_t bytes, int signal_slot) = 0;
  // The same put made by the calling thread instead of a queue: the caller serves as one more
  // queue, which spares a thread hand-off and on a machine with few cores keeps a copy running
  // on each.
  virtual xcclResult_t PutFromCaller(int peer, uint32_t epoch, const void* src, size_t dst_offset,
                                     size_t bytes, int signal_slot, PlatformFailure* failure) = 0;

  // --- Inbox puts: a block goes into the peer's inbox in its window, the peer copies it out. ---
  // Largest block an inbox holds. Host: the eager path for small blocks (copied by the calling
  // thread: no queue hand-off, no wait for the peer's buffer). GPU: the staging window; larger
  // blocks go in several operations.
  virtual size_t inbox_limit() const = 0;
  // Copies `src` into `peer`'s inbox for this rank (host: calling thread; GPU: the peer's DMA
  // queue), then sets the peer's slot `signal_slot` to the operation's epoch.
  virtual void InboxPut(int peer, uint32_t epoch, const void* src, size_t bytes,
                        int signal_slot) = 0;
  // This rank's inbox holding `src`'s block of operation `epoch` (valid once it arrived).
  virtual const void* Inbox(uint32_t epoch, int src) const = 0;
  // The size of `src`'s block in that inbox, as its put gave it (valid once it arrived), so that
  // ranks that passed different counts fail instead of copying a stale tail. false where the
  // host cannot know it (GPU: the puts and the wait are stream-ordered).
  virtual bool InboxBlockBytes(uint32_t /*epoch*/, int /*src*/, size_t* /*bytes*/) const {
    return false;
  }

  // Copies within this rank (host: calling thread; GPU: on the operation's stream).
  virtual void LocalCopy(void* dst, const void* src, size_t bytes) = 0;
  // Waits until every peer's arrival slot reaches `epoch` (wrap-safe), calling `on_arrival`
  // for each peer once its data is there (host: as each arrives; GPU: stream-ordered after one
  // device-side wait for all).
  virtual xcclResult_t WaitArrivals(uint32_t epoch, const Deadline& deadline,
                                    const std::function<void(int peer)>& on_arrival,
                                    PlatformFailure* failure) = 0;
  // --- Window operations (ag_gemm's fused mode): puts into every rank's op buffer (from
  // AllocateOpBuffer), each followed by its flag, and a wait per flag. ---
  // Collective: makes every rank's `local` buffer reachable for WindowPut. (*peers)[r] is rank
  // r's as this rank addresses it (GPU: the pointer itself in-process, an IPC mapping otherwise,
  // to be closed with ClosePeerBuffer where (*opened)[r]); host: nullptr, the buffer is
  // published per operation instead.
  virtual xcclResult_t MapPeerBuffers(Bootstrap* bootstrap, void* local, std::vector<void*>* peers,
                                      std::vector<bool>* opened) = 0;
  // Starts window operation `epoch`, whose puts land in this rank's `local` buffer (`bytes`
  // long). Host: publishes it for the peers' queues. GPU: advances the device epoch on `stream` and
  // forks the DMA queues from it. EndOperation joins them (GPU: and closes with a barrier).
  virtual void BeginWindowOperation(uint32_t epoch, void* local, size_t bytes,
                                    xcclStream_t stream) = 0;
  // On peer's DMA queue: `bytes` from `src` to `offset` in peer's buffer (`peer_buffer`, from
  // MapPeerBuffers), then (unless kNoSignal) peer's slot `signal_slot` <- the operation's epoch.
  virtual void WindowPut(int peer, uint32_t epoch, void* peer_buffer, size_t offset,
                         const void* src, size_t bytes, int signal_slot) = 0;
  // Until this rank's slot `slot`, raised by `peer`, reaches the operation's epoch (wrap-safe);
  // `what` says what for, in a failure's message. Host: the calling thread waits (deadline,
  // liveness, announced failures: *failure). GPU: a wait on `stream` (the operation's, or one
  // forked from it after BeginWindowOperation) and an immediate return; a wait that passes its
  // deadline is reported through PollAsyncFailure, a launch failure by EndOperation.
  virtual xcclResult_t WindowWait(int slot, uint32_t epoch, int peer, const char* what,
                                  const Deadline& deadline, xcclStream_t stream,
                                  PlatformFailure* failure) = 0;
  // Device addresses of this rank's slot `slot` and of its device epoch, for kernels that wait
  // themselves (a GEMM plugin's tile-wait entry); nullptr where there are none (host).
  virtual const volatile uint32_t* DeviceSlot(int /*slot*/) const { return nullptr; }
  virtual const volatile uint32_t* DeviceEpoch() const { return nullptr; }
  // The epoch barrier of DESIGN.md section 6: write `epoch` into every peer's slot for this
  // rank, then wait until this rank's slots from every peer reach it.
  virtual xcclResult_t Barrier(uint32_t epoch, const Deadline& deadline,
                               PlatformFailure* failure) = 0;

  // --- A whole all_gather in one device operation (GPU kernel engine). ---
  virtual bool pipelined_all_gather() const { return false; }
  // Enqueues the all_gather of `bytes` per rank on `stream`; failures of the device side are
  // reported later through PollAsyncFailure, launch failures here.
  virtual xcclResult_t PipelinedAllGather(const void* /*send*/, void* /*recv*/, size_t /*bytes*/,
                                          xcclStream_t /*stream*/, PlatformFailure* failure) {
    return SetFailure(failure, xcclInternalError, kNoPeer,
                      "this platform has no pipelined all_gather");
  }
  // A failure that a device-side wait recorded since the last call (GPU), or xcclSuccess.
  virtual xcclResult_t PollAsyncFailure(PlatformFailure* failure) = 0;
  // Marks this rank failed (peers' waits see it) and makes queued work give up at once.
  virtual void Abort(int failed_peer) = 0;
};

// Memory and copies for ops that own buffers (ag_gemm's window and output), in the platform's
// memory: device memory of `device` on GPU platforms, plain memory on the host. Free functions
// rather than Platform methods, so an op can free its buffers whatever became of its
// communicator. Copies are stream-ordered on GPUs (any direction between device and pinned
// memory) and immediate on the host, where the stream is ignored.
xcclResult_t AllocateOpBuffer(int device, size_t bytes, void** ptr);  // zero-filled
void FreeOpBuffer(int device, void* ptr);
// Whether freeing an op's memory can wait for the whole device (GPU platforms: gpuFree,
// gpuFreeHost), so that it must not run while a peer sharing the device may wait for this rank.
bool FreeingWaitsForDevice();
xcclResult_t AllocateStaging(size_t bytes, void** ptr);  // GPU: pinned host memory
void FreeStaging(void* ptr);
xcclResult_t CopyAsync(void* dst, const void* src, size_t bytes, xcclStream_t stream);
xcclResult_t ZeroAsync(void* dst, size_t bytes, xcclStream_t stream);
xcclResult_t SyncStream(xcclStream_t stream);
// Closes a peer buffer that MapPeerBuffers opened (GPU: an IPC mapping; host: nothing).
void ClosePeerBuffer(int device, void* mapped);

// The device of a rank that names none: for xcclCommInitRank (`index` -1) the calling thread's
// current device, for rank `index` of xcclCommInitAll without a devlist index % device count
// (several ranks may share one device). Host: always 0.
xcclResult_t DefaultDevice(int index, int* device);

// Creates the platform for this rank: allocates and maps every control window of the node
// (collective over `bootstrap`), starts the DMA queues.
xcclResult_t CreatePlatform(Bootstrap* bootstrap, const Topology& topology, const Params& params,
                            int64_t timeout_ms, std::unique_ptr<Platform>* out);

}  // namespace xccl
