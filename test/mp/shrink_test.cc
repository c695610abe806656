// xcclCommShrink on the host platform: survivors make a new communicator without the excluded
// ranks, which take no part - alive and busy elsewhere (threads), or killed at a random step of
// a random sequence of all_gathers, barriers and ag_gemm calls (processes, on one node and on
// every fake-node shape): every survivor names the dead rank within a second at the default
// deadline, shrinks right after the failed call, and makes 100 all_gathers on the new
// communicator, every byte checked; repeated kill-and-shrink cycles leave no shm names or file
// descriptors behind; and every argument check.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "api/comm_handle.h"
#include "base/params.h"
#include "collectives/zero_copy_targets.h"
#include "mp/checked_all_gather.h"
#include "mp/rank_runner.h"
#include "mp/test_params.h"

#ifndef XCCL_GEMM_REFERENCE_PATH
#error "the build passes the reference plugin's path"
#endif

namespace xccl_test {
namespace {

// 100 checked all_gathers (random dtypes, counts, in and out of place) on `comm`, whose rank
// is `rank` of `nranks`; failures into ctx.
void HundredCheckedCalls(RankContext& ctx, xcclComm_t comm, int rank, int nranks) {
  CheckedCallsOn(ctx, comm, rank, nranks, 100,
                 [](RankContext& sub, std::mt19937_64& rng, int call) {
                   const int dtype = static_cast<int>(rng() % xcclNumTypes);
                   const size_t count = 1 + rng() % 3000;
                   CheckedAllGather(sub, count, dtype, rng() % 2 == 0, rng() % 4, 1000 + call);
                 });
}

// The survivors' communicator without `excluded` (alive: XCCL_SHRINK_DEFAULT); nullptr, the
// failure recorded, where the shrink fails.
xcclComm_t ShrinkAway(RankContext& ctx, int excluded) {
  xcclComm_t small = nullptr;
  const int list[] = {excluded};
  RANK_EXPECT(
      ctx, xcclCommShrink(ctx.comm, list, 1, &small, nullptr, XCCL_SHRINK_DEFAULT) == xcclSuccess,
      "shrink: " << xcclGetLastError(ctx.comm));
  return small;
}

// Threads, world 4 and 8: the last rank is excluded while alive; it never calls shrink and goes
// on to destroy its communicator. The survivors' new ranks keep their order.
TEST(ShrinkTest, AliveExcludedRankTakesNoPart) {
  for (int world : {4, 8}) {
    auto failures = RunRanks(RankMode::kThreads, world, [](RankContext& ctx) {
      const int excluded = ctx.nranks - 1;
      CheckedAllGather(ctx, 100, xcclFloat32, false, 0, 1);
      if (ctx.rank == excluded) return;
      xcclComm_t small = ShrinkAway(ctx, excluded);
      if (small == nullptr) return;
      int rank = -1, count = -1;
      RANK_EXPECT(ctx,
                  xcclCommUserRank(small, &rank) == xcclSuccess &&
                      xcclCommCount(small, &count) == xcclSuccess && rank == ctx.rank &&
                      count == ctx.nranks - 1,
                  "new rank " << rank << " of " << count);
      HundredCheckedCalls(ctx, small, ctx.rank, ctx.nranks - 1);
      // ctx.comm, which still names the excluded rank, the runner destroys (waiting for no one).
      RANK_EXPECT(ctx, xcclCommDestroy(small) == xcclSuccess, xcclGetLastError(nullptr));
    });
    for (const auto& failure : failures) ADD_FAILURE() << "world " << world << ": " << failure;
  }
}

// Processes over `nodes` (XCCL_FAKE_NODES; "": one node): one rank killed at a random step of
// a random sequence of all_gathers, barriers and ag_gemm calls (split always, fused on one node,
// reference plugin); every survivor's next call fails naming it within a second (XCCL_TIMEOUT_MS
// at its default), then shrink with XCCL_SHRINK_ABORT right after, 100 checked calls on the new
// communicator (each survivor on the node it was on), abort of the old one. `cycles` cycles, each
// a fresh run: nothing left behind.
void KillAndShrinkCycles(int world, const std::string& nodes, int cycles) {
  const size_t fds_before = OpenFileDescriptors();
  std::mt19937_64 draw(std::random_device{}());
  for (int cycle = 0; cycle < cycles; ++cycle) {
    const int victim = static_cast<int>(draw() % world);
    const int kill_at = static_cast<int>(draw() % 20);
    RunOptions options = KilledRankOptions(victim);
    options.before_init = WithFakeNodes(nodes);  // XCCL_TIMEOUT_MS at its default (300 s)
    const bool fused = nodes.empty();  // the fused mode reaches the ranks of one node only
    auto failures = RunRanks(
        RankMode::kProcesses, world,
        [victim, kill_at, fused](RankContext& ctx) {
          std::mt19937_64 rng(ctx.seed);
          const int64_t n = 32, k = 16, m = 256;
          xcclAgGemm_t ops[2] = {nullptr, nullptr};
          for (xcclAgGemmMode_t mode : {xcclAgGemmFused, xcclAgGemmSplit}) {
            if (mode == xcclAgGemmFused && !fused) continue;
            RANK_EXPECT(
                ctx,
                xcclAgGemmCreate(ctx.comm, n, k, m, xcclBfloat16, xcclBfloat16, mode, 0,
                                 XCCL_GEMM_REFERENCE_PATH, nullptr, &ops[mode]) == xcclSuccess,
                "ag_gemm create: " << xcclGetLastError(ctx.comm));
          }
          const std::vector<unsigned char> a(m * k * 2, 0x3c), b(n * k * 2, 0x3c);
          xcclResult_t r = ctx.failures.empty() ? xcclSuccess : xcclInternalError;
          double seconds = 0;
          for (int step = 0; step < 1000 && r == xcclSuccess; ++step) {
            if (step == kill_at && ctx.rank == victim) raise(SIGKILL);
            const int kind = static_cast<int>(rng() % 6);  // 0: barrier, 1, 2: ag_gemm
            const size_t count = 1 + rng() % 5000;
            const int dtype = static_cast<int>(rng() % xcclNumTypes);
            const auto start = std::chrono::steady_clock::now();
            if (kind == 0) {
              r = xcclBarrier(ctx.comm, nullptr);
            } else if (kind <= 2 && ops[kind - 1] != nullptr) {
              r = xcclAgGemmRun(ops[kind - 1], a.data(), nullptr, b.data(), nullptr, m, nullptr,
                                nullptr, nullptr);
            } else {
              std::vector<unsigned char> send(count * 8, 1), recv(count * 8 * ctx.nranks);
              r = xcclAllGather(send.data(), recv.data(), count, static_cast<xcclDataType_t>(dtype),
                                ctx.comm, nullptr);
            }
            seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          }
          const std::string message = xcclGetLastError(ctx.comm);
          RANK_EXPECT(ctx, r == xcclRemoteError || r == xcclSystemError,
                      "after rank " << victim << " died: " << xcclGetErrorString(r));
          RANK_EXPECT(ctx, message.find("rank " + std::to_string(victim)) != std::string::npos,
                      "the error does not name rank " << victim << ": " << message);
          RANK_EXPECT(ctx, seconds < 1.0, "took " << seconds << " s to name the dead rank");
          xcclComm_t small = nullptr;
          const int list[] = {victim};
          RANK_EXPECT(
              ctx,
              xcclCommShrink(ctx.comm, list, 1, &small, nullptr, XCCL_SHRINK_ABORT) == xcclSuccess,
              "shrink: " << xcclGetLastError(ctx.comm));
          if (small != nullptr) {
            HundredCheckedCalls(ctx, small, ctx.rank - (ctx.rank > victim ? 1 : 0), ctx.nranks - 1);
            RANK_EXPECT(ctx, xcclCommDestroy(small) == xcclSuccess, xcclGetLastError(nullptr));
          }
          for (xcclAgGemm_t op : ops)
            if (op != nullptr)
              RANK_EXPECT(ctx, xcclAgGemmDestroy(op) == xcclSuccess, xcclGetLastError(nullptr));
          RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, xcclGetLastError(nullptr));
        },
        options);
    for (const auto& failure : failures)
      ADD_FAILURE() << "nodes \"" << nodes << "\" cycle " << cycle << " (rank " << victim
                    << " killed at step " << kill_at << "): " << failure;
    const auto left = LeftoverShm(LastChildPids());
    EXPECT_TRUE(left.empty()) << "cycle " << cycle << " left " << left.size() << " shm names";
    if (::testing::Test::HasFailure()) return;
  }
  EXPECT_EQ(OpenFileDescriptors(), fds_before) << "file descriptors left by the cycles";
}

// One node, world 4, 100 cycles.
TEST(ShrinkTest, KilledRankThenShrinkAndGoOn) { KillAndShrinkCycles(4, "", 100); }

// The node shapes of the multi-node issue (fake nodes over sockets), 5 cycles each.
class ShrinkAcrossNodesTest : public ::testing::TestWithParam<std::pair<int, const char*>> {};

TEST_P(ShrinkAcrossNodesTest, KilledRankThenShrinkAndGoOn) {
  KillAndShrinkCycles(GetParam().first, GetParam().second, 5);
}

INSTANTIATE_TEST_SUITE_P(HostNodes, ShrinkAcrossNodesTest,
                         ::testing::Values(std::make_pair(4, "2,2"), std::make_pair(8, "4,4"),
                                           std::make_pair(8, "2,2,2,2"), std::make_pair(3, "2,1"),
                                           std::make_pair(6, "3,1,2"), std::make_pair(3, "1,1,1")),
                         [](const ::testing::TestParamInfo<std::pair<int, const char*>>& info) {
                           std::string nodes = info.param.second;
                           for (char& c : nodes)
                             if (c == ',') c = 'x';
                           return "World" + std::to_string(info.param.first) + "Nodes" + nodes;
                         });

// Every argument check answers with its code and a message, and the communicator still works.
// Where each of ranks of this process may write into this rank's receive buffer: all null where
// zero-copy is off for `comm`.
std::string ZeroCopyTargetsOn(xcclComm_t comm) {
  std::vector<char> recv(3 * 256);
  std::vector<char*> at;
  xccl::ZeroCopyTargets(comm->impl.get(), recv.data(), recv.size(), &at);
  std::string taken;
  for (size_t r = 0; r < at.size(); ++r)
    if (at[r] != nullptr) taken += " " + std::to_string(r);
  return taken;
}

// A communicator reads its own parameters, and a shrunk one its parent's, not the process's as
// they are by then: made with XCCL_ZERO_COPY=0, the process's set to 1 after init, neither the
// communicator nor the one shrunk from it may offer a zero-copy target.
TEST(ShrinkTest, ShrunkCommunicatorKeepsItsParentsParameters) {
  RunOptions options;
  options.before_init = [] {
    xccl::Params params = xccl::GetParams();
    params.zero_copy = 0;
    xccl::SetParamsForTesting(params);
  };
  auto failures = RunRanks(
      RankMode::kThreads, 3,
      [](RankContext& ctx) {
        RANK_EXPECT(ctx, xcclBarrier(ctx.comm, nullptr) == xcclSuccess, "barrier");
        if (ctx.rank == 0) {
          xccl::Params params = xccl::GetParams();
          params.zero_copy = 1;
          xccl::SetParamsForTesting(params);
        }
        RANK_EXPECT(ctx, xcclBarrier(ctx.comm, nullptr) == xcclSuccess, "barrier");
        const std::string parent = ZeroCopyTargetsOn(ctx.comm);
        RANK_EXPECT(ctx, parent.empty(), "zero-copy targets on the parent:" << parent);
        const int excluded = ctx.nranks - 1;
        if (ctx.rank == excluded) return;
        xcclComm_t small = ShrinkAway(ctx, excluded);
        if (small == nullptr) return;
        const std::string child = ZeroCopyTargetsOn(small);
        RANK_EXPECT(ctx, child.empty(), "zero-copy targets on the shrunk communicator:" << child);
        HundredCheckedCalls(ctx, small, ctx.rank, ctx.nranks - 1);
        RANK_EXPECT(ctx, xcclCommDestroy(small) == xcclSuccess, xcclGetLastError(nullptr));
      },
      options);
  RestoreParams();
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

TEST(ShrinkTest, BadArgumentsAreRefused) {
  auto failures = RunRanks(RankMode::kThreads, 3, [](RankContext& ctx) {
    xcclComm_t out = nullptr;
    auto refused = [&](xcclResult_t r, xcclResult_t want, const char* what, const char* says) {
      const std::string message = xcclGetLastError(ctx.comm);
      RANK_EXPECT(ctx, r == want && message.find(says) != std::string::npos,
                  what << ": " << xcclGetErrorString(r) << " \"" << message << "\"");
      RANK_EXPECT(ctx, out == nullptr, what << ": newcomm set");
    };
    const int other = (ctx.rank + 1) % ctx.nranks;
    const int one[] = {other}, twice[] = {other, other}, outside[] = {ctx.nranks};
    const int self[] = {ctx.rank}, all[] = {0, 1, 2};
    refused(xcclCommShrink(ctx.comm, one, 1, nullptr, nullptr, 0), xcclInvalidArgument,
            "newcomm NULL", "newcomm is NULL");
    refused(xcclCommShrink(nullptr, one, 1, &out, nullptr, 0), xcclInvalidArgument, "comm NULL",
            "NULL");
    refused(xcclCommShrink(ctx.comm, nullptr, 1, &out, nullptr, 0), xcclInvalidArgument,
            "list NULL", "exclude_ranks is NULL");
    refused(xcclCommShrink(ctx.comm, twice, 2, &out, nullptr, 0), xcclInvalidArgument,
            "listed twice", "listed twice");
    refused(xcclCommShrink(ctx.comm, outside, 1, &out, nullptr, 0), xcclInvalidArgument,
            "out of range", "outside [0, 3)");
    refused(xcclCommShrink(ctx.comm, self, 1, &out, nullptr, 0), xcclInvalidUsage, "self",
            "excludes itself");
    refused(xcclCommShrink(ctx.comm, all, 3, &out, nullptr, 0), xcclInvalidArgument, "everyone",
            "at least one rank must remain");
    refused(xcclCommShrink(ctx.comm, one, -1, &out, nullptr, 0), xcclInvalidArgument, "negative",
            "-1 ranks");
    refused(xcclCommShrink(ctx.comm, one, 1, &out, nullptr, 7), xcclInvalidArgument, "flags 7",
            "flags 7");
    CheckedAllGather(ctx, 333, xcclInt32, false, 1, 5);  // still usable
  });
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

}  // namespace
}  // namespace xccl_test
