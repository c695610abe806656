// Failures on a GPU platform: a rank process killed mid-run, a rank thread that never calls,
// and a thousand communicators made and destroyed. On a GPU the waits run on the device, so
// a missing peer must end the device wait at XCCL_TIMEOUT_MS (the stream drains, no hang) and
// surface through xcclCommGetAsyncError, with xcclGetLastError naming the peer.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/params.h"
#include "gpu/gpu_harness.h"
#include "mp/data_pattern.h"
#include "mp/test_params.h"

namespace xccl_test {
namespace {

// Three processes on one GPU make three checked calls; then one SIGKILLs itself before its
// fourth, and the survivors enqueue `queued` calls and synchronise once. Their streams must
// drain within ~20 s (XCCL_TIMEOUT_MS is 3 s here), the async error must say timeout or remote
// error naming the dead rank, and abort must release the communicator.
void RunKilledProcess(int queued) {
  constexpr int kWorld = 3;
  const int victim = kWorld - 1 - static_cast<int>(getpid()) % kWorld;
  RunOptions options;
  options.may_die = {victim};
  options.skip_destroy = true;
  options.timeout_s = 150;  // room to measure a slow drain rather than kill it
  options.before_init = WithTimeoutMs(3000);
  auto failures = RunGpuRanks(
      RankMode::kProcesses, std::vector<int>(kWorld, 0),
      [victim, queued](RankContext& ctx) {
        constexpr size_t kCount = 1000;
        const size_t block = kCount * 4;
        Stream stream;
        DeviceBuffer send, recv;
        if (!stream.Create(ctx) || !send.Allocate(ctx, block) ||
            !recv.Allocate(ctx, block * ctx.nranks))
          return;
        HostBytes host_send(block), host_recv(block * ctx.nranks);
        for (uint64_t call = 0; call < 3; ++call) {
          FillBlock(host_send.data(), block, ctx.seed, ctx.rank, call);
          if (!GPU_OK(ctx,
                      gpu::MemsetAsync(recv.get(), kPoisonByte, host_recv.size(), stream.get())) ||
              !GPU_OK(ctx, gpu::MemcpyAsync(send.get(), host_send.data(), block, stream.get())) ||
              !XCCL_OK(ctx, xcclAllGather(send.get(), recv.get(), kCount, xcclUint32, ctx.comm,
                                          stream.xccl())) ||
              !GPU_OK(ctx, gpu::MemcpyAsync(host_recv.data(), recv.get(), host_recv.size(),
                                            stream.get())) ||
              !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
            return;
          std::string wrong = CheckGathered(host_recv.data(), block, ctx.nranks, ctx.seed, call, 4);
          RANK_EXPECT(ctx, wrong.empty(), "warm-up call " << call << ": " << wrong);
        }
        if (!ctx.failures.empty()) return;
        KillOnceEveryRankIsWarm(ctx, victim);

        auto start = std::chrono::steady_clock::now();
        for (int q = 0; q < queued; ++q) {
          FillBlock(host_send.data(), block, ctx.seed, ctx.rank, 3 + q);
          GPU_OK(ctx, gpu::MemcpyAsync(send.get(), host_send.data(), block, stream.get()));
          xcclResult_t enqueued =
              xcclAllGather(send.get(), recv.get(), kCount, xcclUint32, ctx.comm, stream.xccl());
          // The call may already know the peer is gone; else it fails on the device.
          RANK_EXPECT(
              ctx,
              enqueued == xcclSuccess || enqueued == xcclRemoteError || enqueued == xcclTimeout,
              "call " << 3 + q << " after rank " << victim << " died returned "
                      << xcclGetErrorString(enqueued));
          if (enqueued != xcclSuccess) break;  // the rest would return the same
        }
        // Returning at all is the point; an error code from the runtime is tolerated.
        gpu::Error synced = gpu::StreamSynchronize(stream.get());
        const double sync_s = SecondsSince(start);
        RANK_EXPECT(ctx, sync_s < 20.0,
                    "the stream took " << sync_s << " s to drain " << queued
                                       << " call(s) after rank " << victim
                                       << " died (XCCL_TIMEOUT_MS 3000)");
        xcclResult_t async = AwaitAsyncError(ctx.comm, 5.0);
        const std::string message = xcclGetLastError(ctx.comm);
        RANK_EXPECT(ctx, async == xcclTimeout || async == xcclRemoteError,
                    "async error " << xcclGetErrorString(async)
                                   << " (stream sync: " << gpu::ErrorString(synced) << "; "
                                   << sync_s << " s): " << message);
        RANK_EXPECT(ctx, message.find("rank " + std::to_string(victim)) != std::string::npos,
                    "the error does not name rank " << victim << ": " << message);
        // Once recorded, the failure is what every later call returns.
        xcclResult_t again = xcclBarrier(ctx.comm, stream.xccl());
        RANK_EXPECT(ctx, again == async,
                    "a later call returned " << xcclGetErrorString(again) << ", not the recorded "
                                             << xcclGetErrorString(async));
        RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess,
                    "abort: " << xcclGetLastError(nullptr));
      },
      options);
  ExpectNoFailures(failures);
}

TEST(GpuKilledProcess, SurvivorsDrainReportTheDeadRankAndAbort) {
  XCCL_SKIP_WITHOUT_GPU(true);
  RunKilledProcess(1);
}

// As above with ten calls queued behind the one that meets the dead peer: once a device wait
// has given up, the calls after it must not each wait out a deadline of their own (ten of
// them would take minutes), so the whole queue still drains within ~20 s.
TEST(GpuKilledProcess, SurvivorsWithTenQueuedCallsDrainWithinTheDeadline) {
  XCCL_SKIP_WITHOUT_GPU(true);
  RunKilledProcess(10);
}

// A rank thread that never makes the call: the others' device waits end at XCCL_TIMEOUT_MS,
// their streams drain and the async error names it. Then every rank (the stalled one too)
// aborts its communicator.
TEST(GpuStalledRank, OthersTimeOutNamingIt) {
  XCCL_SKIP_WITHOUT_GPU(false);
  constexpr int kWorld = 4, kStalled = 2;
  constexpr int64_t kTimeoutMs = 2000;
  RunOptions options;
  options.before_init = WithTimeoutMs(kTimeoutMs);
  options.skip_destroy = true;
  options.timeout_s = 90;
  auto failures = RunGpuRanks(
      RankMode::kThreads, std::vector<int>(kWorld, 0),
      [&](RankContext& ctx) {
        Stream stream;
        DeviceBuffer send, recv;
        if (!stream.Create(ctx) || !send.Allocate(ctx, 64) || !recv.Allocate(ctx, 64 * kWorld))
          return;
        if (ctx.rank != kStalled) {
          auto start = std::chrono::steady_clock::now();
          xcclResult_t enqueued =
              xcclAllGather(send.get(), recv.get(), 64, xcclUint8, ctx.comm, stream.xccl());
          RANK_EXPECT(
              ctx,
              enqueued == xcclSuccess || enqueued == xcclTimeout || enqueued == xcclRemoteError,
              "enqueue returned " << xcclGetErrorString(enqueued));
          gpu::Error synced = gpu::StreamSynchronize(stream.get());
          const double sync_s = SecondsSince(start);
          xcclResult_t async = AwaitAsyncError(ctx.comm, 5.0);
          const std::string message = xcclGetLastError(ctx.comm);
          RANK_EXPECT(ctx, async == xcclTimeout || async == xcclRemoteError,
                      "async error " << xcclGetErrorString(async) << " (stream sync: "
                                     << gpu::ErrorString(synced) << "): " << message);
          RANK_EXPECT(ctx, message.find("rank " + std::to_string(kStalled)) != std::string::npos,
                      "the error does not name rank " << kStalled << ": " << message);
          RANK_EXPECT(ctx, sync_s < kTimeoutMs / 1000.0 * 3 + 5,
                      "the stream took " << sync_s << " s to drain");
          // The deadline is a deadline, not a lower bound of zero: a wait that gave up at once
          // would not have waited for the peer at all.
          RANK_EXPECT(ctx, sync_s > kTimeoutMs / 1000.0 * 0.5,
                      "gave up after " << sync_s << " s, well before the deadline");
        } else {
          // Stay away until the others have given up, then leave without calling.
          std::this_thread::sleep_for(std::chrono::milliseconds(4 * kTimeoutMs));
        }
        RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess,
                    "abort: " << xcclGetLastError(nullptr));
      },
      options);
  RestoreParams();
  ExpectNoFailures(failures);
}

// Settings that shape a rank's window or choose a call's path must be the same on every rank
// (a peer would address inboxes at other offsets, or wait in another engine): two processes on
// one GPU, rank 1 with one setting changed, and every rank's init fails with xcclInvalidUsage
// naming the parameter, within seconds and leaving nothing in /dev/shm.
TEST(GpuCommLifecycle, DisagreeingSettingsAreRefusedAtInit) {
  XCCL_SKIP_WITHOUT_GPU(true);
  if (RanWholeTestInFreshProcess(/*timeout_s=*/300)) return;
  struct Disagreement {
    const char* parameter;
    std::function<void(xccl::Params*)> change;
  };
  const Disagreement cases[] = {
      {"XCCL_WINDOW_BYTES", [](xccl::Params* p) { p->window_bytes = 64 << 20; }},
      {"XCCL_ALLGATHER_LL_BYTES", [](xccl::Params* p) { p->ll_bytes = 0; }},
      {"XCCL_ALLGATHER_LANES", [](xccl::Params* p) { p->allgather_lanes = 3; }},
      {"XCCL_ALLGATHER_CHUNK_BYTES", [](xccl::Params* p) { p->allgather_chunk_bytes = 1 << 20; }},
      {"XCCL_ALLGATHER_ALGO", [](xccl::Params* p) { p->allgather_algo = "dma"; }},
  };
  for (const Disagreement& disagreement : cases) {
    RunOptions options;
    options.before_rank_init = [&disagreement](int rank) {
      if (rank != 1) return;
      xccl::Params params = xccl::GetParams();
      disagreement.change(&params);
      xccl::SetParamsForTesting(params);
    };
    const auto start = std::chrono::steady_clock::now();
    const std::vector<std::string> failures = RunGpuRanks(
        RankMode::kProcesses, {0, 0},
        [](RankContext& ctx) { RANK_EXPECT(ctx, false, "init succeeded"); }, options);
    const double seconds = SecondsSince(start);
    int refused = 0;
    for (const std::string& failure : failures) {
      if (failure.rfind("rank ", 0) != 0) {  // the run's header line, or leftovers
        EXPECT_EQ(failure.rfind("left in /dev/shm", 0), std::string::npos) << failure;
        continue;
      }
      ++refused;
      EXPECT_NE(failure.find(xcclGetErrorString(xcclInvalidUsage)), std::string::npos) << failure;
      EXPECT_NE(failure.find(disagreement.parameter), std::string::npos) << failure;
    }
    EXPECT_EQ(refused, 2) << disagreement.parameter << ": " << ::testing::PrintToString(failures);
    EXPECT_LT(seconds, 30.0) << disagreement.parameter << ": init took " << seconds << " s";
    RestoreParams();
  }
}

// No device memory, file descriptor or thread may survive a destroy: 1000 cycles of a
// two-rank communicator on one GPU.
TEST(GpuCommLifecycle, ThousandInitDestroyCyclesLeaveNothing) {
  XCCL_SKIP_WITHOUT_GPU(false);
  ASSERT_EQ(gpu::SetDevice(0), gpu::kSuccess);
  // Warm-up: the first communicators of a process start its once-only pieces (runtime
  // threads, kernel modules loaded on first launch, logging), which are not leaks.
  ExpectNoFailures(RunGpuRanks(RankMode::kThreads, {0, 0}, [](RankContext& ctx) {
    Stream stream;
    if (!stream.Create(ctx)) return;
    CheckedAllGather(ctx, stream, 100, xcclInt32, false, 0, 0);
    CheckedAllGather(ctx, stream, 300000, xcclInt32, true, 0, 1);
    if (XCCL_OK(ctx, xcclBarrier(ctx.comm, stream.xccl())))
      GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
  }));
  const int devices[2] = {0, 0};
  for (int cycle = 0; cycle < 10; ++cycle) {
    xcclComm_t comms[2];
    ASSERT_EQ(xcclCommInitAll(comms, 2, devices), xcclSuccess) << xcclGetLastError(nullptr);
    ASSERT_EQ(xcclCommDestroy(comms[0]), xcclSuccess);
    ASSERT_EQ(xcclCommDestroy(comms[1]), xcclSuccess);
  }
  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(gpu::MemGetInfo(&free_before, &total), gpu::kSuccess);
  const size_t fds_before = OpenFileDescriptors();
  const size_t threads_before = ThreadCount();

  constexpr int kCycles = 1000;
  for (int cycle = 0; cycle < kCycles; ++cycle) {
    xcclComm_t comms[2];
    ASSERT_EQ(xcclCommInitAll(comms, 2, devices), xcclSuccess)
        << "cycle " << cycle << ": " << xcclGetLastError(nullptr);
    ASSERT_EQ(xcclCommDestroy(comms[0]), xcclSuccess) << "cycle " << cycle;
    ASSERT_EQ(xcclCommDestroy(comms[1]), xcclSuccess) << "cycle " << cycle;
  }

  // A few MiB of slack for the runtime's own pools; a leaked control window per cycle (two
  // ranks, 1000 cycles) is far above it.
  constexpr size_t kSlackBytes = 4 << 20;
  // The last rendezvous thread may still be closing its sockets for a moment.
  for (int i = 0; i < 300; ++i) {
    ASSERT_EQ(gpu::MemGetInfo(&free_after, &total), gpu::kSuccess);
    if (free_after + kSlackBytes >= free_before && OpenFileDescriptors() <= fds_before &&
        ThreadCount() <= threads_before)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const double lost_mib =
      (static_cast<double>(free_before) - static_cast<double>(free_after)) / (1 << 20);
  EXPECT_GE(free_after + kSlackBytes, free_before)
      << "device memory lost over " << kCycles << " cycles: " << lost_mib << " MiB ("
      << lost_mib * 1024 / kCycles << " KiB per cycle)";
  EXPECT_LE(OpenFileDescriptors(), fds_before);
  EXPECT_LE(ThreadCount(), threads_before);
  EXPECT_TRUE(LeftoverShm({getpid()}).empty());
}

}  // namespace
}  // namespace xccl_test
