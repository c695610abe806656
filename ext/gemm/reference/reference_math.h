// The reference GEMM's arithmetic, shared by its CPU loop and its GPU kernel so that both give
// the same bits: bit-level decoders, round-to-nearest-even encoders, and one output element as
// an fp32 sum in k order with every product and sum rounded on its own (no fused multiply-add:
// the CPU file is built with -ffp-contract=off, the kernel uses the _rn intrinsics).
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "xccl.h"
#include "xccl_gemm.h"

#if defined(__HIPCC__)
#include <hip/hip_runtime.h>  // __host__, __device__ and the _rn intrinsics
#endif

#if defined(__CUDACC__) || defined(__HIPCC__)
#define XREF_HD __host__ __device__
#else
#define XREF_HD
#endif

namespace xccl_reference {

XREF_HD inline float Mul(float a, float b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

XREF_HD inline float Add(float a, float b) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

XREF_HD inline float FromBits(uint32_t bits) {
  float f;
  memcpy(&f, &bits, sizeof(f));
  return f;
}

XREF_HD inline uint32_t ToBits(float f) {
  uint32_t bits;
  memcpy(&bits, &f, sizeof(bits));
  return bits;
}

// bf16 is the top half of an fp32: decoding is a shift, exact for every code.
XREF_HD inline float DecodeBf16(uint16_t h) { return FromBits(static_cast<uint32_t>(h) << 16); }

// fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits; every code is exact in fp32.
XREF_HD inline float DecodeFp16(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  float mag;
  if (exp == 0) {
    mag = ldexpf(static_cast<float>(man), -24);  // subnormal: man * 2^(1-15-10)
  } else if (exp == 0x1F) {
    mag = man == 0 ? INFINITY : NAN;
  } else {
    mag = ldexpf(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  }
  return sign ? -mag : mag;
}

// OCP fp8 e4m3 ("fn"): 1 sign, 4 exponent (bias 7), 3 mantissa bits, no infinities; only
// S.1111.111 is NaN, so S.1111.110 = 448 is the largest finite value.
XREF_HD inline float DecodeE4m3(uint8_t v) {
  const uint32_t sign = (v >> 7) & 1u;
  const uint32_t exp = (v >> 3) & 0xFu;
  const uint32_t man = v & 0x7u;
  float mag;
  if (exp == 0xF && man == 0x7) {
    mag = NAN;
  } else if (exp == 0) {
    mag = ldexpf(static_cast<float>(man), -9);  // subnormal: man/8 * 2^(1-7)
  } else {
    mag = ldexpf(static_cast<float>(man | 0x8u), static_cast<int>(exp) - 10);
  }
  return sign ? -mag : mag;
}

// fp32 -> bf16, round to nearest, ties to even; NaN stays NaN (quiet), overflow becomes inf
// through the same carry that rounds.
XREF_HD inline uint16_t EncodeBf16(float f) {
  const uint32_t x = ToBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  const uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7FFFu + lsb) >> 16);
}

// fp32 -> fp16, round to nearest, ties to even, with fp16 subnormals and overflow to inf.
XREF_HD inline uint16_t EncodeFp16(float f) {
  const uint32_t x = ToBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return sign | 0x7E00u;  // NaN
  // 65520 is halfway between 65504 (largest finite, odd mantissa) and 2^16: ties go to inf.
  if (ax >= 0x477FF000u) return sign | 0x7C00u;
  if (ax < 0x38800000u) {
    // Below 2^-14: a multiple of 2^-24. Scaling by 2^24 is exact, and nearbyint rounds to
    // nearest-even in the default rounding mode; 1024 lands on the smallest normal's code.
    const float units = nearbyintf(fabsf(f) * 16777216.0f);
    return sign | static_cast<uint16_t>(units);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits; a carry
  // out of the mantissa correctly bumps the exponent.
  const uint32_t v = ax - (112u << 23);
  const uint32_t lsb = (v >> 13) & 1u;
  return sign | static_cast<uint16_t>((v + 0xFFFu + lsb) >> 13);
}

XREF_HD inline float Load(const void* base, xcclDataType_t type, int64_t index) {
  switch (type) {
    case xcclBfloat16:
      return DecodeBf16(static_cast<const uint16_t*>(base)[index]);
    case xcclFloat16:
      return DecodeFp16(static_cast<const uint16_t*>(base)[index]);
    case xcclFloat8e4m3:
      return DecodeE4m3(static_cast<const uint8_t*>(base)[index]);
    default:
      return NAN;  // unreachable: supports() admits only the three above
  }
}

// The fp32 sum of A[i][l] * B[j][l] over l in [begin, end), in l order.
XREF_HD inline float DotRange(const xcclGemmProblem& p, int64_t i, int64_t j, int64_t begin,
                              int64_t end) {
  float acc = 0.0f;
  for (int64_t l = begin; l < end; ++l)
    acc = Add(acc, Mul(Load(p.a, p.a_type, i * p.lda + l), Load(p.b, p.b_type, j * p.ldb + l)));
  return acc;
}

// Block scales (xccl_gemm.h): per 128-wide K block the partial sum times row i's and column
// j's scales, summed over the blocks in order.
XREF_HD inline float BlockScaledElement(const xcclGemmProblem& p, int64_t i, int64_t j) {
  const int64_t blocks = (p.k + 127) / 128;
  float acc = 0.0f;
  for (int64_t kb = 0; kb < blocks; ++kb) {
    const int64_t end = p.k < 128 * kb + 128 ? p.k : 128 * kb + 128;
    const float part = DotRange(p, i, j, 128 * kb, end);
    acc = Add(acc,
              Mul(Mul(part, p.a_scale[kb * p.a_scale_ld + i]), p.b_scale[(j / 128) * blocks + kb]));
  }
  return acc;
}

// C[i][j] of the problem, as stored (bf16 or fp16 bits).
XREF_HD inline uint16_t OutputElement(const xcclGemmProblem& p, int64_t i, int64_t j) {
  // fp32 accumulation in k order: the same sum whatever the band, so bands are byte-identical
  // to one full run.
  float acc;
  if (p.scale_mode == xcclGemmScaleBlock128) {
    acc = BlockScaledElement(p, i, j);
  } else {
    acc = DotRange(p, i, j, 0, p.k);
    if (p.scale_mode == xcclGemmScalePtpc) acc = Mul(Mul(acc, p.a_scale[i]), p.b_scale[j]);
  }
  return p.c_type == xcclBfloat16 ? EncodeBf16(acc) : EncodeFp16(acc);
}

}  // namespace xccl_reference
