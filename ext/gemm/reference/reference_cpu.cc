// The reference GEMM plugin's CPU path: one scalar loop per output element, bit-level decoders
// and round-to-nearest-even encoders written out in full, so the tests can trust it. Speed is
// not a goal; being plainly correct is.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <new>

#include "xccl.h"
#include "xccl_gemm.h"

namespace {

float FromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint32_t ToBits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

// bf16 is the top half of an fp32: decoding is a shift, exact for every code.
float DecodeBf16(uint16_t h) { return FromBits(static_cast<uint32_t>(h) << 16); }

// fp16: 1 sign, 5 exponent (bias 15), 10 mantissa bits; every code is exact in fp32.
float DecodeFp16(uint16_t h) {
  const uint32_t sign = (h >> 15) & 1u;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  const uint32_t man = h & 0x3FFu;
  float mag;
  if (exp == 0) {
    mag = std::ldexp(static_cast<float>(man), -24);  // subnormal: man * 2^(1-15-10)
  } else if (exp == 0x1F) {
    mag = man == 0 ? INFINITY : NAN;
  } else {
    mag = std::ldexp(static_cast<float>(man | 0x400u), static_cast<int>(exp) - 25);
  }
  return sign ? -mag : mag;
}

// OCP fp8 e4m3 ("fn"): 1 sign, 4 exponent (bias 7), 3 mantissa bits, no infinities; only
// S.1111.111 is NaN, so S.1111.110 = 448 is the largest finite value.
float DecodeE4m3(uint8_t v) {
  const uint32_t sign = (v >> 7) & 1u;
  const uint32_t exp = (v >> 3) & 0xFu;
  const uint32_t man = v & 0x7u;
  float mag;
  if (exp == 0xF && man == 0x7) {
    mag = NAN;
  } else if (exp == 0) {
    mag = std::ldexp(static_cast<float>(man), -9);  // subnormal: man/8 * 2^(1-7)
  } else {
    mag = std::ldexp(static_cast<float>(man | 0x8u), static_cast<int>(exp) - 10);
  }
  return sign ? -mag : mag;
}

// fp32 -> bf16, round to nearest, ties to even; NaN stays NaN (quiet), overflow becomes inf
// through the same carry that rounds.
uint16_t EncodeBf16(float f) {
  const uint32_t x = ToBits(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((x >> 16) | 0x0040u);
  const uint32_t lsb = (x >> 16) & 1u;
  return static_cast<uint16_t>((x + 0x7FFFu + lsb) >> 16);
}

// fp32 -> fp16, round to nearest, ties to even, with fp16 subnormals and overflow to inf.
uint16_t EncodeFp16(float f) {
  const uint32_t x = ToBits(f);
  const uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000u);
  const uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return sign | 0x7E00u;  // NaN
  // 65520 is halfway between 65504 (largest finite, odd mantissa) and 2^16: ties go to inf.
  if (ax >= 0x477FF000u) return sign | 0x7C00u;
  if (ax < 0x38800000u) {
    // Below 2^-14: a multiple of 2^-24. Scaling by 2^24 is exact, and nearbyint rounds to
    // nearest-even in the default rounding mode; 1024 lands on the smallest normal's code.
    const float units = std::nearbyint(std::fabs(f) * 16777216.0f);
    return sign | static_cast<uint16_t>(units);
  }
  // Normal: rebias the exponent (127 -> 15) and round the 23-bit mantissa to 10 bits; a carry
  // out of the mantissa correctly bumps the exponent.
  const uint32_t v = ax - (112u << 23);
  const uint32_t lsb = (v >> 13) & 1u;
  return sign | static_cast<uint16_t>((v + 0xFFFu + lsb) >> 13);
}

float Load(const void* base, xcclDataType_t type, int64_t index) {
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

struct Ctx {
  int device;
};

xcclResult_t Init(void** ctx, int device) {
  if (ctx == nullptr) return xcclInvalidArgument;
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
  if (p->scale_mode != xcclGemmScaleNone && p->scale_mode != xcclGemmScalePtpc)
    return xcclInvalidArgument;
  if (p->m < 0 || p->n < 0 || p->k < 0) return xcclInvalidArgument;
  if (p->lda < p->k || p->ldb < p->k || p->ldc < p->n) return xcclInvalidArgument;
  return xcclSuccess;
}

xcclResult_t Run(void* ctx, const xcclGemmProblem* p, const xcclGemmBand* band, void* stream) {
  (void)stream;  // host memory, computed before returning
  if (band == nullptr) return xcclInvalidArgument;
  const xcclResult_t ok = Supports(ctx, p);
  if (ok != xcclSuccess) return ok;
  if (band->row_begin < 0 || band->row_begin > band->row_end || band->row_end > p->m)
    return xcclInvalidArgument;
  if (band->row_begin == band->row_end || p->n == 0) return xcclSuccess;
  const bool ptpc = p->scale_mode == xcclGemmScalePtpc;
  if (p->c == nullptr || (p->k > 0 && (p->a == nullptr || p->b == nullptr)) ||
      (ptpc && (p->a_scale == nullptr || p->b_scale == nullptr)))
    return xcclInvalidArgument;
  for (int64_t i = band->row_begin; i < band->row_end; ++i) {
    for (int64_t j = 0; j < p->n; ++j) {
      // fp32 accumulation in k order: the same sum whatever the band, so bands are
      // byte-identical to one full run.
      float acc = 0.0f;
      for (int64_t l = 0; l < p->k; ++l)
        acc += Load(p->a, p->a_type, i * p->lda + l) * Load(p->b, p->b_type, j * p->ldb + l);
      if (ptpc) acc = acc * p->a_scale[i] * p->b_scale[j];
      const uint16_t out = p->c_type == xcclBfloat16 ? EncodeBf16(acc) : EncodeFp16(acc);
      static_cast<uint16_t*>(p->c)[i * p->ldc + j] = out;
    }
  }
  return xcclSuccess;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const xcclGemmPlugin_v1_t xcclGemmPlugin_v1 = {
    XCCL_GEMM_PLUGIN_ABI_V1,
    sizeof(xcclGemmPlugin_v1_t),
    "reference",
    Init,
    Finalize,
    Supports,
    Run,
    nullptr,  // run_tile_wait: the host plugin lets the op wait per band
};
