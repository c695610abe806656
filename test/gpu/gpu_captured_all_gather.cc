#include "gpu/gpu_captured_all_gather.h"

#include <unistd.h>

#include <string>

#include "mp/data_pattern.h"

namespace xccl_test {

void CapturedAllGatherReplays(RankContext& ctx, size_t count, size_t count_before, int replays) {
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

  // The barrier in the graph too: its epoch must come from device memory as well.
  CapturedGraph graph;
  if (!graph.Capture(ctx, stream, kPhaseSlot, [&] {
        return XCCL_OK(ctx, xcclAllGather(send.get(), recv.get(), count, xcclFloat32, ctx.comm,
                                          stream.xccl())) &&
               XCCL_OK(ctx, xcclBarrier(ctx.comm, stream.xccl()));
      }))
    return;

  // No host synchronisation between replays: poison, fresh data, replay, copy out, all
  // stream-ordered; one rank held back on the host before each launch.
  for (int i = 0; i < replays; ++i) {
    if (i % ctx.nranks == ctx.rank) usleep(200);
    if (!GPU_OK(ctx, gpu::MemsetAsync(recv.get(), kPoisonByte, total, stream.get())) ||
        !GPU_OK(ctx,
                gpu::MemcpyAsync(send.get(), host_send.data() + i * block, block, stream.get())) ||
        !GPU_OK(ctx, gpu::GraphLaunch(graph.exec(), stream.get())) ||
        !GPU_OK(ctx,
                gpu::MemcpyAsync(host_recv.data() + i * total, recv.get(), total, stream.get()))) {
      ctx.Fail("replay " + std::to_string(i) + " could not be enqueued; later ones not made");
      break;
    }
  }
  GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
  ExpectNoAsyncError(ctx, "after the replays");
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

}  // namespace xccl_test
