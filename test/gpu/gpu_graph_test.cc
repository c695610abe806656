// An all_gather and a barrier captured into a CUDA/HIP graph on every rank and replayed many
// times. The epoch of each replay must come from device memory (docs/ARCHITECTURE.md, "Control
// window and epochs"): a value baked in at capture would make the second replay wait for a past
// epoch (passing at once, with stale data) or for one that never comes. Fresh data goes in before
// every replay and every replay's output is copied out and checked; a capture may also be the call
// that grows the inboxes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <vector>

#include "gpu/gpu_harness.h"
#include "mp/data_pattern.h"

namespace xccl_test {
namespace {

// `count` float32 elements per rank in the captured all_gather, replayed `replays` times; the
// ordinary call before the capture gathers `count_before`.
void CaptureAndReplay(RankContext& ctx, size_t count, size_t count_before, int replays) {
  constexpr uint64_t kFirstReplayCall = 1000;  // data ids of the replays
  constexpr int kPhaseSlot = 0;                // ctx.shared slot of the host barrier
  const size_t block = count * 4;
  const size_t total = block * ctx.nranks;
  Stream stream;
  DeviceBuffer send, recv;
  HostBytes host_send(block * replays), host_recv(total * replays);
  if (!stream.Create(ctx) || !send.Allocate(ctx, block) || !recv.Allocate(ctx, total)) return;
  for (int i = 0; i < replays; ++i)
    FillBlock(host_send.data() + i * block, block, ctx.seed, ctx.rank, kFirstReplayCall + i);

  // An ordinary call first, so that the graph is captured at an epoch other than the first.
  CheckedAllGather(ctx, stream, count_before, xcclFloat32, false, 0, 0);
  if (!ctx.failures.empty()) return;

  gpu::GraphHandle graph = nullptr;
  if (!GPU_OK(ctx, gpu::StreamBeginCaptureThreadLocal(stream.get()))) return;
  bool captured = XCCL_OK(
      ctx, xcclAllGather(send.get(), recv.get(), count, xcclFloat32, ctx.comm, stream.xccl()));
  captured = captured && XCCL_OK(ctx, xcclBarrier(ctx.comm, stream.xccl()));
  // End the capture whatever happened, so the stream leaves capture mode.
  captured = GPU_OK(ctx, gpu::StreamEndCapture(stream.get(), &graph)) && captured;
  // Every rank has captured before any instantiates, and instantiated before any replays:
  // the phases of a framework that captures a whole step on every rank, then runs it.
  if (!HostBarrier(ctx, kPhaseSlot, 0)) return;
  gpu::GraphExecHandle exec = nullptr;
  if (captured) captured = GPU_OK(ctx, gpu::GraphInstantiate(&exec, graph));
  if (!HostBarrier(ctx, kPhaseSlot, 1) || !captured) {
    if (exec != nullptr) (void)gpu::GraphExecDestroy(exec);
    if (graph != nullptr) (void)gpu::GraphDestroy(graph);
    return;
  }

  // No host synchronisation between replays: poison, fresh data, replay, copy out, all
  // stream-ordered; one rank held back on the host before each launch.
  for (int i = 0; i < replays; ++i) {
    if (i % ctx.nranks == ctx.rank) usleep(200);
    if (!GPU_OK(ctx, gpu::MemsetAsync(recv.get(), kPoisonByte, total, stream.get())) ||
        !GPU_OK(ctx,
                gpu::MemcpyAsync(send.get(), host_send.data() + i * block, block, stream.get())) ||
        !GPU_OK(ctx, gpu::GraphLaunch(exec, stream.get())) ||
        !GPU_OK(ctx,
                gpu::MemcpyAsync(host_recv.data() + i * total, recv.get(), total, stream.get()))) {
      ctx.Fail("replay " + std::to_string(i) + " could not be enqueued; later ones not made");
      break;
    }
  }
  GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
  ExpectNoAsyncError(ctx, "after the replays");
  (void)gpu::GraphExecDestroy(exec);
  (void)gpu::GraphDestroy(graph);
  if (!ctx.failures.empty()) return;
  for (int i = 0; i < replays; ++i) {
    std::string wrong = CheckGathered(host_recv.data() + i * total, block, ctx.nranks, ctx.seed,
                                      kFirstReplayCall + i, 4);
    RANK_EXPECT(ctx, wrong.empty(), "replay " << i << ": " << wrong);
    if (ctx.failures.size() > 4) return;
  }

  // Ordinary calls still agree with the replays on the epoch.
  CheckedAllGather(ctx, stream, count, xcclFloat32, true, 0, 2000);
  CheckedAllGather(ctx, stream, 3, xcclUint8, false, 1, 2001);
}

class GpuGraphTest : public GpuWorldTest {};

// 1031 elements: an odd size on the LL path.
TEST_P(GpuGraphTest, CapturedAllGatherAndBarrierReplayWithFreshData) {
  Run([](RankContext& ctx) { CaptureAndReplay(ctx, 1031, 1031, 100); });
}

// Past the LL path after an ordinary call on it: where blocks go through the inboxes (processes,
// XCCL_ZERO_COPY=0), the captured call is the first to need them and grows them during the
// capture (docs/ARCHITECTURE.md, "The GPU platform", the window).
TEST_P(GpuGraphTest, CaptureThatGrowsTheInboxesReplaysWithFreshData) {
  Run([](RankContext& ctx) { CaptureAndReplay(ctx, (size_t{1} << 18) + 7, 1031, 10); });
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuGraphTest, ::testing::ValuesIn(StandardGpuWorlds()), GpuWorldName);

}  // namespace
}  // namespace xccl_test
