// The reference GEMM plugin's GPU path (CUDA and HIP from one source): one thread per output
// element running reference_math.h's arithmetic, so a band computed here has the CPU path's
// bits. Plainly correct, not fast: for tests and as the GEMM the ag_gemm tests trust on GPUs.
#include "reference_math.h"

#if defined(XCCL_PLATFORM_HIP)
#include <hip/hip_runtime.h>
#define XREF_GPU(name) hip##name
using XrefStream = hipStream_t;
using XrefPointerAttributes = hipPointerAttribute_t;
#else
#include <cuda_runtime.h>
#define XREF_GPU(name) cuda##name
using XrefStream = cudaStream_t;
using XrefPointerAttributes = cudaPointerAttributes;
#endif

namespace {

constexpr int kTile = 16;  // 16 x 16 outputs per block

__global__ void ReferenceGemmKernel(xcclGemmProblem p, int64_t row_begin, int64_t row_end) {
  const int64_t i = row_begin + static_cast<int64_t>(blockIdx.y) * kTile + threadIdx.y;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kTile + threadIdx.x;
  if (i >= row_end || j >= p.n) return;
  static_cast<uint16_t*>(p.c)[i * p.ldc + j] = xccl_reference::OutputElement(p, i, j);
}

}  // namespace

// Device (or managed) memory: the kernel's to compute; host memory: the CPU loop's.
bool ReferenceIsDeviceMemory(const void* ptr) {
  XrefPointerAttributes attributes;
  if (XREF_GPU(PointerGetAttributes)(&attributes, ptr) != XREF_GPU(Success)) {
    (void)XREF_GPU(GetLastError)();  // unregistered host memory may report an error: clear it
    return false;
  }
#if defined(XCCL_PLATFORM_HIP) && HIP_VERSION < 60000000
  return attributes.memoryType == hipMemoryTypeDevice;
#elif defined(XCCL_PLATFORM_HIP)
  return attributes.type == hipMemoryTypeDevice || attributes.type == hipMemoryTypeManaged;
#else
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
#endif
}

xcclResult_t ReferenceRunOnDevice(const xcclGemmProblem* p, const xcclGemmBand* band,
                                  void* stream) {
  const int64_t rows = band->row_end - band->row_begin;
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>((p->n + kTile - 1) / kTile),
                  static_cast<unsigned>((rows + kTile - 1) / kTile));
  if (grid.y > 65535) return xcclInvalidArgument;  // over a million rows in one band
  ReferenceGemmKernel<<<grid, block, 0, static_cast<XrefStream>(stream)>>>(*p, band->row_begin,
                                                                           band->row_end);
  return XREF_GPU(GetLastError)() == XREF_GPU(Success) ? xcclSuccess : xcclUnhandledDeviceError;
}
