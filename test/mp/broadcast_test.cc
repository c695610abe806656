// broadcast on the host platform at world 1, 2, 3, 4 and 8, as threads and as processes, on one
// node and split over fake nodes: every root, every type, in and out of place, counts 0, 1, odd,
// random and several region steps, misaligned buffers, random bytes (so NaN payloads and signed
// zeros of every float type must arrive bit for bit), non-root ranks passing no send buffer;
// every byte checked with guard bytes around the output, root's input untouched; a thousand
// back-to-back calls with a held rank and changing roots; bad arguments refused.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/datatype.h"
#include "mp/bad_arguments.h"
#include "mp/checked_broadcast.h"
#include "mp/reduce_suite.h"

namespace xccl_test {
namespace {

class BroadcastTest : public ReduceSuite {};

// Every root with every type: counts 0, 1, a small odd one, a random one and one of several
// region steps (past XCCL_EAGER_BYTES), in and out of place, misaligned.
TEST_P(BroadcastTest, EveryRootAndTypeInAndOutOfPlace) {
  Run([](RankContext& ctx) {
    std::mt19937_64 rng(ctx.seed);  // the same draws on every rank: counts must agree
    uint64_t call = 0;
    for (int root = 0; root < ctx.nranks; ++root) {
      for (int dtype = 0; dtype < xcclNumTypes; ++dtype) {
        const size_t elem = xccl::DataTypeSize(dtype);
        const size_t random = rng() % 3000;
        const size_t large = (300 << 10) / elem + 3;  // several 64 KiB pieces, a short tail
        for (const size_t count : {size_t{0}, size_t{1}, size_t{37}, random, large}) {
          if (count == large && dtype % 3 != root % 3) continue;  // keep the run short
          const size_t offset = call % 8;
          if (!CheckedBroadcast(ctx, ctx.comm, root, dtype, count, call % 3 == 0, offset, call))
            return;
          ++call;
        }
      }
    }
  });
}

// No host synchronisation between calls; before call i rank i % world sleeps, and the root
// moves every call.
TEST_P(BroadcastTest, ThousandBackToBackWithHeldRank) {
  Run([](RankContext& ctx) {
    for (uint64_t call = 0; call < 1000; ++call) {
      if (static_cast<int>(call % ctx.nranks) == ctx.rank) usleep(200);
      const int root = static_cast<int>((call * 7) % ctx.nranks);
      const size_t count = 1 + (call * 37) % 257;
      if (!CheckedBroadcast(ctx, ctx.comm, root, static_cast<int>(call % xcclNumTypes), count,
                            call % 3 == 0, call % 4, 5000 + call))
        return;
    }
  });
}

// Refused on rank 0 alone, nothing moved, and the communicator still works on every rank.
TEST_P(BroadcastTest, BadArgumentsAreRefusedAndTheCommStaysUsable) {
  Run([](RankContext& ctx) {
    if (ctx.rank == 0) {
      std::vector<float> buf(64);
      const auto refused = [&](xcclResult_t got, const char* words, const char* what) {
        RANK_EXPECT(ctx, got == xcclInvalidArgument,
                    what << ": returned " << xcclGetErrorString(got));
        const std::string message = xcclGetLastError(ctx.comm);
        RANK_EXPECT(ctx, message.find(words) != std::string::npos,
                    what << ": the message \"" << message << "\" lacks \"" << words << "\"");
      };
      refused(xcclBroadcast(buf.data(), buf.data(), 8, xcclFloat32, ctx.nranks, ctx.comm, nullptr),
              "is not a rank", "root past the last rank");
      refused(xcclBroadcast(buf.data(), buf.data(), 8, xcclFloat32, -1, ctx.comm, nullptr),
              "root -1 is not a rank", "negative root");
      refused(xcclBroadcast(buf.data(), nullptr, 8, xcclFloat32, 0, ctx.comm, nullptr),
              "recvbuff is NULL", "NULL recvbuff");
      refused(xcclBroadcast(nullptr, buf.data(), 8, xcclFloat32, 0, ctx.comm, nullptr),
              "sendbuff is NULL", "NULL sendbuff on root");
      refused(xcclBroadcast(buf.data(), buf.data() + 4, 8, xcclFloat32, 0, ctx.comm, nullptr),
              "overlaps recvbuff but is not in place", "overlap on root");
      refused(xcclBroadcast(buf.data(), buf.data(), 8, static_cast<xcclDataType_t>(12), 0, ctx.comm,
                            nullptr),
              "datatype 12", "bad type");
      refused(xcclBroadcast(buf.data(), buf.data(), 8, xcclFloat32, 0, nullptr, nullptr), "",
              "NULL communicator");
    }
    for (uint64_t call = 0; call < 3; ++call)
      if (!CheckedBroadcast(ctx, ctx.comm, static_cast<int>(call % ctx.nranks), xcclFloat32,
                            100 + call, call == 1, 0, 9000 + call))
        return;
  });
}

// The last rank names another root than the others. It sees the odd pieces and fails at once
// (xcclInvalidUsage, naming roots); a rank whose peers all agree with it may complete the call
// (its data are root 0's), but the failure reaches every rank: the barrier after it fails
// everywhere within seconds instead of waiting for the deadline.
TEST_P(BroadcastTest, RanksThatNameDifferentRootsAllFail) {
  if (world() < 2) GTEST_SKIP() << "needs two ranks to disagree";
  RunOptions options;
  options.skip_destroy = true;
  Run(
      [](RankContext& ctx) {
        std::vector<float> buf(1000, 1.0f);
        const bool odd = ctx.rank == ctx.nranks - 1;
        const auto start = std::chrono::steady_clock::now();
        const xcclResult_t result = xcclBroadcast(buf.data(), buf.data(), buf.size(), xcclFloat32,
                                                  odd ? 1 : 0, ctx.comm, nullptr);
        const std::string message = xcclGetLastError(ctx.comm);
        if (odd) {
          RANK_EXPECT(ctx, result == xcclInvalidUsage,
                      "returned " << xcclGetErrorString(result) << ": " << message);
          RANK_EXPECT(ctx, message.find("different roots") != std::string::npos, message);
        } else {
          RANK_EXPECT(
              ctx, result == xcclSuccess || result == xcclInvalidUsage || result == xcclRemoteError,
              "returned " << xcclGetErrorString(result) << ": " << message);
        }
        const xcclResult_t after = xcclBarrier(ctx.comm, nullptr);
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        RANK_EXPECT(ctx, after != xcclSuccess, "the barrier after the broadcast succeeded");
        RANK_EXPECT(ctx, seconds < 5.0, "took " << seconds << " s to fail");
        xcclCommAbort(ctx.comm);
      },
      options);
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, BroadcastTest, ReduceWorlds(), ReduceParamName);
INSTANTIATE_TEST_SUITE_P(HostNodes, BroadcastTest, ::testing::ValuesIn(ReduceNodeShapes()),
                         ReduceParamName);

}  // namespace
}  // namespace xccl_test
