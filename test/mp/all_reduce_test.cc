// all_reduce on the host platform at world 1, 2, 3, 4 and 8, as threads and as processes,
// on one node and split over fake nodes (XCCL_FAKE_NODES): every type with every op, in and out
// of place, counts 0, 1, odd and random, misaligned buffers, sizes of several eager pieces,
// plain data, NaN / infinities / signed zeros, and sums that overflow; every element checked
// against an exact and a rank-order reference, every rank's output compared bitwise across ranks
// and reruns, and a thousand back-to-back calls with a held rank (reduce_suite.h).
#include <gtest/gtest.h>

#include "mp/reduce_suite.h"

namespace xccl_test {
namespace {

class AllReduceTest : public ReduceSuite {};

TEST_P(AllReduceTest, EveryTypeAndOpInAndOutOfPlace) { EveryTypeAndOp(Reduction::kAllReduce); }

TEST_P(AllReduceTest, RandomSizesUpToSeveralMiB) { RandomSizes(Reduction::kAllReduce); }

TEST_P(AllReduceTest, ThousandBackToBackWithHeldRank) { ThousandBackToBack(Reduction::kAllReduce); }

INSTANTIATE_TEST_SUITE_P(HostPlatform, AllReduceTest, ReduceWorlds(), ReduceParamName);
INSTANTIATE_TEST_SUITE_P(HostNodes, AllReduceTest, ::testing::ValuesIn(ReduceNodeShapes()),
                         ReduceParamName);

}  // namespace
}  // namespace xccl_test
