// The 16- and 8-bit floating formats as bits, to and from fp32, written once for host code and
// kernels (docs/ARCHITECTURE.md, "Reductions"): fp16 (IEEE binary16), bf16, fp8 e4m3 (OCP "FN":
// no infinity, 0x7f/0xff is NaN, largest 448) and fp8 e5m2 (IEEE-like, largest 57344). Widening
// is exact; narrowing rounds to nearest, ties to even, once. Past the largest finite value fp16
// and bf16 round to infinity (IEEE) and both fp8 formats saturate to their largest finite value
// (as CUDA's __nv_fp8 conversions do, __NV_SATFINITE); NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>

#include "base/host_device.h"

namespace xccl {

XCCL_HOST_DEVICE inline uint32_t FloatBits(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  return bits;
}

XCCL_HOST_DEVICE inline float BitsFloat(uint32_t bits) {
  float x;
  memcpy(&x, &bits, sizeof(x));
  return x;
}

// A format of 1 sign bit, kExp exponent bits (bias 2^(kExp-1) - 1) and kMan mantissa bits.
// kE4m3: the top code of each sign is NaN and there is no infinity (fp8 e4m3).
template <int kExp, int kMan, bool kE4m3 = false>
struct SmallFloat {
  static constexpr int kBias = (1 << (kExp - 1)) - 1;
  static constexpr int kMinExp = 1 - kBias;  // of the normal numbers
  static constexpr uint32_t kSign = 1u << (kExp + kMan);
  static constexpr uint32_t kExpAll = ((1u << kExp) - 1) << kMan;
  // The largest finite magnitude's code, and what NaN and infinity are.
  static constexpr uint32_t kMaxFinite = kE4m3 ? kExpAll | ((1u << kMan) - 2) : kExpAll - 1;
  static constexpr uint32_t kNan =
      kE4m3 ? kExpAll | ((1u << kMan) - 1) : kExpAll | (1u << (kMan - 1));
  static constexpr uint32_t kInf = kExpAll;  // unused for e4m3

  XCCL_HOST_DEVICE static float ToFloat(uint32_t code) {
    const uint32_t sign = (code & kSign) ? 0x80000000u : 0u;
    const uint32_t magnitude = code & (kSign - 1);
    const uint32_t exp = magnitude >> kMan, man = magnitude & ((1u << kMan) - 1);
    if (kE4m3 ? magnitude == (kNan & (kSign - 1)) : exp == (1u << kExp) - 1) {
      if (kE4m3 || man != 0) return BitsFloat(sign | 0x7fc00000u);
      return BitsFloat(sign | 0x7f800000u);
    }
    if (exp == 0) {  // subnormal: man * 2^(kMinExp - kMan), exact in fp32
      const float step = BitsFloat(static_cast<uint32_t>(kMinExp - kMan + 127) << 23);
      return BitsFloat(sign | FloatBits(static_cast<float>(man) * step));
    }
    return BitsFloat(sign | (exp - kBias + 127) << 23 | man << (23 - kMan));
  }

  XCCL_HOST_DEVICE static uint32_t FromFloat(float x) {
    const uint32_t bits = FloatBits(x);
    const uint32_t sign = (bits >> 31) ? kSign : 0u;
    const uint32_t abs = bits & 0x7fffffffu;
    if (abs > 0x7f800000u) return sign | kNan;
    if (abs == 0x7f800000u) return sign | (kE4m3 || kSaturates() ? kMaxFinite : kInf);
    const int exp = static_cast<int>(abs >> 23) - 127;
    if (abs < 0x00800000u) return sign;  // fp32 subnormals lie far below every small subnormal
    const uint32_t significand = (abs & 0x7fffffu) | 0x800000u;  // 24 bits, the leading 1 too
    // Normal targets keep kMan bits after the leading 1; subnormal ones count in steps of
    // 2^(kMinExp - kMan), so more bits go.
    const int shift = 23 - kMan + (exp < kMinExp ? kMinExp - exp : 0);
    if (shift > 25) return sign;  // below half the smallest subnormal
    const uint32_t kept = significand >> shift;
    const uint32_t rest = significand & ((1u << shift) - 1), half = 1u << (shift - 1);
    const uint32_t rounded = kept + ((rest > half || (rest == half && (kept & 1))) ? 1u : 0u);
    // Normal: the leading 1 (2^kMan) carries into the exponent field; a carry out of the mantissa
    // moves on to the next exponent by itself.
    const uint32_t code =
        exp < kMinExp ? rounded : (static_cast<uint32_t>(exp + kBias - 1) << kMan) + rounded;
    if (code > kMaxFinite) return sign | (kSaturates() ? kMaxFinite : kInf);
    return sign | code;
  }

  // fp8 saturates at its largest finite value; fp16 rounds to infinity.
  XCCL_HOST_DEVICE static constexpr bool kSaturates() { return kExp + kMan == 7; }
};

using Fp16 = SmallFloat<5, 10>;
using Fp8E4m3 = SmallFloat<4, 3, /*kE4m3=*/true>;
using Fp8E5m2 = SmallFloat<5, 2>;

// bf16 is fp32's top half: the same exponent range, so rounding is one add on the bits.
struct Bf16 {
  XCCL_HOST_DEVICE static float ToFloat(uint32_t code) { return BitsFloat(code << 16); }
  XCCL_HOST_DEVICE static uint32_t FromFloat(float x) {
    const uint32_t bits = FloatBits(x);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (bits >> 16) | 0x40u;  // quiet NaN
    return (bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16;
  }
};

}  // namespace xccl
