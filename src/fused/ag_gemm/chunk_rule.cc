#include "fused/ag_gemm/chunk_rule.h"

#include <algorithm>
#include <limits>

namespace xccl {

namespace {

// a * b for non-negative a, b, saturating at INT64_MAX: the rule only compares the product
// against a small threshold, and a huge N or M must not wrap it into a negative number.
int64_t SaturatingMul(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > std::numeric_limits<int64_t>::max() / b) return std::numeric_limits<int64_t>::max();
  return a * b;
}

// Ceil-division that cannot overflow for rows near INT64_MAX.
int64_t CeilDiv(int64_t x, int64_t d) { return x <= 0 ? 0 : (x - 1) / d + 1; }

}  // namespace

int64_t RowTiles(int64_t rows) { return CeilDiv(rows, kGemmTileRows); }
int64_t ColTiles(int64_t n) { return CeilDiv(n, kGemmTileCols); }

int ChooseChunks(int64_t m_per_rank, int64_t n, int world, int pinned) {
  const int64_t row_tiles = RowTiles(m_per_rank);
  if (pinned > 0) {
    // Largest divisor <= pinned: equal bands (whole tiles each), the closest the caller's
    // choice allows. No row tiles: a single (empty) band.
    if (row_tiles == 0) return 1;
    for (int64_t c = std::min<int64_t>(pinned, row_tiles); c > 1; --c) {
      if (row_tiles % c == 0) return static_cast<int>(c);
    }
    return 1;
  }
  const int64_t peers = world > 1 ? world - 1 : 0;
  const int64_t col_tiles = ColTiles(n);
  for (int c = kMaxChunks; c > 1; --c) {
    const int64_t band_tiles = row_tiles / c;
    if (SaturatingMul(SaturatingMul(band_tiles, col_tiles), peers) >= kChunkTileThreshold) {
      return c;
    }
  }
  return 1;
}

int SourcesPerGemm(int64_t m_per_rank, int64_t n, int world, int chunks, int setting) {
  if (chunks > 1 || world < 3) return 1;
  if (setting > 0) return setting >= 2 ? 2 : 1;
  return SaturatingMul(RowTiles(m_per_rank), ColTiles(n)) < kPairTileThreshold ? 2 : 1;
}

std::vector<RowRange> BandRows(int64_t m_per_rank, int chunks) {
  std::vector<RowRange> bands;
  const int64_t row_tiles = RowTiles(m_per_rank);
  if (row_tiles == 0) return bands;
  const int64_t count = std::clamp<int64_t>(chunks, 1, row_tiles);
  const int64_t band_rows = (row_tiles / count) * kGemmTileRows;
  bands.reserve(static_cast<size_t>(count));
  for (int64_t i = 0; i < count; ++i) {
    const int64_t begin = i * band_rows;
    const int64_t end = i + 1 == count ? m_per_rank : begin + band_rows;
    bands.push_back({begin, end});
  }
  return bands;
}

}  // namespace xccl
