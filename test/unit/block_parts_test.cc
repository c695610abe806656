// BlockParts::ForEachRun: for random part sizes (either part possibly empty) and random pieces,
// the runs cover the piece exactly once, in order, each inside one part, the last one flagged;
// replaying the runs as copies rebuilds the piece of a block made of two random buffers.
#include "collectives/all_gather/block_parts.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

namespace xccl {
namespace {

TEST(BlockParts, RunsCoverEveryPieceOnceInOrder) {
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 2000; ++trial) {
    std::vector<char> head(rng() % 300), tail(rng() % 300);
    for (char& c : head) c = static_cast<char>(rng());
    for (char& c : tail) c = static_cast<char>(rng());
    const BlockParts block{
        {{head.data(), nullptr, head.size()}, {tail.data(), nullptr, tail.size()}}};
    const size_t bytes = block.bytes();
    if (bytes == 0) continue;
    const size_t offset = rng() % bytes;
    const size_t n = 1 + rng() % (bytes - offset);
    std::vector<char> want(head);
    want.insert(want.end(), tail.begin(), tail.end());
    std::vector<char> got(n, 0);
    size_t covered = 0;
    int lasts = 0;
    block.ForEachRun(
        offset, n,
        [&](const BlockParts::Part& p, size_t at, size_t run, size_t in_piece, bool last) {
          ASSERT_EQ(in_piece, covered) << "runs out of order";
          ASSERT_GT(run, 0u);
          ASSERT_LE(at + run, p.bytes) << "a run leaves its part";
          for (size_t i = 0; i < run; ++i) got[in_piece + i] = p.send[at + i];
          covered += run;
          lasts += last ? 1 : 0;
          EXPECT_EQ(last, covered == n);
        });
    ASSERT_EQ(covered, n) << "trial " << trial;
    EXPECT_EQ(lasts, 1);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[offset + i]) << "byte " << i;
  }
}

}  // namespace
}  // namespace xccl
