// libxccl-gemm-cublaslt.so: the ag_gemm GEMM through cuBLASLt (NVIDIA), bf16/fp16 and fp8 e4m3
// with per-token A and per-channel B scales ("ptpc") or DeepSeek-V3 block scales (ABI version
// 2's xcclGemmScaleBlock128), fp32 accumulate, bf16/fp16 out.
//
// Layout: the plugin ABI's problem is row-major, C[m][n] = A[m][k] . B[n][k]^T. cuBLASLt is
// column-major, and a row-major matrix is the column-major view of its transpose, so the plugin
// computes C^T (n x m, ld = ldc) = B (n x k, stored as the k x n column-major view of B's rows,
// ld = ldb, op T) times A^T (k x m, the column-major view of A's rows, ld = lda, op N). That is
// the "TN" form Hopper's fp8 kernels require. In those terms the per-channel B scale is a
// vector over cuBLASLt's rows (its matrix A) and the per-token A scale one over its columns
// (its matrix B): both set with CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F (cuBLAS
// docs). A band of rows of C is a band of columns of C^T: the same call with A, a_scale and C
// offset and the column count cut.
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
// as ag_gemm gives each of its lanes its own context), never in flight on two streams at once.
//
// One algorithm per problem (m, n, k, leading dimensions, types, scale mode) and device in a
// process, chosen at supports(): the fastest, timed over the whole problem, of the heuristic's
// first 8 split-K-free algorithms (XCCL_GEMM_CUBLASLT_TUNE=0: its first, untimed), and used for
// every band whose row count it accepts (cublasLtMatmulAlgoCheck), also of a problem whose m it was
// not chosen for (an op chooses at m_max and runs smaller m: no kernel loads inside a call).
// Timed, so two processes (or runs) may choose differently and give different bytes; within a
// process every context of a problem gets the same choice (fused and split ops of one m_max give
// the same bytes). One algorithm means one summation order, so such a band's bytes equal the full
// run's. A row count it refuses gets an algorithm of its own, cached per row count; its bytes
// may then differ, and its kernel loads at that band's first run, inside a call (so the stall
// AlgoFor describes remains possible there; ag_gemm's bands and paired sources are multiples of
// 256 rows, and no refusal of those has been seen). supports() runs the shape's algorithm once
// on scratch memory, loading its kernel. Every allocation, upload, timing and free is in init,
// supports and finalize, which may wait for the whole device; run() only enqueues (xccl_gemm.h,
// "Device-synchronising calls").
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <tuple>
#include <utility>
#include <vector>

#include "algo_key.h"
#include "xccl_gemm.h"

// The block-scale modes (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, _BLK128x128_32F) came with
// cuBLAS 12.9 (an NVIDIA maintainer, NVIDIA/CUDALibrarySamples issue 310); built against an older
// cuBLASLt the plugin refuses block scales at supports().
#if CUBLAS_VER_MAJOR > 12 || (CUBLAS_VER_MAJOR == 12 && CUBLAS_VER_MINOR >= 9)
#define XCCL_CUBLASLT_BLOCK_SCALES 1
#else
#define XCCL_CUBLASLT_BLOCK_SCALES 0
#endif

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

using xccl_cublaslt::AlgoKey;
using xccl_cublaslt::KeyOf;
using xccl_cublaslt::kShapeAlgo;

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

bool CudaType(xcclDataType_t t, cudaDataType_t* out) {
  switch (t) {
    case xcclBfloat16:
      *out = CUDA_R_16BF;
      return true;
    case xcclFloat16:
      *out = CUDA_R_16F;
      return true;
    case xcclFloat8e4m3:
      *out = CUDA_R_8F_E4M3;
      return true;
    default:
      return false;
  }
}

xcclResult_t FromCublas(cublasStatus_t s) {
  if (s == CUBLAS_STATUS_SUCCESS) return xcclSuccess;
  if (s == CUBLAS_STATUS_NOT_SUPPORTED || s == CUBLAS_STATUS_INVALID_VALUE)
    return xcclInvalidArgument;
  return xcclInternalError;
}

// Makes `device` current for the object's life and then gives the caller's device back: the
// caller's current device is theirs (one thread may drive several GPUs).
class OnDevice {
 public:
  explicit OnDevice(int device) {
    ok_ = cudaGetDevice(&caller_) == cudaSuccess && cudaSetDevice(device) == cudaSuccess;
  }
  ~OnDevice() { (void)cudaSetDevice(caller_); }
  OnDevice(const OnDevice&) = delete;
  OnDevice& operator=(const OnDevice&) = delete;
  bool ok() const { return ok_; }

 private:
  int caller_ = 0;
  bool ok_ = false;
};

xcclResult_t Init(void** ctx, int device) {
  if (ctx == nullptr) return xcclInvalidArgument;
  auto* c = new (std::nothrow) Context;
  if (c == nullptr) return xcclSystemError;
  c->device = device;
  OnDevice on_device(device);
  int major = 0, minor = 0;
  if (!on_device.ok() ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess ||
      cublasLtCreate(&c->handle) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc(&c->workspace, kWorkspaceBytes) != cudaSuccess) {
    if (c->handle != nullptr) cublasLtDestroy(c->handle);
    delete c;
    return xcclUnhandledDeviceError;
  }
  c->sm = major * 10 + minor;
  *ctx = c;
  return xcclSuccess;
}

xcclResult_t Finalize(void* ctx) {
  auto* c = static_cast<Context*>(ctx);
  if (c == nullptr) return xcclInvalidArgument;
  OnDevice on_device(c->device);
  cudaFree(c->workspace);
  if (c->block_memory != nullptr) cudaFree(c->block_memory);
  cublasLtDestroy(c->handle);
  delete c;
  return xcclSuccess;
}

// Shape and type rules of cuBLASLt on Hopper: fp8 needs ptpc or block scales (the ABI's fp8
// modes), k and the leading dimensions multiples of 16 bytes' worth of elements; block scales
// M and N multiples of 4 and an A-scale tile that holds every row. The output is never fp8 (the
// ABI has none, and cuBLASLt's block-scale kernels write none). a_scale_ld is read for block
// scales only: a version 1 caller's problem ends before it and never has that mode.
xcclResult_t CheckShape(const xcclGemmProblem* p) {
  if (p == nullptr) return xcclInvalidArgument;
  cudaDataType_t a, c;
  if (!CudaType(p->a_type, &a) || p->a_type != p->b_type || !CudaType(p->c_type, &c) ||
      p->c_type == xcclFloat8e4m3)
    return xcclInvalidArgument;
  const bool fp8 = p->a_type == xcclFloat8e4m3;
  const bool block = p->scale_mode == xcclGemmScaleBlock128;
  if (p->scale_mode != xcclGemmScaleNone && p->scale_mode != xcclGemmScalePtpc && !block)
    return xcclInvalidArgument;
  if (fp8 != (p->scale_mode != xcclGemmScaleNone)) return xcclInvalidArgument;
  if (block &&
      (!XCCL_CUBLASLT_BLOCK_SCALES || p->m % 4 != 0 || p->n % 4 != 0 || p->a_scale_ld < p->m))
    return xcclInvalidArgument;
  const int64_t align = fp8 ? 16 : 8;  // elements in 16 bytes
  if (p->m < 0 || p->n <= 0 || p->k <= 0 || p->k % align != 0 || p->lda % align != 0 ||
      p->ldb % align != 0 || p->ldc % 8 != 0 || p->lda < p->k || p->ldb < p->k || p->ldc < p->n)
    return xcclInvalidArgument;
  return xcclSuccess;
}

template <typename T>
cublasStatus_t SetAttr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                       const T& value) {
  return cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value));
}

// The scale arrays one cuBLASLt call reads: a over its columns (our rows), b over its rows.
struct CallScales {
  const float* a;
  const float* b;
};

// p's own scale arrays for rows from row_begin, as the ptpc arithmetic offsets them. For block
// scales only right where they already have cuBLASLt's layout (scratch operands, a whole problem
// with a_scale_ld == m): BlockMatmul decides that for a caller's problem.
CallScales DirectScales(const xcclGemmProblem& p, int64_t row_begin) {
  return {p.a_scale == nullptr ? nullptr : p.a_scale + row_begin, p.b_scale};
}

// cuBLASLt's descriptors of rows [row_begin, row_end) of p (see the layout note above).
class Descriptors {
 public:
  Descriptors(const xcclGemmProblem& p, int64_t row_begin, int64_t row_end)
      : Descriptors(p, row_begin, row_end, DirectScales(p, row_begin)) {}
  Descriptors(const xcclGemmProblem& p, int64_t row_begin, int64_t row_end, CallScales scales) {
    const bool fp8 = p.a_type == xcclFloat8e4m3;
    cudaDataType_t in = CUDA_R_16BF, out = CUDA_R_16BF;
    CudaType(p.a_type, &in);
    CudaType(p.c_type, &out);
    const int64_t rows = row_end - row_begin;
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    // cuBLASLt's A: our B viewed k x n (op T -> n x k); its B: our A band viewed k x rows.
    if (Check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) &&
        Check(SetAttr(desc, CUBLASLT_MATMUL_DESC_TRANSA, transa)) &&
        Check(SetAttr(desc, CUBLASLT_MATMUL_DESC_TRANSB, transb)) &&
        Check(cublasLtMatrixLayoutCreate(&la, in, p.k, p.n, p.ldb)) &&
        Check(cublasLtMatrixLayoutCreate(&lb, in, p.k, rows, p.lda)) &&
        Check(cublasLtMatrixLayoutCreate(&lc, out, p.n, rows, p.ldc)) && fp8) {
      int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, b_mode = a_mode;
      if (p.scale_mode == xcclGemmScaleBlock128) {
#if XCCL_CUBLASLT_BLOCK_SCALES
        a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;  // cuBLASLt's A: our weights
        b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;      // cuBLASLt's B: our activations
#else
        result = xcclInvalidArgument;  // CheckShape refuses these first
        return;
#endif
      }
      // cuBLASLt's A is our B and the other way round: each takes the other's scales.
      Check(SetAttr(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, a_mode)) &&
          Check(SetAttr(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, b_mode)) &&
          Check(SetAttr(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, scales.b)) &&
          Check(SetAttr(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, scales.a));
    }
  }
  ~Descriptors() {
    if (lc != nullptr) cublasLtMatrixLayoutDestroy(lc);
    if (lb != nullptr) cublasLtMatrixLayoutDestroy(lb);
    if (la != nullptr) cublasLtMatrixLayoutDestroy(la);
    if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  }
  Descriptors(const Descriptors&) = delete;
  Descriptors& operator=(const Descriptors&) = delete;

  bool Check(cublasStatus_t s) {
    if (result == xcclSuccess && s != CUBLAS_STATUS_SUCCESS) result = FromCublas(s);
    return result == xcclSuccess;
  }

  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  xcclResult_t result = xcclSuccess;
};

// Split-K off: each output element's sum then runs over k in one order whatever the row count.
void TurnSplitKOff(cublasLtMatmulAlgo_t* algo) {
  const int32_t one = 1;
  const uint32_t none = CUBLASLT_REDUCTION_SCHEME_NONE;
  cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one, sizeof(one));
  cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &none,
                                       sizeof(none));
}

// cuBLASLt's heuristic for these descriptors, asked for split-K-free algorithms only
// (CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK): up to `max` of them, best first. Asking for them
// beats taking the first answer and turning split-K off afterwards, which left that kernel's
// tiling tuned for a split it no longer did (docs/perf-history.md, "GEMM plugin: cublaslt
// against cuBLASLt called directly").
// `alignment`: the bytes every buffer's address is a multiple of (cuBLASLt assumes 256).
xcclResult_t SplitKFreeCandidates(Context* c, Descriptors& d, int max,
                                  std::vector<cublasLtMatmulAlgo_t>* out,
                                  uint32_t alignment = 256) {
  std::vector<cublasLtMatmulHeuristicResult_t> results(max);
  const uint32_t no_reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
  cublasLtMatmulPreference_t pref = nullptr;
  int found = 0;
  bool set =
      d.Check(cublasLtMatmulPreferenceCreate(&pref)) &&
      d.Check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &kWorkspaceBytes, sizeof(kWorkspaceBytes))) &&
      d.Check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                   &no_reduction, sizeof(no_reduction)));
  for (cublasLtMatmulPreferenceAttributes_t attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    set = set && (alignment >= 256 || d.Check(cublasLtMatmulPreferenceSetAttribute(
                                          pref, attribute, &alignment, sizeof(alignment))));
  if (set)
    d.Check(cublasLtMatmulAlgoGetHeuristic(c->handle, d.desc, d.la, d.lb, d.lc, d.lc, pref, max,
                                           results.data(), &found));
  if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
  if (d.result != xcclSuccess) return d.result;
  if (found == 0) return xcclInvalidArgument;  // no kernel for this shape
  out->clear();
  for (int i = 0; i < found; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    out->push_back(results[i].algo);
    TurnSplitKOff(&out->back());  // already off; kept so that no reduction can slip in
  }
  return out->empty() ? xcclInvalidArgument : xcclSuccess;
}

// The heuristic's best split-K-free algorithm for these descriptors (and buffer alignment).
xcclResult_t Heuristic(Context* c, Descriptors& d, cublasLtMatmulAlgo_t* algo,
                       uint32_t alignment = 256) {
  std::vector<cublasLtMatmulAlgo_t> candidates;
  const xcclResult_t r = SplitKFreeCandidates(c, d, 1, &candidates, alignment);
  if (r == xcclSuccess) *algo = candidates.front();
  return r;
}

// The algorithm for these descriptors of `rows` rows: cached; else the shape's (ShapeAlgoOf) if
// cuBLASLt accepts it for them; else the heuristic's for them. Reusing the shape's algorithm for
// another m keeps the bytes of equal rows equal across m and, more to the point, loads no new
// kernel inside a call: a first launch can wait for the whole device, and with ranks sharing a
// GPU whose kernels wait on each other that stalls calls until their deadline
// (docs/perf-history.md, fourth round).
// Called with c->mu held.
xcclResult_t AlgoFor(Context* c, const xcclGemmProblem& p, int64_t rows, Descriptors& d,
                     cublasLtMatmulAlgo_t* algo) {
  auto it = c->algos.find(KeyOf(p, rows));
  if (it != c->algos.end()) {
    *algo = it->second;
    return xcclSuccess;
  }
  const cublasLtMatmulAlgo_t* shape = xccl_cublaslt::ShapeAlgoOf(c->algos, p);
  cublasLtMatmulHeuristicResult_t checked;
  if (shape != nullptr &&
      cublasLtMatmulAlgoCheck(c->handle, d.desc, d.la, d.lb, d.lc, d.lc, shape, &checked) ==
          CUBLAS_STATUS_SUCCESS &&
      checked.workspaceSize <= kWorkspaceBytes) {
    *algo = *shape;
  } else {
    const xcclResult_t r = Heuristic(c, d, algo);
    if (r != xcclSuccess) return r;
  }
  c->algos[KeyOf(p, rows)] = *algo;
  return xcclSuccess;
}

// The largest power of two, up to 256, that `ptr` is a multiple of.
uint32_t AlignmentOf(const void* ptr) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(ptr) | 256u;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// Whether `algo` works on buffers whose addresses are multiples of `alignment` bytes (its own
// minimum for each of A, B, C and D, which also covers the leading dimensions it was chosen for).
bool AcceptsAlignment(const cublasLtMatmulAlgo_t& algo, uint32_t alignment) {
  for (cublasLtMatmulAlgoCapAttributes_t attribute :
       {CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES}) {
    uint32_t need = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, attribute, &need, sizeof(need), &written) !=
            CUBLAS_STATUS_SUCCESS ||
        need > alignment)
      return false;
  }
  return true;
}

// `*algo` (chosen, as cuBLASLt's heuristic assumes, for 256-byte-aligned buffers) if it accepts
// buffers aligned to `alignment` only, else the heuristic's choice for that alignment, cached.
// The tuned algorithm usually needs 16 bytes, so a caller's B or C at a 16-byte offset keeps it;
// only a call it cannot run takes another kernel (loaded then: see AlgoFor). Called with c->mu.
xcclResult_t AlignedFor(Context* c, const xcclGemmProblem& p, int64_t rows, Descriptors& d,
                        uint32_t alignment, cublasLtMatmulAlgo_t* algo) {
  if (alignment >= 256 || AcceptsAlignment(*algo, alignment)) return xcclSuccess;
  const auto key = std::make_pair(KeyOf(p, rows), alignment);
  auto it = c->by_alignment.find(key);
  if (it != c->by_alignment.end()) {
    *algo = it->second;
    return xcclSuccess;
  }
  const xcclResult_t r = Heuristic(c, d, algo, alignment);
  if (r == xcclSuccess) c->by_alignment[key] = *algo;
  return r;
}

// Rows [row_begin, row_end) of p in one cuBLASLt call that reads `scales`.
xcclResult_t Launch(Context* c, const xcclGemmProblem& p, int64_t row_begin, int64_t row_end,
                    CallScales scales, cudaStream_t stream) {
  Descriptors d(p, row_begin, row_end, scales);
  if (d.result != xcclSuccess) return d.result;
  const size_t in_size = p.a_type == xcclFloat8e4m3 ? 1 : 2;
  const char* a = static_cast<const char*>(p.a) + row_begin * p.lda * in_size;
  char* cptr = static_cast<char*>(p.c) + row_begin * p.ldc * 2;
  const uint32_t alignment = std::min({AlignmentOf(p.b), AlignmentOf(a), AlignmentOf(cptr)});
  cublasLtMatmulAlgo_t algo;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    xcclResult_t r = AlgoFor(c, p, row_end - row_begin, d, &algo);
    if (r == xcclSuccess) r = AlignedFor(c, p, row_end - row_begin, d, alignment, &algo);
    if (r != xcclSuccess) return r;
  }
  const float alpha = 1.0f, beta = 0.0f;
  d.Check(cublasLtMatmul(c->handle, d.desc, &alpha, p.b, d.la, a, d.lb, &beta, cptr, d.lc, cptr,
                         d.lc, &algo, c->workspace, kWorkspaceBytes, stream));
  return d.result;
}

bool Aligned16(const void* ptr) { return reinterpret_cast<uintptr_t>(ptr) % 16 == 0; }

// Where a block-scaled call's copies lie in the context's block memory (each at a multiple of
// 256 bytes, the alignment cuBLASLt's heuristic assumes), for problem p: A's scales packed
// [KB][rows] for up to m rows; B's padded [ceil(n/128)][roundup(KB, 4)] (the layout cuBLASLt
// reads, measured: see the note at the top); a 4-row tile of A rows, their scales and C rows
// for a band's last rows % 4 rows.
struct BlockTiles {
  int64_t blocks = 0, padded_blocks = 0, column_blocks = 0;  // KB, roundup(KB, 4), ceil(n/128)
  size_t a_scales = 0, b_scales = 0, tail_scales = 0, tail_a = 0, tail_c = 0, bytes = 0;
};

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

xcclResult_t Matmul(Context* c, const xcclGemmProblem& p, int64_t row_begin, int64_t row_end,
                    cudaStream_t stream) {
  if (p.scale_mode == xcclGemmScaleBlock128) return BlockMatmul(c, p, row_begin, row_end, stream);
  return Launch(c, p, row_begin, row_end, DirectScales(p, row_begin), stream);
}

// Scratch operands for `rows` rows of p in device memory: A and C rows, all of B, and scale
// vectors of p.m and p.n (the heuristic sees these pointers too: it refuses fp8 with NULL
// scales). Freed with the object. kZeros is enough to load a kernel; kData is what timing
// wants: a GEMM of zeros (or of one repeated byte) toggles fewer bits, draws less power and may
// clock higher than one of data, which can rank algorithms differently. kData's A and B are
// random signs and mantissas at exponents near 1 (finite in every type), the scales 1.
class WarmUpOperands {
 public:
  enum Fill { kZeros, kData };
  ~WarmUpOperands() {
    if (scratch_ != nullptr) cudaFree(scratch_);
  }
  bool Make(const xcclGemmProblem& p, int64_t rows, cudaStream_t stream, xcclGemmProblem* warm,
            Fill fill) {
    if (scratch_ != nullptr) cudaFree(scratch_);
    scratch_ = nullptr;
    const bool fp8 = p.a_type == xcclFloat8e4m3;
    const size_t in_size = fp8 ? 1 : 2;
    const size_t a_bytes = rows * p.lda * in_size, b_bytes = p.n * p.ldb * in_size;
    // Block scales in cuBLASLt's layouts: B's padded (a multiple of 4 floats, so A's that
    // follow stay 16-byte aligned), A's packed for all p.m rows (a call of fewer reads a prefix).
    const bool block = p.scale_mode == xcclGemmScaleBlock128;
    const BlockTiles t = block ? BlockTilesOf(p) : BlockTiles{};
    const size_t b_scales = block ? t.column_blocks * t.padded_blocks : p.n;
    const size_t a_scales = block ? t.blocks * p.m : p.m;
    const size_t c_bytes = rows * p.ldc * 2, scale_bytes = (a_scales + b_scales) * sizeof(float);
    const size_t total = a_bytes + b_bytes + c_bytes + scale_bytes;
    if (cudaMalloc(&scratch_, total) != cudaSuccess ||
        cudaMemsetAsync(scratch_, 0, total, stream) != cudaSuccess)
      return false;
    *warm = p;
    warm->a = scratch_;
    warm->b = scratch_ + a_bytes;
    warm->c = scratch_ + a_bytes + b_bytes;
    float* scales = reinterpret_cast<float*>(scratch_ + a_bytes + b_bytes + c_bytes);
    warm->a_scale = fp8 ? scales + b_scales : nullptr;
    warm->b_scale = fp8 ? scales : nullptr;
    if (block) warm->a_scale_ld = p.m;
    return fill == kZeros ||
           (FillRandom(scratch_, a_bytes + b_bytes, fp8, stream) &&
            Upload(std::vector<float>(a_scales + b_scales, 1.0f), scales, stream));
  }

 private:
  // `bytes` of random element codes at `device`: one 1 MiB tile made on the host, then copied
  // over the rest on the device (a whole A of 32768 x 7168 bf16 would be 470 MB of host memory
  // and time, and a repeat every MiB makes no difference to power draw).
  static bool FillRandom(char* device, size_t bytes, bool fp8, cudaStream_t stream) {
    constexpr size_t kTile = 1 << 20;
    const std::vector<uint8_t> tile = RandomCodes(std::min(bytes, kTile), fp8);
    if (!Upload(tile, device, stream)) return false;
    for (size_t done = tile.size(); done < bytes; done += kTile) {
      if (cudaMemcpyAsync(device + done, device, std::min(kTile, bytes - done),
                          cudaMemcpyDeviceToDevice, stream) != cudaSuccess)
        return false;
    }
    return true;
  }
  // Element codes of random sign and mantissa: e4m3 bytes 0x38-0x3F / 0xB8-0xBF (1 to 1.875),
  // 16-bit halves with the exponent bits fixed (bf16 about 0.5 to 2, fp16 1.75 to 2). xorshift64:
  // quick, and any generator will do for power draw. `bytes` is even for 16-bit types.
  static std::vector<uint8_t> RandomCodes(size_t bytes, bool fp8) {
    std::vector<uint8_t> codes(bytes);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < bytes; ++i) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      const uint8_t r = static_cast<uint8_t>(x >> 24);
      const bool high_byte = !fp8 && i % 2 == 1;  // little-endian: sign and exponent
      codes[i] = fp8 ? (r & 0x87) | 0x38 : high_byte ? (r & 0x80) | 0x3F : r;
    }
    return codes;
  }
  template <typename T>
  static bool Upload(const std::vector<T>& host, void* device, cudaStream_t stream) {
    return cudaMemcpyAsync(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice,
                           stream) == cudaSuccess &&
           cudaStreamSynchronize(stream) == cudaSuccess;  // before `host` goes
  }

  char* scratch_ = nullptr;
};

// The algorithm of each problem on each device, one per process: every context (every op, every
// compute lane of one) runs the same one, so fused and split calls of one m give the same bytes
// even where tuning's timings would differ from one choice to the next. Keyed by the problem's m
// too: the choice is timed over all of p.m rows, and the heuristic's answer changes with m
// (docs/perf-history.md, third round).
struct ShapeOnDevice {
  int device;
  int64_t m;
  AlgoKey key;
  bool operator<(const ShapeOnDevice& o) const {
    return std::tie(device, m, key) < std::tie(o.device, o.m, o.key);
  }
};
// One lock per device (devices beyond 64 share): contexts of one device choose one after
// another, those of different devices at once.
std::mutex& ShapeChoicesMutex(int device) {
  static std::mutex mu[64];
  return mu[static_cast<unsigned>(device) % 64];
}
std::mutex& ShapeChoicesMapMutex() {  // the map itself, held only to read or write it
  static std::mutex mu;
  return mu;
}
std::map<ShapeOnDevice, cublasLtMatmulAlgo_t>& ShapeChoices() {
  static auto* choices = new std::map<ShapeOnDevice, cublasLtMatmulAlgo_t>;  // outlives exit
  return *choices;
}

// XCCL_GEMM_CUBLASLT_TUNE=0 takes the heuristic's first split-K-free algorithm untimed.
bool TuningWanted() {
  const char* v = getenv("XCCL_GEMM_CUBLASLT_TUNE");
  return v == nullptr || strcmp(v, "0") != 0;
}

// The fastest of `candidates` for p, timed on scratch operands of all p.m rows. Every
// candidate runs once (loading its kernel); the first then runs for kClockUpMs, so that the
// GPU's clocks have left idle before anything is timed (timing from idle would favour the
// candidates timed last). Then kPasses passes, alternately forward and backward,
// time each candidate over enough runs to last kTimedMs, each keeping its best pass. The first
// (the heuristic's choice) is kept unless the fastest beats it by more than noise (2%). Where the
// scratch cannot be had (memory), the first is taken untimed. XCCL_GEMM_CUBLASLT_TUNE=2 prints
// the timings to stderr.
xcclResult_t FastestOf(Context* c, const xcclGemmProblem& p,
                       const std::vector<cublasLtMatmulAlgo_t>& candidates, cudaStream_t stream,
                       cublasLtMatmulAlgo_t* best) {
  constexpr int kPasses = 3;
  constexpr float kClockUpMs = 30, kTimedMs = 3;
  *best = candidates.front();
  if (candidates.size() == 1 || p.m == 0) return xcclSuccess;
  WarmUpOperands scratch;
  xcclGemmProblem warm{};
  cudaEvent_t start = nullptr, stop = nullptr;
  if (!scratch.Make(p, p.m, stream, &warm, WarmUpOperands::kData) ||
      cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) {
    if (start != nullptr) cudaEventDestroy(start);
    (void)cudaGetLastError();
    return xcclSuccess;
  }
  Descriptors d(warm, 0, warm.m);
  const float alpha = 1.0f, beta = 0.0f;
  auto matmul = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(c->handle, d.desc, &alpha, warm.b, d.la, warm.a, d.lb, &beta, warm.c,
                          d.lc, warm.c, d.lc, &algo, c->workspace, kWorkspaceBytes,
                          stream) == CUBLAS_STATUS_SUCCESS;
  };
  // Milliseconds per run of `runs` runs of candidate i; negative where it would not run.
  auto time_runs = [&](size_t i, int runs) {
    bool ran = cudaEventRecord(start, stream) == cudaSuccess;
    for (int run = 0; run < runs && ran; ++run) ran = matmul(candidates[i]);
    float ms = 0;
    ran = ran && cudaEventRecord(stop, stream) == cudaSuccess &&
          cudaEventSynchronize(stop) == cudaSuccess &&
          cudaEventElapsedTime(&ms, start, stop) == cudaSuccess;
    if (!ran) (void)cudaGetLastError();
    return ran ? ms / runs : -1.0f;
  };
  // Each candidate's best time per run in ms; negative: cuBLASLt would not run it (passed over).
  std::vector<float> best_ms(candidates.size(), -1.0f);
  for (size_t i = 0; i < candidates.size(); ++i) best_ms[i] = time_runs(i, 1);
  float first_ms = best_ms[0] > 0 ? best_ms[0] : 1.0f, clocked_ms = 0;
  // Up to 400 runs: a GEMM under 75 us clocks up for less than kClockUpMs.
  for (int round = 0; round < 100 && clocked_ms < kClockUpMs && best_ms[0] > 0; ++round) {
    first_ms = time_runs(0, 4);
    clocked_ms += 4 * first_ms;
  }
  const int runs =
      std::max(3, std::min(50, static_cast<int>(kTimedMs / std::max(first_ms, 1e-3f)) + 1));
  for (int pass = 0; pass < kPasses; ++pass) {
    for (size_t step = 0; step < candidates.size(); ++step) {
      const size_t i = pass % 2 == 0 ? step : candidates.size() - 1 - step;
      if (best_ms[i] < 0) continue;
      const float ms = time_runs(i, runs);
      best_ms[i] = ms < 0 ? -1.0f : std::min(best_ms[i], ms);
    }
  }
  // The fastest; the first (the heuristic's choice) unless the fastest beats it by over 2%.
  size_t chosen = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (best_ms[i] >= 0 && (best_ms[chosen] < 0 || best_ms[i] < best_ms[chosen])) chosen = i;
  }
  if (best_ms[0] >= 0 && !(best_ms[chosen] < 0.98f * best_ms[0])) chosen = 0;
  *best = candidates[chosen];
  const char* verbose = getenv("XCCL_GEMM_CUBLASLT_TUNE");
  if (verbose != nullptr && strcmp(verbose, "2") == 0) {
    fprintf(stderr, "# tune m %lld n %lld k %lld: chose %zu of", static_cast<long long>(p.m),
            static_cast<long long>(p.n), static_cast<long long>(p.k), chosen);
    for (float ms : best_ms) fprintf(stderr, " %.3f", ms);
    fprintf(stderr, " ms\n");
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return cudaStreamSynchronize(stream) == cudaSuccess ? xcclSuccess : xcclUnhandledDeviceError;
}

// The process's algorithm for p's shape on c's device: chosen once, then shared. The heuristic
// lists up to kCandidates split-K-free algorithms (over descriptors whose scale pointers lie in
// `warm`: it refuses fp8 without them); FastestOf picks among them unless
// XCCL_GEMM_CUBLASLT_TUNE=0. Holds the device's lock while choosing: contexts of one device
// asking at once (ranks of one process sharing a GPU) wait for the one choice instead of timing
// against each other.
xcclResult_t ShapeAlgo(Context* c, const xcclGemmProblem& p, const xcclGemmProblem& warm,
                       cudaStream_t stream, cublasLtMatmulAlgo_t* algo) {
  constexpr int kCandidates = 8;
  std::lock_guard<std::mutex> choosing(ShapeChoicesMutex(c->device));
  const ShapeOnDevice key{c->device, p.m, KeyOf(p, kShapeAlgo)};
  {
    std::lock_guard<std::mutex> reading(ShapeChoicesMapMutex());
    auto it = ShapeChoices().find(key);
    if (it != ShapeChoices().end()) {
      *algo = it->second;
      return xcclSuccess;
    }
  }
  Descriptors whole(warm, 0, p.m);
  std::vector<cublasLtMatmulAlgo_t> candidates;
  xcclResult_t r =
      whole.result != xcclSuccess
          ? whole.result
          : SplitKFreeCandidates(c, whole, TuningWanted() ? kCandidates : 1, &candidates);
  if (r == xcclSuccess) r = FastestOf(c, p, candidates, stream, algo);
  if (r == xcclSuccess) {
    std::lock_guard<std::mutex> writing(ShapeChoicesMapMutex());
    ShapeChoices()[key] = *algo;
  }
  return r;
}

// Chooses the problem's algorithm (ShapeAlgo) and runs that very algorithm once on scratch
// memory, loading its kernel now rather than at the first band: over a few rows where cuBLASLt
// accepts it for so few, else over all p.m rows. The caller's current device is left as it was.
xcclResult_t Prepare(Context* c, const xcclGemmProblem& p) {
  {
    std::lock_guard<std::mutex> lock(c->mu);
    if (c->algos.count(KeyOf(p, kShapeAlgo)) != 0) return xcclSuccess;
  }
  OnDevice on_device(c->device);
  if (!on_device.ok()) return xcclUnhandledDeviceError;
  cudaStream_t stream = nullptr;
  WarmUpOperands scratch;
  xcclGemmProblem warm{};
  int64_t rows = p.m < 64 ? p.m : 64;
  cublasLtMatmulAlgo_t algo;
  xcclResult_t r = xcclUnhandledDeviceError;
  const bool block = p.scale_mode == xcclGemmScaleBlock128;
  if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess &&
      scratch.Make(p, rows, stream, &warm, WarmUpOperands::kZeros))
    r = block ? EnsureBlockMemory(c, p, stream) : xcclSuccess;
  if (r == xcclSuccess) r = ShapeAlgo(c, p, warm, stream, &algo);
  if (r == xcclSuccess) {
    std::lock_guard<std::mutex> lock(c->mu);
    c->algos[KeyOf(p, kShapeAlgo)] = algo;
    Descriptors few(warm, 0, rows);
    cublasLtMatmulHeuristicResult_t checked;
    const bool fits = few.result == xcclSuccess &&
                      cublasLtMatmulAlgoCheck(c->handle, few.desc, few.la, few.lb, few.lc, few.lc,
                                              &algo, &checked) == CUBLAS_STATUS_SUCCESS &&
                      checked.workspaceSize <= kWorkspaceBytes;
    if (!fits) rows = p.m;            // warm up over the whole problem, which the algorithm is for
    c->algos[KeyOf(p, rows)] = algo;  // what the warm-up below (and any band this size) runs
  }
  if (r == xcclSuccess && rows == p.m && p.m > 64 &&
      !scratch.Make(p, rows, stream, &warm, WarmUpOperands::kZeros))
    r = xcclUnhandledDeviceError;
  if (r == xcclSuccess && rows > 0) r = Launch(c, warm, 0, rows, DirectScales(warm, 0), stream);
  // Block scales: the 4-row tile's kernel too (a band's last rows % 4 rows), also loaded now.
  if (r == xcclSuccess && block && rows >= 4) {
    xcclGemmProblem four = warm;
    four.m = 4;
    four.a_scale_ld = 4;
    r = Launch(c, four, 0, 4, DirectScales(four, 0), stream);
  }
  if (stream != nullptr) {
    if (cudaStreamSynchronize(stream) != cudaSuccess && r == xcclSuccess)
      r = xcclUnhandledDeviceError;
    cudaStreamDestroy(stream);
  }
  return r;
}

xcclResult_t Supports(void* ctx, const xcclGemmProblem* p) {
  auto* c = static_cast<Context*>(ctx);
  if (c == nullptr || p == nullptr) return xcclInvalidArgument;
  const xcclResult_t shape = CheckShape(p);
  if (shape != xcclSuccess) return shape;
  // cuBLASLt's 128-element block scales are Hopper's (cuBLAS docs): other GPUs are refused here
  // rather than by a heuristic that may answer differently from one release to the next.
  if (p->scale_mode == xcclGemmScaleBlock128 && c->sm != 90) return xcclInvalidArgument;
  return Prepare(c, *p);
}

xcclResult_t Run(void* ctx, const xcclGemmProblem* p, const xcclGemmBand* band, void* stream) {
  auto* c = static_cast<Context*>(ctx);
  if (c == nullptr || p == nullptr || band == nullptr) return xcclInvalidArgument;
  if (CheckShape(p) != xcclSuccess) return xcclInvalidArgument;
  if (band->row_begin < 0 || band->row_end > p->m || band->row_begin > band->row_end)
    return xcclInvalidArgument;
  if (band->row_end == band->row_begin) return xcclSuccess;
  return Matmul(c, *p, band->row_begin, band->row_end, static_cast<cudaStream_t>(stream));
}

constexpr xcclGemmPlugin_v1_t CublasltPlugin(uint32_t abi_version) {
  return {abi_version,
          sizeof(xcclGemmPlugin_v1_t),
          "cublaslt",
          Init,
          Finalize,
          Supports,
          Run,
          /*run_tile_wait=*/nullptr};
}

}  // namespace

// Version 2 (block scales) for this xccl's loader, which takes it first; version 1, the same
// entries, for an older xccl, which never hands over block scales.
extern "C" __attribute__((visibility("default"))) const xcclGemmPlugin_v2_t xcclGemmPlugin_v2 =
    CublasltPlugin(XCCL_GEMM_PLUGIN_ABI_V2);
extern "C" __attribute__((visibility("default"))) const xcclGemmPlugin_v1_t xcclGemmPlugin_v1 =
    CublasltPlugin(XCCL_GEMM_PLUGIN_ABI_V1);
