// broadcast on a GPU platform: 2, 4 and 8 ranks sharing one GPU as threads (the read engine's
// one-source copy) and as processes (region steps with one source), and every GPU where there
// are several. Random bytes from the root (every float type's NaN payloads must arrive as they
// left), outputs poisoned with guard bytes around them, every byte compared on the host; every
// root and type, in and out of place, misaligned; a hundred back-to-back calls with a held rank
// and moving roots and no host sync; a captured graph replayed with fresh data.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "gpu/gpu_harness.h"
#include "mp/data_pattern.h"
#include "mp/test_params.h"

namespace xccl_test {
namespace {

constexpr size_t kGuard = 64;
constexpr int kGraphPhaseSlot = 16;  // ctx.shared: the host barrier of the graph's phases

// Whether `got` holds exactly `want`, else a line naming the first wrong byte.
std::string Compare(const unsigned char* got, const unsigned char* want, size_t bytes) {
  if (bytes == 0 || memcmp(got, want, bytes) == 0) return "";
  size_t first = 0;
  while (got[first] == want[first]) ++first;
  return "byte " + std::to_string(first) + " of " + std::to_string(bytes) + " is " +
         std::to_string(got[first]) + ", want " + std::to_string(want[first]);
}

// One checked broadcast on `stream`, synchronised. False once the call or a copy failed.
bool CheckedGpuBroadcast(RankContext& ctx, const Stream& stream, int root, int dtype, size_t count,
                         bool in_place, size_t offset, uint64_t call) {
  const size_t bytes = count * xccl::DataTypeSize(dtype);
  const size_t area = 2 * kGuard + offset + bytes;
  DeviceBuffer send_mem, recv_mem;
  if (!send_mem.Allocate(ctx, area) || !recv_mem.Allocate(ctx, area)) return false;
  HostBytes want(bytes);
  FillBlock(want.data(), bytes, ctx.seed, root, call);
  unsigned char* recv = recv_mem.get() + kGuard + offset;
  unsigned char* send = in_place ? recv : send_mem.get() + kGuard + offset;
  if (!GPU_OK(ctx, gpu::MemsetAsync(recv_mem.get(), kPoisonByte, area, stream.get())) ||
      !GPU_OK(ctx, gpu::MemsetAsync(send_mem.get(), kPoisonByte, area, stream.get())) ||
      (ctx.rank == root && bytes > 0 &&
       !GPU_OK(ctx, gpu::MemcpyAsync(send, want.data(), bytes, stream.get()))))
    return false;
  const std::string what = "broadcast of " + std::to_string(count) + " " +
                           xccl::DataTypeName(dtype) + " from root " + std::to_string(root) +
                           (in_place ? ", in place" : "") + ", offset " + std::to_string(offset);
  const xcclResult_t result =
      xcclBroadcast(ctx.rank == root ? send : nullptr, recv, count,
                    static_cast<xcclDataType_t>(dtype), root, ctx.comm, stream.xccl());
  RANK_EXPECT(ctx, result == xcclSuccess,
              what << ": " << xcclGetErrorString(result) << ": " << xcclGetLastError(ctx.comm));
  if (result != xcclSuccess) return false;
  HostBytes back(area), back_send(area);
  if (!GPU_OK(ctx, gpu::MemcpyAsync(back.data(), recv_mem.get(), area, stream.get())) ||
      !GPU_OK(ctx, gpu::MemcpyAsync(back_send.data(), send_mem.get(), area, stream.get())) ||
      !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
    return false;
  ExpectNoAsyncError(ctx, what.c_str());
  const std::string wrong = Compare(back.data() + kGuard + offset, want.data(), bytes);
  RANK_EXPECT(ctx, wrong.empty(), what << ": " << wrong);
  const std::string before = CheckPoisoned(back.data(), kGuard + offset);
  const std::string after = CheckPoisoned(back.data() + area - kGuard, kGuard);
  RANK_EXPECT(ctx, before.empty() && after.empty(),
              what << ": written outside the receive buffer: " << before << after);
  if (!in_place) {
    const std::string sent = ctx.rank == root
                                 ? Compare(back_send.data() + kGuard + offset, want.data(), bytes)
                                 : CheckPoisoned(back_send.data(), area);
    RANK_EXPECT(ctx, sent.empty(), what << ": the send buffer changed: " << sent);
  }
  return true;
}

class GpuBroadcastTest : public GpuWorldTest {};

// Every root with every type: 1 element, an odd count, and about 1 MiB (many region steps),
// in and out of place, misaligned by up to 7 bytes.
TEST_P(GpuBroadcastTest, EveryRootAndTypeInAndOutOfPlace) {
  Run([](RankContext& ctx) {
    Stream stream;
    if (!stream.Create(ctx)) return;
    uint64_t call = 0;
    for (int root = 0; root < ctx.nranks; ++root) {
      for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
        const size_t elem = xccl::DataTypeSize(dtype);
        for (const size_t count : {size_t{1}, size_t{4099}, (size_t{1} << 20) / elem + 5}) {
          if (count > 4099 && dtype % 4 != root % 4) continue;  // keep the run short
          if (!CheckedGpuBroadcast(ctx, stream, root, dtype, count, call % 2 == 0, call % 8, call))
            return;
          ++call;
        }
      }
    }
  });
}

// 100 calls enqueued back to back with no host sync; before call i rank i % world sleeps on the
// host, and the root moves. Each call keeps its own output, checked after the one sync.
TEST_P(GpuBroadcastTest, HundredBackToBackWithHeldRankNoHostSync) {
  Run([](RankContext& ctx) {
    constexpr int kCalls = 100;
    constexpr size_t kMax = 64 << 10;
    Stream stream;
    DeviceBuffer send, recv;
    if (!stream.Create(ctx) || !send.Allocate(ctx, kCalls * kMax) ||
        !recv.Allocate(ctx, kCalls * kMax))
      return;
    HostBytes host(kCalls * kMax);
    for (int i = 0; i < kCalls; ++i)
      FillBlock(host.data() + i * kMax, kMax, ctx.seed, i % ctx.nranks, 100 + i);
    if (!GPU_OK(ctx, gpu::MemcpyAsync(send.get(), host.data(), host.size(), stream.get())) ||
        !GPU_OK(ctx, gpu::MemsetAsync(recv.get(), kPoisonByte, host.size(), stream.get())) ||
        !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
      return;
    for (int i = 0; i < kCalls; ++i) {
      if (i % ctx.nranks == ctx.rank) usleep(300);
      const size_t bytes = 1 + (i * 7919) % kMax;
      if (!XCCL_OK(ctx, xcclBroadcast(send.get() + i * kMax, recv.get() + i * kMax, bytes,
                                      xcclUint8, i % ctx.nranks, ctx.comm, stream.xccl()))) {
        ctx.Fail("enqueue of call " + std::to_string(i) + " failed; later calls not made");
        break;
      }
    }
    HostBytes back;
    if (!DrainAndCopyBack(ctx, stream, recv.get(), host.size(), "after the calls", &back)) return;
    for (int i = 0; i < kCalls && ctx.failures.size() < 8; ++i) {
      const size_t bytes = 1 + (i * 7919) % kMax;
      const std::string wrong = Compare(back.data() + i * kMax, host.data() + i * kMax, bytes);
      RANK_EXPECT(ctx, wrong.empty(), "call " << i << ": " << wrong);
      const std::string past = CheckPoisoned(back.data() + i * kMax + bytes, kMax - bytes);
      RANK_EXPECT(ctx, past.empty(), "call " << i << ": past the output: " << past);
    }
  });
}

// One broadcast captured into a graph and replayed 20 times with fresh data from the root.
TEST_P(GpuBroadcastTest, CapturedGraphReplayedWithFreshData) {
  Run([](RankContext& ctx) {
    constexpr int kReplays = 20;
    constexpr size_t kBytes = 300001;
    const int root = ctx.nranks - 1;
    Stream stream;
    DeviceBuffer send, recv;
    HostBytes fresh(kBytes * kReplays), got(kBytes * kReplays);
    if (!stream.Create(ctx) || !send.Allocate(ctx, kBytes) || !recv.Allocate(ctx, kBytes)) return;
    for (int i = 0; i < kReplays; ++i)
      FillBlock(fresh.data() + i * kBytes, kBytes, ctx.seed, root, 500 + i);
    if (!CheckedGpuBroadcast(ctx, stream, 0, xcclBfloat16, 1001, false, 0, 499)) return;
    CapturedGraph graph;
    if (!graph.Capture(ctx, stream, kGraphPhaseSlot, [&] {
          return XCCL_OK(ctx, xcclBroadcast(send.get(), recv.get(), kBytes, xcclUint8, root,
                                            ctx.comm, stream.xccl()));
        }))
      return;
    for (int i = 0; i < kReplays; ++i) {
      if (i % ctx.nranks == ctx.rank) usleep(200);
      if (!GPU_OK(ctx, gpu::MemsetAsync(recv.get(), kPoisonByte, kBytes, stream.get())) ||
          (ctx.rank == root && !GPU_OK(ctx, gpu::MemcpyAsync(send.get(), fresh.data() + i * kBytes,
                                                             kBytes, stream.get()))) ||
          !GPU_OK(ctx, gpu::GraphLaunch(graph.exec(), stream.get())) ||
          !GPU_OK(ctx,
                  gpu::MemcpyAsync(got.data() + i * kBytes, recv.get(), kBytes, stream.get()))) {
        ctx.Fail("replay " + std::to_string(i) + " could not be enqueued; later ones not made");
        break;
      }
    }
    const bool drained = GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
    ExpectNoAsyncError(ctx, "after the replays");
    if (!drained) return;
    for (int i = 0; i < kReplays; ++i) {
      const std::string wrong = Compare(got.data() + i * kBytes, fresh.data() + i * kBytes, kBytes);
      RANK_EXPECT(ctx, wrong.empty(), "replay " << i << ": " << wrong);
    }
  });
}

std::vector<GpuWorld> BroadcastGpuWorlds() {
  using M = RankMode;
  using P = Placement;
  std::vector<GpuWorld> worlds = {
      {M::kThreads, P::kOneGpu, 2},   {M::kThreads, P::kOneGpu, 4},
      {M::kThreads, P::kOneGpu, 8},   {M::kProcesses, P::kOneGpu, 2},
      {M::kProcesses, P::kOneGpu, 4}, {M::kThreads, P::kAllGpus, 1},
      {M::kProcesses, P::kAllGpus, 1}};
  for (const GpuWorld& w : FakeNodeGpuWorlds()) worlds.push_back(w);
  return worlds;
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuBroadcastTest, ::testing::ValuesIn(BroadcastGpuWorlds()),
                         GpuWorldName);

}  // namespace
}  // namespace xccl_test
