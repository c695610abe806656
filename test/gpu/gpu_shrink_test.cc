// A lost rank on a GPU platform, and going on without it: processes sharing a GPU, one killed
// after a few checked calls while the others wait for it on the device; with XCCL_TIMEOUT_MS at
// its default (300 s) every survivor's stream drains and its async error names the dead rank
// within a second (the peer watch), then it shrinks the communicator and makes 100 checked
// all_gathers on the new one. Threads: a rank left out while alive takes no part in the shrink.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpu/gpu_harness.h"
#include "mp/data_pattern.h"

namespace xccl_test {
namespace {

void KillShrinkAndGoOn(int world) {
  const int victim = static_cast<int>(getpid() % world);
  RunOptions options;
  options.may_die = {victim};
  options.skip_destroy = true;
  options.timeout_s = 120;  // the default deadline is 300 s: a missed death fails here
  auto failures = RunGpuRanks(
      RankMode::kProcesses, std::vector<int>(world, 0),
      [victim](RankContext& ctx) {
        Stream stream;
        if (!stream.Create(ctx)) return;
        for (uint64_t call = 0; call < 3; ++call)
          CheckedAllGather(ctx, stream, 4096 + call, xcclFloat32, call == 1, 0, call);
        if (!ctx.failures.empty()) return;
        // Everyone is past the checked calls (their streams drained) before the kill.
        if (!HostBarrier(ctx, 1, 0)) return;
        if (ctx.rank == victim) {
          ctx.shared[100] = MonotonicNs();
          raise(SIGKILL);
        }
        DeviceBuffer send, recv;
        constexpr size_t kCount = 1 << 16;
        if (!send.Allocate(ctx, kCount * 4) || !recv.Allocate(ctx, kCount * 4 * ctx.nranks)) return;
        // Waits on the device for the dead rank, then drains.
        const xcclResult_t enqueued =
            xcclAllGather(send.get(), recv.get(), kCount, xcclUint32, ctx.comm, stream.xccl());
        RANK_EXPECT(ctx, enqueued == xcclSuccess || enqueued == xcclRemoteError,
                    "the call after the kill returned " << xcclGetErrorString(enqueued));
        (void)gpu::StreamSynchronize(stream.get());
        uint64_t seen_ns = 0;
        const xcclResult_t async = AwaitAsyncError(ctx.comm, 5.0, &seen_ns);
        const double after_s = (seen_ns - ctx.shared[100]) / 1e9;
        RANK_EXPECT(ctx, after_s < 1.0, "named the dead rank " << after_s << " s after the kill");
        ExpectNamedThenShrinkAndGoOn(ctx, stream, victim, async);
        RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, xcclGetLastError(nullptr));
      },
      options);
  ExpectNoFailures(failures);
}

// Three processes share the card with or without MPS (the caller's environment decides).
TEST(GpuShrink, KilledProcessNamedWithinASecondThenShrinkAndGoOnWorld3) {
  XCCL_SKIP_WITHOUT_GPU(true);
  KillShrinkAndGoOn(3);
}

// Four processes: without MPS only (under MPS a fourth context fails on this H200).
TEST(GpuShrink, KilledProcessNamedWithinASecondThenShrinkAndGoOnWorld4) {
  XCCL_SKIP_WITHOUT_GPU(true);
  if (getenv("CUDA_MPS_PIPE_DIRECTORY") != nullptr)
    GTEST_SKIP() << "four processes under MPS do not start on this card";
  KillShrinkAndGoOn(4);
}

// Threads on GPU 0, world 4: the last rank is left out alive and takes no part (threads die
// together, so nothing is killed); the survivors shrink and make 100 checked calls.
TEST(GpuShrink, AliveExcludedThreadTakesNoPart) {
  XCCL_SKIP_WITHOUT_GPU(false);
  RunOptions options;
  options.skip_destroy = true;
  auto failures = RunGpuRanks(
      RankMode::kThreads, std::vector<int>(4, 0),
      [](RankContext& ctx) {
        Stream stream;
        if (!stream.Create(ctx)) return;
        CheckedAllGather(ctx, stream, 1000, xcclFloat32, false, 0, 1);
        const int excluded = ctx.nranks - 1;
        if (ctx.rank != excluded) {
          xcclComm_t small = nullptr;
          const int list[] = {excluded};
          if (!XCCL_OK(ctx,
                       xcclCommShrink(ctx.comm, list, 1, &small, nullptr, XCCL_SHRINK_DEFAULT)))
            return;
          HundredCheckedAllGathers(ctx, stream, small, ctx.rank, ctx.nranks - 1);
          RANK_EXPECT(ctx, xcclCommDestroy(small) == xcclSuccess, xcclGetLastError(nullptr));
        }
        RANK_EXPECT(ctx, xcclCommDestroy(ctx.comm) == xcclSuccess, xcclGetLastError(nullptr));
      },
      options);
  ExpectNoFailures(failures);
}

}  // namespace
}  // namespace xccl_test
