// The GPU platform (CUDA and HIP from one source through platform/gpu.h). Each rank owns a
// window of device memory: control slots, then one inbox per source rank. Every rank of the node
// maps every window (the pointer itself for a rank of this process, an IPC handle otherwise).
// Two all_gather engines run over the inboxes:
//  - kernel (the default): one kernel per call pushes chunks into rings in the peers' inboxes
//    and drains its own, with never-reset counters for flow control (pipelined_all_gather.h);
//  - dma (XCCL_ALLGATHER_ALGO=dma, ranks with a device of their own): pieces go into the peers'
//    inboxes on copy engines (one non-blocking stream per peer), each followed on the same
//    stream by a 4-byte copy of the sender's device epoch into the peer's arrival slot; the
//    receiver waits in a kernel against its own device epoch, copies the pieces out, and a
//    closing barrier keeps a rank one operation ahead from writing an inbox still being read.
// Nothing waits on the host inside a call.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "collectives/device_kernels.h"
#include "collectives/kernel_all_gather.h"
#include "collectives/ll_all_gather.h"
#include "collectives/pipelined_all_gather.h"
#include "core/error.h"
#include "core/failure.h"
#include "core/logging.h"
#include "core/params.h"
#include "core/topology.h"
#include "platform/gpu.h"
#include "platform/gpu/gpu_call.h"
#include "platform/platform.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/bootstrap/verdicts.h"
#include "transport/connection.h"
#include "transport/p2p/copy_engine_queues.h"
#include "transport/p2p/device_windows.h"
#include "transport/p2p/peer_map.h"

namespace xccl {

namespace {

// Control slots: ControlLayout's, then the pipelined all_gather's ring counters.
constexpr size_t kSlotsBytes = 32768;
static_assert(PipelineSlots::kEnd * sizeof(uint32_t) <= kSlotsBytes, "ring counters fit");
static_assert(LlLayout::kEndCounter * sizeof(uint32_t) <= kSlotsBytes, "LL call counters fit");

class GpuPlatform final : public Platform {
 public:
  GpuPlatform(const Topology& topology, const Params& params, int device, int64_t timeout_ms)
      : topology_(topology), params_(params), device_(device), timeout_ms_(timeout_ms) {}

  ~GpuPlatform() override { Release(); }

  xcclResult_t Init(Bootstrap* bootstrap) {
    const int nranks = topology_.nranks;
    XCCL_TRY(RequireOneNode(topology_, (std::string("the ") + name() + " platform").c_str()));
    XCCL_GPU_TRY(gpuSetDevice(device_));
    XCCL_GPU_TRY(PreloadKernels());
    const Params& params = params_;
    const int max_ranks = std::min(kMaxWatchedRanks, PipelineSlots::kMaxRanks);
    if (nranks > max_ranks)
      return Fail(xcclInvalidUsage, "the GPU platform supports at most %d ranks, not %d", max_ranks,
                  nranks);
    if (ControlLayout::SlotCount(nranks) > PipelineSlots::kFirst)
      return Fail(xcclInvalidUsage, "%d ranks exceed the GPU control area", nranks);
    inbox_bytes_ = static_cast<size_t>(params.window_bytes) / nranks / 256 * 256;
    XCCL_TRY(TuneKernelAllGather(params, nranks, inbox_bytes_, &tuning_));
    // The window: control slots and the LL region (set to the epoch base, which no first flag
    // equals), then the inboxes.
    slots_bytes_ = kSlotsBytes + LlLayout::RegionBytes(nranks);
    XCCL_TRY(windows_.Create(bootstrap, topology_, device_, slots_bytes_, inbox_bytes_ * nranks,
                             params.epoch_base));
    const xcclResult_t uploaded = UploadTables();
    int failed = -1;
    XCCL_TRY(ExchangeVerdicts(bootstrap, uploaded == xcclSuccess, &failed));
    XCCL_TRY(uploaded);
    if (failed >= 0)
      return Fail(xcclRemoteError, "rank %d could not set up its GPU device tables", failed);
    XCCL_TRY(CreateQueues());
    return xcclSuccess;
  }

  int default_compute_streams() const override { return 2; }
  const char* name() const override {
#if defined(XCCL_PLATFORM_HIP)
    return "hip";
#else
    return "cuda";
#endif
  }
  // The copy-engine streams of this rank; 0 where ranks share its device.
  int queue_count() const override { return queues_.count(); }

  // The kernel engine's barrier advances the epoch itself; the dma engine's operations are
  // queued ones.
  void BeginOperation(xcclStream_t stream) override { Begin(stream, /*queued=*/dma_engine_); }

  // The dma engine's end of an operation: the queues join the caller's stream, then a closing
  // barrier (on the operation's epoch) makes sure every rank has copied its inboxes out before
  // any rank's next operation writes them.
  xcclResult_t EndOperation(uint32_t /*epoch*/, const Deadline& /*deadline*/,
                            PlatformFailure* failure) override {
    Check(queues_.Join(), "queue join");
    LaunchBarrierStep(/*advance_epoch=*/false, "closing barrier kernel");
    return TakeLaunchFailure(failure);
  }

  bool direct_puts() const override { return false; }
  void PublishRecvBuffer(uint32_t, void*, size_t, size_t) override {}
  void EnqueuePut(int, uint32_t, const void*, size_t, size_t, int) override {}
  xcclResult_t PutFromCaller(int, uint32_t, const void*, size_t, size_t, int,
                             PlatformFailure* failure) override {
    return SetFailure(failure, xcclInternalError, kNoPeer,
                      "direct puts are not available on the GPU platform");
  }

  bool pipelined_all_gather() const override { return !dma_engine_; }

  xcclResult_t PipelinedAllGather(const void* send, void* recv, size_t bytes, xcclStream_t stream,
                                  PlatformFailure* failure) override {
    BeginOperation(stream);
    KernelAllGatherWindows windows;
    windows.rank = topology_.rank;
    windows.nranks = topology_.nranks;
    windows.inbox_at_peer = put_dsts_device_;
    windows.peer_slots = peer_slots_device_;
    windows.ll_region_at_peer = ll_regions_device_;
    windows.own_ll_region = static_cast<const char*>(windows_.window(topology_.rank)) + kSlotsBytes;
    windows.own_inbox = static_cast<const char*>(windows_.window(topology_.rank)) + slots_bytes_;
    windows.inbox_bytes = inbox_bytes_;
    windows.own_slots = Slots(topology_.rank);
    windows.timeout_ns = TimeoutNs();
    windows.record = windows_.record_device();
    Check(LaunchKernelAllGather(tuning_, windows, send, recv, bytes, stream_), "all_gather kernel");
    return TakeLaunchFailure(failure);
  }

  size_t inbox_limit() const override { return inbox_bytes_; }

  // The dma engine's put: this rank's piece into peer's inbox on the peer's copy-engine queue,
  // then the flag.
  void InboxPut(int peer, uint32_t /*epoch*/, const void* src, size_t bytes,
                int signal_slot) override {
    char* inbox = windows_.window(peer) + slots_bytes_ + topology_.rank * inbox_bytes_;
    QueuePut(peer, inbox, src, bytes, signal_slot);
  }

  void BeginWindowOperation(uint32_t /*epoch: the device's*/, void* /*local: mapped at create*/,
                            size_t /*bytes*/, xcclStream_t stream) override {
    Begin(stream, /*queued=*/true);
  }

  void WindowPut(int peer, uint32_t /*epoch*/, void* peer_buffer, size_t offset, const void* src,
                 size_t bytes, int signal_slot) override {
    QueuePut(peer, static_cast<char*>(peer_buffer) + offset, src, bytes, signal_slot);
  }

  // A one-thread wait kernel on `stream` against the device epoch (read when it runs, so a
  // replayed graph waits for the replay's flags).
  xcclResult_t WindowWait(int slot, uint32_t /*epoch*/, int peer, const char* /*what*/,
                          const Deadline& /*deadline: the kernel's own, XCCL_TIMEOUT_MS*/,
                          xcclStream_t stream, PlatformFailure* /*failure*/) override {
    const int rank = topology_.rank;
    Check(LaunchWaitSlot(Slots(rank) + slot, peer, Slots(rank) + ControlLayout::kDeviceEpoch,
                         TimeoutNs(), windows_.record_device(), static_cast<gpuStream_t>(stream)),
          "wait kernel");
    return xcclSuccess;
  }

  // On peer's queue (the caller's stream where there are none): the data, then the flag, a
  // copy of this rank's device epoch as the device holds it then (no value is baked into the
  // call, so a graph replay signals the replay's epoch).
  void QueuePut(int peer, void* dst, const void* src, size_t bytes, int signal_slot) {
    gpuStream_t queue = nullptr;
    Check(queues_.StreamFor(peer, &queue), "stream wait (fork)");
    if (bytes > 0) Check(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyQueueKind, queue), "put");
    if (signal_slot == ControlLayout::kNoSignal) return;
    Check(gpuMemcpyAsync(Slots(peer) + signal_slot,
                         Slots(topology_.rank) + ControlLayout::kDeviceEpoch, sizeof(uint32_t),
                         gpuMemcpyDeviceToDevice, queue),
          "signal");
  }

  const volatile uint32_t* DeviceSlot(int slot) const override {
    return Slots(topology_.rank) + slot;
  }
  const volatile uint32_t* DeviceEpoch() const override {
    return Slots(topology_.rank) + ControlLayout::kDeviceEpoch;
  }

  xcclResult_t MapPeerBuffers(Bootstrap* bootstrap, void* local, std::vector<void*>* peers,
                              std::vector<bool>* opened) override {
    PeerBuffers mapped;
    XCCL_TRY(xccl::MapPeerBuffers(bootstrap, topology_, device_, local,
                                  /*enable_peer_access: done at init*/ false, "ag_gemm window",
                                  &mapped));
    *peers = mapped.at;
    *opened = mapped.opened;
    return xcclSuccess;
  }

  const void* Inbox(uint32_t /*epoch*/, int src) const override {
    return static_cast<const char*>(windows_.window(topology_.rank)) + slots_bytes_ +
           src * inbox_bytes_;
  }

  void LocalCopy(void* dst, const void* src, size_t bytes) override {
    if (bytes > 0)
      Check(gpuMemcpyAsync(dst, src, bytes, gpuMemcpyDeviceToDevice, stream_), "local copy");
  }

  xcclResult_t WaitArrivals(uint32_t /*epoch*/, const Deadline& /*deadline*/,
                            const std::function<void(int)>& on_arrival,
                            PlatformFailure* failure) override {
    const int rank = topology_.rank, nranks = topology_.nranks;
    Check(LaunchWaitSlots(Slots(rank), ControlLayout::Arrival(0), nranks, rank,
                          Slots(rank) + ControlLayout::kDeviceEpoch, TimeoutNs(),
                          windows_.record_device(), stream_),
          "wait kernel");
    for (int step = 1; step < nranks; ++step) on_arrival((rank - step + nranks) % nranks);
    return TakeLaunchFailure(failure);
  }

  // One kernel: with the kernel engine it also advances the epoch (BeginOperation did for dma).
  xcclResult_t Barrier(uint32_t /*epoch*/, const Deadline& /*deadline*/,
                       PlatformFailure* failure) override {
    LaunchBarrierStep(/*advance_epoch=*/!dma_engine_, "barrier kernel");
    return TakeLaunchFailure(failure);
  }

  xcclResult_t PollAsyncFailure(PlatformFailure* failure) override {
    return windows_.PollAsyncFailure(topology_, timeout_ms_, failure);
  }

  void Abort(int /*failed_peer*/) override { windows_.Abort(); }

 private:
  // An operation on `stream`; a queued one also advances the device epoch on the stream and
  // records the event the DMA queues fork from (QueuePut waits for it).
  void Begin(xcclStream_t stream, bool queued) {
    stream_ = static_cast<gpuStream_t>(stream);
    queues_.Begin(stream_);
    Check(gpuSetDevice(device_), "cudaSetDevice");
    if (!queued) return;
    Check(LaunchAdvanceEpoch(Slots(topology_.rank) + ControlLayout::kDeviceEpoch, stream_),
          "advance-epoch kernel");
    Check(queues_.MarkFork(), "event record (fork)");
  }

  uint64_t TimeoutNs() const { return static_cast<uint64_t>(timeout_ms_) * 1000000ull; }

  void LaunchBarrierStep(bool advance_epoch, const char* what) {
    const int rank = topology_.rank, nranks = topology_.nranks;
    Check(LaunchBarrier(peer_slots_device_, ControlLayout::BarrierFrom(rank, nranks), Slots(rank),
                        ControlLayout::BarrierFrom(0, nranks), rank, nranks,
                        Slots(rank) + ControlLayout::kDeviceEpoch, advance_epoch, TimeoutNs(),
                        windows_.record_device(), stream_),
          what);
  }

  // A rank's control slots as mapped in this process.
  uint32_t* Slots(int rank) const { return windows_.slots(rank); }

  // Launch-time failures of the runtime are kept until the operation reports them.
  void Check(gpuError_t err, const char* what) {
    if (err != gpuSuccess && launch_error_.empty())
      launch_error_ = std::string(what) + ": " + gpuGetErrorString(err);
  }

  xcclResult_t TakeLaunchFailure(PlatformFailure* failure) {
    if (launch_error_.empty()) return xcclSuccess;
    const xcclResult_t result =
        SetFailure(failure, xcclUnhandledDeviceError, topology_.rank, "%s", launch_error_.c_str());
    launch_error_.clear();
    return result;
  }

  // The tables kernels load once per launch: every rank's control base, every peer's LL region
  // (where this rank's small blocks go) and this rank's inbox in every peer's window.
  xcclResult_t UploadTables() {
    const int nranks = topology_.nranks;
    std::vector<void*> slots(nranks), regions(nranks), dsts(nranks);
    for (int r = 0; r < nranks; ++r) {
      char* window = windows_.window(r);
      slots[r] = window;
      regions[r] = window + kSlotsBytes;
      dsts[r] = window + slots_bytes_ + topology_.rank * inbox_bytes_;
    }
    void** table = nullptr;
    XCCL_TRY(UploadPointerTable(slots, &table));
    peer_slots_device_ = reinterpret_cast<uint32_t**>(table);
    XCCL_TRY(UploadPointerTable(regions, &table));
    ll_regions_device_ = reinterpret_cast<char**>(table);
    XCCL_TRY(UploadPointerTable(dsts, &table));
    put_dsts_device_ = reinterpret_cast<char**>(table);
    return xcclSuccess;
  }

  // One copy-engine stream per peer, as DESIGN.md asks, when this rank has its device to
  // itself. Where ranks share a device no queue stream is made: copy-engine work of several
  // ranks shares the device's few copy channels, and a rank's copy for its next operation,
  // waiting in a channel for that operation's start, holds up another rank's copy for the
  // current one, which that start transitively waits for: a deadlock (docs/perf-history.md,
  // "GPU platform on one H200, ranks sharing it").
  // The all_gather engine is the same on every rank: dma only when XCCL_ALLGATHER_ALGO=dma asks
  // for it and no device of the communicator is shared; the kernel engine otherwise (it beat
  // the copy engines at every size measured, docs/PERF.md).
  xcclResult_t CreateQueues() {
    const int nranks = topology_.nranks;
    const bool any_shared = topology_.AnyDeviceShared();
    int count = topology_.RanksOnMyDevice() > 1 ? 0 : nranks - 1;
    if (params_.gpu_queues > 0) count = std::min<int>(nranks - 1, params_.gpu_queues);
    const std::string& algo = params_.allgather_algo;
    dma_engine_ = algo == "dma" && !any_shared && count > 0;
    if (algo == "dma" && !dma_engine_ && topology_.rank == 0)
      XCCL_WARN(kLogInit,
                "XCCL_ALLGATHER_ALGO=dma: ranks share a GPU (their copy engines can deadlock "
                "each other), so the kernel engine runs instead");
    return queues_.Create(topology_, count);
  }

  void Release() {
    if (gpuSetDevice(device_) != gpuSuccess) return;
    queues_.Destroy();
    // The frees first: cudaFree waits for the device, so no kernel queued on a caller's stream
    // (after an abort they give up at once) still stores into a peer's window when its mapping
    // is closed below.
    if (peer_slots_device_ != nullptr) (void)gpuFree(peer_slots_device_);
    if (ll_regions_device_ != nullptr) (void)gpuFree(ll_regions_device_);
    if (put_dsts_device_ != nullptr) (void)gpuFree(put_dsts_device_);
    windows_.Release();
  }

  Topology topology_;
  Params params_;
  int device_;
  int64_t timeout_ms_;
  size_t slots_bytes_ = 0;  // control slots and the LL region: where the inboxes start
  size_t inbox_bytes_ = 0;
  DeviceWindows windows_;  // every rank's window, as this process addresses it
  uint32_t** peer_slots_device_ = nullptr;
  char** ll_regions_device_ = nullptr;  // [peer] -> its LL region
  char** put_dsts_device_ = nullptr;
  bool dma_engine_ = false;       // all_gather over the copy-engine queues (see CreateQueues)
  KernelAllGatherTuning tuning_;  // the kernel engine's lanes, ring slots and LL size
  CopyEngineQueues queues_;       // this rank's DMA queues
  gpuStream_t stream_ = nullptr;
  std::string launch_error_;
};

}  // namespace

xcclResult_t DefaultDevice(int index, int* device) {
  if (index < 0) {
    XCCL_GPU_TRY(gpuGetDevice(device));
    return xcclSuccess;
  }
  int count = 0;
  XCCL_GPU_TRY(gpuGetDeviceCount(&count));
  if (count <= 0) return Fail(xcclUnhandledDeviceError, "no GPU is visible");
  *device = index % count;
  return xcclSuccess;
}

namespace {

// Ranks of one process sharing a GPU share its context. Under CUDA's lazy module loading (the
// default since CUDA 12.2) a kernel's first launch may load its module and wait for the whole
// context; if another library's kernel (a GEMM, say) is first launched between xccl calls, that
// wait stalls behind a peer's xccl kernel that waits for this rank's next launch, until the
// device-side deadline. xccl loads its own kernels at init; the rest need
// CUDA_MODULE_LOADING=EAGER (or their kernels loaded up front). Said once per process.
void WarnAboutLazyLoading(bool shared_in_process) {
#if !defined(XCCL_PLATFORM_HIP)
  static std::atomic<bool> warned{false};
  const char* mode = getenv("CUDA_MODULE_LOADING");
  if (!shared_in_process || (mode != nullptr && strcmp(mode, "EAGER") == 0) ||
      warned.exchange(true))
    return;
  XCCL_WARN(kLogInit,
            "ranks of this process share a GPU under lazy module loading: another library's "
            "kernel first launched between xccl calls can stall them until the timeout; set "
            "CUDA_MODULE_LOADING=EAGER");
#else
  (void)shared_in_process;
#endif
}

// Where ranks of one process share a GPU, their streams share the runtime's hardware queues
// (CUDA_DEVICE_MAX_CONNECTIONS, 8 unless set before the first CUDA call): a rank's kernel that
// waits for a peer can then hold up the peer's kernel queued behind it. The variable is the
// user's to set (xccl sets no other library's variables): a warning, once per process.
void WarnAboutHardwareQueues(bool shared_in_process) {
#if !defined(XCCL_PLATFORM_HIP)
  static std::atomic<bool> warned{false};
  const char* value = getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  if (!shared_in_process || (value != nullptr && atoi(value) >= 32) || warned.exchange(true))
    return;
  XCCL_WARN(kLogInit,
            "ranks of this process share a GPU with CUDA_DEVICE_MAX_CONNECTIONS=%s: their "
            "streams share hardware queues, where a waiting kernel can stall a peer's; set "
            "CUDA_DEVICE_MAX_CONNECTIONS=32 before the first CUDA call",
            value != nullptr ? value : "8 (unset)");
#else
  (void)shared_in_process;
#endif
}

}  // namespace

xcclResult_t CreatePlatform(Bootstrap* bootstrap, const Topology& topology, const Params& params,
                            int64_t timeout_ms, std::unique_ptr<Platform>* out) {
  const int device = topology.ranks[topology.rank].device;
  auto platform = std::make_unique<GpuPlatform>(topology, params, device, timeout_ms);
  XCCL_TRY(platform->Init(bootstrap));
  const int sharing = topology.RanksOnMyDevice();
  WarnAboutLazyLoading(topology.SharesDeviceInProcess());
  WarnAboutHardwareQueues(topology.SharesDeviceInProcess());
  LogTransports(topology, /*device_memory=*/true);
  XCCL_INFO(kLogInit,
            "rank %d: %s platform, device %d%s, %d DMA queues (copy-engine streams), all_gather "
            "engine %s",
            topology.rank, platform->name(), device,
            sharing > 1 ? " (shared with other ranks: allowed, unlike NCCL)" : "",
            platform->queue_count(), platform->pipelined_all_gather() ? "kernel" : "dma");
  *out = std::move(platform);
  return xcclSuccess;
}

}  // namespace xccl
