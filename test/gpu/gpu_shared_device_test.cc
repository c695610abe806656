// Ranks sharing GPU 0 (docs/ARCHITECTURE.md, "Ranks sharing a GPU"): thread ranks that make
// their streams and buffers and start calling at once, with device-synchronising calls and
// pageable copies between their calls, never stall; and a rank that aborts while its peers have
// calls waiting for it on the device ends their waits within a second, naming it, with no illegal
// access, after which the survivors shrink and go on.
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "gpu/gpu_delay.h"
#include "gpu/gpu_harness.h"
#include "mp/data_pattern.h"

namespace xccl_test {
namespace {

// No meeting point after init: each rank makes its stream and buffers (device allocations,
// pageable copies) while its peers may already be calling; between calls it synchronises the
// whole device, allocates and frees, and copies from pageable memory. Every all_gather checked.
void EnqueueAtOnce(int world) {
  const GpuProbe probe = ProbeGpus(/*processes=*/false);
  if (probe.count <= 0) GTEST_SKIP() << "no GPU: " << probe.error;
  auto failures = RunGpuRanks(RankMode::kThreads, std::vector<int>(world, 0), [](RankContext& ctx) {
    Stream stream;
    if (!stream.Create(ctx)) return;
    std::mt19937_64 rng(ctx.seed);                 // the same counts and types on every rank
    std::mt19937_64 own(ctx.seed + 1 + ctx.rank);  // what this rank does between calls
    for (uint64_t call = 0; call < 30 && ctx.failures.empty(); ++call) {
      const int dtype = static_cast<int>(rng() % xcclNumTypes);
      CheckedAllGather(ctx, stream, 1 + rng() % 50000, dtype, call % 3 == 0, rng() % 4, call);
      RANK_EXPECT(ctx, xcclBarrier(ctx.comm, stream.xccl()) == xcclSuccess,
                  xcclGetLastError(ctx.comm));
      if (call % 4 == static_cast<uint64_t>(ctx.rank % 4)) {
        DeviceBuffer scratch;  // cudaMalloc, a pageable copy and cudaFree between calls
        const size_t bytes = (1 + own() % 64) << 16;
        if (!scratch.Allocate(ctx, bytes)) return;
        std::vector<unsigned char> pageable(bytes, static_cast<unsigned char>(call));
        RANK_EXPECT(
            ctx, gpu::CopyPageableToDevice(scratch.get(), pageable.data(), bytes) == gpu::kSuccess,
            "pageable copy");
      }
      if (call % 5 == static_cast<uint64_t>(ctx.rank % 5))
        RANK_EXPECT(ctx, gpu::DeviceSynchronize() == gpu::kSuccess, "device synchronize");
    }
    RANK_EXPECT(ctx, gpu::StreamSynchronize(stream.get()) == gpu::kSuccess, "synchronize");
  });
  ExpectNoFailures(failures);
}

TEST(GpuSharedDevice, EightThreadsEnqueueAtOnceWithDeviceSyncsBetweenCalls) { EnqueueAtOnce(8); }
TEST(GpuSharedDevice, FourThreadsEnqueueAtOnceWithDeviceSyncsBetweenCalls) { EnqueueAtOnce(4); }

// After three checked calls every rank enqueues one more all_gather; the victim's is held behind
// a 2 s delay on its stream, so the others' kernels wait on the device for it, and the victim
// aborts 200 ms later. The survivors' streams must drain within 1 s of the abort with an error
// naming the victim; then they shrink it away and make 100 checked calls.
void AbortWhileInFlight(RankMode mode, int world) {
  const GpuProbe probe = ProbeGpus(mode == RankMode::kProcesses);
  if (probe.count <= 0) GTEST_SKIP() << "no GPU: " << probe.error;
  const int victim = world / 2;
  RunOptions options;
  options.skip_destroy = true;
  options.timeout_s = 120;
  auto failures = RunGpuRanks(
      mode, std::vector<int>(world, 0),
      [victim](RankContext& ctx) {
        Stream stream;
        if (!stream.Create(ctx)) return;
        for (uint64_t call = 0; call < 3; ++call)
          CheckedAllGather(ctx, stream, 4096 + call, xcclFloat32, call == 1, 0, call);
        if (!ctx.failures.empty()) return;
        DeviceBuffer send, recv;
        constexpr size_t kCount = 1 << 16;
        if (!send.Allocate(ctx, kCount * 4) || !recv.Allocate(ctx, kCount * 4 * ctx.nranks)) return;
        if (!HostBarrier(ctx, 1, 0)) return;
        if (ctx.rank == victim && !GPU_OK(ctx, gpu::LaunchDelay(stream.get(), 2'000'000'000ull)))
          return;
        const xcclResult_t enqueued =
            xcclAllGather(send.get(), recv.get(), kCount, xcclUint32, ctx.comm, stream.xccl());
        RANK_EXPECT(ctx, enqueued == xcclSuccess || enqueued == xcclRemoteError,
                    "the held call returned " << xcclGetErrorString(enqueued) << ": "
                                              << xcclGetLastError(ctx.comm));
        if (ctx.rank == victim) {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          ctx.shared[100] = MonotonicNs();
          RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, xcclGetLastError(nullptr));
          (void)gpu::StreamSynchronize(stream.get());
          return;
        }
        RANK_EXPECT(ctx, gpu::StreamSynchronize(stream.get()) == gpu::kSuccess,
                    "the stream did not drain cleanly (an illegal access?)");
        const uint64_t drained_ns = MonotonicNs();
        const xcclResult_t async = AwaitAsyncError(ctx.comm, 5.0);
        while (ctx.shared[100] == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        const double after_s = (static_cast<double>(drained_ns) - ctx.shared[100]) / 1e9;
        RANK_EXPECT(ctx, after_s < 1.0, "the stream drained " << after_s << " s after the abort");
        ExpectNamedThenShrinkAndGoOn(ctx, stream, victim, async);
        RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, xcclGetLastError(nullptr));
      },
      options);
  ExpectNoFailures(failures);
}

TEST(GpuSharedDevice, ThreadAbortsWhileFourRanksHaveCallsInFlight) {
  AbortWhileInFlight(RankMode::kThreads, 4);
}
TEST(GpuSharedDevice, ThreadAbortsWhileEightRanksHaveCallsInFlight) {
  AbortWhileInFlight(RankMode::kThreads, 8);
}
TEST(GpuSharedDevice, ProcessAbortsWhileThreeRanksHaveCallsInFlight) {
  AbortWhileInFlight(RankMode::kProcesses, 3);
}

}  // namespace
}  // namespace xccl_test
