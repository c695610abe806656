// The hierarchical all_gather across fake nodes in small pipeline pieces (XCCL_NET_CHUNK_BYTES
// 4096), so that blocks cross the network and are forwarded inside their node in many pieces:
// sizes at and around piece boundaries, every dtype, in and out of place, unaligned, a held
// rank back to back, the epoch wrap inside one call's pieces, and ranks that pass different
// counts (every rank fails within seconds, nothing written past a buffer).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "api/comm_handle.h"
#include "mp/checked_all_gather.h"
#include "mp/rank_runner.h"
#include "mp/test_params.h"

namespace xccl_test {
namespace {

constexpr int64_t kPiece = 4096;

using Param = std::tuple<RankMode, int, const char*>;  // mode, world, ranks per node

class NodesPipelineTest : public ::testing::TestWithParam<Param> {
 protected:
  std::vector<std::string> Run(const std::function<void(RankContext&)>& body,
                               RunOptions options = RunOptions()) {
    options.before_init =
        Both(Both(WithFakeNodes(std::get<2>(GetParam())), WithNetChunkBytes(kPiece)),
             options.before_init);
    std::vector<std::string> failures =
        RunRanks(std::get<0>(GetParam()), std::get<1>(GetParam()), body, options);
    RestoreParams();
    return failures;
  }
};

TEST_P(NodesPipelineTest, SizesAroundPieceBoundariesEveryDtype) {
  auto failures = Run([](RankContext& ctx) {
    std::mt19937_64 rng(ctx.seed);  // the same draws on every rank
    uint64_t call = 0;
    for (size_t bytes : {size_t(1), size_t(kPiece - 1), size_t(kPiece), size_t(kPiece + 1),
                         size_t(3 * kPiece + 5), size_t(17 * kPiece), size_t(1 + rng() % 300000)}) {
      for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
        const size_t elem = xccl::DataTypeSize(dtype);
        const size_t count = (bytes + elem - 1) / elem;
        CheckedAllGather(ctx, count, dtype, call % 2 == 1, call % 5, call);
        ++call;
        if (!ctx.failures.empty()) return;
      }
    }
  });
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

// A different rank late before each call; blocks of 1 to 6 pieces.
TEST_P(NodesPipelineTest, BackToBackWithHeldRank) {
  auto failures = Run([](RankContext& ctx) {
    for (uint64_t call = 0; call < 200; ++call) {
      if (static_cast<int>(call % ctx.nranks) == ctx.rank) usleep(300);
      const size_t count = 1 + (call * 2654435761u) % (6 * kPiece / 4);
      CheckedAllGather(ctx, count, xcclInt32, call % 3 == 0, 0, call);
      if (!ctx.failures.empty()) return;
    }
  });
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

// One call's pieces cross 2^32 -> 0: every signal starts 3 below the wrap and the first call
// takes 10 pieces where ranks forward inside their node.
TEST_P(NodesPipelineTest, PiecesAcrossTheEpochWrap) {
  RunOptions options;
  options.before_init = WithEpochBase(0xFFFFFFFDu);
  auto failures = Run(
      [](RankContext& ctx) {
        for (uint64_t call = 0; call < 4; ++call) {
          CheckedAllGather(ctx, 10 * kPiece / 8 - call, xcclFloat64, call == 1, 0, call);
          const xcclResult_t result = xcclBarrier(ctx.comm, nullptr);
          RANK_EXPECT(ctx, result == xcclSuccess, "barrier: " << xcclGetLastError(ctx.comm));
        }
        // 4 calls of 10 pieces (one where every node has one rank: nothing is forwarded, the
        // block goes whole) and 4 barriers from 0xFFFFFFFD.
        const uint32_t pieces = ctx.comm->impl->topology().node_count < ctx.nranks ? 10 : 1;
        RANK_EXPECT(ctx, ctx.comm->impl->current_epoch() == 0xFFFFFFFDu + 4 * pieces + 4,
                    "epoch " << ctx.comm->impl->current_epoch());
      },
      options);
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

// Rank `odd` passes another count (larger, smaller, or a multiple of the piece where the
// others' is not): every rank fails within seconds, one of them saying why, and no rank's
// buffer is written past its end.
TEST_P(NodesPipelineTest, DifferentCountsFailEveryRank) {
  const int world = std::get<1>(GetParam());
  for (int odd : {0, world - 1}) {
    for (int shape = 0; shape < 3; ++shape) {
      SCOPED_TRACE("odd rank " + std::to_string(odd) + ", shape " + std::to_string(shape));
      RunOptions options;
      options.before_init = WithTimeoutMs(30000);
      options.skip_destroy = true;
      std::atomic<int> said_why{0};
      auto failures = Run(
          [&](RankContext& ctx) {
            const size_t base = 5 * kPiece / 4 + 3;  // int32: 5 pieces and a bit
            const size_t count = ctx.rank != odd ? base
                                 : shape == 0    ? 2 * base
                                 : shape == 1    ? base / 2
                                                 : 4 * kPiece / 4;
            const size_t guard = 4 * base;
            std::vector<int32_t> send(count, ctx.rank + 1), recv(count * ctx.nranks + guard, -7);
            const auto start = std::chrono::steady_clock::now();
            const xcclResult_t result =
                xcclAllGather(send.data(), recv.data(), count, xcclInt32, ctx.comm, nullptr);
            const double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
            const std::string message = xcclGetLastError(ctx.comm);
            RANK_EXPECT(ctx, result != xcclSuccess, "a mismatched all_gather succeeded");
            RANK_EXPECT(ctx, seconds < 10, "took " << seconds << " s to fail: " << message);
            if (message.find("different counts") != std::string::npos) said_why.fetch_add(1);
            size_t overrun = 0;
            for (size_t i = count * ctx.nranks; i < recv.size(); ++i) overrun += recv[i] != -7;
            RANK_EXPECT(ctx, overrun == 0, overrun << " elements written past the buffer");
            RANK_EXPECT(ctx, xcclCommAbort(ctx.comm) == xcclSuccess, "abort");
          },
          options);
      for (const auto& failure : failures) ADD_FAILURE() << failure;
      if (std::get<0>(GetParam()) == RankMode::kThreads) {
        EXPECT_GE(said_why.load(), 1) << "no rank said the counts differ";
      }
    }
  }
}

std::vector<Param> Shapes() {
  std::vector<Param> shapes;
  for (RankMode mode : {RankMode::kThreads, RankMode::kProcesses})
    for (auto shape : {std::make_pair(4, "2,2"), std::make_pair(6, "3,1,2"),
                       std::make_pair(3, "1,1,1"), std::make_pair(8, "4,4")})
      shapes.emplace_back(mode, shape.first, shape.second);
  return shapes;
}

std::string Name(const ::testing::TestParamInfo<Param>& info) {
  std::string nodes = std::get<2>(info.param);
  for (char& c : nodes)
    if (c == ',') c = 'x';
  return std::string(ModeName(std::get<0>(info.param))) + "Nodes" + nodes;
}

INSTANTIATE_TEST_SUITE_P(HostNodes, NodesPipelineTest, ::testing::ValuesIn(Shapes()), Name);

}  // namespace
}  // namespace xccl_test
