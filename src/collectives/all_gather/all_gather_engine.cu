#include <string>

#include "base/error.h"
#include "base/logging.h"
#include "collectives/all_gather/all_gather_engine.h"
#include "collectives/all_gather/kernel_all_gather.h"
#include "collectives/all_gather/ll_all_gather.h"
#include "collectives/all_gather/pipelined_all_gather.h"
#include "collectives/launch_failure.h"
#include "platform/gpu/gpu_call.h"

namespace xccl {

namespace {

class KernelAllGatherEngine final : public AllGatherEngine {
 public:
  KernelAllGatherEngine(const KernelAllGatherTuning& tuning, const KernelAllGatherSlots& slots,
                        bool kernel)
      : tuning_(tuning), slots_(slots), kernel_(kernel) {}

  bool kernel() const override { return kernel_; }
  size_t RegionBytes(size_t bytes, const GatherTail& tail) const override {
    // Whether a block takes a ring depends on where the peers' buffers are; the ranks would not
    // agree on that, so every call past the LL path asks for the rings.
    if (tail.bytes == 0 && bytes <= tuning_.ll_bytes) return 0;
    return static_cast<size_t>(tuning_.lanes) * tuning_.slots_per_lane * tuning_.chunk_max;
  }

  xcclResult_t Run(Transport& transport, const void* send, void* recv, size_t bytes,
                   const GatherTail& tail, char* const* direct_at, xcclStream_t stream,
                   PlatformFailure* failure) override {
    XCCL_TRY(transport.BeginOperation(stream, /*queued=*/false, failure));
    const DeviceView& view = *transport.device_view();
    // Only a communicator whose every call is in place carves no inbox (device_engine.cu).
    if (tuning_.slots_per_lane == 0 &&
        KernelAllGatherNeedsRings(tuning_, view, recv, bytes, tail, direct_at))
      return SetFailure(failure, xcclInternalError, kNoPeer,
                        "rank %d: a block of this all_gather cannot be written in place, and the "
                        "communicator has no inboxes to take it",
                        view.rank);
    return LaunchFailure(LaunchKernelAllGather(tuning_, slots_, view, send, recv, bytes, tail,
                                               direct_at, static_cast<gpuStream_t>(stream)),
                         view.rank, "all_gather kernel", failure);
  }

 private:
  KernelAllGatherTuning tuning_;  // lanes, ring slots and the LL size
  KernelAllGatherSlots slots_;
  bool kernel_;
};

}  // namespace

xcclResult_t PlanAllGatherWindow(const Params& params, const Topology& topology, bool inboxes,
                                 SlotMap* slots, WindowGeometry* geometry) {
  const int nranks = topology.nranks;
  if (nranks > PipelineSlots::kMaxRanks)
    return Fail(xcclInvalidUsage, "the GPU all_gather engine supports at most %d ranks, not %d",
                PipelineSlots::kMaxRanks, nranks);
  XCCL_TRY(ReserveKernelAllGatherSlots(slots));
  geometry->staging_bytes = LlLayout::RegionBytes(nranks);
  geometry->inbox_bytes =
      inboxes ? static_cast<size_t>(params.window_bytes) / nranks / 256 * 256 : 0;
  KernelAllGatherTuning tuning;  // fails here, before any allocation, where the inbox is too small
  return TuneKernelAllGather(params, nranks, topology.MostRanksOnOneDevice(), geometry->inbox_bytes,
                             &tuning);
}

// dma only when XCCL_ALLGATHER_ALGO=dma asks for it, the rank has copy-engine queues and no device
// of the communicator is shared; the kernel engine otherwise (it beat the copy engines at every
// size measured, docs/PERF.md).
xcclResult_t CreateAllGatherEngine(const Params& params, const Topology& topology,
                                   const WindowGeometry& geometry, const SlotMap& slots,
                                   const Transport& transport,
                                   std::unique_ptr<AllGatherEngine>* out) {
  XCCL_GPU_TRY(PreloadPipelinedAllGather());
  XCCL_GPU_TRY(PreloadLlAllGather());
  KernelAllGatherSlots kernel_slots;
  XCCL_TRY(FindKernelAllGatherSlots(slots, &kernel_slots));
  KernelAllGatherTuning tuning;
  XCCL_TRY(TuneKernelAllGather(params, topology.nranks, topology.MostRanksOnOneDevice(),
                               geometry.inbox_bytes, &tuning));
  const bool asked_dma = params.allgather_algo == "dma";
  const bool dma = asked_dma && !topology.AnyDeviceShared() && transport.queue_count() > 0;
  // Across nodes the kernels cannot reach the ranks of other nodes: calls go through the inboxes
  // (queued puts, the net ones through the proxy).
  const bool spans_nodes = topology.node_count > 1;
  if (asked_dma && !dma && !spans_nodes && topology.rank == 0)
    XCCL_WARN(kLogInit,
              "XCCL_ALLGATHER_ALGO=dma: ranks share a GPU (their copy engines can deadlock each "
              "other), so the kernel engine runs instead");
  XCCL_INFO(kLogInit, "rank %d: all_gather engine %s", topology.rank,
            spans_nodes ? "inboxes across nodes"
            : dma       ? "dma"
                        : "kernel");
  *out = std::make_unique<KernelAllGatherEngine>(tuning, kernel_slots, !dma && !spans_nodes);
  return xcclSuccess;
}

}  // namespace xccl
