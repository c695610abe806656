// The all_reduce plan (collectives/all_reduce/all_reduce_plan.h): which plan each engine takes,
// and the read-once parts, which must cover every element exactly once, each part starting on a
// 64-byte boundary.
#include "collectives/all_reduce/all_reduce_plan.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace xccl {
namespace {

constexpr size_t kOneShot = 64 << 10;  // XCCL_ALLREDUCE_ONESHOT_BYTES's default

TEST(AllReducePlanTest, TheReadEngineAlwaysReadsOnce) {
  for (size_t count : {size_t{1}, size_t{7}, size_t{8}, size_t{1} << 30})
    EXPECT_EQ(ChooseAllReducePlan(count, count * 2, 8, 1 << 20, kOneShot, /*reads_peers=*/true),
              AllReducePlan::kReadOnce)
        << count;
}

TEST(AllReducePlanTest, WithoutItSmallIsOneShotAndLargeTwoTrips) {
  EXPECT_EQ(ChooseAllReducePlan(3, 12, 4, 1 << 20, kOneShot, false), AllReducePlan::kOneShot);
  EXPECT_EQ(ChooseAllReducePlan(1024, 4096, 4, 1 << 20, kOneShot, false), AllReducePlan::kOneShot);
  EXPECT_EQ(ChooseAllReducePlan(1 << 20, 4 << 20, 4, 1 << 20, kOneShot, false),
            AllReducePlan::kReduceScatterAllGather);
  // A region step smaller than the call: two trips even when small.
  EXPECT_EQ(ChooseAllReducePlan(1024, 4096, 4, 1024, kOneShot, false),
            AllReducePlan::kReduceScatterAllGather);
}

TEST(AllReducePlanTest, TheOneShotBoundIsTheParameters) {
  // Up to and including the bound one trip, past it two; 0 sends every call with a part for each
  // rank through two trips, and fewer elements than ranks stay one-shot whatever the bound.
  EXPECT_EQ(ChooseAllReducePlan(4096, 16384, 4, 1 << 20, 16384, false), AllReducePlan::kOneShot);
  EXPECT_EQ(ChooseAllReducePlan(4097, 16388, 4, 1 << 20, 16384, false),
            AllReducePlan::kReduceScatterAllGather);
  EXPECT_EQ(ChooseAllReducePlan(4, 16, 4, 1 << 20, 0, false),
            AllReducePlan::kReduceScatterAllGather);
  EXPECT_EQ(ChooseAllReducePlan(3, 12, 4, 1 << 20, 0, false), AllReducePlan::kOneShot);
}

TEST(AllReducePlanTest, ReadOncePartsCoverEveryElementOnceOnSixtyFourByteBoundaries) {
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 2000; ++trial) {
    const int nranks = 1 + static_cast<int>(rng() % 32);
    const size_t size = size_t{1} << (rng() % 4);  // 1, 2, 4, 8 bytes
    const size_t count = trial < 200 ? trial : 1 + rng() % 100000;
    std::vector<int> owners(count, 0);
    for (int rank = 0; rank < nranks; ++rank) {
      size_t first = 0, part = 0;
      ReadOncePart(count, size, nranks, rank, &first, &part);
      ASSERT_LE(first + part, count) << "rank " << rank << " of " << nranks << ", count " << count;
      if (part > 0) {
        EXPECT_EQ(first * size % 64, 0u) << "rank " << rank << " starts at element " << first;
      }
      for (size_t i = first; i < first + part; ++i) ++owners[i];
    }
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(owners[i], 1) << "element " << i << " of " << count << ", " << nranks << " ranks, "
                              << size << "-byte elements";
  }
}

}  // namespace
}  // namespace xccl
