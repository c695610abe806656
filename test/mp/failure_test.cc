// Failures on the host platform: a killed rank, a rank that never calls, and bad arguments.
// Survivors must return an error naming the peer within the deadline, never hang, and
// xcclCommAbort must release everything.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/params.h"
#include "mp/bad_arguments.h"
#include "mp/data_pattern.h"
#include "mp/rank_runner.h"
#include "mp/test_params.h"

namespace xccl_test {
namespace {

void ExpectNoFailures(const std::vector<std::string>& failures) {
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Three validated all_gathers of send's size, before a rank is killed.
void WarmUp(RankContext& ctx, std::vector<uint32_t>* send, std::vector<uint32_t>* recv) {
  for (uint64_t call = 0; call < 3; ++call) {
    FillBlock(send->data(), send->size() * 4, ctx.seed, ctx.rank, call);
    xcclResult_t result =
        xcclAllGather(send->data(), recv->data(), send->size(), xcclUint32, ctx.comm, nullptr);
    RANK_EXPECT(ctx, result == xcclSuccess, "warm-up call " << call);
    RANK_EXPECT(ctx,
                CheckGathered(recv->data(), send->size() * 4, ctx.nranks, ctx.seed, call, 4) == "",
                "warm-up data " << call);
  }
}

// A survivor's all_gather after `victim` was killed: it must fail naming the victim within
// `limit_s`. Returns its result for the caller's own checks.
xcclResult_t CallAfterTheKill(RankContext& ctx, std::vector<uint32_t>* send,
                              std::vector<uint32_t>* recv, int victim, double limit_s) {
  const auto start = std::chrono::steady_clock::now();
  const xcclResult_t result =
      xcclAllGather(send->data(), recv->data(), send->size(), xcclUint32, ctx.comm, nullptr);
  const double seconds = SecondsSince(start);
  const std::string message = xcclGetLastError(ctx.comm);
  RANK_EXPECT(ctx, message.find("rank " + std::to_string(victim)) != std::string::npos,
              "the error does not name rank " << victim << ": " << message);
  RANK_EXPECT(ctx, seconds < limit_s, "took " << seconds << " s to notice the dead rank");
  return result;
}

class KilledRankTest : public ::testing::TestWithParam<int> {};

// One rank is SIGKILLed between two calls; every survivor's next call fails naming it, fast
// (death is seen by the liveness check, not the 60 s deadline), and abort releases the comm.
TEST_P(KilledRankTest, SurvivorsReportThePeerAndAbort) {
  const int world = GetParam();
  const int victim = world - 1 - (static_cast<int>(getpid()) % world);
  const RunOptions options = KilledRankOptions(victim);
  auto failures = RunRanks(
      RankMode::kProcesses, world,
      [victim](RankContext& ctx) {
        std::vector<uint32_t> send(1000), recv(1000 * ctx.nranks);
        WarmUp(ctx, &send, &recv);
        KillOnceEveryRankIsWarm(ctx, victim);
        const xcclResult_t result = CallAfterTheKill(ctx, &send, &recv, victim, 20.0);
        RANK_EXPECT(
            ctx, result == xcclRemoteError || result == xcclTimeout,
            "after rank " << victim << " died the call returned " << xcclGetErrorString(result));
        xcclResult_t again = xcclBarrier(ctx.comm, nullptr);
        RANK_EXPECT(
            ctx, again == result,
            "a later call must return the recorded failure, got " << xcclGetErrorString(again));
        xcclResult_t async = xcclSuccess;
        RANK_EXPECT(ctx, xcclCommGetAsyncError(ctx.comm, &async) == xcclSuccess && async == result,
                    "async error " << xcclGetErrorString(async));
        RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, "abort");
      },
      options);
  ExpectNoFailures(failures);
  for (const auto& name : LeftoverShm(LastChildPids()))
    ADD_FAILURE() << "left in /dev/shm: " << name;
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, KilledRankTest, ::testing::Values(2, 3, 4, 8),
                         [](const ::testing::TestParamInfo<int>& info) {
                           return "World" + std::to_string(info.param);
                         });

// Across nodes (XCCL_FAKE_NODES): survivors on the victim's node find the death by its process,
// the others by its closed connections or by a survivor's last words naming it. Every one
// reports the victim, within 2 s, and nothing is left behind.
class KilledRankAcrossNodesTest
    : public ::testing::TestWithParam<std::tuple<int, const char*, int>> {};

// `elements`: uint32 per rank in each call.
void KillAcrossNodes(int world, const std::string& nodes, int victim, size_t elements) {
  RunOptions options = KilledRankOptions(victim);
  options.before_init = Both(options.before_init, WithFakeNodes(nodes));
  auto failures = RunRanks(
      RankMode::kProcesses, world,
      [victim, elements](RankContext& ctx) {
        std::vector<uint32_t> send(elements), recv(elements * ctx.nranks);
        WarmUp(ctx, &send, &recv);
        KillOnceEveryRankIsWarm(ctx, victim);
        const xcclResult_t result = CallAfterTheKill(ctx, &send, &recv, victim, 2.0);
        RANK_EXPECT(
            ctx, result == xcclRemoteError,
            "after rank " << victim << " died the call returned " << xcclGetErrorString(result));
        RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, "abort");
      },
      options);
  ExpectNoFailures(failures);
  for (const auto& name : LeftoverShm(LastChildPids()))
    ADD_FAILURE() << "left in /dev/shm: " << name;
}

TEST_P(KilledRankAcrossNodesTest, EverySurvivorNamesTheDeadRankWithinTwoSeconds) {
  KillAcrossNodes(std::get<0>(GetParam()), std::get<1>(GetParam()), std::get<2>(GetParam()),
                  100000);
}

// 16 nodes of 4: a survivor is linked to the victim only where an algorithm or the liveness
// overlay put a link; the others hear of it from the news their links pass on.
TEST(KilledRankAcrossManyNodesTest, EverySurvivorOf16NodesOf4NamesTheDeadRankWithinTwoSeconds) {
  std::string nodes = "4";
  for (int node = 1; node < 16; ++node) nodes += ",4";
  for (int victim : {37, 0}) KillAcrossNodes(64, nodes, victim, 1000);
}

INSTANTIATE_TEST_SUITE_P(
    HostNodes, KilledRankAcrossNodesTest,
    ::testing::Values(std::make_tuple(4, "2,2", 0), std::make_tuple(4, "2,2", 3),
                      std::make_tuple(3, "2,1", 2), std::make_tuple(6, "3,1,2", 3),
                      std::make_tuple(3, "1,1,1", 1)),
    [](const ::testing::TestParamInfo<std::tuple<int, const char*, int>>& info) {
      std::string nodes = std::get<1>(info.param);
      for (char& c : nodes)
        if (c == ',') c = 'x';
      return "World" + std::to_string(std::get<0>(info.param)) + "Nodes" + nodes + "Victim" +
             std::to_string(std::get<2>(info.param));
    });

class StalledRankTest : public ::testing::TestWithParam<RankMode> {};

// A rank that never makes the call: the others time out at XCCL_TIMEOUT_MS naming it.
TEST_P(StalledRankTest, OthersTimeOutNamingIt) {
  const int world = 4, stalled = 2;
  const int64_t timeout_ms = 700;
  RunOptions options;
  options.before_init = WithTimeoutMs(timeout_ms);
  options.skip_destroy = true;
  auto failures = RunRanks(
      GetParam(), world,
      [&](RankContext& ctx) {
        std::vector<uint8_t> send(64), recv(64 * ctx.nranks);
        if (ctx.rank != stalled) {
          auto start = std::chrono::steady_clock::now();
          xcclResult_t result =
              xcclAllGather(send.data(), recv.data(), 64, xcclUint8, ctx.comm, nullptr);
          double seconds = SecondsSince(start);
          std::string message = xcclGetLastError(ctx.comm);
          RANK_EXPECT(ctx, result == xcclTimeout || result == xcclRemoteError,
                      "got " << xcclGetErrorString(result));
          RANK_EXPECT(ctx, message.find("rank " + std::to_string(stalled)) != std::string::npos,
                      "message does not name rank " << stalled << ": " << message);
          RANK_EXPECT(ctx, seconds < 0.7 * 3 + 2, "took " << seconds << " s");
        } else {
          // Stay away until the others have given up, then leave without calling.
          std::this_thread::sleep_for(std::chrono::milliseconds(3 * timeout_ms));
        }
        RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, "abort");
      },
      options);
  RestoreParams();
  ExpectNoFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, StalledRankTest,
                         ::testing::Values(RankMode::kThreads, RankMode::kProcesses),
                         [](const ::testing::TestParamInfo<RankMode>& info) {
                           return std::string(ModeName(info.param));
                         });

class DifferentCountsTest : public ::testing::TestWithParam<RankMode> {
 protected:
  // For each odd rank in `odds`: 4 ranks run `body` (which makes the mismatched call through
  // ExpectMismatchFails and aborts its communicator); with thread ranks, at least one rank must
  // have been refused for the size itself (`none_refused` otherwise).
  void ForEachOddRank(std::initializer_list<int> odds,
                      const std::function<void(RankContext&, int odd, std::atomic<int>*)>& body,
                      const char* none_refused) {
    for (const int odd : odds) {
      SCOPED_TRACE("odd rank " + std::to_string(odd));
      RunOptions options;
      options.before_init = WithTimeoutMs(30000);
      options.skip_destroy = true;
      std::atomic<int> invalid_usage{0};
      auto failures = RunRanks(
          GetParam(), 4, [&](RankContext& ctx) { body(ctx, odd, &invalid_usage); }, options);
      RestoreParams();
      ExpectNoFailures(failures);
      if (GetParam() == RankMode::kThreads) {
        EXPECT_GE(invalid_usage.load(), 1) << none_refused;
      }
    }
  }

  // This rank's part of a mismatched all_gather of `count` int32: it must fail within seconds,
  // and a refusal for the size must say so (counted in `invalid_usage`, for thread ranks).
  static void ExpectMismatchFails(RankContext& ctx, const std::vector<int32_t>& send,
                                  std::vector<int32_t>* recv, size_t count,
                                  std::atomic<int>* invalid_usage) {
    const auto start = std::chrono::steady_clock::now();
    const xcclResult_t result =
        xcclAllGather(send.data(), recv->data(), count, xcclInt32, ctx.comm, nullptr);
    const double seconds = SecondsSince(start);
    const std::string message = xcclGetLastError(ctx.comm);
    RANK_EXPECT(ctx, result != xcclSuccess, "a mismatched all_gather succeeded");
    RANK_EXPECT(ctx, seconds < 10, "took " << seconds << " s to fail");
    if (result == xcclInvalidUsage) {
      RANK_EXPECT(ctx, message.find("different counts") != std::string::npos, message);
      invalid_usage->fetch_add(1);
    }
  }
};

// Ranks that pass different counts to an all_gather of blocks above the eager size: each direct
// put checks the receiver's published size and block, so every rank's call fails within
// seconds (a rank whose put does not fit with xcclInvalidUsage saying so, the others as its
// peers) instead of writing past a peer's buffer (another process's heap, through
// process_vm_writev), returning a half-written result or waiting for the deadline. Three
// shapes: the odd rank's block larger (rank 0, whose puts would still fit a peer's buffer: only
// the block check sees it), smaller (rank 2), and small enough for the eager path (rank 3: the
// others' direct puts find no buffer published).
TEST_P(DifferentCountsTest, EveryRankFailsAndNoBufferIsOverrun) {
  ForEachOddRank(
      {0, 2, 3},
      [](RankContext& ctx, int odd, std::atomic<int>* invalid_usage) {
        const size_t base = 32768;  // 128 KiB of int32 per rank: above the 64 KiB eager limit
        const size_t count = ctx.rank != odd ? base
                             : odd == 0      ? 2 * base
                             : odd == 2      ? base * 3 / 4
                                             : base / 2;
        // A guard zone after recv: a put past its end would land there.
        const size_t guard = 4 * base;
        std::vector<int32_t> send(count, ctx.rank + 1), recv(count * ctx.nranks + guard, -7);
        ExpectMismatchFails(ctx, send, &recv, count, invalid_usage);
        size_t overrun = 0;
        for (size_t i = count * ctx.nranks; i < recv.size(); ++i) overrun += recv[i] != -7;
        RANK_EXPECT(ctx, overrun == 0, overrun << " elements written past the buffer");
        RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, "abort");
      },
      "no rank's put was refused for its size");
}

// The same below the eager size, where blocks go through the peers' inboxes without waiting
// for a receive buffer: each rank compares the size of every piece that arrived with its own, so
// a mismatch fails every rank instead of returning a block with a stale tail (an earlier call's
// bytes in the inbox) or cut short. A matched call with other data comes first, so that the
// inboxes hold bytes a stale tail would show.
TEST_P(DifferentCountsTest, EagerBlocksFailEveryRankToo) {
  ForEachOddRank(
      {0, 2},
      [](RankContext& ctx, int odd, std::atomic<int>* invalid_usage) {
        const size_t base = 64;  // 256 bytes of int32 per rank: far below the eager limit
        std::vector<int32_t> warm_send(base, 100 + ctx.rank), warm_recv(base * ctx.nranks, -7);
        const xcclResult_t warm =
            xcclAllGather(warm_send.data(), warm_recv.data(), base, xcclInt32, ctx.comm, nullptr);
        RANK_EXPECT(ctx, warm == xcclSuccess, "the matched call: " << xcclGetLastError(ctx.comm));
        if (warm != xcclSuccess) return;
        const size_t count = ctx.rank != odd ? base : odd == 0 ? 2 * base : base / 2;
        std::vector<int32_t> send(count, ctx.rank + 1), recv(count * ctx.nranks, -7);
        ExpectMismatchFails(ctx, send, &recv, count, invalid_usage);
        RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, "abort");
      },
      "no rank saw the mismatch itself");
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, DifferentCountsTest,
                         ::testing::Values(RankMode::kThreads, RankMode::kProcesses),
                         [](const ::testing::TestParamInfo<RankMode>& info) {
                           return std::string(ModeName(info.param));
                         });

class ReleaseDuringCallTest : public ::testing::TestWithParam<RankMode> {};

// Abort from another thread is how a caller unblocks a call that waits for a rank that never
// comes: the blocked call returns an error within a second, abort returns success, and nothing
// crashes (abort used to free the windows under the waiting call: SIGSEGV). Destroy from
// another thread waits for the call to leave (here its 2 s deadline) before freeing. Small
// blocks (eager path) and large ones (direct puts on the queues).
TEST_P(ReleaseDuringCallTest, AbortUnblocksTheCallAndDestroyWaitsForIt) {
  for (const bool abort : {true, false}) {
    for (const size_t count : {size_t(16), size_t(1) << 20}) {
      SCOPED_TRACE(std::string(abort ? "abort" : "destroy") + ", count " + std::to_string(count));
      RunOptions options;
      options.before_init = WithTimeoutMs(2000);
      options.skip_destroy = true;
      auto failures = RunRanks(
          GetParam(), 2,
          [&](RankContext& ctx) {
            if (ctx.rank == 1) {  // never calls; leaves once rank 0 is done with the comm
              std::this_thread::sleep_for(std::chrono::milliseconds(2600));
              RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, "abort of rank 1");
              return;
            }
            std::vector<float> send(count, 1.0f), recv(2 * count);
            xcclResult_t call = xcclSuccess;
            double call_seconds = 0;
            std::thread caller([&] {
              const auto start = std::chrono::steady_clock::now();
              call = xcclAllGather(send.data(), recv.data(), count, xcclFloat32, ctx.comm, nullptr);
              call_seconds = SecondsSince(start);
            });
            std::this_thread::sleep_for(std::chrono::milliseconds(300));
            const auto start = std::chrono::steady_clock::now();
            const xcclResult_t released =
                abort ? xcclCommAbort(ctx.comm) : xcclCommDestroy(ctx.comm);
            const double release_seconds = SecondsSince(start);
            caller.join();
            RANK_EXPECT(
                ctx, released == xcclSuccess,
                "release: " << xcclGetErrorString(released) << ": " << xcclGetLastError(nullptr));
            RANK_EXPECT(ctx, call != xcclSuccess, "the blocked call succeeded");
            if (abort) {
              // Woken by the abort, not ended by its own 2 s deadline.
              RANK_EXPECT(ctx, call == xcclRemoteError, "got " << xcclGetErrorString(call));
              RANK_EXPECT(ctx, call_seconds < 1.9, "the call took " << call_seconds << " s");
              RANK_EXPECT(ctx, release_seconds < 1.5, "abort took " << release_seconds << " s");
            } else {
              RANK_EXPECT(ctx, call == xcclTimeout, "got " << xcclGetErrorString(call));
              RANK_EXPECT(ctx, release_seconds > 1.0 && release_seconds < 5.0,
                          "destroy took " << release_seconds << " s (the call's deadline: 2 s)");
            }
            RANK_EXPECT(ctx,
                        xcclAllGather(send.data(), recv.data(), count, xcclFloat32, ctx.comm,
                                      nullptr) == xcclInvalidArgument,
                        "a call after the release");
          },
          options);
      RestoreParams();
      ExpectNoFailures(failures);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, ReleaseDuringCallTest,
                         ::testing::Values(RankMode::kThreads, RankMode::kProcesses),
                         [](const ::testing::TestParamInfo<RankMode>& info) {
                           return std::string(ModeName(info.param));
                         });

class OverlappingCallsTest : public ::testing::TestWithParam<RankMode> {};

// Two threads calling on one communicator at once: the second call is refused at once with
// xcclInvalidUsage saying so (it used to share the first's epoch and windows, and both waited
// for the deadline), the first completes with the right data, and the communicator stays
// usable.
TEST_P(OverlappingCallsTest, TheSecondCallIsRefusedAndTheFirstCompletes) {
  RunOptions options;
  options.before_init = WithTimeoutMs(20000);
  auto failures = RunRanks(
      GetParam(), 2,
      [](RankContext& ctx) {
        const size_t count = 1000;
        std::vector<uint8_t> send(count * 4), recv(count * 4 * ctx.nranks);
        FillBlock(send.data(), send.size(), ctx.seed, ctx.rank, 0);
        Poison(recv.data(), recv.size());
        if (ctx.rank == 1) {
          std::this_thread::sleep_for(std::chrono::milliseconds(1000));
        } else {
          std::thread second([&] {
            std::this_thread::sleep_for(std::chrono::milliseconds(150));
            std::vector<uint8_t> other(recv.size());
            const auto start = std::chrono::steady_clock::now();
            const xcclResult_t r =
                xcclAllGather(send.data(), other.data(), count, xcclInt32, ctx.comm, nullptr);
            const std::string message = xcclGetLastError(nullptr);
            RANK_EXPECT(ctx, r == xcclInvalidUsage, "second call: " << xcclGetErrorString(r));
            RANK_EXPECT(ctx, message.find("must not overlap") != std::string::npos, message);
            RANK_EXPECT(ctx, SecondsSince(start) < 1.0, "the refusal took its time");
          });
          const xcclResult_t first =
              xcclAllGather(send.data(), recv.data(), count, xcclInt32, ctx.comm, nullptr);
          second.join();
          RANK_EXPECT(ctx, first == xcclSuccess, "first call: " << xcclGetLastError(ctx.comm));
          RANK_EXPECT(ctx, CheckGathered(recv.data(), count * 4, ctx.nranks, ctx.seed, 0, 4) == "",
                      CheckGathered(recv.data(), count * 4, ctx.nranks, ctx.seed, 0, 4));
          return;
        }
        RANK_EXPECT(ctx,
                    xcclAllGather(send.data(), recv.data(), count, xcclInt32, ctx.comm, nullptr) ==
                        xcclSuccess,
                    xcclGetLastError(ctx.comm));
        RANK_EXPECT(ctx, CheckGathered(recv.data(), count * 4, ctx.nranks, ctx.seed, 0, 4) == "",
                    CheckGathered(recv.data(), count * 4, ctx.nranks, ctx.seed, 0, 4));
      },
      options);
  RestoreParams();
  ExpectNoFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, OverlappingCallsTest,
                         ::testing::Values(RankMode::kThreads, RankMode::kProcesses),
                         [](const ::testing::TestParamInfo<RankMode>& info) {
                           return std::string(ModeName(info.param));
                         });

// (mode, ranks per node: "" for one node).
class BadArgumentsTest : public ::testing::TestWithParam<std::tuple<RankMode, const char*>> {};

// Each bad call gives its documented error on rank 0 without advancing anything, so a valid
// call afterwards on all ranks still works: the communicator stays usable. On one node and split
// over fake nodes (the ranks of other nodes over the net path).
TEST_P(BadArgumentsTest, EachGivesItsErrorAndTheCommStaysUsable) {
  RunOptions options;
  options.before_init = WithFakeNodes(std::get<1>(GetParam()));
  auto failures = RunRanks(
      std::get<0>(GetParam()), 3,
      [](RankContext& ctx) {
        std::vector<uint32_t> send(50), recv(50 * ctx.nranks);
        if (ctx.rank == 0) {
          ExpectBadArgumentsRefused(ctx, send.data(), recv.data(), send.size(), nullptr);
          int count = 0;
          RANK_EXPECT(ctx, xcclCommCount(ctx.comm, &count) == xcclSuccess && count == ctx.nranks,
                      "count " << count);
        }
        // Null buffers are fine with count 0.
        RANK_EXPECT(ctx,
                    xcclAllGather(nullptr, nullptr, 0, xcclFloat, ctx.comm, nullptr) == xcclSuccess,
                    "count 0 with NULL buffers: " << xcclGetLastError(ctx.comm));
        FillBlock(send.data(), send.size() * 4, ctx.seed, ctx.rank, 7);
        Poison(recv.data(), recv.size() * 4);
        xcclResult_t result =
            xcclAllGather(send.data(), recv.data(), 50, xcclUint32, ctx.comm, nullptr);
        RANK_EXPECT(ctx, result == xcclSuccess,
                    "valid call after bad ones: " << xcclGetLastError(ctx.comm));
        RANK_EXPECT(ctx, CheckGathered(recv.data(), 200, ctx.nranks, ctx.seed, 7, 4) == "", "data");
        // One DMA queue per peer of this rank's node (the host platform's, at most 16).
        int queues = -1, node = -1, nodes = 0, local_rank = -1, local_size = 0;
        RANK_EXPECT(
            ctx, xcclCommNodeInfo(ctx.comm, &node, &nodes, &local_rank, &local_size) == xcclSuccess,
            "node info");
        RANK_EXPECT(ctx,
                    xcclCommQueueCount(ctx.comm, &queues) == xcclSuccess &&
                        queues == std::min(local_size - 1, 16),
                    "queue count " << queues);
      },
      options);
  RestoreParams();
  ExpectNoFailures(failures);
}

INSTANTIATE_TEST_SUITE_P(
    HostPlatform, BadArgumentsTest,
    ::testing::Combine(::testing::Values(RankMode::kThreads, RankMode::kProcesses),
                       ::testing::Values("", "2,1", "1,1,1")),
    [](const ::testing::TestParamInfo<std::tuple<RankMode, const char*>>& info) {
      std::string nodes = std::get<1>(info.param);
      for (char& c : nodes)
        if (c == ',') c = 'x';
      return std::string(ModeName(std::get<0>(info.param))) +
             (nodes.empty() ? "" : "Nodes" + nodes);
    });

TEST(CommLifecycle, DestroyedCommIsRecognised) {
  xcclComm_t comms[2];
  ASSERT_EQ(xcclCommInitAll(comms, 2, nullptr), xcclSuccess) << xcclGetLastError(nullptr);
  ASSERT_EQ(xcclCommDestroy(comms[0]), xcclSuccess);
  ASSERT_EQ(xcclCommDestroy(comms[1]), xcclSuccess);
  std::vector<char> buffer(64);
  EXPECT_EQ(xcclAllGather(buffer.data(), buffer.data(), 8, xcclInt8, comms[0], nullptr),
            xcclInvalidArgument);
  EXPECT_NE(std::string(xcclGetLastError(comms[0])).find("destroyed"), std::string::npos)
      << xcclGetLastError(comms[0]);
  EXPECT_EQ(xcclBarrier(comms[1], nullptr), xcclInvalidArgument);
  EXPECT_EQ(xcclCommDestroy(comms[1]), xcclInvalidArgument);
  int rank = -1;
  EXPECT_EQ(xcclCommUserRank(comms[0], &rank), xcclInvalidArgument);
}

TEST(CommLifecycle, ReusedUniqueIdIsRefused) {
  xcclUniqueId id;
  ASSERT_EQ(xcclGetUniqueId(&id), xcclSuccess);
  xcclComm_t comm = nullptr;
  ASSERT_EQ(xcclCommInitRank(&comm, 1, id, 0), xcclSuccess) << xcclGetLastError(nullptr);
  xcclComm_t again = nullptr;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(xcclCommInitRank(&again, 1, id, 0), xcclInvalidUsage);
  EXPECT_LT(SecondsSince(start), 5.0);
  EXPECT_EQ(again, nullptr);
  EXPECT_NE(std::string(xcclGetLastError(nullptr)).find("already"), std::string::npos)
      << xcclGetLastError(nullptr);
  EXPECT_EQ(xcclCommDestroy(comm), xcclSuccess);
}

TEST(CommLifecycle, WrongRankOrNranksIsRefused) {
  xcclUniqueId id;
  ASSERT_EQ(xcclGetUniqueId(&id), xcclSuccess);
  xcclComm_t comm = nullptr;
  EXPECT_EQ(xcclCommInitRank(&comm, 2, id, 2), xcclInvalidArgument);
  EXPECT_EQ(xcclCommInitRank(&comm, 2, id, -1), xcclInvalidArgument);
  EXPECT_EQ(xcclCommInitRank(&comm, 0, id, 0), xcclInvalidArgument);
  EXPECT_EQ(xcclCommInitRank(nullptr, 2, id, 0), xcclInvalidArgument);
}

// Ranks disagreeing on nranks are told so, instead of waiting for ranks that never come.
TEST(CommLifecycle, DisagreeingNranksIsRefused) {
  RestoreParams();
  xcclUniqueId id;
  ASSERT_EQ(xcclGetUniqueId(&id), xcclSuccess);
  xcclResult_t results[2];
  xcclComm_t comms[2] = {nullptr, nullptr};
  std::thread a([&] { results[0] = xcclCommInitRank(&comms[0], 2, id, 0); });
  std::thread b([&] { results[1] = xcclCommInitRank(&comms[1], 3, id, 1); });
  a.join();
  b.join();
  EXPECT_EQ(results[0], xcclInvalidUsage);
  EXPECT_EQ(results[1], xcclInvalidUsage);
}

// Ranks whose XCCL_EAGER_BYTES differ would size their shared-memory windows differently, and
// a peer addressing an inbox past the end of a smaller window would fault (SIGBUS) or write into
// the wrong inbox; ranks whose XCCL_EPOCH_BASE differ would take each other's old signals for
// new ones. Init refuses both on every rank, naming the parameter, and nobody waits for the
// deadline. The all_gather after a (wrongly) successful init is what would crash or corrupt.
TEST(CommLifecycle, DisagreeingHostSettingsAreRefused) {
  // Far apart, and close enough that both windows round to the same pages (the inboxes are
  // still addressed with different strides); then the epoch base.
  struct Disagreement {
    const char* parameter;
    int64_t eager_bytes;
    uint32_t epoch_base;
  };
  const Disagreement cases[] = {{"XCCL_EAGER_BYTES", 4096, 0},
                                {"XCCL_EAGER_BYTES", 65000, 0},
                                {"XCCL_EPOCH_BASE", 65536, 1000}};
  for (const Disagreement& odd : cases) {
    SCOPED_TRACE(std::string("rank 1 with another ") + odd.parameter);
    const int world = 3;
    RunOptions options;
    options.before_init = WithTimeoutMs(20000);
    options.before_rank_init = [odd](int rank) {
      xccl::Params params = xccl::GetParams();
      params.eager_bytes = rank == 1 ? odd.eager_bytes : 65536;
      params.epoch_base = rank == 1 ? odd.epoch_base : 0;
      xccl::SetParamsForTesting(params);
    };
    const auto start = std::chrono::steady_clock::now();
    auto failures = RunRanks(
        RankMode::kProcesses, world,
        [](RankContext& ctx) {
          const size_t count = 8192;  // 32 KiB per rank: eager on some ranks, not on the other
          std::vector<int32_t> send(count), recv(count * ctx.nranks);
          FillBlock(send.data(), count * 4, ctx.seed, ctx.rank, 0);
          Poison(recv.data(), recv.size() * 4);
          xcclResult_t r =
              xcclAllGather(send.data(), recv.data(), count, xcclInt32, ctx.comm, nullptr);
          RANK_EXPECT(ctx, false,
                      "init succeeded; the all_gather then returned "
                          << xcclGetErrorString(r) << ", data: "
                          << CheckGathered(recv.data(), count * 4, ctx.nranks, ctx.seed, 0, 4));
        },
        options);
    const double seconds = SecondsSince(start);
    std::vector<std::string> per_rank;  // without the run's header line (seed, mode, world)
    for (const std::string& failure : failures)
      if (failure.rfind("rank ", 0) == 0) per_rank.push_back(failure);
    ASSERT_EQ(per_rank.size(), static_cast<size_t>(world)) << ::testing::PrintToString(failures);
    for (const std::string& failure : per_rank) {
      EXPECT_NE(
          failure.find("xcclCommInitRank: " + std::string(xcclGetErrorString(xcclInvalidUsage))),
          std::string::npos)
          << failure;
      EXPECT_NE(failure.find(odd.parameter), std::string::npos) << failure;
    }
    EXPECT_LT(seconds, 15.0) << "init took " << seconds << " s to refuse";
    EXPECT_TRUE(LeftoverShm(LastChildPids()).empty()) << "a refused init left /dev/shm objects";
    RestoreParams();
  }
}

// Out of resources at init (here: address space for thread stacks and windows, limited in a
// forked child to what it uses plus 64, 224 or 768 MiB, so that a rank's thread, a window or a
// queue thread cannot be made): xcclCommInitAll returns an error with a message, at once,
// instead of letting an exception end the process (std::terminate) or leaving the ranks that
// did start waiting at the rendezvous for one that never will; nothing stays in /dev/shm.
TEST(CommLifecycle, ResourceExhaustionAtInitIsAnErrorNotACrash) {
  RestoreParams();
  for (const size_t headroom_mib : {64, 224, 768}) {
    SCOPED_TRACE(std::to_string(headroom_mib) + " MiB of address space to spare");
    int pipe_fds[2];
    ASSERT_EQ(pipe(pipe_fds), 0);
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      close(pipe_fds[0]);
      WithTimeoutMs(20000)();
      rlimit limit{};
      getrlimit(RLIMIT_AS, &limit);
      size_t in_use = 0;
      if (FILE* f = fopen("/proc/self/statm", "r")) {
        if (fscanf(f, "%zu", &in_use) != 1) in_use = 0;
        fclose(f);
      }
      limit.rlim_cur = in_use * static_cast<size_t>(sysconf(_SC_PAGESIZE)) + (headroom_mib << 20);
      setrlimit(RLIMIT_AS, &limit);
      const auto start = std::chrono::steady_clock::now();
      xcclComm_t comms[8] = {};
      const xcclResult_t result = xcclCommInitAll(comms, 8, nullptr);
      const double seconds = SecondsSince(start);
      std::string report = std::to_string(static_cast<int>(result)) + " " +
                           std::to_string(seconds) + " " + xcclGetLastError(nullptr);
      if (result == xcclSuccess)
        for (xcclComm_t comm : comms) xcclCommDestroy(comm);
      ssize_t ignored = write(pipe_fds[1], report.data(), report.size());
      (void)ignored;
      _exit(0);
    }
    close(pipe_fds[1]);
    std::string report;
    char buffer[512];
    ssize_t n = 0;
    while ((n = read(pipe_fds[0], buffer, sizeof(buffer))) > 0) report.append(buffer, n);
    close(pipe_fds[0]);
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status))
        << "the child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
        << "; said: " << report;
    int result = -1;
    double seconds = 0;
    ASSERT_EQ(sscanf(report.c_str(), "%d %lf", &result, &seconds), 2) << report;
    EXPECT_NE(result, static_cast<int>(xcclSuccess)) << "init succeeded within the limit";
    EXPECT_LT(seconds, 10.0) << "init took " << seconds << " s to fail: " << report;
    EXPECT_GT(report.size(), 16u) << "no message: " << report;
    EXPECT_TRUE(LeftoverShm({child}).empty());
  }
}

// No shared-memory object, file descriptor or thread may survive a destroy.
TEST(CommLifecycle, ThousandCreateDestroyCyclesLeaveNothing) {
  {  // the first communicator of a process starts its once-only pieces (logging, probes)
    xcclComm_t comms[2];
    ASSERT_EQ(xcclCommInitAll(comms, 2, nullptr), xcclSuccess) << xcclGetLastError(nullptr);
    ASSERT_EQ(xcclCommDestroy(comms[0]), xcclSuccess);
    ASSERT_EQ(xcclCommDestroy(comms[1]), xcclSuccess);
  }
  const size_t fds_before = OpenFileDescriptors();
  for (int cycle = 0; cycle < 1000; ++cycle) {
    xcclComm_t comms[2];
    ASSERT_EQ(xcclCommInitAll(comms, 2, nullptr), xcclSuccess)
        << "cycle " << cycle << ": " << xcclGetLastError(nullptr);
    ASSERT_EQ(xcclCommDestroy(comms[0]), xcclSuccess);
    ASSERT_EQ(xcclCommDestroy(comms[1]), xcclSuccess);
  }
  EXPECT_TRUE(LeftoverShm({getpid()}).empty());
  // The last root thread may still be closing its sockets for a moment.
  for (int i = 0; i < 100 && OpenFileDescriptors() > fds_before; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(OpenFileDescriptors(), fds_before);
}

}  // namespace
}  // namespace xccl_test

namespace xccl_test {
namespace {

// XCCL_NET chooses the backend between nodes. This build has no ibverbs backend: ib fails init
// on every rank, naming the parameter; socket and auto both run (checked by one validated
// all_gather).
class NetChoiceTest : public ::testing::TestWithParam<RankMode> {};

TEST_P(NetChoiceTest, IbFailsInitOnEveryRankNamingTheParameter) {
  RunOptions options;
  options.before_init = Both(WithFakeNodes("1,1"), WithNet("ib"));
  const std::vector<std::string> failures = RunRanks(
      GetParam(), 2, [](RankContext&) {}, options);
  RestoreParams();
  // The runner's failures open with a line naming the run; the ranks' own lines follow.
  int rank_lines = 0;
  for (const std::string& failure : failures) {
    if (failure.rfind("rank ", 0) != 0 && failure.find("xcclCommInitAll") == std::string::npos)
      continue;
    ++rank_lines;
    EXPECT_NE(failure.find("XCCL_NET=ib"), std::string::npos) << failure;
  }
  EXPECT_GE(rank_lines, 1) << "XCCL_NET=ib initialised without an ibverbs backend";
  if (GetParam() == RankMode::kProcesses) {
    EXPECT_EQ(rank_lines, 2) << "both ranks must fail";
  }
}

TEST_P(NetChoiceTest, SocketAndAutoRunAcrossNodes) {
  for (const char* backend : {"socket", "auto"}) {
    RunOptions options;
    options.before_init = Both(WithFakeNodes("1,1"), WithNet(backend));
    const std::vector<std::string> failures = RunRanks(
        GetParam(), 2,
        [](RankContext& ctx) {
          std::vector<uint32_t> send(3000), recv(3000 * ctx.nranks);
          FillBlock(send.data(), send.size() * 4, ctx.seed, ctx.rank, 0);
          const xcclResult_t result =
              xcclAllGather(send.data(), recv.data(), send.size(), xcclUint32, ctx.comm, nullptr);
          RANK_EXPECT(ctx, result == xcclSuccess, xcclGetLastError(ctx.comm));
          RANK_EXPECT(ctx,
                      CheckGathered(recv.data(), send.size() * 4, ctx.nranks, ctx.seed, 0, 4) == "",
                      "data");
        },
        options);
    RestoreParams();
    for (const std::string& failure : failures) ADD_FAILURE() << backend << ": " << failure;
  }
}

INSTANTIATE_TEST_SUITE_P(HostNodes, NetChoiceTest,
                         ::testing::Values(RankMode::kThreads, RankMode::kProcesses),
                         [](const ::testing::TestParamInfo<RankMode>& info) {
                           return std::string(ModeName(info.param));
                         });

}  // namespace
}  // namespace xccl_test
