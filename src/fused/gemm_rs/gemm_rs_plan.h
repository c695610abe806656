// How gemm_rs cuts its rows (docs/ARCHITECTURE.md, "gemm_rs"): C's m rows are nranks blocks of
// m / nranks, block o owned by rank o; fused mode cuts every block alike into chunks, and chunk j
// of every block forms one reduce-scatter. So the partial products lie chunk-major, [chunk][owner]
// [rows][n]: each chunk's nranks pieces are one contiguous reduce-scatter send buffer. Split mode
// is one chunk.
#pragma once

#include <cstdint>
#include <vector>

namespace xccl {

constexpr int kMaxGemmRsChunks = 8;

struct GemmRsChunk {
  int64_t first_row = 0;  // within each block
  int64_t rows = 0;
};

// The chunks of blocks of `block_rows` rows (> 0): `pinned` of them (1..kMaxGemmRsChunks, at most
// one per row), or for 0 the default: 4, fewer where chunks would have under 64 rows, at least 1.
// Chunks differ by at most one row, the longer ones first.
std::vector<GemmRsChunk> GemmRsChunks(int64_t block_rows, int pinned);

// The owner whose rows a rank computes `position`-th within a chunk: the next rank first, its
// own block last, so that the piece travelling furthest in time leaves first.
inline int GemmRsOwnerAt(int rank, int nranks, int position) {
  return (rank + 1 + position) % nranks;
}

}  // namespace xccl
