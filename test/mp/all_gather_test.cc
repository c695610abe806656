// all_gather and barrier on the host platform at world 2, 3, 4 and 8, as threads and as
// processes, on one node and split over fake nodes (XCCL_FAKE_NODES: the ranks of other nodes
// reached over the net socket backend only): every dtype, in and out of place, unaligned
// buffers, random sizes, back-to-back calls with a held rank, and the epoch wrap.
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <tuple>
#include <vector>

#include "api/comm_handle.h"
#include "base/datatype.h"
#include "base/params.h"
#include "mp/checked_all_gather.h"
#include "mp/data_pattern.h"
#include "mp/rank_runner.h"
#include "mp/test_params.h"

namespace xccl_test {
namespace {

// (mode, world, ranks per node: "" for one node).
using Param = std::tuple<RankMode, int, const char*>;

class AllGatherTest : public ::testing::TestWithParam<Param> {
 protected:
  RankMode mode() const { return std::get<0>(GetParam()); }
  int world() const { return std::get<1>(GetParam()); }
  const char* nodes() const { return std::get<2>(GetParam()); }
  // RunRanks with this case's node split in every rank's parameters.
  std::vector<std::string> Run(const std::function<void(RankContext&)>& body,
                               RunOptions options = RunOptions()) {
    options.before_init = Both(WithFakeNodes(nodes()), options.before_init);
    std::vector<std::string> failures = RunRanks(mode(), world(), body, options);
    RestoreParams();
    return failures;
  }
  void ExpectNoFailures(const std::vector<std::string>& failures) {
    for (const auto& failure : failures) ADD_FAILURE() << failure;
    if (mode() == RankMode::kProcesses) {
      for (const auto& name : LeftoverShm(LastChildPids()))
        ADD_FAILURE() << "left in /dev/shm: " << name;
    }
  }
};

TEST_P(AllGatherTest, EveryDtypeInAndOutOfPlaceUnaligned) {
  ExpectNoFailures(Run([](RankContext& ctx) {
    std::mt19937_64 rng(ctx.seed);  // same draws on every rank: counts must agree
    uint64_t call = 0;
    for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
      for (bool in_place : {false, true}) {
        size_t counts[] = {0, 1, 7, 1 + rng() % 5000};
        for (size_t count : counts) {
          CheckedAllGather(ctx, count, dtype, in_place, (call * 3 + dtype) % 8, call);
          ++call;
        }
      }
    }
  }));
}

TEST_P(AllGatherTest, RandomSizesUpToSeveralMiB) {
  ExpectNoFailures(Run([](RankContext& ctx) {
    std::mt19937_64 rng(ctx.seed);
    for (uint64_t call = 0; call < 12; ++call) {
      // Log-uniform total size from 1 byte to 6 MiB, split over the ranks.
      double log_total =
          std::uniform_real_distribution<double>(0.0, std::log2(6.0 * (1 << 20)))(rng);
      size_t count = static_cast<size_t>(std::exp2(log_total)) / ctx.nranks;
      if (call == 0) count = 0;
      CheckedAllGather(ctx, count, xcclUint8, call % 2 == 1, call % 4, call);
    }
  }));
}

// No host synchronisation between calls: only the library orders them. Before call i, rank
// i % world sleeps, so a different rank arrives late each time while the others run ahead.
TEST_P(AllGatherTest, ThousandBackToBackWithHeldRank) {
  ExpectNoFailures(Run([](RankContext& ctx) {
    for (uint64_t call = 0; call < 1000; ++call) {
      if (static_cast<int>(call % ctx.nranks) == ctx.rank) usleep(200);
      size_t count = 1 + (call * 37) % 257;
      CheckedAllGather(ctx, count, xcclInt32, call % 3 == 0, 0, call);
      if (!ctx.failures.empty()) return;
    }
  }));
}

// Every signal starts at 0xFFFFFFFE, so the first calls cross 2^32 -> 0.
TEST_P(AllGatherTest, AcrossTheEpochWrap) {
  RunOptions options;
  options.before_init = WithEpochBase(0xFFFFFFFEu);
  auto failures = Run(
      [](RankContext& ctx) {
        RANK_EXPECT(ctx, ctx.comm->impl->current_epoch() == 0xFFFFFFFEu,
                    "epoch starts at " << ctx.comm->impl->current_epoch());
        for (uint64_t call = 0; call < 8; ++call) {
          if (static_cast<int>(call % ctx.nranks) == ctx.rank) usleep(300);
          if (call % 2 == 0) {
            CheckedAllGather(ctx, 100 + call, xcclFloat32, call % 4 == 0, 0, call);
          } else {
            xcclResult_t result = xcclBarrier(ctx.comm, nullptr);
            RANK_EXPECT(ctx, result == xcclSuccess,
                        "barrier " << call << ": " << xcclGetLastError(ctx.comm));
          }
        }
        RANK_EXPECT(
            ctx, ctx.comm->impl->current_epoch() == 6u,
            "after 8 calls from 0xFFFFFFFE the epoch is " << ctx.comm->impl->current_epoch());
      },
      options);
  ExpectNoFailures(failures);
}

// No rank leaves a barrier before the last one has entered it.
TEST_P(AllGatherTest, BarrierHoldsEveryRank) {
  ExpectNoFailures(Run([](RankContext& ctx) {
    volatile uint64_t* entered = ctx.shared;
    for (uint64_t round = 0; round < 200; ++round) {
      if (static_cast<int>(round % ctx.nranks) == ctx.rank) usleep(300);
      __atomic_fetch_add(const_cast<uint64_t*>(entered), 1, __ATOMIC_SEQ_CST);
      xcclResult_t result = xcclBarrier(ctx.comm, nullptr);
      RANK_EXPECT(ctx, result == xcclSuccess, "barrier: " << xcclGetLastError(ctx.comm));
      uint64_t seen = __atomic_load_n(const_cast<uint64_t*>(entered), __ATOMIC_SEQ_CST);
      RANK_EXPECT(ctx, seen >= (round + 1) * ctx.nranks,
                  "left barrier " << round << " when only " << seen << " entries were made");
      if (!ctx.failures.empty()) return;
    }
  }));
}

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  std::string name = std::string(ModeName(std::get<0>(info.param))) + "World" +
                     std::to_string(std::get<1>(info.param));
  std::string nodes = std::get<2>(info.param);
  if (!nodes.empty()) {
    for (char& c : nodes)
      if (c == ',') c = 'x';
    name += "Nodes" + nodes;
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, AllGatherTest,
                         ::testing::Combine(::testing::Values(RankMode::kThreads,
                                                              RankMode::kProcesses),
                                            ::testing::Values(2, 3, 4, 8), ::testing::Values("")),
                         ParamName);

// The node shapes of the multi-node issue: 2x2, 2x4, 4x2, uneven (2+1, 3+1+2), one rank per
// node.
std::vector<Param> NodeShapes() {
  std::vector<Param> shapes;
  for (RankMode mode : {RankMode::kThreads, RankMode::kProcesses})
    for (auto shape :
         {std::make_pair(4, "2,2"), std::make_pair(8, "4,4"), std::make_pair(8, "2,2,2,2"),
          std::make_pair(3, "2,1"), std::make_pair(6, "3,1,2"), std::make_pair(3, "1,1,1")})
      shapes.emplace_back(mode, shape.first, shape.second);
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(HostNodes, AllGatherTest, ::testing::ValuesIn(NodeShapes()), ParamName);

}  // namespace
}  // namespace xccl_test

namespace xccl_test {
namespace {

// Ranks forked from a process that already made communicators (as Python multiprocessing
// does) must still see each other as separate processes.
TEST(ForkAfterInit, ChildrenOfAnInitialisedParentGatherCorrectly) {
  xcclComm_t comms[2];
  ASSERT_EQ(xcclCommInitAll(comms, 2, nullptr), xcclSuccess) << xcclGetLastError(nullptr);
  ASSERT_EQ(xcclCommDestroy(comms[0]), xcclSuccess);
  ASSERT_EQ(xcclCommDestroy(comms[1]), xcclSuccess);
  auto failures = RunRanks(RankMode::kProcesses, 3, [](RankContext& ctx) {
    for (uint64_t call = 0; call < 4; ++call)
      CheckedAllGather(ctx, 333, xcclFloat64, call % 2, 0, call);
  });
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

}  // namespace
}  // namespace xccl_test
