// reduce_scatter on the host platform at world 1, 2, 3, 4 and 8, as threads and as processes,
// on one node and split over fake nodes (XCCL_FAKE_NODES): every type with every op, in and out
// of place, counts 0, 1, odd and random, misaligned buffers, sizes of several eager pieces,
// plain data, NaN / infinities / signed zeros, and sums that overflow; every element checked
// against an exact and a rank-order reference, the blocks' bits compared across ranks and
// reruns, and a thousand back-to-back calls with a held rank (reduce_suite.h).
#include <gtest/gtest.h>

#include "mp/reduce_suite.h"

namespace xccl_test {
namespace {

class ReduceScatterTest : public ReduceSuite {};

TEST_P(ReduceScatterTest, EveryTypeAndOpInAndOutOfPlace) {
  EveryTypeAndOp(Reduction::kReduceScatter);
}

TEST_P(ReduceScatterTest, RandomSizesUpToSeveralMiB) { RandomSizes(Reduction::kReduceScatter); }

TEST_P(ReduceScatterTest, ThousandBackToBackWithHeldRank) {
  ThousandBackToBack(Reduction::kReduceScatter);
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, ReduceScatterTest, ReduceWorlds(), ReduceParamName);
INSTANTIATE_TEST_SUITE_P(HostNodes, ReduceScatterTest, ::testing::ValuesIn(ReduceNodeShapes()),
                         ReduceParamName);

}  // namespace
}  // namespace xccl_test
