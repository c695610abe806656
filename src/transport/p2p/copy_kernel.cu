#include <algorithm>

#include "transport/p2p/copy_kernel.h"
#include "transport/p2p/device_copy.cuh"

namespace xccl {

namespace {

constexpr int kCopyThreads = 256;
// Enough blocks to keep PCIe or HBM busy, few enough to leave SMs to the peers' kernels.
constexpr size_t kMaxCopyBlocks = 32;

__global__ void __launch_bounds__(kCopyThreads)
    CopyKernel(char* dst, const char* src, size_t bytes) {
  // The source may have been written by another agent (a peer's copy, the proxy) since this SM
  // last read it.
  CopyBytes<true>(dst, src, bytes, blockIdx.x * blockDim.x + threadIdx.x,
                  static_cast<size_t>(gridDim.x) * blockDim.x);
}

}  // namespace

gpuError_t PreloadCopyKernel() {
  gpuFuncAttributes_t attributes;
  return gpuFuncGetAttributes(&attributes, reinterpret_cast<const void*>(&CopyKernel));
}

gpuError_t LaunchCopyKernel(void* dst, const void* src, size_t bytes, gpuStream_t stream) {
  if (bytes == 0 || dst == src) return gpuSuccess;
  // Four 16-byte vectors per thread per pass.
  const size_t per_block = static_cast<size_t>(kCopyThreads) * 64;
  const size_t blocks = std::min(kMaxCopyBlocks, (bytes + per_block - 1) / per_block);
  CopyKernel<<<static_cast<unsigned>(blocks), kCopyThreads, 0, stream>>>(
      static_cast<char*>(dst), static_cast<const char*>(src), bytes);
  return gpuGetLastError();
}

}  // namespace xccl
