#include "fused/gemm_rs/gemm_rs_plan.h"

#include <algorithm>

namespace xccl {

namespace {

// Rows a default chunk keeps at least: fewer leave a GEMM call too thin to fill a device.
constexpr int64_t kMinDefaultChunkRows = 64;
constexpr int kDefaultChunks = 4;

}  // namespace

std::vector<GemmRsChunk> GemmRsChunks(int64_t block_rows, int pinned) {
  int64_t count =
      pinned > 0 ? pinned : std::min<int64_t>(kDefaultChunks, block_rows / kMinDefaultChunkRows);
  count = std::max<int64_t>(1, std::min(count, block_rows));
  std::vector<GemmRsChunk> chunks(static_cast<size_t>(count));
  int64_t first = 0;
  for (int64_t j = 0; j < count; ++j) {
    chunks[j].first_row = first;
    chunks[j].rows = block_rows / count + (j < block_rows % count ? 1 : 0);
    first += chunks[j].rows;
  }
  return chunks;
}

}  // namespace xccl
