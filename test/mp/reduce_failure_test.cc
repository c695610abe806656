// reduce_scatter and all_reduce (and broadcast) beyond the single call on the host platform:
// interleaved with all_gather, broadcast and barrier on two communicators (in turn, and from two
// threads at once), ranks that pass different counts, a rank killed in the middle of a call, and
// bad arguments.
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "base/datatype.h"
#include "mp/bad_arguments.h"
#include "mp/checked_broadcast.h"
#include "mp/checked_reduce.h"
#include "mp/data_pattern.h"
#include "mp/rank_runner.h"
#include "mp/reduce_suite.h"
#include "mp/test_params.h"

namespace xccl_test {
namespace {

void ExpectNoFailures(const std::vector<std::string>& failures) {
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// CLOCK_MONOTONIC in ns: one clock for every process of the machine.
uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

constexpr Reduction kBoth[] = {Reduction::kReduceScatter, Reduction::kAllReduce};

// ---- interleaved on two communicators ----

// One step of the mix on `comm`: a checked reduce_scatter, all_reduce, all_gather or broadcast,
// or a barrier, its draws from `rng` (the same on every rank). False once a call failed.
bool MixedStep(RankContext& ctx, xcclComm_t comm, std::mt19937_64& rng, uint64_t call) {
  const int kind = static_cast<int>(rng() % 5);
  const int dtype = static_cast<int>(rng() % xcclNumTypes);
  const int op = static_cast<int>(rng() % xcclNumOps);
  const size_t count = 1 + rng() % 5000;
  const bool in_place = rng() % 2 == 0;
  const size_t offset = rng() % 8;
  if (kind == 0 || kind == 1) {
    const ReduceCall c{dtype, op, static_cast<Flavor>(call % 3), call};
    return CheckedReduce(ctx, comm, kind == 0 ? Reduction::kReduceScatter : Reduction::kAllReduce,
                         c, count, in_place, offset);
  }
  if (kind == 2) {
    const size_t block = count * xccl::DataTypeSize(dtype);
    std::vector<unsigned char> recv_storage(block * ctx.nranks + offset), send_storage(block);
    unsigned char* recv = recv_storage.data() + offset;
    unsigned char* send = in_place ? recv + ctx.rank * block : send_storage.data();
    Poison(recv, block * ctx.nranks);
    FillBlock(send, block, ctx.seed, ctx.rank, call);
    const xcclResult_t result =
        xcclAllGather(send, recv, count, static_cast<xcclDataType_t>(dtype), comm, nullptr);
    RANK_EXPECT(ctx, result == xcclSuccess,
                "all_gather " << call << ": " << xcclGetLastError(comm));
    if (result != xcclSuccess) return false;
    const std::string wrong =
        CheckGathered(recv, block, ctx.nranks, ctx.seed, call, xccl::DataTypeSize(dtype));
    RANK_EXPECT(ctx, wrong.empty(), "all_gather " << call << ": " << wrong);
    return true;
  }
  if (kind == 3) {
    const int root = static_cast<int>(rng() % ctx.nranks);
    return CheckedBroadcast(ctx, comm, root, dtype, count, in_place, offset, call);
  }
  const xcclResult_t result = xcclBarrier(comm, nullptr);
  RANK_EXPECT(ctx, result == xcclSuccess, "barrier " << call << ": " << xcclGetLastError(comm));
  return result == xcclSuccess;
}

class ReduceScatterAllReduceInterleavedTest : public ReduceSuite {};

// A second communicator of the same ranks (a shrink that excludes no one). First 80 steps in
// turn, each on a communicator drawn at random, with a held rank; then each communicator driven
// by a thread of its own, 40 steps each at the same time: the two must never take each other's
// arrivals.
TEST_P(ReduceScatterAllReduceInterleavedTest, WithAllGatherAndBarrierOnTwoComms) {
  Run([](RankContext& ctx) {
    xcclComm_t second = nullptr;
    const xcclResult_t made =
        xcclCommShrink(ctx.comm, nullptr, 0, &second, nullptr, XCCL_SHRINK_DEFAULT);
    RANK_EXPECT(ctx, made == xcclSuccess,
                "the second communicator: " << xcclGetLastError(ctx.comm));
    if (made != xcclSuccess) return;
    const xcclComm_t comms[2] = {ctx.comm, second};
    std::mt19937_64 rng(ctx.seed);
    bool calls_ok = true;  // a wrong result alone must not make this rank skip calls
    for (uint64_t step = 0; step < 80 && calls_ok; ++step) {
      const xcclComm_t comm = comms[rng() % 2];
      if (static_cast<int>(step % ctx.nranks) == ctx.rank) usleep(300);
      calls_ok = MixedStep(ctx, comm, rng, step);
    }
    if (calls_ok) {
      // Each thread its own context (failures are not shared across threads), merged after.
      RankContext sub[2];
      std::vector<std::thread> threads;
      for (int i = 0; i < 2; ++i) {
        sub[i].comm = comms[i];
        sub[i].rank = ctx.rank;
        sub[i].nranks = ctx.nranks;
        sub[i].seed = ctx.seed;
        sub[i].shared = ctx.shared;
        threads.emplace_back([&sub, i, &ctx] {
          std::mt19937_64 own(ctx.seed + 1 + i);
          for (uint64_t step = 0; step < 40; ++step) {
            if (static_cast<int>((step + i) % ctx.nranks) == ctx.rank) usleep(200);
            if (!MixedStep(sub[i], sub[i].comm, own, 1000 * (i + 1) + step)) break;
          }
        });
      }
      for (auto& thread : threads) thread.join();
      for (int i = 0; i < 2; ++i)
        for (const std::string& f : sub[i].failures)
          ctx.Fail(std::string(i == 0 ? "first" : "second") + " communicator's thread: " + f);
    }
    RANK_EXPECT(ctx, xcclCommDestroy(second) == xcclSuccess,
                "destroying the second: " << xcclGetLastError(nullptr));
  });
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, ReduceScatterAllReduceInterleavedTest,
                         ::testing::Values(ReduceParam(RankMode::kThreads, 3, ""),
                                           ReduceParam(RankMode::kProcesses, 4, ""),
                                           ReduceParam(RankMode::kThreads, 4, "2,2")),
                         ReduceParamName);

// ---- different counts ----

class ReduceScatterAllReduceDifferentCountsTest : public ::testing::TestWithParam<RankMode> {};

// One rank passes another count than its peers (larger or smaller; rank 0 or the last), above
// the eager size and below it: every rank's call must fail within seconds, with xcclInvalidUsage
// or the report of it (not hang until the deadline, not return a half-written result), and
// nothing may be written past any rank's buffers.
TEST_P(ReduceScatterAllReduceDifferentCountsTest, EveryRankFails) {
  const int world = 4;
  struct Shape {
    size_t base;  // elements of int32 per rank
    int odd;
    bool larger;
  };
  const Shape shapes[] = {{1 << 15, 0, true},   // 128 KiB blocks, rank 0 twice that
                          {1 << 15, 3, false},  // the last rank's half
                          {64, 0, false},       // 256 bytes: the eager path
                          {64, 3, true}};
  for (const Reduction which : kBoth) {
    for (const Shape& shape : shapes) {
      SCOPED_TRACE(std::string(ReductionName(which)) + ", base count " +
                   std::to_string(shape.base) + ", rank " + std::to_string(shape.odd) + " passes " +
                   (shape.larger ? "twice" : "half") + " that");
      RunOptions options;
      options.before_init = WithTimeoutMs(30000);
      options.skip_destroy = true;
      auto failures = RunRanks(
          GetParam(), world,
          [which, shape](RankContext& ctx) {
            const size_t count = ctx.rank != shape.odd ? shape.base
                                 : shape.larger        ? 2 * shape.base
                                                       : shape.base / 2;
            const size_t send_elems =
                which == Reduction::kReduceScatter ? count * ctx.nranks : count;
            const size_t guard = 4 * shape.base * ctx.nranks;  // a put past the end lands here
            std::vector<int32_t> send(send_elems, ctx.rank + 1), recv(count + guard, -7);
            const auto start = std::chrono::steady_clock::now();
            const xcclResult_t result =
                which == Reduction::kReduceScatter
                    ? xcclReduceScatter(send.data(), recv.data(), count, xcclInt32, xcclSum,
                                        ctx.comm, nullptr)
                    : xcclAllReduce(send.data(), recv.data(), count, xcclInt32, xcclSum, ctx.comm,
                                    nullptr);
            const double seconds = SecondsSince(start);
            const std::string message = xcclGetLastError(ctx.comm);
            // A rank that sees the odd piece says so; one whose wait a peer's report of the
            // mismatch interrupts first fails with that report (xccl.h).
            const bool said_counts = result == xcclInvalidUsage;
            const bool heard_report = result == xcclRemoteError &&
                                      message.find("reported that rank") != std::string::npos;
            RANK_EXPECT(
                ctx, said_counts || heard_report,
                "count " << count << ": got " << xcclGetErrorString(result) << ": " << message);
            RANK_EXPECT(ctx, !said_counts || message.find("count") != std::string::npos,
                        "the message does not say what differs: " << message);
            RANK_EXPECT(ctx, seconds < 10, "took " << seconds << " s to fail");
            size_t overrun = 0;
            for (size_t i = count; i < recv.size(); ++i) overrun += recv[i] != -7;
            RANK_EXPECT(ctx, overrun == 0, overrun << " elements written past the buffer");
            RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, "abort");
          },
          options);
      RestoreParams();
      ExpectNoFailures(failures);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, ReduceScatterAllReduceDifferentCountsTest,
                         ::testing::Values(RankMode::kThreads, RankMode::kProcesses),
                         [](const ::testing::TestParamInfo<RankMode>& info) {
                           return std::string(ModeName(info.param));
                         });

// ---- a rank killed mid-call ----

// The collective the ranks loop on when the victim dies.
enum class Looped { kReduceScatter, kAllReduce, kBroadcast };
const char* LoopedName(Looped which) {
  return which == Looped::kReduceScatter ? "ReduceScatter"
         : which == Looped::kAllReduce   ? "AllReduce"
                                         : "Broadcast";
}

// (collective, world, ranks per node).
using KilledParam = std::tuple<Looped, int, const char*>;
class ReduceScatterAllReduceKilledRankTest : public ::testing::TestWithParam<KilledParam> {};

// Every rank loops on 1 MiB calls (several pieces each); a thread of the victim's process
// SIGKILLs it 30-90 ms in, so that it dies inside a call, having stamped the time in the shared
// page. Every survivor's call then fails (xcclRemoteError, or xcclTimeout) naming the victim,
// within 5 s of the death (the deadline is 60 s: the death must be found by liveness), and
// abort releases everything.
TEST_P(ReduceScatterAllReduceKilledRankTest, EverySurvivorNamesTheVictimWithinTheDeadline) {
  const Looped which = std::get<0>(GetParam());
  const int world = std::get<1>(GetParam());
  const std::string nodes = std::get<2>(GetParam());
  const int victim = static_cast<int>(getpid()) % world;
  constexpr int kStampSlot = 2048;  // ctx.shared[kStampSlot]: when the victim died
  RunOptions options = KilledRankOptions(victim);
  options.before_init = Both(options.before_init, WithFakeNodes(nodes));
  auto failures = RunRanks(
      RankMode::kProcesses, world,
      [which, victim](RankContext& ctx) {
        // Two checked calls first: the path works before the kill.
        for (uint64_t call = 0; call < 2; ++call) {
          const bool checked =
              which == Looped::kBroadcast
                  ? CheckedBroadcast(ctx, ctx.comm, 0, xcclFloat32, 1000, call == 1, 0, call)
                  : CheckedReduce(ctx, ctx.comm,
                                  which == Looped::kReduceScatter ? Reduction::kReduceScatter
                                                                  : Reduction::kAllReduce,
                                  ReduceCall{xcclFloat32, xcclSum, Flavor::kPlain, call}, 1000,
                                  call == 1, 0);
          if (!checked) return;
        }
        const size_t count =
            (which == Looped::kReduceScatter ? (1 << 18) / ctx.nranks : (1 << 18));  // 1 MiB
        const size_t send_elems = which == Looped::kReduceScatter ? count * ctx.nranks : count;
        std::vector<float> send(send_elems, 1.0f), recv(count);
        if (ctx.rank == victim) {
          const int delay_ms = 30 + static_cast<int>(ctx.seed % 60);
          std::thread([&ctx, delay_ms] {
            std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
            __atomic_store_n(const_cast<uint64_t*>(ctx.shared + kStampSlot), MonotonicNs(),
                             __ATOMIC_SEQ_CST);
            raise(SIGKILL);
          }).detach();
        }
        xcclResult_t result = xcclSuccess;
        int calls = 0;
        for (; calls < 100000 && result == xcclSuccess; ++calls) {
          switch (which) {
            case Looped::kReduceScatter:
              result = xcclReduceScatter(send.data(), recv.data(), count, xcclFloat32, xcclSum,
                                         ctx.comm, nullptr);
              break;
            case Looped::kAllReduce:
              result = xcclAllReduce(send.data(), recv.data(), count, xcclFloat32, xcclSum,
                                     ctx.comm, nullptr);
              break;
            case Looped::kBroadcast:  // the root moves, so the victim is sometimes the root
              result = xcclBroadcast(send.data(), recv.data(), count, xcclFloat32,
                                     calls % ctx.nranks, ctx.comm, nullptr);
              break;
          }
        }
        if (ctx.rank == victim) {  // still alive: the kill never came
          ctx.Fail("the victim outlived its kill (" + std::to_string(calls) + " calls)");
          return;
        }
        const uint64_t returned = MonotonicNs();
        const uint64_t died =
            __atomic_load_n(const_cast<uint64_t*>(ctx.shared + kStampSlot), __ATOMIC_SEQ_CST);
        const std::string message = xcclGetLastError(ctx.comm);
        RANK_EXPECT(
            ctx, result == xcclRemoteError || result == xcclTimeout,
            "after " << calls << " calls: " << xcclGetErrorString(result) << ": " << message);
        RANK_EXPECT(ctx, message.find("rank " + std::to_string(victim)) != std::string::npos,
                    "the error does not name rank " << victim << ": " << message);
        RANK_EXPECT(ctx, died != 0, "failed before the victim died: " << message);
        if (died != 0) {
          const double seconds = (returned - died) * 1e-9;
          RANK_EXPECT(ctx, seconds < 5.0, "took " << seconds << " s after the death to fail");
        }
        xcclResult_t async = xcclSuccess;
        RANK_EXPECT(ctx,
                    xcclCommGetAsyncError(ctx.comm, &async) == xcclSuccess && async != xcclSuccess,
                    "no asynchronous error recorded");
        RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, "abort");
      },
      options);
  RestoreParams();
  ExpectNoFailures(failures);
  for (const auto& name : LeftoverShm(LastChildPids()))
    ADD_FAILURE() << "left in /dev/shm: " << name;
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, ReduceScatterAllReduceKilledRankTest,
                         ::testing::Values(KilledParam(Looped::kReduceScatter, 4, ""),
                                           KilledParam(Looped::kAllReduce, 4, ""),
                                           KilledParam(Looped::kBroadcast, 4, ""),
                                           KilledParam(Looped::kReduceScatter, 3, "2,1"),
                                           KilledParam(Looped::kAllReduce, 4, "2,2"),
                                           KilledParam(Looped::kBroadcast, 3, "2,1")),
                         [](const ::testing::TestParamInfo<KilledParam>& info) {
                           std::string nodes = std::get<2>(info.param);
                           for (char& c : nodes)
                             if (c == ',') c = 'x';
                           return std::string(LoopedName(std::get<0>(info.param))) + "World" +
                                  std::to_string(std::get<1>(info.param)) +
                                  (nodes.empty() ? "" : "Nodes" + nodes);
                         });

// ---- bad arguments ----

class ReduceScatterAllReduceBadArgumentsTest : public ReduceSuite {};

// Each bad call gives xcclInvalidArgument and a message on rank 0 without advancing anything,
// so valid calls afterwards on every rank still work: the communicator stays usable. NULL
// buffers are fine with count 0.
TEST_P(ReduceScatterAllReduceBadArgumentsTest, EachRefusedWithAMessageAndTheCommStaysUsable) {
  Run([](RankContext& ctx) {
    const size_t count = 50;
    std::vector<uint32_t> send(count * (ctx.nranks + 1)), recv(count * (ctx.nranks + 1));
    if (ctx.rank == 0)
      ExpectBadReductionArgumentsRefused(ctx, send.data(), recv.data(), count, nullptr);
    for (const Reduction which : kBoth) {
      for (int op = 0; op < xcclNumOps; ++op) {
        const xcclResult_t result =
            which == Reduction::kReduceScatter
                ? xcclReduceScatter(nullptr, nullptr, 0, xcclFloat, static_cast<xcclRedOp_t>(op),
                                    ctx.comm, nullptr)
                : xcclAllReduce(nullptr, nullptr, 0, xcclFloat, static_cast<xcclRedOp_t>(op),
                                ctx.comm, nullptr);
        RANK_EXPECT(ctx, result == xcclSuccess,
                    ReductionName(which)
                        << " count 0 with NULL buffers: " << xcclGetLastError(ctx.comm));
      }
      for (uint64_t call = 0; call < 2; ++call)
        if (!CheckedReduce(ctx, ctx.comm, which,
                           ReduceCall{xcclUint32, xcclSum, Flavor::kPlain, call}, count, call == 1,
                           0))
          return;
    }
  });
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, ReduceScatterAllReduceBadArgumentsTest,
                         ::testing::Values(ReduceParam(RankMode::kThreads, 3, ""),
                                           ReduceParam(RankMode::kProcesses, 3, ""),
                                           ReduceParam(RankMode::kThreads, 3, "2,1"),
                                           ReduceParam(RankMode::kProcesses, 3, "1,1,1")),
                         ReduceParamName);

}  // namespace
}  // namespace xccl_test
