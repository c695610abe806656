// libxccl-gemm-cublaslt.so: the ag_gemm GEMM through cuBLASLt (NVIDIA), bf16/fp16 and fp8 e4m3
// with per-token A and per-channel B scales ("ptpc"), fp32 accumulate, bf16/fp16 out.
//
// Layout: the plugin ABI's problem is row-major, C[m][n] = A[m][k] . B[n][k]^T. cuBLASLt is
// column-major, and a row-major matrix is the column-major view of its transpose, so the plugin
// computes C^T (n x m, ld = ldc) = B (n x k, stored as the k x n column-major view of B's rows,
// ld = ldb, op T) times A^T (k x m, the column-major view of A's rows, ld = lda, op N). That is
// the "TN" form Hopper's fp8 kernels require. In those terms the per-channel B scale is a
// vector over cuBLASLt's rows (its matrix A) and the per-token A scale one over its columns
// (its matrix B): both set with CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F (DESIGN.md section
// 12 measured this path on an H200). A band of rows of C is a band of columns of C^T: the same
// call with A, a_scale and C offset and the column count cut.
//
// Algorithms are chosen by cuBLASLt's heuristic once per (rows, n, k, types) and cached in the
// plugin's context. Status: compiled against CUDA 13; not yet run on a GPU (docs/PERF.md).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <tuple>

#include "xccl_gemm.h"

namespace {

constexpr size_t kWorkspaceBytes = 32u << 20;

struct AlgoKey {
  int64_t rows, n, k;
  int in, out;
  bool operator<(const AlgoKey& o) const {
    return std::tie(rows, n, k, in, out) < std::tie(o.rows, o.n, o.k, o.in, o.out);
  }
};

struct Context {
  int device = 0;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  std::mutex mu;
  std::map<AlgoKey, cublasLtMatmulAlgo_t> algos;
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

xcclResult_t Init(void** ctx, int device) {
  if (ctx == nullptr) return xcclInvalidArgument;
  auto* c = new (std::nothrow) Context;
  if (c == nullptr) return xcclSystemError;
  c->device = device;
  if (cudaSetDevice(device) != cudaSuccess || cublasLtCreate(&c->handle) != CUBLAS_STATUS_SUCCESS ||
      cudaMalloc(&c->workspace, kWorkspaceBytes) != cudaSuccess) {
    if (c->handle != nullptr) cublasLtDestroy(c->handle);
    delete c;
    return xcclUnhandledDeviceError;
  }
  *ctx = c;
  return xcclSuccess;
}

xcclResult_t Finalize(void* ctx) {
  auto* c = static_cast<Context*>(ctx);
  if (c == nullptr) return xcclInvalidArgument;
  cudaSetDevice(c->device);
  cudaFree(c->workspace);
  cublasLtDestroy(c->handle);
  delete c;
  return xcclSuccess;
}

// Shape and type rules of cuBLASLt on Hopper: fp8 needs ptpc scales here (the only fp8 mode
// of the ABI), k and the leading dimensions multiples of 16 bytes' worth of elements.
xcclResult_t Supports(void* /*ctx*/, const xcclGemmProblem* p) {
  if (p == nullptr) return xcclInvalidArgument;
  cudaDataType_t a, c;
  if (!CudaType(p->a_type, &a) || p->a_type != p->b_type || !CudaType(p->c_type, &c) ||
      p->c_type == xcclFloat8e4m3)
    return xcclInvalidArgument;
  const bool fp8 = p->a_type == xcclFloat8e4m3;
  if (fp8 != (p->scale_mode == xcclGemmScalePtpc)) return xcclInvalidArgument;
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

xcclResult_t Run(void* ctx, const xcclGemmProblem* p, const xcclGemmBand* band, void* stream) {
  auto* c = static_cast<Context*>(ctx);
  if (c == nullptr || p == nullptr || band == nullptr) return xcclInvalidArgument;
  if (Supports(ctx, p) != xcclSuccess) return xcclInvalidArgument;
  if (band->row_begin < 0 || band->row_end > p->m || band->row_begin > band->row_end)
    return xcclInvalidArgument;
  const int64_t rows = band->row_end - band->row_begin;
  if (rows == 0) return xcclSuccess;
  const bool fp8 = p->a_type == xcclFloat8e4m3;
  cudaDataType_t in = CUDA_R_16BF, out = CUDA_R_16BF;
  CudaType(p->a_type, &in);
  CudaType(p->c_type, &out);
  const size_t in_size = fp8 ? 1 : 2;
  const char* a = static_cast<const char*>(p->a) + band->row_begin * p->lda * in_size;
  char* cptr = static_cast<char*>(p->c) + band->row_begin * p->ldc * 2;

  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  xcclResult_t result = xcclSuccess;
  auto check = [&](cublasStatus_t s) {
    if (result == xcclSuccess && s != CUBLAS_STATUS_SUCCESS) result = FromCublas(s);
    return result == xcclSuccess;
  };
  const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
  // cuBLASLt's A: our B viewed k x n (op T -> n x k); its B: our A band viewed k x rows.
  if (check(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F)) &&
      check(SetAttr(desc, CUBLASLT_MATMUL_DESC_TRANSA, transa)) &&
      check(SetAttr(desc, CUBLASLT_MATMUL_DESC_TRANSB, transb)) &&
      check(cublasLtMatrixLayoutCreate(&la, in, p->k, p->n, p->ldb)) &&
      check(cublasLtMatrixLayoutCreate(&lb, in, p->k, rows, p->lda)) &&
      check(cublasLtMatrixLayoutCreate(&lc, out, p->n, rows, p->ldc))) {
    if (fp8) {
      const int32_t outer = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      const float* b_scale = p->b_scale;                    // over cuBLASLt's rows (n)
      const float* a_scale = p->a_scale + band->row_begin;  // over its columns (the band)
      check(SetAttr(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, outer));
      check(SetAttr(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, outer));
      check(SetAttr(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, b_scale));
      check(SetAttr(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a_scale));
    }
  }
  cublasLtMatmulAlgo_t algo;
  bool have_algo = false;
  const AlgoKey key{rows, p->n, p->k, static_cast<int>(p->a_type), static_cast<int>(p->c_type)};
  if (result == xcclSuccess) {
    std::lock_guard<std::mutex> lock(c->mu);
    auto it = c->algos.find(key);
    if (it != c->algos.end()) {
      algo = it->second;
      have_algo = true;
    } else if (check(cublasLtMatmulPreferenceCreate(&pref)) &&
               check(cublasLtMatmulPreferenceSetAttribute(
                   pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &kWorkspaceBytes,
                   sizeof(kWorkspaceBytes)))) {
      cublasLtMatmulHeuristicResult_t heuristic;
      int found = 0;
      if (check(cublasLtMatmulAlgoGetHeuristic(c->handle, desc, la, lb, lc, lc, pref, 1, &heuristic,
                                               &found))) {
        if (found > 0) {
          algo = heuristic.algo;
          // No split-K: each output element's sum then runs over k in one order whatever the
          // row count, so a band's bytes equal the full run's (the ABI's promise; fused and
          // split ag_gemm must agree byte for byte).
          const int32_t one = 1;
          const uint32_t none = CUBLASLT_REDUCTION_SCHEME_NONE;
          cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one,
                                               sizeof(one));
          cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &none,
                                               sizeof(none));
          c->algos[key] = algo;
          have_algo = true;
        } else {
          result = xcclInvalidArgument;  // no kernel for this shape
        }
      }
    }
  }
  if (result == xcclSuccess && have_algo) {
    const float alpha = 1.0f, beta = 0.0f;
    check(cublasLtMatmul(c->handle, desc, &alpha, p->b, la, a, lb, &beta, cptr, lc, cptr, lc, &algo,
                         c->workspace, kWorkspaceBytes, static_cast<cudaStream_t>(stream)));
  }
  if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
  if (lc != nullptr) cublasLtMatrixLayoutDestroy(lc);
  if (lb != nullptr) cublasLtMatrixLayoutDestroy(lb);
  if (la != nullptr) cublasLtMatrixLayoutDestroy(la);
  if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
  return result;
}

}  // namespace

extern "C" __attribute__((visibility("default")))
const xcclGemmPlugin_v1_t xcclGemmPlugin_v1 = {XCCL_GEMM_PLUGIN_ABI_V1,
                                               sizeof(xcclGemmPlugin_v1_t),
                                               "cublaslt",
                                               Init,
                                               Finalize,
                                               Supports,
                                               Run,
                                               /*run_tile_wait=*/nullptr};
