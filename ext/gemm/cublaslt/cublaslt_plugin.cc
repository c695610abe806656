// libxccl-gemm-cublaslt.so: the ag_gemm GEMM through cuBLASLt (NVIDIA), bf16/fp16 and fp8 e4m3
// with per-token A and per-channel B scales ("ptpc") or DeepSeek-V3 block scales (ABI version
// 2's xcclGemmScaleBlock128), fp32 accumulate, bf16/fp16 out.
//
// This file holds the plugin's ABI entries and its context's life. supports() chooses the
// shape's algorithm (algo_choice.cc) and runs it once on scratch memory (warm_up_operands.cc),
// loading its kernel. Every allocation, upload, timing and free is in init, supports and
// finalize, which may wait for the whole device; run() only enqueues (xccl_gemm.h,
// "Device-synchronising calls"). The layout of a call is in descriptors.cc, block scales' copies
// in block_scales.cc.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <mutex>
#include <new>

#include "algo_key.h"
#include "cublaslt_internal.h"
#include "xccl_gemm.h"

namespace xccl_cublaslt {
namespace {

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

xcclResult_t Matmul(Context* c, const xcclGemmProblem& p, int64_t row_begin, int64_t row_end,
                    cudaStream_t stream) {
  if (p.scale_mode == xcclGemmScaleBlock128) return BlockMatmul(c, p, row_begin, row_end, stream);
  return Launch(c, p, row_begin, row_end, DirectScales(p, row_begin), stream);
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
}  // namespace xccl_cublaslt

// Version 2 (block scales) for this xccl's loader, which takes it first; version 1, the same
// entries, for an older xccl, which never hands over block scales.
extern "C" __attribute__((visibility("default"))) const xcclGemmPlugin_v2_t xcclGemmPlugin_v2 =
    xccl_cublaslt::CublasltPlugin(XCCL_GEMM_PLUGIN_ABI_V2);
extern "C" __attribute__((visibility("default"))) const xcclGemmPlugin_v1_t xcclGemmPlugin_v1 =
    xccl_cublaslt::CublasltPlugin(XCCL_GEMM_PLUGIN_ABI_V1);
