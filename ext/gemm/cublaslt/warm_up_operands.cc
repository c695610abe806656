// The cublaslt plugin's scratch operands (WarmUpOperands): device memory that supports() loads
// and times kernels on, filled with zeros or with data of a realistic power draw.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cublaslt_internal.h"
#include "xccl_gemm.h"

namespace xccl_cublaslt {
namespace {

// Element codes of random sign and mantissa: e4m3 bytes 0x38-0x3F / 0xB8-0xBF (1 to 1.875),
// 16-bit halves with the exponent bits fixed (bf16 about 0.5 to 2, fp16 1.75 to 2). xorshift64:
// quick, and any generator will do for power draw. `bytes` is even for 16-bit types.
std::vector<uint8_t> RandomCodes(size_t bytes, bool fp8) {
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
bool Upload(const std::vector<T>& host, void* device, cudaStream_t stream) {
  return cudaMemcpyAsync(device, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice,
                         stream) == cudaSuccess &&
         cudaStreamSynchronize(stream) == cudaSuccess;  // before `host` goes
}

// `bytes` of random element codes at `device`: one 1 MiB tile made on the host, then copied
// over the rest on the device (a whole A of 32768 x 7168 bf16 would be 470 MB of host memory
// and time, and a repeat every MiB makes no difference to power draw).
bool FillRandom(char* device, size_t bytes, bool fp8, cudaStream_t stream) {
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

}  // namespace

WarmUpOperands::~WarmUpOperands() {
  if (scratch_ != nullptr) cudaFree(scratch_);
}

bool WarmUpOperands::Make(const xcclGemmProblem& p, int64_t rows, cudaStream_t stream,
                          xcclGemmProblem* warm, Fill fill) {
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
  return fill == kZeros || (FillRandom(scratch_, a_bytes + b_bytes, fp8, stream) &&
                            Upload(std::vector<float>(a_scales + b_scales, 1.0f), scales, stream));
}

}  // namespace xccl_cublaslt
