// ag_gemm's pure shape rules: the chunk rule, the band cut of one source's rows,
// PaddedM and the receive window's layout (docs/ARCHITECTURE.md, "ag_gemm"). Each is checked
// against an independent brute-force computation written here, over tables (including the issue's
// default Kimi-K3 TP8 shapes) and random inputs, plus hand-computed values so that a rule and a
// brute force that drift together still fail.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/error.h"
#include "fused/ag_gemm/chunk_rule.h"
#include "fused/ag_gemm/window_layout.h"

namespace xccl {
namespace {

// Tile counts by repeated addition: no shared ceil-division with the code under test.
int64_t CountTiles(int64_t extent) {
  int64_t tiles = 0;
  for (int64_t covered = 0; covered < extent; covered += 256) ++tiles;
  return tiles;
}

// The default: the most c in 4..1 with (tiles // c) * n_tiles * (world - 1) >= 1024 (the
// threshold of src/fused/ag_gemm/chunk_rule.h).
int BruteDefaultChunks(int64_t m_per_rank, int64_t n, int world) {
  const int64_t row_tiles = CountTiles(m_per_rank);
  const int64_t col_tiles = CountTiles(n);
  for (int c = 4; c >= 1; --c) {
    const __int128 work = static_cast<__int128>(row_tiles / c) * col_tiles * (world - 1);
    if (work >= 1024) return c;
  }
  return 1;
}

// A pinned value: the largest divisor of the row tiles that is <= pinned (1 with no tiles).
int BrutePinnedChunks(int64_t m_per_rank, int pinned) {
  const int64_t row_tiles = CountTiles(m_per_rank);
  int best = 1;
  for (int64_t d = 1; d <= row_tiles && d <= pinned; ++d) {
    if (row_tiles % d == 0) best = static_cast<int>(d);
  }
  return best;
}

int BruteChunks(int64_t m_per_rank, int64_t n, int world, int pinned) {
  return pinned > 0 ? BrutePinnedChunks(m_per_rank, pinned)
                    : BruteDefaultChunks(m_per_rank, n, world);
}

// The properties every band cut must have: min(max(chunks, 1), row tiles) bands covering
// [0, m) in order, on tile boundaries except the end, the last taking the remainder.
void CheckBands(int64_t m, int chunks, const std::vector<RowRange>& bands) {
  SCOPED_TRACE("m=" + std::to_string(m) + " chunks=" + std::to_string(chunks));
  if (m <= 0) {
    EXPECT_TRUE(bands.empty());
    return;
  }
  const int64_t tiles = CountTiles(m);
  const int64_t count = std::min<int64_t>(std::max(chunks, 1), tiles);
  ASSERT_EQ(static_cast<int64_t>(bands.size()), count);
  int64_t next = 0;
  for (size_t i = 0; i < bands.size(); ++i) {
    EXPECT_EQ(bands[i].begin, next) << "band " << i << " leaves a gap or overlaps";
    EXPECT_LT(bands[i].begin, bands[i].end) << "band " << i << " is empty";
    EXPECT_EQ(bands[i].begin % 256, 0) << "band " << i << " starts off a tile boundary";
    if (i + 1 < bands.size()) {
      EXPECT_EQ(bands[i].end % 256, 0) << "band " << i << " ends off a tile boundary";
      // Every band but the last holds the same whole number of tiles, tiles // count.
      EXPECT_EQ(bands[i].end - bands[i].begin, (tiles / count) * 256) << "band " << i;
    }
    next = bands[i].end;
  }
  EXPECT_EQ(next, m) << "bands do not end at m";
  // The last band takes the remainder: never fewer tiles than the others (its last tile may be
  // partial, so compare tiles, not rows).
  EXPECT_GE(CountTiles(bands.back().end - bands.back().begin), tiles / count);
}

TEST(FusedChunkRule, TileCounts) {
  EXPECT_EQ(RowTiles(0), 0);
  EXPECT_EQ(RowTiles(-5), 0);
  EXPECT_EQ(RowTiles(1), 1);
  EXPECT_EQ(RowTiles(256), 1);
  EXPECT_EQ(RowTiles(257), 2);
  EXPECT_EQ(ColTiles(6288), 25);
  EXPECT_EQ(ColTiles(3648), 15);
  EXPECT_EQ(ColTiles(6400), 25);
  EXPECT_EQ(ColTiles(3840), 15);
  EXPECT_EQ(RowTiles(std::numeric_limits<int64_t>::max()),
            std::numeric_limits<int64_t>::max() / 256 + 1);
}

// The default shapes: Kimi-K3 TP8 column projections, K = 7168, at world 8, global M
// 4096..32768 (m_per_rank = M / 8). Expected values worked by hand from the rule:
// n_tiles 25 (N 6288, 6400) or 15 (N 3648, 3840); row tiles 2, 4, 8, 16; 7 peers.
TEST(FusedChunkRule, KimiK3Tp8DefaultShapes) {
  struct Row {
    int64_t global_m;
    int expected[4];  // for N = 6288, 3648, 6400, 3840
  };
  const int64_t ns[4] = {6288, 3648, 6400, 3840};
  const Row rows[] = {
      {4096, {1, 1, 1, 1}},   // 2 tiles: c=2 gives 1*25*7 = 175 < 1024
      {8192, {1, 1, 1, 1}},   // 4 tiles: c=2 gives 2*25*7 = 350
      {16384, {1, 1, 1, 1}},  // 8 tiles: c=2 gives 4*25*7 = 700
      {32768, {2, 1, 2, 1}},  // 16 tiles: c=3 gives 5*25*7 = 875, c=2 8*25*7 = 1400 / 8*15*7 = 840
  };
  const int world = 8;
  for (const Row& row : rows) {
    const int64_t m_per_rank = row.global_m / world;
    for (int j = 0; j < 4; ++j) {
      SCOPED_TRACE("M=" + std::to_string(row.global_m) + " N=" + std::to_string(ns[j]));
      const int c = ChooseChunks(m_per_rank, ns[j], world, 0);
      EXPECT_EQ(c, row.expected[j]);
      EXPECT_EQ(c, BruteDefaultChunks(m_per_rank, ns[j], world));
      CheckBands(m_per_rank, c, BandRows(m_per_rank, c));
      for (int pinned = 1; pinned <= 8; ++pinned) {
        const int p = ChooseChunks(m_per_rank, ns[j], world, pinned);
        EXPECT_EQ(p, BrutePinnedChunks(m_per_rank, pinned)) << "pinned " << pinned;
        EXPECT_EQ(CountTiles(m_per_rank) % p, 0) << "pinned " << pinned;
        CheckBands(m_per_rank, p, BandRows(m_per_rank, p));
      }
    }
  }
}

// The cells the threshold was fitted on (docs/perf-history.md, "The chunk rule refitted"): at
// world 2 one band per source was within 2% of the best in every cell, so the rule must pick c=1
// in all 16 shapes.
TEST(FusedChunkRule, MeasuredWorld2CellsTakeOneBand) {
  for (int64_t global_m : {4096, 8192, 16384, 32768}) {
    for (int64_t n : {6288, 3648, 6400, 3840}) {
      SCOPED_TRACE("M=" + std::to_string(global_m) + " N=" + std::to_string(n));
      EXPECT_EQ(ChooseChunks(global_m / 2, n, 2, 0), 1);
      EXPECT_EQ(BruteDefaultChunks(global_m / 2, n, 2), 1);
    }
  }
}

TEST(FusedChunkRule, Table) {
  struct Case {
    int64_t m;
    int64_t n;
    int world;
    int pinned;
    int expected;
  };
  const Case cases[] = {
      {0, 4096, 8, 0, 1},           // no rows: one (empty) band
      {4096, 4096, 1, 0, 1},        // no peers to wait on: nothing to overlap
      {256, 1 << 20, 8, 0, 1},      // one row tile cannot be cut
      {1024, 256 * 1024, 2, 0, 4},  // 1 tile * 1024 col tiles * 1 peer: exactly the threshold
      {1024, 256 * 1023, 2, 0, 2},  // 1023 < 1024 at c=4 (and c=3); c=2 gives 2046
      {768, 256 * 512, 2, 0, 1},    // 3 tiles: c=4 gives 0; c=3 and c=2 give 512 < 1024
      {1280, 256 * 256, 5, 0, 4},   // 5 tiles, 256 cols, 4 peers: c=4 gives 1*256*4 = 1024
      {1024, 256, 8, 3, 2},         // pinned 3, 4 tiles: largest divisor <= 3 is 2
      {1536, 256, 8, 4, 3},         // 6 tiles: divisors 1 2 3 6; <= 4 is 3
      {1792, 256, 8, 4, 1},         // 7 tiles, prime: 1
      {1792, 256, 8, 7, 7},         // pinned above the default's limit of 4 is honoured
      {1792, 256, 8, 100, 7},       // pinned above the tiles: all the tiles
      {0, 256, 8, 4, 1},            // pinned with no rows
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
                 " world=" + std::to_string(c.world) + " pinned=" + std::to_string(c.pinned));
    const int got = ChooseChunks(c.m, c.n, c.world, c.pinned);
    EXPECT_EQ(got, BruteChunks(c.m, c.n, c.world, c.pinned));
    EXPECT_EQ(got, c.expected);
  }
}

TEST(FusedChunkRule, HugeShapesDoNotWrap) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(ChooseChunks(big, big, 1 << 20, 0), 4);
  EXPECT_EQ(ChooseChunks(1024, big, 2, 0), 4);
  EXPECT_EQ(ChooseChunks(big, 1, 2, 0), 4);
}

TEST(FusedChunkRule, Random) {
  std::mt19937_64 rng(20240604);
  for (int iter = 0; iter < 20000; ++iter) {
    const int64_t m = static_cast<int64_t>(rng() % 40000);
    const int64_t n = 1 + static_cast<int64_t>(rng() % 40000);
    const int world = 1 + static_cast<int>(rng() % 16);
    const int pinned = static_cast<int>(rng() % 12) - 2;  // -2..9: auto and pinned
    const int c = ChooseChunks(m, n, world, pinned);
    ASSERT_EQ(c, BruteChunks(m, n, world, pinned))
        << "m=" << m << " n=" << n << " world=" << world << " pinned=" << pinned;
    ASSERT_GE(c, 1);
    if (pinned <= 0) {
      ASSERT_LE(c, 4);
    }
    CheckBands(m, c, BandRows(m, c));
    if (HasFatalFailure()) return;
  }
}

TEST(FusedBandRows, Table) {
  EXPECT_TRUE(BandRows(0, 4).empty());
  EXPECT_TRUE(BandRows(-1, 4).empty());
  EXPECT_EQ(BandRows(100, 4), (std::vector<RowRange>{{0, 100}}));  // one partial tile
  EXPECT_EQ(BandRows(1024, 4),
            (std::vector<RowRange>{{0, 256}, {256, 512}, {512, 768}, {768, 1024}}));
  EXPECT_EQ(BandRows(1280, 4),  // 5 tiles: the last band takes the fifth
            (std::vector<RowRange>{{0, 256}, {256, 512}, {512, 768}, {768, 1280}}));
  EXPECT_EQ(BandRows(1300, 2), (std::vector<RowRange>{{0, 768}, {768, 1300}}));  // 6 tiles
  EXPECT_EQ(BandRows(512, 4), (std::vector<RowRange>{{0, 256}, {256, 512}}));    // clamped to 2
  EXPECT_EQ(BandRows(512, 0), (std::vector<RowRange>{{0, 512}}));                // clamped to 1
  for (int64_t m : {1, 255, 256, 257, 511, 512, 4096, 4097, 65536}) {
    for (int chunks = -1; chunks <= 20; ++chunks) CheckBands(m, chunks, BandRows(m, chunks));
  }
}

TEST(FusedLayout, PaddedM) {
  EXPECT_EQ(PaddedM(0), 0);
  EXPECT_EQ(PaddedM(1), 256);
  EXPECT_EQ(PaddedM(256), 256);
  EXPECT_EQ(PaddedM(257), 512);
  EXPECT_EQ(PaddedM(4096), 4096);
  EXPECT_EQ(PaddedM(-1), -1);
  EXPECT_EQ(PaddedM(std::numeric_limits<int64_t>::max()), -1);
  std::mt19937_64 rng(7);
  for (int i = 0; i < 10000; ++i) {
    const int64_t m = static_cast<int64_t>(rng() % 100000);
    const int64_t p = PaddedM(m);
    ASSERT_EQ(p, CountTiles(m) * 256) << m;
    ASSERT_GE(p, m);
    ASSERT_LT(p - m, 256);
    ASSERT_EQ(PaddedM(p), p);  // idempotent: a padded M passes through unchanged
  }
}

// Checks every query of one layout against sums computed here for row count m.
void CheckLayout(const WindowLayout& layout, int world, int rank, int64_t m_max, int64_t k,
                 size_t esize, bool scales, int64_t m) {
  SCOPED_TRACE("world=" + std::to_string(world) + " rank=" + std::to_string(rank) +
               " m_max=" + std::to_string(m_max) + " k=" + std::to_string(k) +
               " esize=" + std::to_string(esize) + " scales=" + std::to_string(scales) +
               " m=" + std::to_string(m));
  const uint64_t rows = static_cast<uint64_t>(CountTiles(m)) * 256;
  const uint64_t slot = rows * static_cast<uint64_t>(k) * esize;
  const uint64_t cap_rows = static_cast<uint64_t>(CountTiles(m_max)) * 256;
  const uint64_t cap_data = cap_rows * static_cast<uint64_t>(k) * esize * world;

  size_t recv_slot_bytes = 0, data_bytes = 0;
  ASSERT_EQ(layout.RecvSlotBytes(m, &recv_slot_bytes), xcclSuccess);
  ASSERT_EQ(layout.DataBytes(m, &data_bytes), xcclSuccess);
  EXPECT_EQ(recv_slot_bytes, slot);
  EXPECT_EQ(data_bytes, slot * world);

  // Slots: contiguous in rank order from 0 (one [world * M, K] operand), not overlapping.
  uint64_t expected_offset = 0;
  for (int s = 0; s < world; ++s) {
    size_t off = 0;
    ASSERT_EQ(layout.RecvSlotOffset(s, m, &off), xcclSuccess);
    EXPECT_EQ(off, expected_offset) << "source " << s;
    expected_offset += slot;
  }
  EXPECT_LE(expected_offset, cap_data);
  EXPECT_LE(expected_offset, layout.total_bytes());

  size_t local = 0;
  size_t own = 0;
  ASSERT_EQ(layout.LocalRows(m, &local), xcclSuccess);
  ASSERT_EQ(layout.RecvSlotOffset(rank, m, &own), xcclSuccess);
  EXPECT_EQ(local, own);
  EXPECT_EQ(local, static_cast<uint64_t>(rank) * slot);

  if (!scales) {
    EXPECT_EQ(layout.total_bytes(), cap_data);
    size_t off = 0;
    EXPECT_EQ(layout.ScaleOffset(0, m, &off), xcclInvalidArgument);
    return;
  }
  // Scales: after all data of the largest M (so no M's data reaches them), aligned, contiguous
  // [world * M] fp32 in rank order, and inside the allocation.
  EXPECT_GE(layout.scale_base(), cap_data);
  EXPECT_LT(layout.scale_base(), cap_data + 256);
  EXPECT_EQ(layout.scale_base() % 256, 0u);
  uint64_t scale_off = layout.scale_base();
  for (int s = 0; s < world; ++s) {
    size_t off = 0;
    ASSERT_EQ(layout.ScaleOffset(s, m, &off), xcclSuccess);
    EXPECT_EQ(off, scale_off) << "source " << s;
    EXPECT_GE(off, data_bytes) << "scales overlap the data";
    scale_off += rows * sizeof(float);
  }
  EXPECT_LE(scale_off, layout.total_bytes());
  EXPECT_EQ(layout.total_bytes(), layout.scale_base() + cap_rows * sizeof(float) * world);
}

TEST(FusedLayout, KimiK3Tp8) {
  const int world = 8;
  const int64_t k = 7168;
  const int64_t m_max = 32768 / world;
  for (int rank = 0; rank < world; ++rank) {
    for (const auto& [esize, scales] : {std::pair<size_t, bool>{1, true}, {2, false}}) {
      WindowLayout layout;
      ASSERT_EQ(WindowLayout::Create(world, rank, m_max, k, esize,
                                     scales ? ScaleLayout::kPerRow : ScaleLayout::kNone, &layout),
                xcclSuccess);
      EXPECT_EQ(layout.padded_m_max(), 4096);
      for (int64_t global_m : {4096, 8192, 16384, 32768}) {
        CheckLayout(layout, world, rank, m_max, k, esize, scales, global_m / world);
      }
      // The M sequence under held ranks: one window serves all of them.
      for (int64_t m : {512, 1024, 768, 1024, 256, 1024, 0, 1, 1000}) {
        CheckLayout(layout, world, rank, m_max, k, esize, scales, m);
      }
    }
  }
  // Hand value: fp8, rank 3, M = 1024: receive slot 3 at 3 * 1024 * 7168 bytes.
  WindowLayout layout;
  ASSERT_EQ(WindowLayout::Create(8, 3, 4096, 7168, 1, ScaleLayout::kPerRow, &layout), xcclSuccess);
  size_t off = 0;
  ASSERT_EQ(layout.LocalRows(1024, &off), xcclSuccess);
  EXPECT_EQ(off, 3u * 1024 * 7168);
  EXPECT_EQ(layout.scale_base(), 8u * 4096 * 7168);
  EXPECT_EQ(layout.total_bytes(), 8u * 4096 * 7168 + 8u * 4096 * 4);
}

TEST(FusedLayout, Random) {
  std::mt19937_64 rng(99);
  for (int iter = 0; iter < 3000; ++iter) {
    const int world = 1 + static_cast<int>(rng() % 16);
    const int rank = static_cast<int>(rng() % world);
    const int64_t m_max = 1 + static_cast<int64_t>(rng() % 5000);
    const int64_t k = 1 + static_cast<int64_t>(rng() % 3000);
    const size_t esize = size_t{1} << (rng() % 3);
    const bool scales = rng() % 2;
    WindowLayout layout;
    ASSERT_EQ(WindowLayout::Create(world, rank, m_max, k, esize,
                                   scales ? ScaleLayout::kPerRow : ScaleLayout::kNone, &layout),
              xcclSuccess);
    const int64_t cap = CountTiles(m_max) * 256;
    for (int j = 0; j < 4; ++j) {
      const int64_t m = static_cast<int64_t>(rng() % (cap + 1));  // anything up to padded m_max
      CheckLayout(layout, world, rank, m_max, k, esize, scales, m);
      if (HasFatalFailure()) return;
    }
    CheckLayout(layout, world, rank, m_max, k, esize, scales, cap);
    if (HasFatalFailure()) return;
  }
}

TEST(FusedLayout, CreateRefusals) {
  WindowLayout layout;
  auto refused = [&](int world, int rank, int64_t m_max, int64_t k, size_t esize) {
    ClearThreadLastError();
    const xcclResult_t r =
        WindowLayout::Create(world, rank, m_max, k, esize, ScaleLayout::kPerRow, &layout);
    return r == xcclInvalidArgument && !ThreadLastError().empty();
  };
  EXPECT_TRUE(refused(0, 0, 1024, 64, 2));
  EXPECT_TRUE(refused(-1, 0, 1024, 64, 2));
  EXPECT_TRUE(refused(4, 4, 1024, 64, 2));
  EXPECT_TRUE(refused(4, -1, 1024, 64, 2));
  EXPECT_TRUE(refused(4, 0, 0, 64, 2));
  EXPECT_TRUE(refused(4, 0, -5, 64, 2));
  EXPECT_TRUE(refused(4, 0, 1024, 0, 2));
  EXPECT_TRUE(refused(4, 0, 1024, -1, 2));
  EXPECT_TRUE(refused(4, 0, 1024, 64, 0));
  const int64_t big = std::numeric_limits<int64_t>::max();
  EXPECT_TRUE(refused(4, 0, big, 64, 2));           // PaddedM itself overflows
  EXPECT_TRUE(refused(4, 0, big / 512, 1024, 2));   // data bytes overflow
  EXPECT_TRUE(refused(2, 0, 1 << 20, big / 4, 1));  // receive slot bytes overflow
  EXPECT_EQ(WindowLayout::Create(4, 0, 1024, 64, 2, ScaleLayout::kNone, nullptr),
            xcclInvalidArgument);
  EXPECT_FALSE(refused(1, 0, 1, 1, 1));
}

TEST(FusedLayout, QueryRefusals) {
  WindowLayout layout;
  ASSERT_EQ(WindowLayout::Create(4, 1, 1000, 128, 2, ScaleLayout::kNone, &layout), xcclSuccess);
  size_t out = 12345;
  EXPECT_EQ(layout.RecvSlotOffset(0, 1024, &out), xcclSuccess);  // padded m_max is in range
  EXPECT_EQ(out, 0u);
  EXPECT_EQ(layout.RecvSlotOffset(0, 1025, &out), xcclInvalidArgument);
  EXPECT_EQ(layout.RecvSlotOffset(0, -1, &out), xcclInvalidArgument);
  EXPECT_EQ(layout.RecvSlotOffset(4, 256, &out), xcclInvalidArgument);
  EXPECT_EQ(layout.RecvSlotOffset(-1, 256, &out), xcclInvalidArgument);
  EXPECT_EQ(layout.LocalRows(2000, &out), xcclInvalidArgument);
  EXPECT_EQ(layout.DataBytes(1025, &out), xcclInvalidArgument);
  EXPECT_EQ(layout.ScaleOffset(0, 256, &out), xcclInvalidArgument);     // no scales
  EXPECT_EQ(layout.CallTileOffset(0, 256, &out), xcclInvalidArgument);  // no block scales
  WindowLayout empty;
  EXPECT_EQ(empty.RecvSlotOffset(0, 0, &out), xcclInvalidArgument);  // never created
}

// Block scales: KB = ceil(k / 128) floats per row, one source's [KB * padded] after another,
// then the GEMM calls' tiles (as large again), all 256-byte aligned and clear of each other.
TEST(FusedLayout, BlockScales) {
  for (int64_t k : {1, 128, 300, 7168}) {
    const int world = 4;
    const int64_t m_max = 1000, blocks = (k + 127) / 128;
    WindowLayout layout;
    ASSERT_EQ(WindowLayout::Create(world, 2, m_max, k, 1, ScaleLayout::kBlock128, &layout),
              xcclSuccess);
    EXPECT_EQ(layout.scale_blocks(), blocks);
    EXPECT_EQ(KBlocks(k), blocks);
    for (int64_t m : {1, 256, 700, 1000}) {
      const size_t rows = static_cast<size_t>((m + 255) / 256 * 256);
      size_t bytes = 0, data = 0;
      ASSERT_EQ(layout.ScaleBytes(m, &bytes), xcclSuccess);
      EXPECT_EQ(bytes, rows * blocks * sizeof(float));
      ASSERT_EQ(layout.DataBytes(m, &data), xcclSuccess);
      for (int s = 0; s < world; ++s) {
        size_t off = 0;
        ASSERT_EQ(layout.ScaleOffset(s, m, &off), xcclSuccess);
        EXPECT_EQ(off, layout.scale_base() + s * bytes);
        EXPECT_GE(off, data);
      }
      size_t first = 0, last = 0;
      ASSERT_EQ(layout.CallTileOffset(0, m, &first), xcclSuccess);
      ASSERT_EQ(layout.CallTileOffset(world * rows, m, &last), xcclSuccess);
      EXPECT_EQ(first, layout.scale_base() + 1024 * blocks * sizeof(float) * world);
      EXPECT_EQ(first % 256, 0u);
      EXPECT_EQ(last - first, world * bytes);
      EXPECT_LE(last, layout.total_bytes());
      EXPECT_EQ(layout.CallTileOffset(world * rows + 1, m, &last), xcclInvalidArgument);
    }
    EXPECT_EQ(layout.total_bytes(),
              layout.scale_base() + 2 * size_t{1024} * blocks * sizeof(float) * world);
  }
}

}  // namespace
}  // namespace xccl
