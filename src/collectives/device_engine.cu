#include <algorithm>
#include <string>
#include <vector>

#include "base/error.h"
#include "base/logging.h"
#include "collectives/all_gather/kernel_all_gather.h"
#include "collectives/all_gather/ll_all_gather.h"
#include "collectives/all_gather/pipelined_all_gather.h"
#include "collectives/barrier/barrier_kernel.h"
#include "collectives/barrier/barrier_slots.h"
#include "collectives/device_engine.h"
#include "platform/gpu/gpu_call.h"
#include "transport/p2p/device_signals.h"

namespace xccl {

namespace {

xcclResult_t LaunchFailure(gpuError_t err, int rank, const char* what, PlatformFailure* failure) {
  if (err == gpuSuccess) return xcclSuccess;
  return SetFailure(failure, xcclUnhandledDeviceError, rank, "%s: %s", what,
                    gpuGetErrorString(err));
}

class KernelEngines final : public DeviceEngine {
 public:
  KernelEngines(const KernelAllGatherTuning& tuning, const KernelAllGatherSlots& all_gather_slots,
                const SlotRange& barrier_slots, bool kernel_all_gather, bool spans_nodes)
      : tuning_(tuning),
        all_gather_slots_(all_gather_slots),
        barrier_slots_(barrier_slots),
        kernel_all_gather_(kernel_all_gather),
        spans_nodes_(spans_nodes) {}

  bool kernel_all_gather() const override { return kernel_all_gather_; }

  xcclResult_t AllGather(Transport& transport, const void* send, void* recv, size_t bytes,
                         char* const* direct_at, xcclStream_t stream,
                         PlatformFailure* failure) override {
    XCCL_TRY(transport.BeginOperation(stream, /*queued=*/false, failure));
    const DeviceView& view = *transport.device_view();
    return LaunchFailure(LaunchKernelAllGather(tuning_, all_gather_slots_, view, send, recv, bytes,
                                               direct_at, static_cast<gpuStream_t>(stream)),
                         view.rank, "all_gather kernel", failure);
  }

  xcclResult_t Barrier(Transport& transport, bool advance_epoch, xcclStream_t stream,
                       PlatformFailure* failure) override {
    if (spans_nodes_) return BarrierAcrossNodes(transport, advance_epoch, stream, failure);
    const DeviceView& view = *transport.device_view();
    return LaunchFailure(
        LaunchBarrier(view, barrier_slots_.first, advance_epoch, static_cast<gpuStream_t>(stream)),
        view.rank, advance_epoch ? "barrier kernel" : "closing barrier kernel", failure);
  }

 private:
  // The barrier kernel stores into every peer's window, which ranks of other nodes do not map:
  // here the epoch advances first, then every peer gets a signal on its connection (a 4-byte
  // copy of the device epoch for a rank of this node, a net op through the proxy for another),
  // all on `stream` after what the operation enqueued before (a closing barrier so follows the
  // copies out of the inboxes), then one device wait for every peer. Signals before waits: a net
  // signal is a trigger kernel behind them on the stream, which a waiting kernel ahead would hold
  // back.
  xcclResult_t BarrierAcrossNodes(Transport& transport, bool advance_epoch, xcclStream_t stream,
                                  PlatformFailure* failure) {
    const DeviceView& view = *transport.device_view();
    const int rank = view.rank, nranks = view.nranks;
    const gpuStream_t s = static_cast<gpuStream_t>(stream);
    if (advance_epoch)
      XCCL_TRY(LaunchFailure(LaunchAdvanceEpoch(view.device_epoch, s), rank, "advance-epoch kernel",
                             failure));
    for (int step = 1; step < nranks; ++step)
      transport.connection((rank + step) % nranks)
          .Signal(barrier_slots_.at(rank), /*epoch: the device's*/ 0);
    const Deadline unused(0);  // device waits carry their own deadline
    std::vector<int> raiser(nranks);
    for (int peer = 0; peer < nranks; ++peer) raiser[peer] = peer;
    XCCL_TRY(transport.WaitSlotsRaisedBy(barrier_slots_.first, 0, raiser, "barrier", unused, stream,
                                         failure));
    // Launch failures of the signals.
    return transport.Flush(unused, failure);
  }

  KernelAllGatherTuning tuning_;  // lanes, ring slots and the LL size
  KernelAllGatherSlots all_gather_slots_;
  SlotRange barrier_slots_;
  bool kernel_all_gather_;
  bool spans_nodes_;
};

gpuError_t PreloadCollectiveKernels() {
  gpuError_t err = PreloadBarrierKernel();
  if (err == gpuSuccess) err = PreloadPipelinedAllGather();
  return err != gpuSuccess ? err : PreloadLlAllGather();
}

}  // namespace

xcclResult_t PlanDeviceWindow(const Params& params, const Topology& topology, SlotMap* slots,
                              WindowGeometry* geometry) {
  const int nranks = topology.nranks;
  const int max_ranks = std::min(kMaxWatchedRanks, PipelineSlots::kMaxRanks);
  if (nranks > max_ranks)
    return Fail(xcclInvalidUsage, "the GPU platforms support at most %d ranks, not %d", max_ranks,
                nranks);
  XCCL_TRY(ReserveKernelAllGatherSlots(slots));
  WindowGeometry g;
  g.staging_bytes = LlLayout::RegionBytes(nranks);
  g.inbox_bytes = static_cast<size_t>(params.window_bytes) / nranks / 256 * 256;
  KernelAllGatherTuning tuning;  // fails here, before any allocation, where the inbox is too small
  XCCL_TRY(
      TuneKernelAllGather(params, nranks, topology.MostRanksOnOneDevice(), g.inbox_bytes, &tuning));
  *geometry = g;
  return xcclSuccess;
}

// The all_gather engine: dma only when XCCL_ALLGATHER_ALGO=dma asks for it, the rank has
// copy-engine queues and no device of the communicator is shared; the kernel engine otherwise
// (it beat the copy engines at every size measured, docs/PERF.md).
xcclResult_t CreateDeviceEngine(const Params& params, const Topology& topology,
                                const WindowGeometry& geometry, const SlotMap& slots,
                                const Transport& transport, std::unique_ptr<DeviceEngine>* out) {
  XCCL_GPU_TRY(PreloadCollectiveKernels());
  KernelAllGatherSlots all_gather_slots;
  SlotRange barrier_slots;
  XCCL_TRY(FindKernelAllGatherSlots(slots, &all_gather_slots));
  XCCL_TRY(FindBarrierSlots(slots, &barrier_slots));
  KernelAllGatherTuning tuning;
  XCCL_TRY(TuneKernelAllGather(params, topology.nranks, topology.MostRanksOnOneDevice(),
                               geometry.inbox_bytes, &tuning));
  const bool asked_dma = params.allgather_algo == "dma";
  const bool dma = asked_dma && !topology.AnyDeviceShared() && transport.queue_count() > 0;
  // Across nodes the kernels cannot reach the ranks of other nodes: all_gather goes through the
  // inboxes (queued puts, the net ones through the proxy) and the barrier through connections.
  const bool spans_nodes = topology.node_count > 1;
  if (asked_dma && !dma && !spans_nodes && topology.rank == 0)
    XCCL_WARN(kLogInit,
              "XCCL_ALLGATHER_ALGO=dma: ranks share a GPU (their copy engines can deadlock each "
              "other), so the kernel engine runs instead");
  XCCL_INFO(kLogInit, "rank %d: all_gather engine %s", topology.rank,
            spans_nodes ? "inboxes across nodes"
            : dma       ? "dma"
                        : "kernel");
  *out = std::make_unique<KernelEngines>(tuning, all_gather_slots, barrier_slots,
                                         !dma && !spans_nodes, spans_nodes);
  return xcclSuccess;
}

}  // namespace xccl
