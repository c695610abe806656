// The cublaslt plugin's shape rules and its cuBLASLt descriptors: how xccl's row-major problem
// and its scale modes map onto one column-major cuBLASLt call. Separate from what runs them.
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
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>

#include "cublaslt_internal.h"
#include "xccl_gemm.h"

// The block-scale modes (CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F, _BLK128x128_32F) came with
// cuBLAS 12.9 (an NVIDIA maintainer, NVIDIA/CUDALibrarySamples issue 310); built against an older
// cuBLASLt the plugin refuses block scales at supports().
#if CUBLAS_VER_MAJOR > 12 || (CUBLAS_VER_MAJOR == 12 && CUBLAS_VER_MINOR >= 9)
#define XCCL_CUBLASLT_BLOCK_SCALES 1
#else
#define XCCL_CUBLASLT_BLOCK_SCALES 0
#endif

namespace xccl_cublaslt {
namespace {

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

// XCCL_GEMM_CUBLASLT_SM_COUNT=n asks cuBLASLt for kernels sized to n SMs (its SM count target),
// leaving the rest to work that runs beside the GEMM (a reduction of a fused op); 0 or unset: the
// device's count.
int32_t SmCountTarget() {
  static const int32_t target = [] {
    const char* v = getenv("XCCL_GEMM_CUBLASLT_SM_COUNT");
    const long n = v != nullptr ? strtol(v, nullptr, 10) : 0;
    return static_cast<int32_t>(n > 0 && n < 100000 ? n : 0);
  }();
  return target;
}

template <typename T>
cublasStatus_t SetAttr(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                       const T& value) {
  return cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value));
}

}  // namespace

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

CallScales DirectScales(const xcclGemmProblem& p, int64_t row_begin) {
  return {p.a_scale == nullptr ? nullptr : p.a_scale + row_begin, p.b_scale};
}

Descriptors::Descriptors(const xcclGemmProblem& p, int64_t row_begin, int64_t row_end,
                         CallScales scales) {
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
      (SmCountTarget() == 0 ||
       Check(SetAttr(desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, SmCountTarget()))) &&
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

Descriptors::~Descriptors() {
  if (lc != nullptr) cublasLtMatrixLayoutDestroy(lc);
  if (lb != nullptr) cublasLtMatrixLayoutDestroy(lb);
  if (la != nullptr) cublasLtMatrixLayoutDestroy(la);
  if (desc != nullptr) cublasLtMatmulDescDestroy(desc);
}

bool Descriptors::Check(cublasStatus_t s) {
  if (result == xcclSuccess && s != CUBLAS_STATUS_SUCCESS) result = FromCublas(s);
  return result == xcclSuccess;
}

}  // namespace xccl_cublaslt
