// The zero-copy all_gather on a GPU platform: ranks of one process write straight into each
// other's receive buffers, ranks of other processes when the buffer lies in a registered window.
// Registered and plain buffers mixed between calls and between the ranks of one call; windows
// freed and allocated again (a stale mapping would deliver wrong data); deregistered buffers; a
// thousand back-to-back calls with a held rank; graph replays; world 1. Every byte checked.
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "gpu/gpu_harness.h"
#include "mp/data_pattern.h"

namespace xccl_test {
namespace {

class GpuZeroCopyTest : public GpuWorldTest {};

// One rank's window: an xcclMemAlloc allocation with the window `offset` bytes into it.
struct Window {
  void* mem = nullptr;
  unsigned char* at = nullptr;
  xcclWindow_t win = nullptr;
  bool Open(RankContext& ctx, size_t bytes, size_t offset) {
    if (!XCCL_OK(ctx, xcclMemAlloc(&mem, bytes + offset))) return false;
    at = static_cast<unsigned char*>(mem) + offset;
    return XCCL_OK(ctx, xcclCommWindowRegister(ctx.comm, at, bytes, &win, XCCL_WIN_DEFAULT));
  }
  // After the stream drained and every rank met (freeing may wait for the whole device).
  void Close(RankContext& ctx) {
    if (win != nullptr) XCCL_OK(ctx, xcclCommWindowDeregister(ctx.comm, win));
    if (mem != nullptr) XCCL_OK(ctx, xcclMemFree(mem));
    win = nullptr;
    mem = nullptr;
  }
};

size_t RandomCount(std::mt19937_64& rng, int dtype, size_t max_total, int nranks) {
  return (1 + rng() % (max_total / nranks)) / xccl::DataTypeSize(dtype);
}

TEST_P(GpuZeroCopyTest, WindowAndPlainBuffersMixedBetweenCallsAndRanks) {
  Run([](RankContext& ctx) {
    constexpr size_t kMaxTotal = size_t(12) << 20;
    Stream stream;
    if (!stream.Create(ctx)) return;
    Window window;
    if (!window.Open(ctx, kMaxTotal + 4096, 4096)) return;
    std::mt19937_64 rng(ctx.seed);  // the same draws on every rank
    for (uint64_t call = 0; call < 24 && ctx.failures.empty(); ++call) {
      const int dtype = static_cast<int>(call % xcclNumTypes);
      const size_t count = RandomCount(rng, dtype, kMaxTotal, ctx.nranks);
      const bool in_place = (rng() & 1) != 0;
      const size_t offset = (rng() % 4) * 16 + (call % 3 == 2 ? 3 : 0);
      // Each rank decides for itself, so calls mix window and plain buffers between ranks.
      const bool windowed = ((rng() >> (ctx.rank % 16)) & 1) != 0;
      if (windowed) {
        CheckedAllGatherInto(ctx, stream, window.at, count, dtype, in_place, offset, call);
      } else {
        CheckedAllGather(ctx, stream, count, dtype, in_place, offset, call);
      }
    }
    GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
    if (HostBarrier(ctx, 0, 0)) window.Close(ctx);
  });
}

// Rounds of allocate, register, call, deregister, call again (a plain buffer now), free: a new
// allocation often lands at the freed one's address, and a peer that kept the old mapping would
// write into memory this rank no longer reads.
TEST_P(GpuZeroCopyTest, FreedAndReallocatedWindowsAndDeregisteredBuffers) {
  Run([](RankContext& ctx) {
    constexpr size_t kTotal = size_t(4) << 20;
    Stream stream;
    if (!stream.Create(ctx)) return;
    std::mt19937_64 rng(ctx.seed);
    void* first = nullptr;
    int same_address = 0;
    uint64_t call = 0;
    for (int round = 0; round < 6 && ctx.failures.empty(); ++round) {
      Window window;
      if (!window.Open(ctx, kTotal + 1024, 0)) return;
      if (round == 0) first = window.mem;
      same_address += round > 0 && window.mem == first;
      for (int i = 0; i < 3; ++i, ++call)
        CheckedAllGatherInto(ctx, stream, window.at,
                             RandomCount(rng, xcclUint8, kTotal, ctx.nranks), xcclUint8, i == 1, 0,
                             call);
      if (!HostBarrier(ctx, 0, 2 * round)) return;
      XCCL_OK(ctx, xcclCommWindowDeregister(ctx.comm, window.win));
      window.win = nullptr;
      CheckedAllGatherInto(ctx, stream, window.at,
                           RandomCount(rng, xcclFloat32, kTotal, ctx.nranks), xcclFloat32, false, 0,
                           call++);
      GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
      if (!HostBarrier(ctx, 0, 2 * round + 1)) return;
      window.Close(ctx);
    }
    if (ctx.rank == 0)
      printf("[ rank 0 ] a new allocation came back at the first one's address in %d of 5 rounds\n",
             same_address);
  });
}

// xcclMemAlloc memory without a window: peer processes map it on first use and drop the map when
// it is freed; a new allocation (often at the freed one's address) must be mapped anew. Some
// ranks use such memory, others plain buffers, differently each round.
TEST_P(GpuZeroCopyTest, MemAllocBuffersWithoutAWindowFreedAndReallocated) {
  Run([](RankContext& ctx) {
    constexpr size_t kTotal = size_t(6) << 20;
    Stream stream;
    if (!stream.Create(ctx)) return;
    std::mt19937_64 rng(ctx.seed);
    uint64_t call = 0;
    for (int round = 0; round < 6 && ctx.failures.empty(); ++round) {
      const bool mine = ((rng() >> ctx.rank) & 1) != 0 || round == 0;
      void* mem = nullptr;
      if (mine && !XCCL_OK(ctx, xcclMemAlloc(&mem, kTotal + 4096))) return;
      DeviceBuffer plain;
      if (!mine && !plain.Allocate(ctx, kTotal + 4096)) return;
      unsigned char* area = mine ? static_cast<unsigned char*>(mem) : plain.get();
      for (int i = 0; i < 4; ++i, ++call) {
        const int dtype = static_cast<int>(rng() % xcclNumTypes);
        CheckedAllGatherInto(ctx, stream, area, RandomCount(rng, dtype, kTotal, ctx.nranks), dtype,
                             i % 2 == 1, (i * 16) % 64, call);
      }
      GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
      if (!HostBarrier(ctx, 0, round)) return;
      if (mine) XCCL_OK(ctx, xcclMemFree(mem));
      // Freeing waits for the whole device: no rank enqueues the next round's calls before
      // every rank's free has returned.
      if (!HostBarrier(ctx, 1, round)) return;
    }
  });
}

TEST_P(GpuZeroCopyTest, ThousandBackToBackCallsInAWindowWithHeldRank) {
  Run([](RankContext& ctx) {
    constexpr int kCalls = 1000;
    constexpr size_t kSlot = size_t(256) << 10;  // each call's output region in the window
    std::mt19937_64 rng(ctx.seed);
    std::vector<size_t> counts(kCalls);
    for (auto& c : counts) c = 8192 / 4 + rng() % (kSlot / 4 / ctx.nranks - 8192 / 4);  // floats
    Stream stream;
    DeviceBuffer send_all;
    Window window;
    if (!stream.Create(ctx) || !send_all.Allocate(ctx, kCalls * kSlot / ctx.nranks) ||
        !window.Open(ctx, kCalls * kSlot, 0))
      return;
    HostBytes host(kCalls * kSlot / ctx.nranks);
    for (int i = 0; i < kCalls; ++i)
      FillBlock(host.data() + i * (kSlot / ctx.nranks), counts[i] * 4, ctx.seed, ctx.rank, i);
    if (!GPU_OK(ctx, gpu::MemcpyAsync(send_all.get(), host.data(), host.size(), stream.get())) ||
        !GPU_OK(ctx, gpu::MemsetAsync(window.at, kPoisonByte, kCalls * kSlot, stream.get())) ||
        !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
      return;
    if (!HostBarrier(ctx, 0, 0)) return;
    for (int i = 0; i < kCalls; ++i) {
      if (i % ctx.nranks == ctx.rank && i % 10 == 0) usleep(200);
      if (!XCCL_OK(ctx,
                   xcclAllGather(send_all.get() + i * (kSlot / ctx.nranks), window.at + i * kSlot,
                                 counts[i], xcclFloat32, ctx.comm, stream.xccl()))) {
        ctx.Fail("enqueue of call " + std::to_string(i) + " failed; later calls not made");
        break;
      }
    }
    HostBytes out;
    if (DrainAndCopyBack(ctx, stream, window.at, kCalls * kSlot, "after 1000 calls", &out)) {
      for (int i = 0; i < kCalls && ctx.failures.size() < 4; ++i) {
        const std::string wrong =
            CheckGathered(out.data() + i * kSlot, counts[i] * 4, ctx.nranks, ctx.seed, i, 4);
        RANK_EXPECT(ctx, wrong.empty(), "call " << i << ": " << wrong);
      }
    }
    if (HostBarrier(ctx, 0, 1)) window.Close(ctx);
  });
}

// A captured all_gather into a window replays 100 times with fresh data in the same buffers.
TEST_P(GpuZeroCopyTest, CapturedIntoAWindowReplaysWithFreshData) {
  Run([](RankContext& ctx) {
    constexpr int kReplays = 100;
    const size_t count = (size_t(3) << 20) / 4 / ctx.nranks + 5;  // floats: past the LL path
    const size_t block = count * 4, total = block * ctx.nranks;
    Stream stream;
    DeviceBuffer send;
    Window window;
    HostBytes host_send(block * kReplays), host_recv(total);
    if (!stream.Create(ctx) || !send.Allocate(ctx, block) || !window.Open(ctx, total, 256)) return;
    for (int i = 0; i < kReplays; ++i)
      FillBlock(host_send.data() + i * block, block, ctx.seed, ctx.rank, 500 + i);
    gpu::GraphHandle graph = nullptr;
    if (!GPU_OK(ctx, gpu::StreamBeginCaptureThreadLocal(stream.get()))) return;
    bool captured = XCCL_OK(
        ctx, xcclAllGather(send.get(), window.at, count, xcclFloat32, ctx.comm, stream.xccl()));
    captured = GPU_OK(ctx, gpu::StreamEndCapture(stream.get(), &graph)) && captured;
    if (!HostBarrier(ctx, 0, 0)) return;
    gpu::GraphExecHandle exec = nullptr;
    if (captured) captured = GPU_OK(ctx, gpu::GraphInstantiate(&exec, graph));
    if (!HostBarrier(ctx, 0, 1) || !captured) return;
    for (int i = 0; i < kReplays && ctx.failures.empty(); ++i) {
      if (i % ctx.nranks == ctx.rank) usleep(200);
      if (!GPU_OK(ctx, gpu::MemsetAsync(window.at, kPoisonByte, total, stream.get())) ||
          !GPU_OK(ctx, gpu::MemcpyAsync(send.get(), host_send.data() + i * block, block,
                                        stream.get())) ||
          !GPU_OK(ctx, gpu::GraphLaunch(exec, stream.get())) ||
          !GPU_OK(ctx, gpu::MemcpyAsync(host_recv.data(), window.at, total, stream.get())) ||
          !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
        break;
      const std::string wrong =
          CheckGathered(host_recv.data(), block, ctx.nranks, ctx.seed, 500 + i, 4);
      RANK_EXPECT(ctx, wrong.empty(), "replay " << i << ": " << wrong);
    }
    ExpectNoAsyncError(ctx, "after the replays");
    (void)gpu::GraphExecDestroy(exec);
    (void)gpu::GraphDestroy(graph);
    if (HostBarrier(ctx, 0, 2)) window.Close(ctx);
  });
}

std::vector<GpuWorld> ZeroCopyWorlds() {
  using M = RankMode;
  using P = Placement;
  return {
      {M::kThreads, P::kOneGpu, 2},    {M::kThreads, P::kOneGpu, 3},
      {M::kThreads, P::kOneGpu, 4},    {M::kThreads, P::kOneGpu, 8},
      {M::kProcesses, P::kOneGpu, 2},  {M::kProcesses, P::kOneGpu, 3},
      {M::kProcesses, P::kOneGpu, 4},  {M::kThreads, P::kAllGpus, 1},
      {M::kProcesses, P::kAllGpus, 1},
  };
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuZeroCopyTest, ::testing::ValuesIn(ZeroCopyWorlds()), GpuWorldName);

// World 1: out of place one copy, in place nothing; both stream-ordered and checked.
TEST(GpuWorldOne, AllGatherIsACopyOrNothing) {
  XCCL_SKIP_WITHOUT_GPU(false);
  ExpectNoFailures(RunGpuRanks(RankMode::kThreads, {0}, [](RankContext& ctx) {
    Stream stream;
    if (!stream.Create(ctx)) return;
    std::mt19937_64 rng(ctx.seed);
    for (uint64_t call = 0; call < 12; ++call) {
      const int dtype = static_cast<int>(call % xcclNumTypes);
      CheckedAllGather(ctx, stream, RandomCount(rng, dtype, size_t(8) << 20, 1), dtype,
                       call % 2 == 1, call % 3, call);
    }
  }));
}

}  // namespace
}  // namespace xccl_test
