// The reference GEMM plugin's GPU path (CUDA and HIP from one source): one thread per output
// element running reference_math.h's arithmetic, so a band computed here has the CPU path's
// bits. Plainly correct, not fast: for tests and as the GEMM the ag_gemm tests trust on GPUs.
// Every scale mode, block scales included, is OutputElement's: the kernels pass it the global
// row i, so a band's rows read their block scales at a_scale[kb * a_scale_ld + i] as one full
// run's do, and the problem (a_scale_ld too) travels to the device by value.
#include "platform/gpu.h"  // the CUDA/HIP name mapping and the device's global timer
#include "reference_math.h"

namespace {

constexpr int kTile = 16;  // 16 x 16 outputs per block

__global__ void ReferenceGemmKernel(xcclGemmProblem p, int64_t row_begin, int64_t row_end) {
  const int64_t i = row_begin + static_cast<int64_t>(blockIdx.y) * kTile + threadIdx.y;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kTile + threadIdx.x;
  if (i >= row_end || j >= p.n) return;
  static_cast<uint16_t*>(p.c)[i * p.ldc + j] = xccl_reference::OutputElement(p, i, j);
}

// The band of a row: equal bands of band_rows, the last one taking the rest.
__device__ inline int BandOf(int64_t row, int64_t row_begin, int64_t band_rows, int num_bands) {
  const int64_t band = (row - row_begin) / band_rows;
  return band < num_bands - 1 ? static_cast<int>(band) : num_bands - 1;
}

// As ReferenceGemmKernel, after one thread of the block has seen the flags of every band the
// tile's rows overlap reach the epoch (or given up at the deadline, leaving the tile unwritten).
__global__ void ReferenceGemmTileWaitKernel(xcclGemmProblem p, xcclGemmTileWait w) {
  __shared__ int ready;
  const int64_t tile_row = w.row_begin + static_cast<int64_t>(blockIdx.y) * kTile;
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    const int64_t last_row = min(tile_row + kTile, w.row_end) - 1;
    const int first = BandOf(tile_row, w.row_begin, w.band_rows, w.num_bands);
    const int last = BandOf(last_row, w.row_begin, w.band_rows, w.num_bands);
    const uint32_t epoch = *w.epoch;
    const unsigned long long start = GpuGlobalTimerNs();
    ready = 1;
    for (int b = first; b <= last && ready; ++b) {
      while (static_cast<int32_t>(w.flags[b] - epoch) < 0) {
        if (GpuGlobalTimerNs() - start > w.timeout_ns) {
          ready = 0;
          break;
        }
      }
    }
    __threadfence_system();  // the band's rows, written by copy engines, after its flag
  }
  __syncthreads();
  if (!ready) return;
  const int64_t i = tile_row + threadIdx.y;
  const int64_t j = static_cast<int64_t>(blockIdx.x) * kTile + threadIdx.x;
  if (i >= w.row_end || j >= p.n) return;
  static_cast<uint16_t*>(p.c)[i * p.ldc + j] = xccl_reference::OutputElement(p, i, j);
}

}  // namespace

// Loads both kernels now, in init. Under CUDA's lazy module loading a kernel's first launch
// loads its module and may wait for the whole device; where ranks share a GPU in one process,
// that wait can stall behind a peer's xccl kernel that waits for this rank's next launch.
xcclResult_t ReferenceLoadKernels(int device) {
  int count = 0;
  if (gpuGetDeviceCount(&count) != gpuSuccess || count == 0) {
    (void)gpuGetLastError();
    return xcclSuccess;  // no GPU here: only the CPU loop will run
  }
  int current = 0;
  if (gpuGetDevice(&current) != gpuSuccess || gpuSetDevice(device) != gpuSuccess)
    return xcclUnhandledDeviceError;
  gpuFuncAttributes_t attributes;
  const bool loaded =
      gpuFuncGetAttributes(&attributes, reinterpret_cast<const void*>(ReferenceGemmKernel)) ==
          gpuSuccess &&
      gpuFuncGetAttributes(
          &attributes, reinterpret_cast<const void*>(ReferenceGemmTileWaitKernel)) == gpuSuccess;
  const bool restored = gpuSetDevice(current) == gpuSuccess;  // the caller's device is theirs
  return loaded && restored ? xcclSuccess : xcclUnhandledDeviceError;
}

// Device (or managed) memory: the kernel's to compute; host memory: the CPU loop's.
bool ReferenceIsDeviceMemory(const void* ptr) {
  gpuPointerAttributes_t attributes;
  if (gpuPointerGetAttributes(&attributes, ptr) != gpuSuccess) {
    (void)gpuGetLastError();  // unregistered host memory may report an error: clear it
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
  ReferenceGemmKernel<<<grid, block, 0, static_cast<gpuStream_t>(stream)>>>(*p, band->row_begin,
                                                                            band->row_end);
  return gpuGetLastError() == gpuSuccess ? xcclSuccess : xcclUnhandledDeviceError;
}

xcclResult_t ReferenceRunTileWaitOnDevice(const xcclGemmProblem* p, const xcclGemmTileWait* w,
                                          void* stream) {
  const int64_t rows = w->row_end - w->row_begin;
  if (rows <= 0 || p->n == 0) return xcclSuccess;
  if (w->num_bands < 1 || w->band_rows < 1 || w->flags == nullptr || w->epoch == nullptr)
    return xcclInvalidArgument;
  // The operands run() checks: a missing one would fault the kernel (and the context with it)
  // instead of failing this call.
  const bool scaled = p->scale_mode != xcclGemmScaleNone;
  if ((p->k > 0 && (p->a == nullptr || p->b == nullptr)) ||
      (scaled && (p->a_scale == nullptr || p->b_scale == nullptr)))
    return xcclInvalidArgument;
  xcclGemmTileWait wait = *w;
  if (wait.timeout_ns == 0) wait.timeout_ns = 300ull * 1000 * 1000 * 1000;  // 300 s
  const dim3 block(kTile, kTile);
  const dim3 grid(static_cast<unsigned>((p->n + kTile - 1) / kTile),
                  static_cast<unsigned>((rows + kTile - 1) / kTile));
  if (grid.y > 65535) return xcclInvalidArgument;
  ReferenceGemmTileWaitKernel<<<grid, block, 0, static_cast<gpuStream_t>(stream)>>>(*p, wait);
  return gpuGetLastError() == gpuSuccess ? xcclSuccess : xcclUnhandledDeviceError;
}
