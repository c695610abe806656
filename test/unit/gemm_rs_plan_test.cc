// gemm_rs's cut of each owner's block into chunks, and the order of the owners.
#include "fused/gemm_rs/gemm_rs_plan.h"

#include <gtest/gtest.h>

#include <set>

namespace xccl {
namespace {

// Every block size and pin: the chunks tile the block in order, differ by at most a row (the
// longer first), and number the pin (at most one per row) or the default rule's count.
TEST(GemmRsPlan, ChunksTileTheBlockEvenly) {
  for (int64_t rows = 1; rows <= 700; ++rows) {
    for (int pinned = 0; pinned <= kMaxGemmRsChunks; ++pinned) {
      const std::vector<GemmRsChunk> chunks = GemmRsChunks(rows, pinned);
      const int64_t wanted = pinned > 0 ? std::min<int64_t>(pinned, rows)
                                        : std::max<int64_t>(1, std::min<int64_t>(4, rows / 64));
      ASSERT_EQ(static_cast<int64_t>(chunks.size()), wanted) << rows << " rows, pin " << pinned;
      int64_t next = 0;
      for (size_t j = 0; j < chunks.size(); ++j) {
        EXPECT_EQ(chunks[j].first_row, next) << rows << " rows, pin " << pinned << ", chunk " << j;
        EXPECT_GE(chunks[j].rows, 1);
        EXPECT_LE(chunks[0].rows - chunks[j].rows, 1) << rows << " rows, pin " << pinned;
        if (j > 0) {
          EXPECT_LE(chunks[j].rows, chunks[j - 1].rows);
        }
        next += chunks[j].rows;
      }
      EXPECT_EQ(next, rows) << rows << " rows, pin " << pinned;
    }
  }
}

TEST(GemmRsPlan, OwnersFromTheNextRankToThisOne) {
  for (int nranks = 1; nranks <= 8; ++nranks) {
    for (int rank = 0; rank < nranks; ++rank) {
      std::set<int> seen;
      for (int position = 0; position < nranks; ++position)
        seen.insert(GemmRsOwnerAt(rank, nranks, position));
      EXPECT_EQ(static_cast<int>(seen.size()), nranks);
      EXPECT_EQ(GemmRsOwnerAt(rank, nranks, 0), (rank + 1) % nranks);
      EXPECT_EQ(GemmRsOwnerAt(rank, nranks, nranks - 1), rank);
    }
  }
}

}  // namespace
}  // namespace xccl
