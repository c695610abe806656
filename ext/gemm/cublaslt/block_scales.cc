// The cublaslt plugin's block scales: xccl's scale arrays and odd row counts brought into the
// layouts cuBLASLt's block-scale kernels read, in the context's own device memory.
//
// Block scales (Hopper, sm 9.0, only; cuBLAS 12.9 or later to build them in). Our B (weights,
// cuBLASLt's A) takes CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F, one fp32 per 128 x 128 block;
// our A (activations, cuBLASLt's B) CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, one fp32 per row per
// 128 of K. cuBLASLt's rules (cuBLAS docs, cublasLtMatmulMatrixScale_t):
// scale pointers 16-byte aligned, M and N multiples of 4, output bf16/fp16/fp32 (never fp8), and
// no scale leading dimension: A's scales are read as a packed [KB][rows] tile for exactly the
// rows of the call, so only a whole problem with a_scale_ld == m (what ag_gemm hands over) passes
// xccl's array through; any other band, a_scale_ld > m or a misaligned pointer is first copied
// into such a tile in the context's own device memory (one cudaMemcpy2DAsync, stream-ordered).
// Measured on an H200 (cuBLAS 13.1, 2026-12-02, a probe for this plugin): cuBLASLt reads the
// BLK128x128 tensor with its K blocks padded to a multiple of 4 (16 bytes) per 128 columns of
// N, [ceil(n/128)][roundup(KB, 4)], not xccl's [ceil(n/128)][KB]: unpadded scales gave relative
// L2 errors of 0.36-0.99 wherever KB % 4 != 0 and n > 128, padded ones 1.7e-3. So such B scales
// are copied into a padded tile too (KB * ceil(n/128) floats per call). A K that is not a
// multiple of 128 (a short last block, KB = ceil(k/128)) gave the right answer in that probe
// (k 112, 320, 400: 1.7e-3), so it is served; k must still be a multiple of 16 (fp8 rows of 16
// bytes). A band whose row count is not a multiple of 4 runs its last rows % 4 rows through a
// 4-row scratch tile (A rows, their scales, C rows copied in and out), since cuBLASLt refuses
// such a column count and the band must neither read nor write rows outside it. These copies
// reuse the context's memory call after call: runs of one context must be ordered (one stream,
// as ag_gemm gives each of its compute streams its own context), never in flight on two streams
// at once.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "cublaslt_internal.h"
#include "xccl_gemm.h"

namespace xccl_cublaslt {
namespace {

bool Aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

}  // namespace

BlockTiles BlockTilesOf(const xcclGemmProblem& p) {
  auto next = [](size_t* at, size_t bytes) {
    const size_t here = *at;
    *at += (bytes + 255) / 256 * 256;
    return here;
  };
  BlockTiles t;
  t.blocks = (p.k + 127) / 128;
  t.padded_blocks = (t.blocks + 3) / 4 * 4;
  t.column_blocks = (p.n + 127) / 128;
  size_t at = 0;
  t.a_scales = next(&at, t.blocks * p.m * sizeof(float));
  t.b_scales = next(&at, t.column_blocks * t.padded_blocks * sizeof(float));
  t.tail_scales = next(&at, t.blocks * 4 * sizeof(float));
  t.tail_a = next(&at, 4 * p.lda);      // e4m3: one byte an element
  t.tail_c = next(&at, 4 * p.ldc * 2);  // bf16 or fp16
  t.bytes = at;
  return t;
}

// Block memory for p (BlockTiles), grown where p needs more than the context has. Zeroed, so
// that the 4-row tile's unused rows are finite (cuBLASLt computes them; nobody reads them).
// In supports() only: cudaFree may wait for the whole device.
xcclResult_t EnsureBlockMemory(Context* c, const xcclGemmProblem& p, cudaStream_t stream) {
  const size_t need = BlockTilesOf(p).bytes;
  if (c->block_bytes >= need) return xcclSuccess;
  if (c->block_memory != nullptr) cudaFree(c->block_memory);
  c->block_memory = nullptr;
  c->block_bytes = 0;
  void* memory = nullptr;
  if (cudaMalloc(&memory, need) != cudaSuccess ||
      cudaMemsetAsync(memory, 0, need, stream) != cudaSuccess) {
    if (memory != nullptr) cudaFree(memory);
    (void)cudaGetLastError();
    return xcclUnhandledDeviceError;
  }
  c->block_memory = static_cast<char*>(memory);
  c->block_bytes = need;
  return xcclSuccess;
}

// Rows [row_begin, row_end) of a block-scaled p. xccl's scale arrays go to cuBLASLt as they are
// where they already have its layout (a whole problem with a_scale_ld == m, aligned); else they
// are first copied into the context's tiles, stream-ordered (the note at the top says why).
// A band's last rows % 4 rows go through the 4-row tile: cuBLASLt wants a multiple of 4 and the
// band may neither read nor write the rows beyond it.
xcclResult_t BlockMatmul(Context* c, const xcclGemmProblem& p, int64_t row_begin, int64_t row_end,
                         cudaStream_t stream) {
  const BlockTiles t = BlockTilesOf(p);
  if (c->block_memory == nullptr || c->block_bytes < t.bytes)
    return xcclInvalidUsage;  // supports() never saw a problem this large
  auto copy = [&](void* to, size_t to_pitch, const void* from, size_t from_pitch, size_t width,
                  size_t height) {
    if (cudaMemcpy2DAsync(to, to_pitch, from, from_pitch, width, height, cudaMemcpyDeviceToDevice,
                          stream) == cudaSuccess)
      return true;
    (void)cudaGetLastError();
    return false;
  };
  constexpr size_t kF = sizeof(float);
  const float* b_scale = p.b_scale;
  if (!Aligned16(b_scale) || (t.column_blocks > 1 && t.padded_blocks != t.blocks)) {
    float* tile = reinterpret_cast<float*>(c->block_memory + t.b_scales);
    if (!copy(tile, t.padded_blocks * kF, p.b_scale, t.blocks * kF, t.blocks * kF, t.column_blocks))
      return xcclUnhandledDeviceError;
    b_scale = tile;
  }
  const int64_t rows = row_end - row_begin, bulk = rows - rows % 4;
  if (bulk > 0) {
    // One K block, or a tile as wide as the call (then the whole problem), is already packed.
    const float* a_scale = p.a_scale + row_begin;
    if ((t.blocks > 1 && p.a_scale_ld != bulk) || !Aligned16(a_scale)) {
      float* tile = reinterpret_cast<float*>(c->block_memory + t.a_scales);
      if (!copy(tile, bulk * kF, a_scale, p.a_scale_ld * kF, bulk * kF, t.blocks))
        return xcclUnhandledDeviceError;
      a_scale = tile;
    }
    const xcclResult_t r = Launch(c, p, row_begin, row_begin + bulk, {a_scale, b_scale}, stream);
    if (r != xcclSuccess || bulk == rows) return r;
  }
  const int64_t first = row_begin + bulk, left = rows - bulk;
  xcclGemmProblem four = p;  // the 4-row tile as a problem of its own, run whole
  four.m = 4;
  four.a = c->block_memory + t.tail_a;
  four.c = c->block_memory + t.tail_c;
  four.a_scale = reinterpret_cast<const float*>(c->block_memory + t.tail_scales);
  four.a_scale_ld = 4;
  const char* a = static_cast<const char*>(p.a) + first * p.lda;
  char* cptr = static_cast<char*>(p.c) + first * p.ldc * 2;
  if (!copy(const_cast<void*>(four.a), p.lda, a, p.lda, p.k, left) ||
      !copy(const_cast<float*>(four.a_scale), 4 * kF, p.a_scale + first, p.a_scale_ld * kF,
            left * kF, t.blocks))
    return xcclUnhandledDeviceError;
  const xcclResult_t r = Launch(c, four, 0, 4, {four.a_scale, b_scale}, stream);
  if (r != xcclSuccess) return r;
  return copy(cptr, p.ldc * 2, four.c, p.ldc * 2, p.n * 2, left) ? xcclSuccess
                                                                 : xcclUnhandledDeviceError;
}

}  // namespace xccl_cublaslt
