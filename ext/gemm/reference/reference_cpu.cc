// The reference GEMM plugin: one scalar loop per output element (reference_math.h holds the
// arithmetic, written out in full so the tests can trust it). On GPU builds, problems in device
// memory go to the same arithmetic as a kernel (reference_gpu.cu), bit for bit. Speed is not a
// goal; being plainly correct is.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>

#include "reference_math.h"
#include "xccl.h"
#include "xccl_gemm.h"

#if defined(XCCL_REFERENCE_GPU)
// reference_gpu.cu: the same arithmetic as a kernel, for problems in device memory.
xcclResult_t ReferenceLoadKernels(int device);
bool ReferenceIsDeviceMemory(const void* ptr);
xcclResult_t ReferenceRunOnDevice(const xcclGemmProblem* p, const xcclGemmBand* band, void* stream);
xcclResult_t ReferenceRunTileWaitOnDevice(const xcclGemmProblem* p, const xcclGemmTileWait* w,
                                          void* stream);
#endif

namespace {

using xccl_reference::OutputElement;

struct Ctx {
  int device;
};

xcclResult_t Init(void** ctx, int device) {
  if (ctx == nullptr) return xcclInvalidArgument;
#if defined(XCCL_REFERENCE_GPU)
  if (device >= 0 && ReferenceLoadKernels(device) != xcclSuccess) return xcclUnhandledDeviceError;
#endif
  Ctx* c = new (std::nothrow) Ctx{device};
  if (c == nullptr) return xcclSystemError;
  *ctx = c;
  return xcclSuccess;
}

xcclResult_t Finalize(void* ctx) {
  delete static_cast<Ctx*>(ctx);
  return xcclSuccess;
}

bool IsInput(xcclDataType_t t) {
  return t == xcclBfloat16 || t == xcclFloat16 || t == xcclFloat8e4m3;
}

xcclResult_t Supports(void* ctx, const xcclGemmProblem* p) {
  if (ctx == nullptr || p == nullptr) return xcclInvalidArgument;
  if (!IsInput(p->a_type) || p->b_type != p->a_type) return xcclInvalidArgument;
  if (p->c_type != xcclBfloat16 && p->c_type != xcclFloat16) return xcclInvalidArgument;
  if (p->scale_mode != xcclGemmScaleNone && p->scale_mode != xcclGemmScalePtpc &&
      p->scale_mode != xcclGemmScaleBlock128)
    return xcclInvalidArgument;
  if (p->m < 0 || p->n < 0 || p->k < 0) return xcclInvalidArgument;
  // Block scales come with fp8 operands, and A's scale tile must hold every row.
  if (p->scale_mode == xcclGemmScaleBlock128 &&
      (p->a_type != xcclFloat8e4m3 || p->a_scale_ld < p->m))
    return xcclInvalidArgument;
  if (p->lda < p->k || p->ldb < p->k || p->ldc < p->n) return xcclInvalidArgument;
  return xcclSuccess;
}

xcclResult_t Run(void* ctx, const xcclGemmProblem* p, const xcclGemmBand* band, void* stream) {
  (void)stream;  // host memory: computed before returning
  if (band == nullptr) return xcclInvalidArgument;
  const xcclResult_t ok = Supports(ctx, p);
  if (ok != xcclSuccess) return ok;
  if (band->row_begin < 0 || band->row_begin > band->row_end || band->row_end > p->m)
    return xcclInvalidArgument;
  if (band->row_begin == band->row_end || p->n == 0) return xcclSuccess;
  const bool scaled = p->scale_mode != xcclGemmScaleNone;
  if (p->c == nullptr || (p->k > 0 && (p->a == nullptr || p->b == nullptr)) ||
      (scaled && (p->a_scale == nullptr || p->b_scale == nullptr)))
    return xcclInvalidArgument;
#if defined(XCCL_REFERENCE_GPU)
  if (ReferenceIsDeviceMemory(p->c)) return ReferenceRunOnDevice(p, band, stream);
#endif
  for (int64_t i = band->row_begin; i < band->row_end; ++i) {
    for (int64_t j = 0; j < p->n; ++j)
      static_cast<uint16_t*>(p->c)[i * p->ldc + j] = OutputElement(*p, i, j);
  }
  return xcclSuccess;
}

#if defined(XCCL_REFERENCE_GPU)
// The tile-wait entry (GPU builds, operands in device memory only): rows
// [row_begin, row_end) in one launch whose tiles wait for their bands' flags.
xcclResult_t RunTileWait(void* ctx, const xcclGemmProblem* p, const xcclGemmTileWait* w,
                         void* stream) {
  if (w == nullptr) return xcclInvalidArgument;
  const xcclResult_t ok = Supports(ctx, p);
  if (ok != xcclSuccess) return ok;
  if (w->row_begin < 0 || w->row_begin > w->row_end || w->row_end > p->m)
    return xcclInvalidArgument;
  if (p->c == nullptr || !ReferenceIsDeviceMemory(p->c)) return xcclInvalidArgument;
  return ReferenceRunTileWaitOnDevice(p, w, stream);
}
#endif

}  // namespace

#if defined(XCCL_REFERENCE_GPU)
#define XCCL_REFERENCE_TILE_WAIT RunTileWait
#else
#define XCCL_REFERENCE_TILE_WAIT nullptr  // the host build lets the op wait per band
#endif

// The same entries under each version's symbol.
static xcclGemmPlugin_v1_t ReferencePlugin(uint32_t abi_version) {
  return {abi_version, sizeof(xcclGemmPlugin_v1_t), "reference", Init, Finalize, Supports,
          Run,         XCCL_REFERENCE_TILE_WAIT};
}

// Version 2 (block scales) for this xccl, and version 1 for builds that know only that one.
extern "C" __attribute__((visibility("default"))) const xcclGemmPlugin_v2_t xcclGemmPlugin_v2 =
    ReferencePlugin(XCCL_GEMM_PLUGIN_ABI_V2);
extern "C" __attribute__((visibility("default"))) const xcclGemmPlugin_v1_t xcclGemmPlugin_v1 =
    ReferencePlugin(XCCL_GEMM_PLUGIN_ABI_V1);
