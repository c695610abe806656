// The fused GEMM schedule (FusedGemmSchedule) and the rule that pairs sources (SourcesPerGemm):
// every geometry up to world 8 is checked for the properties the op relies on (a call reads only
// rows whose flags it waited for, every peer band is multiplied exactly once, the own rows first
// and unwaited, compute streams in turn, pairs only of adjacent slots and as many as the rotation
// allows), plus hand-written schedules and rule values so that a schedule and a property checker
// that drift together still fail.
#include "fused/ag_gemm/gemm_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "fused/ag_gemm/chunk_rule.h"

namespace xccl {
namespace {

struct Geometry {
  int rank, world;
  int64_t padded;
  int chunks, sources_per_gemm, compute_streams;
  std::string Describe() const {
    return "rank " + std::to_string(rank) + " world " + std::to_string(world) + " padded " +
           std::to_string(padded) + " chunks " + std::to_string(chunks) + " sources/gemm " +
           std::to_string(sources_per_gemm) + " compute streams " + std::to_string(compute_streams);
  }
};

void CheckProperties(const Geometry& g) {
  SCOPED_TRACE(g.Describe());
  const std::vector<RowRange> bands = BandRows(g.padded, g.chunks);
  const std::vector<GemmStep> steps =
      FusedGemmSchedule(g.rank, g.world, g.padded, bands, g.sources_per_gemm, g.compute_streams);
  ASSERT_FALSE(steps.empty());
  // The own rows first, whole, unwaited, on the caller's stream.
  EXPECT_EQ(steps[0].row_begin, g.rank * g.padded);
  EXPECT_EQ(steps[0].row_end, (g.rank + 1) * g.padded);
  EXPECT_TRUE(steps[0].waits.empty());
  EXPECT_EQ(steps[0].compute_stream, 0);
  // Every row of the window is multiplied exactly once.
  std::vector<int> times(static_cast<size_t>(g.world * g.padded), 0);
  const bool may_pair = g.sources_per_gemm == 2 && bands.size() == 1;
  std::vector<BandWait> order;  // every wait, in schedule order
  for (size_t i = 0; i < steps.size(); ++i) {
    const GemmStep& s = steps[i];
    ASSERT_LT(s.row_begin, s.row_end) << "step " << i;
    ASSERT_GE(s.row_begin, 0) << "step " << i;
    ASSERT_LE(s.row_end, g.world * g.padded) << "step " << i;
    for (int64_t r = s.row_begin; r < s.row_end; ++r) ++times[static_cast<size_t>(r)];
    if (i == 0) continue;
    // Two compute streams: the side stream first, then in turn; one: all on compute stream 0.
    EXPECT_EQ(s.compute_stream, g.compute_streams == 2 ? static_cast<int>(i % 2) : 0)
        << "step " << i;
    // The rows read are exactly the union of the waited bands' rows, which are contiguous.
    ASSERT_GE(s.waits.size(), 1u);
    ASSERT_LE(s.waits.size(), may_pair ? 2u : 1u) << "step " << i;
    int64_t covered = 0;
    for (const BandWait& w : s.waits) {
      ASSERT_NE(w.source, g.rank) << "step " << i << " waits for the own rows";
      ASSERT_GE(w.band, 0);
      ASSERT_LT(w.band, static_cast<int>(bands.size()));
      const int64_t begin = w.source * g.padded + bands[w.band].begin;
      const int64_t end = w.source * g.padded + bands[w.band].end;
      EXPECT_GE(begin, s.row_begin) << "step " << i;
      EXPECT_LE(end, s.row_end) << "step " << i;
      covered += end - begin;
      order.push_back(w);
    }
    EXPECT_EQ(covered, s.row_end - s.row_begin)
        << "step " << i << " reads rows it did not wait for";
  }
  // Every peer band waited for exactly once: band by band, the peers in rotation from rank - 1;
  // with pairs, the singles first and then the pairs, each in rotation order.
  std::vector<BandWait> rotation;
  for (size_t b = 0; b < bands.size(); ++b)
    for (int step = 1; step < g.world; ++step)
      rotation.push_back({(g.rank - step + g.world) % g.world, static_cast<int>(b)});
  for (size_t r = 0; r < times.size(); ++r)
    ASSERT_EQ(times[r], 1) << "row " << r << " multiplied " << times[r] << " times";
  if (!may_pair) {
    EXPECT_EQ(order, rotation);
    EXPECT_EQ(steps.size(), 1 + (g.world - 1) * bands.size());
    return;
  }
  auto position = [&](int source) { return (g.rank - source + g.world) % g.world; };
  std::vector<BandWait> by_position = order;
  std::sort(by_position.begin(), by_position.end(), [&](const BandWait& a, const BandWait& b) {
    return position(a.source) < position(b.source);
  });
  EXPECT_EQ(by_position, rotation);
  int last_single = 0, last_pair = 0, singles = 0;
  bool seen_pair = false;
  for (size_t i = 1; i < steps.size(); ++i) {
    const std::vector<BandWait>& w = steps[i].waits;
    if (w.size() == 1) {
      ++singles;
      EXPECT_FALSE(seen_pair) << "step " << i << ": a single after a pair";
      EXPECT_GT(position(w[0].source), last_single) << "step " << i << ": singles out of order";
      last_single = position(w[0].source);
    } else {
      seen_pair = true;
      EXPECT_EQ(position(w[1].source), position(w[0].source) + 1)
          << "step " << i << ": a pair of sources not consecutive in the rotation";
      EXPECT_GT(position(w[0].source), last_pair) << "step " << i << ": pairs out of order";
      last_pair = position(w[1].source);
    }
  }
  // As many pairs as the rotation allows: its two runs of adjacent slots (rank - 1 down to 0,
  // world - 1 down to rank + 1) each leave one single when their length is odd.
  EXPECT_EQ(singles, g.rank % 2 + (g.world - 1 - g.rank) % 2);
}

TEST(FusedGemmSchedule, PropertiesHoldForEveryGeometryUpToWorld8) {
  for (int world = 1; world <= 8; ++world)
    for (int rank = 0; rank < world; ++rank)
      for (int64_t padded : {256, 1024, 768})
        for (int chunks : {1, 2, 4})
          for (int sources : {1, 2})
            for (int compute_streams : {1, 2})
              CheckProperties({rank, world, padded, chunks, sources, compute_streams});
}

// Written out by hand: world 8, 1024 rows per source, one band, sources paired, singles first.
TEST(FusedGemmSchedule, PairsAdjacentSlotsWithSinglesFirst) {
  const std::vector<RowRange> one_band = BandRows(1024, 1);
  std::vector<GemmStep> s = FusedGemmSchedule(0, 8, 1024, one_band, 2, 2);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[1].waits, (std::vector<BandWait>{{7, 0}}));  // alone, beside the own rows
  EXPECT_EQ(s[1].row_begin, 7 * 1024);
  EXPECT_EQ(s[1].row_end, 8 * 1024);
  EXPECT_EQ(s[1].compute_stream, 1);
  EXPECT_EQ(s[2].waits, (std::vector<BandWait>{{6, 0}, {5, 0}}));
  EXPECT_EQ(s[2].row_begin, 5 * 1024);
  EXPECT_EQ(s[2].row_end, 7 * 1024);
  EXPECT_EQ(s[2].compute_stream, 0);
  EXPECT_EQ(s[3].waits, (std::vector<BandWait>{{4, 0}, {3, 0}}));
  EXPECT_EQ(s[4].waits, (std::vector<BandWait>{{2, 0}, {1, 0}}));
  EXPECT_EQ(s[4].row_begin, 1024);
  EXPECT_EQ(s[4].row_end, 3 * 1024);
  EXPECT_EQ(s[4].compute_stream, 0);
  // Rank 2: sources 1, 0 | 7, ..., 3: the pairs (1, 0), (6, 5), (4, 3) and 7 alone, which goes
  // first.
  s = FusedGemmSchedule(2, 8, 1024, one_band, 2, 1);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[1].waits, (std::vector<BandWait>{{7, 0}}));
  EXPECT_EQ(s[1].row_begin, 7 * 1024);
  EXPECT_EQ(s[1].row_end, 8 * 1024);
  EXPECT_EQ(s[2].waits, (std::vector<BandWait>{{1, 0}, {0, 0}}));
  EXPECT_EQ(s[2].row_begin, 0);
  EXPECT_EQ(s[2].row_end, 2 * 1024);
  EXPECT_EQ(s[3].waits, (std::vector<BandWait>{{6, 0}, {5, 0}}));
  EXPECT_EQ(s[4].waits, (std::vector<BandWait>{{4, 0}, {3, 0}}));
  // Rank 6: 5, ..., 0 | 7: 7 cannot join 0 across the wrap; alone, first.
  s = FusedGemmSchedule(6, 8, 1024, one_band, 2, 2);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[1].waits, (std::vector<BandWait>{{7, 0}}));
  EXPECT_EQ(s[1].compute_stream, 1);
  EXPECT_EQ(s[2].waits, (std::vector<BandWait>{{5, 0}, {4, 0}}));
  EXPECT_EQ(s[4].waits, (std::vector<BandWait>{{1, 0}, {0, 0}}));
  EXPECT_EQ(s[4].compute_stream, 0);
  // World 5, rank 1: 0 | 4, 3, 2: two singles (0, then 4), then (3, 2).
  s = FusedGemmSchedule(1, 5, 256, BandRows(256, 1), 2, 1);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[1].waits, (std::vector<BandWait>{{0, 0}}));
  EXPECT_EQ(s[2].waits, (std::vector<BandWait>{{4, 0}}));
  EXPECT_EQ(s[3].waits, (std::vector<BandWait>{{3, 0}, {2, 0}}));
  // Rank 1: source 0 cannot pair with source 7 (not adjacent in the window), so it goes alone.
  s = FusedGemmSchedule(1, 8, 1024, one_band, 2, 1);
  ASSERT_EQ(s.size(), 5u);
  EXPECT_EQ(s[1].waits, (std::vector<BandWait>{{0, 0}}));
  EXPECT_EQ(s[2].waits, (std::vector<BandWait>{{7, 0}, {6, 0}}));
  EXPECT_EQ(s[4].waits, (std::vector<BandWait>{{3, 0}, {2, 0}}));
  EXPECT_EQ(s[4].row_begin, 2 * 1024);
  EXPECT_EQ(s[4].row_end, 4 * 1024);
  for (const GemmStep& step : s) EXPECT_EQ(step.compute_stream, 0);
  // Two bands: never paired; band 0 of every peer, then band 1.
  const std::vector<RowRange> two_bands = BandRows(1024, 2);
  s = FusedGemmSchedule(2, 4, 1024, two_bands, 2, 1);
  ASSERT_EQ(s.size(), 7u);
  EXPECT_EQ(s[1].waits, (std::vector<BandWait>{{1, 0}}));
  EXPECT_EQ(s[3].waits, (std::vector<BandWait>{{3, 0}}));
  EXPECT_EQ(s[4].waits, (std::vector<BandWait>{{1, 1}}));
  EXPECT_EQ(s[4].row_begin, 1024 + 512);
  EXPECT_EQ(s[4].row_end, 2048);
  // No rows: nothing to do.
  EXPECT_TRUE(FusedGemmSchedule(0, 4, 0, BandRows(0, 1), 2, 2).empty());
}

TEST(SourcesPerGemm, PairsWhereOneSourceIsUnderAWaveOfTiles) {
  // World 8, K 7168 shapes of docs/PERF.md: at global M 8192 (1024 rows per source) N 6400 has
  // 4 x 25 = 100 tiles and N 3840 4 x 15 = 60: paired. At 2048 rows N 3840 has 120: paired;
  // N 6400 200: not. At 4096 rows nothing is.
  EXPECT_EQ(SourcesPerGemm(1024, 6400, 8, 1, 0), 2);
  EXPECT_EQ(SourcesPerGemm(1024, 3840, 8, 1, 0), 2);
  EXPECT_EQ(SourcesPerGemm(2048, 3840, 8, 1, 0), 2);
  EXPECT_EQ(SourcesPerGemm(2048, 3648, 8, 1, 0), 2);
  EXPECT_EQ(SourcesPerGemm(2048, 6400, 8, 1, 0), 1);
  EXPECT_EQ(SourcesPerGemm(2048, 6288, 8, 1, 0), 1);
  EXPECT_EQ(SourcesPerGemm(4096, 3648, 8, 1, 0), 1);
  // The edge: 127 tiles pair, 128 do not (1 row tile x 127 / 128 column tiles).
  EXPECT_EQ(SourcesPerGemm(256, 127 * 256, 8, 1, 0), 2);
  EXPECT_EQ(SourcesPerGemm(256, 128 * 256, 8, 1, 0), 1);
  // More than one band per source, or fewer than two peers: never.
  EXPECT_EQ(SourcesPerGemm(1024, 3840, 8, 2, 0), 1);
  EXPECT_EQ(SourcesPerGemm(1024, 3840, 8, 2, 2), 1);
  EXPECT_EQ(SourcesPerGemm(1024, 3840, 2, 1, 0), 1);
  EXPECT_EQ(SourcesPerGemm(1024, 3840, 2, 1, 2), 1);
  // The setting wins otherwise.
  EXPECT_EQ(SourcesPerGemm(1024, 3840, 8, 1, 1), 1);
  EXPECT_EQ(SourcesPerGemm(8192, 6400, 4, 1, 2), 2);
  // World 3 (two peers) is enough for the rule to pair: 1 tile.
  EXPECT_EQ(SourcesPerGemm(256, 48, 3, 1, 0), 2);
}

}  // namespace
}  // namespace xccl
