// GPU ranks across nodes (docs/ARCHITECTURE.md, "GPU ranks across nodes"): threads sharing GPU 0
// split into fake nodes (XCCL_FAKE_NODES 2,2 and 4,4), so ranks of another node are reached only
// through the proxy over the net backend, staged through pinned memory, stream-ordered. all_gather
// at every size (several dtypes, in and out of place, random sizes up to several MiB, so several 4
// MiB pieces), barrier, a graph captured once and replayed 100 times with fresh data, a rank held
// on the device before back-to-back calls, and a rank that aborts: the ranks of the other node must
// give up within about 2 s naming it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "gpu/gpu_captured_all_gather.h"
#include "gpu/gpu_delay.h"
#include "gpu/gpu_harness.h"
#include "mp/data_pattern.h"

namespace xccl_test {
namespace {

struct NodesCase {
  const char* spec;  // XCCL_FAKE_NODES
  int nranks;
};

std::string NodesCaseName(const ::testing::TestParamInfo<NodesCase>& info) {
  const std::string spec = info.param.spec;
  const int nodes = static_cast<int>(std::count(spec.begin(), spec.end(), ',')) + 1;
  return "Threads" + std::to_string(info.param.nranks) + "In" + std::to_string(nodes) + "Nodes";
}

class GpuNodesTest : public ::testing::TestWithParam<NodesCase> {
 protected:
  void SetUp() override { XCCL_SKIP_WITHOUT_GPU(/*keep_process_clean=*/false); }
  int world() const { return GetParam().nranks; }
  void Run(const std::function<void(RankContext&)>& body, int64_t timeout_ms = 60000,
           bool skip_destroy = false) {
    RunOptions options;
    options.before_init = Both(WithTimeoutMs(timeout_ms), WithFakeNodes(GetParam().spec));
    options.skip_destroy = skip_destroy;
    const std::vector<int> devices(GetParam().nranks, 0);
    std::vector<std::string> failures = RunGpuRanks(RankMode::kThreads, devices, body, options);
    RestoreParams();
    ExpectNoFailures(failures);
  }
};

TEST_P(GpuNodesTest, AllGatherEveryDtypeAndSize) {
  Run([](RankContext& ctx) {
    Stream stream;
    if (!stream.Create(ctx)) return;
    std::mt19937_64 rng(ctx.seed);  // the same sizes on every rank
    uint64_t call = 0;
    // Every dtype, small and odd, in and out of place, misaligned outputs.
    for (int dtype = 0; dtype < xcclNumTypes; ++dtype)
      for (bool in_place : {false, true})
        CheckedAllGather(ctx, stream, 1 + rng() % 3000, dtype, in_place, in_place ? 0 : 4, call++);
    // Empty, then random sizes up to 9 MiB per rank: more than two net pieces of 4 MiB.
    CheckedAllGather(ctx, stream, 0, xcclFloat32, false, 0, call++);
    for (int i = 0; i < 10; ++i) {
      const int dtype = i % 2 ? xcclFloat32 : xcclUint8;
      const size_t elem = xccl::DataTypeSize(dtype);
      const size_t max_bytes = i < 3 ? (64 << 10) : (9 << 20);
      CheckedAllGather(ctx, stream, 1 + rng() % (max_bytes / elem), dtype, i % 3 == 0, 0, call++);
      if (!ctx.failures.empty()) return;
    }
    // Exactly one piece, and one byte past it.
    CheckedAllGather(ctx, stream, size_t(4) << 20, xcclUint8, false, 0, call++);
    CheckedAllGather(ctx, stream, (size_t(4) << 20) + 1, xcclUint8, true, 0, call++);
  });
}

// A barrier must hold every rank until the last one entered it, whatever node it is on.
TEST_P(GpuNodesTest, BarrierHoldsEveryRank) {
  Run([](RankContext& ctx) {
    constexpr int kRounds = 24;
    constexpr int kStampSlot = 256;  // ctx.shared[kStampSlot + round]
    Stream stream;
    if (!stream.Create(ctx)) return;
    for (int round = 0; round < kRounds; ++round) {
      volatile uint64_t* stamp = ctx.shared + kStampSlot + round;
      const bool held = round % ctx.nranks == ctx.rank;
      if (held) {
        usleep(3000);
        __atomic_store_n(const_cast<uint64_t*>(stamp), MonotonicNs(), __ATOMIC_SEQ_CST);
      }
      if (!XCCL_OK(ctx, xcclBarrier(ctx.comm, stream.xccl()))) return;
      if (!GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) return;
      const uint64_t left = MonotonicNs();
      const uint64_t entered = __atomic_load_n(const_cast<uint64_t*>(stamp), __ATOMIC_SEQ_CST);
      RANK_EXPECT(
          ctx, entered != 0 && entered <= left,
          "barrier " << round << " completed before rank " << round % ctx.nranks << " entered it");
      if (!ctx.failures.empty()) return;
    }
    ExpectNoAsyncError(ctx, "after the barriers");
  });
}

// Back to back with no host synchronisation, a different rank held on the device before each
// call (its stream starts the call late although the host enqueued it at once), barriers mixed
// in; every output checked at the end. This hung while the triggers were runtime host functions
// (one worker for every stream of the process, stalled by a rank ahead on the host).
TEST_P(GpuNodesTest, BackToBackWithRankHeldOnDevice) {
  Run(
      [](RankContext& ctx) {
        constexpr int kCalls = 40;
        constexpr uint64_t kHoldNs = 2000000;  // 2 ms
        std::mt19937_64 rng(ctx.seed);
        std::vector<size_t> counts(kCalls), offsets(kCalls + 1, 0);
        for (int i = 0; i < kCalls; ++i) {
          counts[i] = i % 8 == 7 ? 1 + rng() % (6 << 20) : 1 + rng() % (64 << 10);  // bytes, uint8
          offsets[i + 1] = offsets[i] + (counts[i] * ctx.nranks + 255) / 256 * 256;
        }
        const size_t recv_bytes = offsets[kCalls];
        size_t send_bytes = 0;
        for (size_t c : counts) send_bytes += c;
        Stream stream;
        DeviceBuffer recv_all, send_all;
        if (!stream.Create(ctx) || !recv_all.Allocate(ctx, recv_bytes) ||
            !send_all.Allocate(ctx, send_bytes))
          return;
        HostBytes host_send(send_bytes);
        size_t at = 0;
        for (int i = 0; i < kCalls; ++i) {
          FillBlock(host_send.data() + at, counts[i], ctx.seed, ctx.rank, i);
          at += counts[i];
        }
        if (!GPU_OK(ctx, gpu::MemsetAsync(recv_all.get(), kPoisonByte, recv_bytes, stream.get())) ||
            !GPU_OK(ctx,
                    gpu::MemcpyAsync(send_all.get(), host_send.data(), send_bytes, stream.get())) ||
            !GPU_OK(ctx, gpu::LaunchDelay(stream.get(), 0)) ||
            !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
          return;
        // Every rank set up before any enqueues. Without it (seen on one H200): ranks ahead
        // filled their launch queues and blocked in launches while three ranks sat in their
        // stream creation and allocations until the device deadline.
        if (!HostBarrier(ctx, 0, 0)) return;
        at = 0;
        for (int i = 0; i < kCalls; ++i) {
          if (i % ctx.nranks == ctx.rank && !GPU_OK(ctx, gpu::LaunchDelay(stream.get(), kHoldNs)))
            break;
          if (!XCCL_OK(ctx, xcclAllGather(send_all.get() + at, recv_all.get() + offsets[i],
                                          counts[i], xcclUint8, ctx.comm, stream.xccl()))) {
            ctx.Fail("enqueue of call " + std::to_string(i) + " failed; later calls not made");
            break;
          }
          at += counts[i];
          if (i % 5 == 4 && !XCCL_OK(ctx, xcclBarrier(ctx.comm, stream.xccl()))) break;
        }
        HostBytes host_recv;
        if (!DrainAndCopyBack(ctx, stream, recv_all.get(), recv_bytes, "after the calls",
                              &host_recv))
          return;
        for (int i = 0; i < kCalls; ++i) {
          std::string wrong =
              CheckGathered(host_recv.data() + offsets[i], counts[i], ctx.nranks, ctx.seed, i, 1);
          RANK_EXPECT(ctx, wrong.empty(), "call " << i << " (" << counts[i] << " B): " << wrong);
          const size_t used = counts[i] * ctx.nranks;
          std::string pad = CheckPoisoned(host_recv.data() + offsets[i] + used,
                                          offsets[i + 1] - offsets[i] - used);
          RANK_EXPECT(ctx, pad.empty(), "call " << i << ": past its output: " << pad);
          if (ctx.failures.size() > 8) return;
        }
      },
      20000);
}

// The last rank aborts instead of joining an all_gather. The ranks of the other node hear it
// from their proxies (its kAbort), and their device waits must give up within about 2 s naming
// it, long before their 20 s deadline. Its own node's ranks wait on its device slots and learn
// it from their peers' aborts or their deadline; they are only required to fail.
TEST_P(GpuNodesTest, AbortedRemoteRankEndsDeviceWaitsNamingIt) {
  constexpr int64_t kTimeoutMs = 20000;
  constexpr int kStampSlot = 300;
  Run(
      [](RankContext& ctx) {
        const int victim = ctx.nranks - 1;
        const int half = ctx.nranks / 2;  // ranks below are on the other node
        Stream stream;
        DeviceBuffer send, recv;
        const size_t count = 1 << 16;
        if (!stream.Create(ctx) || !send.Allocate(ctx, count) ||
            !recv.Allocate(ctx, count * ctx.nranks))
          return;
        CheckedAllGather(ctx, stream, 1000, xcclFloat32, false, 0, 0);  // the links are up
        if (!HostBarrier(ctx, 0, 0)) return;
        if (ctx.rank == victim) {
          usleep(100000);  // the others are waiting on the device by now
          __atomic_store_n(const_cast<uint64_t*>(ctx.shared + kStampSlot), MonotonicNs(),
                           __ATOMIC_SEQ_CST);
          XCCL_OK(ctx, xcclCommAbort(ctx.comm));
          return;
        }
        // A rank of the victim's node shares its process and device here: its launch gate may
        // see the abort first and fail the call at once, naming the victim.
        const xcclResult_t enqueued =
            xcclAllGather(send.get(), recv.get(), count, xcclUint8, ctx.comm, stream.xccl());
        RANK_EXPECT(ctx,
                    enqueued == xcclSuccess || (ctx.rank >= half && enqueued == xcclRemoteError),
                    "the all_gather returned " << xcclGetErrorString(enqueued) << ": "
                                               << xcclGetLastError(ctx.comm));
        GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
        const uint64_t done = MonotonicNs();
        xcclResult_t async = xcclSuccess;
        XCCL_OK(ctx, xcclCommGetAsyncError(ctx.comm, &async));
        const std::string message = xcclGetLastError(ctx.comm);
        RANK_EXPECT(ctx, async != xcclSuccess,
                    "the all_gather missing rank " << victim << " succeeded");
        if (ctx.rank < half) {
          const uint64_t aborted =
              __atomic_load_n(const_cast<uint64_t*>(ctx.shared + kStampSlot), __ATOMIC_SEQ_CST);
          const double seconds = aborted == 0 ? -1 : (done - aborted) / 1e9;
          RANK_EXPECT(
              ctx, aborted != 0 && seconds < 2.5,
              "the device waits ended " << seconds << " s after rank " << victim << " aborted");
          RANK_EXPECT(ctx, message.find("rank " + std::to_string(victim)) != std::string::npos,
                      "the failure does not name rank " << victim << ": " << message);
        }
        XCCL_OK(ctx, xcclCommAbort(ctx.comm));
      },
      kTimeoutMs, /*skip_destroy=*/true);
}

// Captured once, replayed 100 times with fresh data: the net ops must carry each replay's device
// epoch (the trigger kernels read it on every replay).
TEST_P(GpuNodesTest, CapturedAllGatherAndBarrierReplayWithFreshData) {
  constexpr int64_t kGraphTimeoutMs = 15000;  // a failure here is a hang: say so soon
  Run([](RankContext& ctx) { CapturedAllGatherReplays(ctx, 1031, 1031, 100); }, kGraphTimeoutMs);
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuNodesTest,
                         ::testing::Values(NodesCase{"2,2", 4}, NodesCase{"4,4", 8},
                                           NodesCase{"1,1,1,1", 4}),
                         NodesCaseName);

}  // namespace
}  // namespace xccl_test
