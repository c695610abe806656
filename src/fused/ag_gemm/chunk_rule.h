// How ag_gemm cuts each source rank's rows into bands (docs/ARCHITECTURE.md, "ag_gemm").
//
// In fused mode every peer's rows arrive band by band, each band followed by its flag, and the
// GEMM consumes (band, source) pairs as the flags arrive. More bands per source means the GEMM
// can start sooner after the first bytes land (better overlap); fewer bands means each GEMM
// launch has more output tiles to spread over the GPU (better efficiency per launch). The rule
// here picks the most bands that still keep the GPU full.
#pragma once

#include <cstdint>
#include <vector>

namespace xccl {

// The GEMM's output tile edge, in rows and columns. Bands start on multiples of this many rows
// so that no output tile straddles two bands (one tile waits on exactly one flag).
constexpr int64_t kGemmTileRows = 256;
constexpr int64_t kGemmTileCols = 256;

// The most bands per source the default rule picks.
constexpr int kMaxChunks = 4;

// The tile count a band's work, summed over the world-1 peers the GEMM waits on at once, must
// reach. Each banded call pays a partial last wave, so a band must hold several waves of tiles
// before its earlier start pays: 1024 is about eight waves on 132 SMs, fitted at world 2 only
// (docs/perf-history.md, "The chunk rule refitted").
constexpr int64_t kChunkTileThreshold = 1024;

// ceil(rows / kGemmTileRows): the 256-row tiles of one source rank's rows (0 for rows <= 0).
int64_t RowTiles(int64_t rows);
// ceil(n / kGemmTileCols): the output column tiles (0 for n <= 0).
int64_t ColTiles(int64_t n);

// Bands per source for m_per_rank rows of each rank, N output columns and `world` ranks.
//
// pinned > 0: the largest divisor of RowTiles(m_per_rank) that is <= pinned, so that pinned
// bands are equal (in whole tiles) and none is empty; 1 when there are no row tiles.
//
// pinned <= 0 (auto): the largest c in [1, kMaxChunks] with
//   (RowTiles(m_per_rank) / c) * ColTiles(n) * (world - 1) >= kChunkTileThreshold
// (integer division), and 1 if no c qualifies (a small problem, or world 1 with no peers).
// Why that product: a band of one source holds (row tiles / c) * n_tiles output tiles, and at
// any moment the GEMM has the same band of all world-1 peers to work on (the pushes run
// concurrently), so that is the parallel work one "round" of bands offers the GPU.
// c may not divide the row tiles; BandRows then gives the remainder to the last band.
int ChooseChunks(int64_t m_per_rank, int64_t n, int world, int pinned);

// A band of one source with fewer output tiles than this is paired with the next source's band
// in one GEMM call (FusedGemmSchedule), when there is one band per source: 128 is about one wave
// on 132 SMs, below which a call leaves SMs idle (docs/perf-history.md, fourth round).
constexpr int64_t kPairTileThreshold = 128;

// How many sources' rows one fused GEMM call takes (1 or 2) for m_per_rank rows per source, N
// output columns, `world` ranks and `chunks` bands per source. setting 1 or 2 (the
// XCCL_AGGEMM_SOURCES_PER_GEMM parameter) is taken as given; 0 picks 2 where
// RowTiles(m_per_rank) * ColTiles(n) < kPairTileThreshold, else 1. Always 1 with more than one
// band per source (a pair of bands is not one row range) or fewer than two peers.
int SourcesPerGemm(int64_t m_per_rank, int64_t n, int world, int chunks, int setting);

// Rows [begin, end) of one band within one source's receive slot.
struct RowRange {
  int64_t begin;
  int64_t end;
  bool operator==(const RowRange& o) const { return begin == o.begin && end == o.end; }
};

// The bands of one source's m_per_rank rows cut into `chunks` bands: each but the last holds
// (RowTiles(m_per_rank) / chunks) whole 256-row tiles, and the last takes the remainder and
// ends at m_per_rank (which need not be a tile multiple). chunks is clamped to
// [1, RowTiles(m_per_rank)] so no band is empty; m_per_rank <= 0 gives no bands.
std::vector<RowRange> BandRows(int64_t m_per_rank, int chunks);

}  // namespace xccl
