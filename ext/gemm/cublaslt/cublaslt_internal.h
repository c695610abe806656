// The cublaslt plugin's shared pieces: its context, cuBLASLt descriptors of a band, and what
// each of its files offers the others. Internal to the plugin (hidden symbols, never installed).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <utility>

#include "algo_key.h"
#include "xccl_gemm.h"

namespace xccl_cublaslt {

inline constexpr size_t kWorkspaceBytes = 32u << 20;

struct Context {
  int device = 0;
  int sm = 0;  // compute capability, major * 10 + minor: block scales are sm 90 only
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  // Block scales' copies (BlockTiles), sized at supports() for the largest problem it saw:
  // run() may not allocate.
  char* block_memory = nullptr;
  size_t block_bytes = 0;
  std::mutex mu;
  std::map<AlgoKey, cublasLtMatmulAlgo_t> algos;
  // For calls whose buffers are less aligned than the algorithm in `algos` needs: the
  // heuristic's choice for that alignment (AlignedFor).
  std::map<std::pair<AlgoKey, uint32_t>, cublasLtMatmulAlgo_t> by_alignment;
};

// descriptors.cc: shape rules, and the layout and scale modes of one cuBLASLt call.

xcclResult_t CheckShape(const xcclGemmProblem* p);

// The scale arrays one cuBLASLt call reads: a over its columns (our rows), b over its rows.
struct CallScales {
  const float* a;
  const float* b;
};

// p's own scale arrays for rows from row_begin, as the ptpc arithmetic offsets them. For block
// scales only right where they already have cuBLASLt's layout (scratch operands, a whole problem
// with a_scale_ld == m): BlockMatmul decides that for a caller's problem.
CallScales DirectScales(const xcclGemmProblem& p, int64_t row_begin);

// cuBLASLt's descriptors of rows [row_begin, row_end) of p (see the layout note at the top of
// descriptors.cc).
class Descriptors {
 public:
  Descriptors(const xcclGemmProblem& p, int64_t row_begin, int64_t row_end)
      : Descriptors(p, row_begin, row_end, DirectScales(p, row_begin)) {}
  Descriptors(const xcclGemmProblem& p, int64_t row_begin, int64_t row_end, CallScales scales);
  ~Descriptors();
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  bool Check(cublasStatus_t s);

  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  xcclResult_t result = xcclSuccess;
};

// algo_choice.cc: which cuBLASLt algorithm a call runs, and the call itself.

// Rows [row_begin, row_end) of p in one cuBLASLt call that reads `scales`.
xcclResult_t Launch(Context* c, const xcclGemmProblem& p, int64_t row_begin, int64_t row_end,
                    CallScales scales, cudaStream_t stream);

// The process's algorithm for p's shape on c's device, chosen once (timed on `warm`'s scratch
// operands), then shared.
xcclResult_t ShapeAlgo(Context* c, const xcclGemmProblem& p, const xcclGemmProblem& warm,
                       cudaStream_t stream, cublasLtMatmulAlgo_t* algo);

// block_scales.cc: xccl's block scales in the layouts cuBLASLt reads.

// Where a block-scaled call's copies lie in the context's block memory (each at a multiple of
// 256 bytes, the alignment cuBLASLt's heuristic assumes), for problem p: A's scales packed
// [KB][rows] for up to m rows; B's padded [ceil(n/128)][roundup(KB, 4)] (the layout cuBLASLt
// reads, measured: see the note at the top of block_scales.cc); a 4-row tile of A rows, their
// scales and C rows for a band's last rows % 4 rows.
struct BlockTiles {
  int64_t blocks = 0, padded_blocks = 0, column_blocks = 0;  // KB, roundup(KB, 4), ceil(n/128)
  size_t a_scales = 0, b_scales = 0, tail_scales = 0, tail_a = 0, tail_c = 0, bytes = 0;
};

BlockTiles BlockTilesOf(const xcclGemmProblem& p);

xcclResult_t EnsureBlockMemory(Context* c, const xcclGemmProblem& p, cudaStream_t stream);

xcclResult_t BlockMatmul(Context* c, const xcclGemmProblem& p, int64_t row_begin, int64_t row_end,
                         cudaStream_t stream);

// warm_up_operands.cc: scratch operands for loading and timing kernels.

// Scratch operands for `rows` rows of p in device memory: A and C rows, all of B, and scale
// vectors of p.m and p.n (the heuristic sees these pointers too: it refuses fp8 with NULL
// scales). Freed with the object. kZeros is enough to load a kernel; kData is what timing
// wants: a GEMM of zeros (or of one repeated byte) toggles fewer bits, draws less power and may
// clock higher than one of data, which can rank algorithms differently. kData's A and B are
// random signs and mantissas at exponents near 1 (finite in every type), the scales 1.
class WarmUpOperands {
 public:
  enum Fill { kZeros, kData };
  ~WarmUpOperands();
  bool Make(const xcclGemmProblem& p, int64_t rows, cudaStream_t stream, xcclGemmProblem* warm,
            Fill fill);

 private:
  char* scratch_ = nullptr;
};

}  // namespace xccl_cublaslt
