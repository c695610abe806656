// The read engine's grid: what a call asks, its size, and the SMs left to GEMMs beside it where
// ranks share a device.
#include "collectives/reduce/read_reduce_grid.h"

#include <gtest/gtest.h>

namespace xccl {
namespace {

constexpr int kThreads = 512;
constexpr Beside kEveryBeside[] = {Beside::kNothing, Beside::kPeersCompute,
                                   Beside::kOwnAndPeersCompute};

// Enough vectors for `blocks` full blocks.
size_t VectorsFor(int blocks) { return static_cast<size_t>(blocks) * kThreads; }

TEST(ReadReduceGrid, PlainCallsTakeTheShareOrWhatTheyNeed) {
  for (bool shared : {false, true}) {
    EXPECT_EQ(ReadReduceGrid(VectorsFor(1000), kThreads, 132, shared, {}), 132);
    EXPECT_EQ(ReadReduceGrid(VectorsFor(5), kThreads, 132, shared, {}), 5);
    EXPECT_EQ(ReadReduceGrid(VectorsFor(5) + 1, kThreads, 132, shared, {}), 6);  // a partial block
    EXPECT_EQ(ReadReduceGrid(0, kThreads, 132, shared, {}), 1);  // never an empty grid
  }
}

TEST(ReadReduceGrid, AnAskedCountHoldsTheGridButNeverRaisesIt) {
  for (bool shared : {false, true})
    for (Beside beside : kEveryBeside) {
      EXPECT_EQ(ReadReduceGrid(VectorsFor(1000), kThreads, 132, shared, {16, beside}), 16);
      EXPECT_EQ(ReadReduceGrid(VectorsFor(1000), kThreads, 132, shared, {4096, beside}), 132);
      EXPECT_EQ(ReadReduceGrid(VectorsFor(3), kThreads, 132, shared, {16, beside}), 3);
    }
}

// On a device `ranks` share, with `sms` SMs and a share of 2 x SMs / ranks per rank.
TEST(ReadReduceGrid, BesideGemmsOnASharedDeviceSomeSmsStayFree) {
  for (int sms : {108, 132, 304})
    for (int ranks = 2; ranks <= 8; ++ranks) {
      const int share = std::max(1, 2 * sms / ranks);
      const size_t big = VectorsFor(100000);
      // Beside the peers' GEMMs: all ranks but one wait with a block per SM at most (blocks spread
      // over the SMs first) and still leave an SM free for the last rank's GEMM.
      const int peers = ReadReduceGrid(big, kThreads, share, true, {0, Beside::kPeersCompute});
      EXPECT_EQ(peers, share / kBesidePeersShare) << sms << " SMs, " << ranks << " ranks";
      EXPECT_LT(peers * (ranks - 1), sms) << sms << " SMs, " << ranks << " ranks";
      // Beside this rank's GEMMs too: every rank's grid together a quarter of the SMs at most.
      const int own = ReadReduceGrid(big, kThreads, share, true, {0, Beside::kOwnAndPeersCompute});
      EXPECT_EQ(own, std::max(1, share / kBesideOwnShare)) << sms << " SMs, " << ranks;
      EXPECT_LE(own * ranks, std::max(ranks, sms / 4)) << sms << " SMs, " << ranks << " ranks";
      // A device of its own: the whole share whatever runs beside.
      for (Beside beside : kEveryBeside)
        EXPECT_EQ(ReadReduceGrid(big, kThreads, share, false, {0, beside}), share);
    }
}

}  // namespace
}  // namespace xccl
