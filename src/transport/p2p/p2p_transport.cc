#include "transport/p2p/p2p_transport.h"

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "base/logging.h"
#include "platform/gpu/device_bytes_now.h"
#include "platform/gpu/gpu_call.h"
#include "platform/runtime.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/verdicts.h"
#include "transport/p2p/copy_kernel.h"
#include "transport/p2p/device_signals.h"
#include "transport/p2p/peer_map.h"

namespace xccl {

namespace {

// The op buffers' IPC mappings, closed on their device when the op lets them go.
class P2pPeerMappings final : public PeerMappings {
 public:
  explicit P2pPeerMappings(PeerBuffers buffers) : PeerMappings(buffers.at), buffers_(buffers) {}
  ~P2pPeerMappings() override { ClosePeerBuffers(&buffers_); }

 private:
  PeerBuffers buffers_;
};

}  // namespace

// ---- P2pConnection ----

void P2pConnection::Put(uint32_t /*epoch: the device's*/, void* dst, size_t dst_offset,
                        const void* src, size_t bytes, int signal_slot) {
  if (dst == nullptr) {
    // No receive buffers are published on GPUs: a caller bug, reported by the operation.
    transport_->Check(gpuErrorInvalidValue, "put without a mapped destination");
    return;
  }
  transport_->QueuePut(peer(), static_cast<char*>(dst) + dst_offset, src, bytes, signal_slot);
}

void P2pConnection::PutToRegion(uint32_t /*epoch*/, size_t region_offset, const void* src,
                                size_t bytes, int signal_slot) {
  const size_t region = transport_->topology_.nranks * transport_->slice_;
  if (bytes > region || region_offset > region - bytes) {
    transport_->Check(gpuErrorInvalidValue, "a put past the peer's region");
    return;
  }
  transport_->QueuePut(peer(), transport_->RegionAtPeer(peer(), region_offset), src, bytes,
                       signal_slot);
}

void P2pConnection::Signal(int slot, uint32_t /*epoch*/) {
  transport_->QueuePut(peer(), nullptr, nullptr, 0, slot);
}

xcclResult_t P2pConnection::Flush(const Deadline& /*deadline: stream-ordered*/,
                                  PlatformFailure* failure) {
  transport_->JoinQueueOf(peer());
  return transport_->TakeLaunchFailure(failure);
}

// ---- P2pTransport ----

P2pTransport::P2pTransport(const Topology& topology, const Params& params,
                           const WindowGeometry& geometry, int64_t timeout_ms)
    : topology_(topology),
      params_(params),
      geometry_(geometry),
      device_(topology.ranks[topology.rank].device),
      timeout_ms_(timeout_ms) {}

xcclResult_t P2pTransport::Init(Bootstrap* bootstrap) {
  const int nranks = topology_.nranks;
  XCCL_TRY(CheckSlotCounts(geometry_));
  if (nranks > kMaxWatchedRanks)
    return Fail(xcclInvalidUsage, "the p2p transport supports at most %d ranks, not %d",
                kMaxWatchedRanks, nranks);
  XCCL_GPU_TRY(gpuSetDevice(device_));
  XCCL_GPU_TRY(PreloadSignalKernels());
  kernel_copies_ = topology_.RanksOnMyDevice() > 1;
  if (kernel_copies_) XCCL_GPU_TRY(PreloadCopyKernel());
  // The control slots (set to the epoch base, which no first flag equals) and the staging area.
  XCCL_TRY(windows_.Create(bootstrap, topology_, device_,
                           geometry_.control_bytes() + geometry_.staging_bytes,
                           params_.epoch_base));
  bootstrap_ = bootstrap;
  // The inboxes grow with the calls on one node (EnterLaunchGate); across nodes they are made
  // whole now, where the net endpoint lands in them from its start.
  if (geometry_.inbox_bytes > 0 && topology_.node_count > 1) {
    XCCL_TRY(inboxes_.Create(bootstrap, topology_, device_, geometry_.inbox_bytes * nranks));
    slice_ = geometry_.inbox_bytes;
  }
  const xcclResult_t uploaded = UploadTables();
  int failed = -1;
  XCCL_TRY(ExchangeVerdicts(bootstrap, uploaded == xcclSuccess, &failed));
  XCCL_TRY(uploaded);
  if (failed >= 0)
    return Fail(xcclRemoteError, "rank %d could not set up its GPU device tables", failed);
  XCCL_TRY(ProcessClique::Join(bootstrap, topology_, &clique_));
  gated_ = clique_->Gated(topology_.rank);
  clique_->Enter(topology_.rank,
                 [this](int blamed) { windows_.RecordHostFailure(blamed, xcclRemoteError); });
  // Collective (topology is the same on every rank): a watch wherever processes share a node.
  if (topology_.AnyNodeSharedByProcesses())
    XCCL_TRY(
        watch_.Start(bootstrap, topology_, timeout_ms_,
                     [this](int peer, const PlatformFailure& f) { RecordPeerFailure(peer, f); }));
  XCCL_TRY(CreateQueues());
  connections_.resize(nranks);
  for (int peer = 0; peer < nranks; ++peer) {
    if (peer == topology_.rank || IsRemote(peer)) continue;
    connections_[peer] = std::make_unique<P2pConnection>(
        this, peer, ChooseTransport(topology_, peer, /*device_memory=*/true));
  }
  view_.rank = topology_.rank;
  view_.nranks = nranks;
  view_.own_slots = Slots(topology_.rank);
  view_.device_epoch = view_.own_slots + ControlLayout::kDeviceEpoch;
  view_.peer_slots = peer_slots_device_;
  view_.staging_at_peer = staging_device_;
  view_.own_staging = windows_.window(topology_.rank) + geometry_.control_bytes();
  ShowInboxesInView();
  view_.timeout_ns = static_cast<uint64_t>(timeout_ms_) * 1000000ull;
  view_.record = windows_.record_device();
  LogTransports(topology_, /*device_memory=*/true);
  return xcclSuccess;
}

xcclResult_t P2pTransport::BeginOperation(xcclStream_t stream, bool queued,
                                          PlatformFailure* failure) {
  stream_ = static_cast<gpuStream_t>(stream);
  queues_.Begin(stream_);
  Check(gpuSetDevice(device_), "cudaSetDevice");
  if (queued) {
    Check(LaunchAdvanceEpoch(view_.device_epoch, stream_), "advance-epoch kernel");
    Check(queues_.MarkFork(), "event record (fork)");
  }
  return TakeLaunchFailure(failure);
}

xcclResult_t P2pTransport::EnterLaunchGate(xcclStream_t stream, size_t region_bytes,
                                           PlatformFailure* failure) {
  gpuStreamCaptureStatus capture = gpuStreamCaptureStatusNone;
  const bool capturing =
      gpuStreamIsCapturing(static_cast<gpuStream_t>(stream), &capture) == gpuSuccess &&
      capture != gpuStreamCaptureStatusNone;
  // Past the cap the call cuts smaller pieces (it plans by slice_cap_bytes), so none asks more.
  const size_t wanted = std::min(region_bytes, geometry_.inbox_bytes);
  if (wanted > slice_) XCCL_TRY(GrowInboxes(wanted, capturing, failure));
  if (capturing) captured_ = true;
  // A capture enqueues nothing; its replays are the caller's launches.
  if (!gated_ || capturing) return xcclSuccess;
  in_gate_ = true;
  return clique_->PassGate(topology_.rank, /*wait=*/true, timeout_ms_, failure);
}

xcclResult_t P2pTransport::LeaveLaunchGate(bool wait, PlatformFailure* failure) {
  if (!in_gate_) return xcclSuccess;
  in_gate_ = false;
  return clique_->PassGate(topology_.rank, wait, timeout_ms_, failure);
}

xcclResult_t P2pTransport::Flush(const Deadline& /*deadline*/, PlatformFailure* failure) {
  Check(queues_.Join(), "queue join");
  return TakeLaunchFailure(failure);
}

xcclResult_t P2pTransport::WaitSlot(int slot, uint32_t /*epoch: the device's*/, int peer,
                                    const char* /*what*/, const Deadline& /*deadline*/,
                                    xcclStream_t stream, PlatformFailure* /*failure*/) {
  // A rank of another node raises this rank's slot in host-mapped memory (its ops land there).
  const bool remote = peer >= 0 && peer < topology_.nranks && IsRemote(peer);
  if (remote && remote_slots_device_ == nullptr) {
    Check(gpuErrorInvalidValue, "a wait for a rank of another node without its slots");
    return xcclSuccess;
  }
  // A launch failure is the operation's, reported by its Flush.
  Check(LaunchWaitSlot((remote ? remote_slots_device_ : view_.own_slots) + slot, peer,
                       view_.device_epoch, view_.timeout_ns, view_.record,
                       static_cast<gpuStream_t>(stream)),
        "wait kernel");
  return xcclSuccess;
}

xcclResult_t P2pTransport::WaitSlotsRaisedBy(int first_slot, uint32_t /*epoch: the device's*/,
                                             const std::vector<int>& raiser, const char* /*what*/,
                                             const Deadline& /*deadline*/, xcclStream_t stream,
                                             PlatformFailure* failure) {
  const int rank = topology_.rank, nranks = topology_.nranks;
  uint32_t remote = 0, watched = 0;
  for (int r = 0; r < nranks; ++r) {
    if (r == rank || raiser[r] == kUnwatched) continue;
    watched |= 1u << r;
    if (IsRemote(raiser[r])) remote |= 1u << r;
  }
  if (remote != 0 && remote_slots_device_ == nullptr)
    Check(gpuErrorInvalidValue, "a wait for a rank of another node without its slots");
  Check(LaunchWaitSlots(view_.own_slots, remote_slots_device_, remote, watched, first_slot, nranks,
                        view_.device_epoch, view_.timeout_ns, view_.record,
                        static_cast<gpuStream_t>(stream)),
        "wait kernel");
  return TakeLaunchFailure(failure);
}

xcclResult_t P2pTransport::MapPeerBuffers(Bootstrap* bootstrap, void* local,
                                          std::unique_ptr<PeerMappings>* out) {
  PeerBuffers mapped;
  XCCL_TRY(xccl::MapPeerBuffers(bootstrap, topology_, device_, local,
                                /*enable_peer_access: done at init*/ false, "op window", &mapped));
  *out = std::make_unique<P2pPeerMappings>(std::move(mapped));
  return xcclSuccess;
}

xcclResult_t P2pTransport::PollAsyncFailure(PlatformFailure* failure) {
  // A failed link put its own record into the device's (so the waits gave up): its words, which
  // name the rank and why, rather than the record's "timed out".
  {
    std::lock_guard<std::mutex> lock(peer_failure_mutex_);
    if (peer_failure_.result != xcclSuccess) {
      *failure = peer_failure_;
      return failure->result;
    }
  }
  return windows_.PollAsyncFailure(topology_, timeout_ms_, failure);
}

int P2pTransport::RootCause(int failed_peer) const {
  // A failure that names no other rank (a launch refused after a link failed) blames the rank the
  // host already saw fail, so that the last words to the peers name the root cause.
  if (failed_peer >= 0 && failed_peer != topology_.rank) return failed_peer;
  std::lock_guard<std::mutex> lock(peer_failure_mutex_);
  if (peer_failure_.result != xcclSuccess && peer_failure_.peer >= 0) return peer_failure_.peer;
  return failed_peer;
}

void P2pTransport::Abort(int failed_peer) {
  failed_peer = RootCause(failed_peer);
  watch_.Abort(failed_peer);
  windows_.Abort();
  if (clique_) clique_->Abort(topology_.rank, failed_peer);
}

void P2pTransport::RecordPeerFailure(int peer, const PlatformFailure& failure) {
  {
    // Under the lock, so that the net transport is not gone once WatchRemotePeers(nullptr)
    // returned (its GiveUp is one store).
    std::lock_guard<std::mutex> lock(peer_failure_mutex_);
    if (peer_failure_.result == xcclSuccess) peer_failure_ = failure;
    if (remote_ != nullptr) remote_->GiveUp();
  }
  // Every device wait of this rank gives up at its next check, whatever it waits for: a wait on
  // a rank of this node may wait for data that rank can only send after hearing from `peer`.
  windows_.RecordHostFailure(failure.peer >= 0 ? failure.peer : peer, failure.result);
}

void P2pTransport::QueuePut(int peer, void* dst, const void* src, size_t bytes, int signal_slot) {
  gpuStream_t queue = nullptr;
  Check(queues_.StreamFor(peer, &queue), "stream wait (fork)");
  if (bytes > 0) Check(StreamCopy(dst, src, bytes, gpuMemcpyQueueKind, queue), "put");
  if (signal_slot == ControlLayout::kNoSignal) return;
  if (kernel_copies_) {
    Check(LaunchSignalEpoch(Slots(peer) + signal_slot, view_.device_epoch, queue), "signal");
    return;
  }
  Check(gpuMemcpyAsync(Slots(peer) + signal_slot, view_.device_epoch, sizeof(uint32_t),
                       gpuMemcpyDeviceToDevice, queue),
        "signal");
}

gpuError_t P2pTransport::StreamCopy(void* dst, const void* src, size_t bytes, gpuMemcpyKind kind,
                                    gpuStream_t stream) {
  if (kernel_copies_) return LaunchCopyKernel(dst, src, bytes, stream);
  return gpuMemcpyAsync(dst, src, bytes, kind, stream);
}

xcclResult_t P2pTransport::Copy(void* dst, const void* src, size_t bytes, xcclStream_t stream) {
  if (!kernel_copies_) return CopyAsync(dst, src, bytes, stream);
  XCCL_GPU_TRY(LaunchCopyKernel(dst, src, bytes, static_cast<gpuStream_t>(stream)));
  return xcclSuccess;
}

void P2pTransport::JoinQueueOf(int peer) { Check(queues_.JoinQueueOf(peer), "queue join"); }

char* P2pTransport::RegionAtPeer(int peer, size_t region_offset) const {
  return inboxes_.at(peer) + region_offset;
}

// Every rank asks the same growth at the same call, the ask made of the call's arguments. Ranks
// that passed different counts may still all grow: they agree on the largest slice asked, so that
// all lay the region alike; where some do not grow at all, the others fail at the bootstrap's
// deadline. Slices grow in powers of two from kMinSliceBytes, so a communicator grows a few times
// at most (docs/ARCHITECTURE.md, "The GPU platform", the window).
xcclResult_t P2pTransport::GrowInboxes(size_t wanted, bool capturing, PlatformFailure* failure) {
  constexpr size_t kMinSliceBytes = size_t{1} << 20;
  size_t slice = kMinSliceBytes;
  while (slice < wanted) slice *= 2;
  slice = std::min(slice, geometry_.inbox_bytes);
  // A slice is a multiple of 256: the low bit carries whether a capture here may address the
  // inboxes, so that every rank keeps its old ones where any rank's graph may write into them.
  std::vector<uint64_t> asked(static_cast<size_t>(topology_.nranks), 0);
  asked[topology_.rank] = slice | (captured_ || capturing ? 1u : 0u);
  xcclResult_t made = bootstrap_->AllGather(asked.data(), sizeof(uint64_t));
  if (made == xcclSuccess) {
    for (uint64_t ask : asked) {
      slice = std::max(slice, static_cast<size_t>(ask & ~uint64_t{1}));
      if (ask & 1) captured_ = true;
    }
    // A call being captured may not allocate, map or free in the default capture mode: the
    // growth runs in the relaxed mode, and the captured work addresses what it made.
    gpuStreamCaptureMode mode = gpuStreamCaptureModeRelaxed;
    if (capturing) (void)gpuThreadExchangeStreamCaptureMode(&mode);
    made = RemakeInboxes(slice, /*keep_old=*/captured_);
    if (capturing) (void)gpuThreadExchangeStreamCaptureMode(&mode);
  }
  if (made != xcclSuccess)
    return SetFailure(failure, made, kNoPeer, "growing the inboxes to %zu bytes per source: %s",
                      slice, ThreadLastError().c_str());
  XCCL_INFO(kLogPlatform, "rank %d: inboxes of %zu bytes per source (%zu in all)", topology_.rank,
            slice_, slice_ * topology_.nranks);
  return xcclSuccess;
}

// The old inboxes go first, so that old and new are never held together where nothing needs the
// old: freeing waits for the device, so this rank's work of earlier calls, and the peers' puts
// into its inboxes that work waited for, are done. Where a captured graph may still address them
// (`keep_old`) they are kept until the transport goes.
xcclResult_t P2pTransport::RemakeInboxes(size_t slice, bool keep_old) {
  if (gpuSetDevice(device_) != gpuSuccess)
    return Fail(xcclUnhandledDeviceError, "cudaSetDevice(%d) failed", device_);
  auto release = [inboxes = inboxes_.TakeRelease(), table = inbox_device_] {
    inboxes();
    if (table != nullptr) (void)gpuFree(table);
  };
  inbox_device_ = nullptr;
  if (keep_old) {
    retired_.push_back(std::move(release));
  } else {
    release();
  }
  slice_ = 0;
  ShowInboxesInView();
  XCCL_TRY(inboxes_.Create(bootstrap_, topology_, device_, slice * topology_.nranks));
  slice_ = slice;
  // A table of its own per growth: captured kernels keep reading the one they were given.
  void** table = nullptr;
  const xcclResult_t uploaded = UploadPointerTable(InboxTable(), &table);
  if (uploaded != xcclSuccess) {
    // The peers made theirs and may put into these before this call's failure reaches them:
    // kept, not freed, until the transport goes.
    slice_ = 0;
    retired_.push_back(inboxes_.TakeRelease());
    return uploaded;
  }
  inbox_device_ = reinterpret_cast<char**>(table);
  ShowInboxesInView();
  return xcclSuccess;
}

void P2pTransport::ShowInboxesInView() {
  view_.inbox_at_peer = inbox_device_;
  view_.own_inbox = inboxes_.at(topology_.rank);
  view_.inbox_bytes = slice_;
}

// This rank's inbox in every peer's region (null for a rank of another node, and before the
// inboxes are made).
std::vector<void*> P2pTransport::InboxTable() const {
  std::vector<void*> table(static_cast<size_t>(topology_.nranks), nullptr);
  for (int r = 0; r < topology_.nranks; ++r)
    if (inboxes_.at(r) != nullptr) table[r] = RegionAtPeer(r, topology_.rank * slice_);
  return table;
}

// The tables kernels load once per launch: every rank's control base, every peer's staging
// area and this rank's inbox in every peer's window.
xcclResult_t P2pTransport::UploadTables() {
  const int nranks = topology_.nranks;
  std::vector<void*> slots(nranks), staging(nranks);
  for (int r = 0; r < nranks; ++r) {
    if (windows_.window(r) == nullptr) continue;  // a rank of another node: not mapped
    slots[r] = windows_.window(r);
    staging[r] = windows_.window(r) + geometry_.control_bytes();
  }
  const std::vector<void*> inboxes = InboxTable();
  void** table = nullptr;
  XCCL_TRY(UploadPointerTable(slots, &table));
  peer_slots_device_ = reinterpret_cast<uint32_t**>(table);
  XCCL_TRY(UploadPointerTable(staging, &table));
  staging_device_ = reinterpret_cast<char**>(table);
  XCCL_TRY(UploadPointerTable(inboxes, &table));
  inbox_device_ = reinterpret_cast<char**>(table);
  return xcclSuccess;
}

// One copy-engine stream per peer, (docs/ARCHITECTURE.md, "The GPU platform"), when this rank has
// its device to itself. Where ranks share a device no queue stream is made: copy-engine work of
// several ranks shares the device's few copy channels, and a rank's copy for its next operation,
// waiting in a channel for that operation's start, holds up another rank's copy for the current
// one, which that start transitively waits for: a deadlock (docs/perf-history.md, "GPU platform on
// one H200, ranks sharing it").
xcclResult_t P2pTransport::CreateQueues() {
  const int nranks = topology_.nranks;
  int count = topology_.RanksOnMyDevice() > 1 ? 0 : nranks - 1;
  if (params_.gpu_queues > 0) count = std::min<int>(nranks - 1, params_.gpu_queues);
  // Across nodes every put and signal runs on the operation's stream: the closing barrier's
  // signals must follow this rank's copies out of its inboxes, and the net endpoint's staging
  // copies and triggers are ordered on it anyway (the queues serve the dma engine, not run here).
  if (topology_.node_count > 1) count = 0;
  return queues_.Create(topology_, count);
}

void P2pTransport::Release() {
  watch_.Close();  // this rank leaves in order: no peer is to count it dead
  if (gpuSetDevice(device_) != gpuSuccess) {
    if (clique_) clique_->Leave(topology_.rank, nullptr);
    clique_.reset();
    return;
  }
  queues_.Destroy();
  // The frees first: cudaFree waits for the device, so no kernel queued on a caller's stream
  // (after an abort they give up at once) still stores into a peer's window when its mapping is
  // closed. Other ranks of this process store into this window too: it goes when the last of
  // them has left (ProcessClique).
  if (clique_) clique_->Enter(topology_.rank, nullptr);  // no abort of a peer reaches it now
  auto release = [device = device_,
                  tables = std::vector<void*>{peer_slots_device_, staging_device_, inbox_device_},
                  inboxes = inboxes_.TakeRelease(), retired = std::move(retired_),
                  windows = windows_.TakeRelease()]() mutable {
    int current = -1;
    const bool restore = gpuGetDevice(&current) == gpuSuccess && current != device;
    if (gpuSetDevice(device) != gpuSuccess) return;
    for (void* table : tables)
      if (table != nullptr) (void)gpuFree(table);
    inboxes();
    for (auto& retired : retired) retired();
    windows();
    if (restore) (void)gpuSetDevice(current);
  };
  peer_slots_device_ = nullptr;
  staging_device_ = nullptr;
  inbox_device_ = nullptr;
  if (clique_) {
    clique_->Leave(topology_.rank, std::move(release));
  } else {
    release();
  }
  clique_.reset();
}

}  // namespace xccl
