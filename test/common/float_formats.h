// Values of the GEMM's number formats, decoded by their formulas in double precision: written
// independently of the reference plugin, so that tests check it rather than repeat it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl_test {

inline double E4m3Value(uint8_t v) {
  const int s = v >> 7, e = (v >> 3) & 15, m = v & 7;
  if (e == 15 && m == 7) return NAN;
  const double mag = e == 0 ? (m / 8.0) * std::pow(2.0, -6) : (1 + m / 8.0) * std::pow(2.0, e - 7);
  return s ? -mag : mag;
}

// IEEE-style binary formats: `ebits` exponent bits, `mbits` mantissa bits, with inf and NaN.
inline double IeeeValue(uint32_t code, int ebits, int mbits) {
  const int s = (code >> (ebits + mbits)) & 1;
  const int e = (code >> mbits) & ((1 << ebits) - 1);
  const uint32_t m = code & ((1u << mbits) - 1);
  const int bias = (1 << (ebits - 1)) - 1;
  double mag;
  if (e == (1 << ebits) - 1)
    mag = m == 0 ? INFINITY : NAN;
  else if (e == 0)
    mag = std::ldexp(static_cast<double>(m), 1 - bias - mbits);
  else
    mag = std::ldexp(static_cast<double>(m + (1u << mbits)), e - bias - mbits);
  return s ? -mag : mag;
}
inline double Bf16Value(uint16_t c) { return IeeeValue(c, 8, 7); }
inline double Fp16Value(uint16_t c) { return IeeeValue(c, 5, 10); }

inline double Value(xcclDataType_t t, const void* base, int64_t i) {
  if (t == xcclFloat8e4m3) return E4m3Value(static_cast<const uint8_t*>(base)[i]);
  const uint16_t c = static_cast<const uint16_t*>(base)[i];
  return t == xcclBfloat16 ? Bf16Value(c) : Fp16Value(c);
}

// ---- Random operands for GEMM tests ----

inline size_t TypeSize(xcclDataType_t t) { return t == xcclFloat8e4m3 ? 1 : 2; }

inline uint16_t RandomHalfCode(std::mt19937_64& rng, xcclDataType_t t) {
  const uint32_t sign = rng() & 1;
  if (t == xcclBfloat16) {  // exponent 120..128: |v| in [2^-7, 2^2)
    return static_cast<uint16_t>(sign << 15 | (120 + rng() % 9) << 7 | (rng() & 0x7F));
  }
  return static_cast<uint16_t>(sign << 15 | (10 + rng() % 7) << 10 | (rng() & 0x3FF));
}

inline uint8_t RandomE4m3Code(std::mt19937_64& rng) {  // exponent 3..9: |v| in [2^-4, 2^3)
  return static_cast<uint8_t>((rng() & 1) << 7 | (3 + rng() % 7) << 3 | (rng() & 7));
}

inline void FillCodes(std::vector<uint8_t>* out, size_t count, xcclDataType_t t,
                      std::mt19937_64& rng) {
  out->resize(count * TypeSize(t));
  for (size_t i = 0; i < count; ++i) {
    if (t == xcclFloat8e4m3) {
      (*out)[i] = RandomE4m3Code(rng);
    } else {
      const uint16_t c = RandomHalfCode(rng, t);
      memcpy(out->data() + 2 * i, &c, 2);
    }
  }
}

// One rank's GEMM operands: A [m][k], B [n][k] of random codes, and fp32 scales in
// [0.25, 2) for fp8 (empty otherwise). Whoever seeds `rng` the same gets the same operands.
struct GemmOperands {
  std::vector<uint8_t> a, b;
  std::vector<float> a_scale, b_scale;
  // Block scales (0: ptpc or none): A's [k_blocks][m], B's [ceil(n/128)][k_blocks].
  int64_t k_blocks = 0;
};

inline GemmOperands RandomGemmOperands(int64_t m, int64_t n, int64_t k, xcclDataType_t t,
                                       std::mt19937_64& rng) {
  GemmOperands o;
  FillCodes(&o.a, m * k, t, rng);
  FillCodes(&o.b, n * k, t, rng);
  if (t == xcclFloat8e4m3) {
    std::uniform_real_distribution<float> scale(0.25f, 2.0f);
    for (int64_t i = 0; i < m; ++i) o.a_scale.push_back(scale(rng));
    for (int64_t j = 0; j < n; ++j) o.b_scale.push_back(scale(rng));
  }
  return o;
}

// fp8 operands with block scales (DeepSeek-V3's format, xccl_gemm.h): A [m][k] and B [n][k]
// e4m3 codes, A scales [ceil(k/128)][m] (m contiguous), B scales [ceil(n/128)][ceil(k/128)],
// every one drawn on its own from [0.25, 4) so that a scale read from the wrong block shows.
inline GemmOperands RandomBlockscaleOperands(int64_t m, int64_t n, int64_t k,
                                             std::mt19937_64& rng) {
  GemmOperands o;
  FillCodes(&o.a, m * k, xcclFloat8e4m3, rng);
  FillCodes(&o.b, n * k, xcclFloat8e4m3, rng);
  o.k_blocks = (k + 127) / 128;
  std::uniform_real_distribution<float> scale(0.25f, 4.0f);
  o.a_scale.resize(static_cast<size_t>(o.k_blocks * m));
  o.b_scale.resize(static_cast<size_t>((n + 127) / 128 * o.k_blocks));
  for (float& v : o.a_scale) v = scale(rng);
  for (float& v : o.b_scale) v = scale(rng);
  return o;
}

// A dense row-major problem (lda = ldb = k, ldc = n) without pointers; ptpc for fp8 inputs.
inline xcclGemmProblem DenseProblem(int64_t m, int64_t n, int64_t k, xcclDataType_t in,
                                    xcclDataType_t out) {
  xcclGemmProblem p{};
  p.m = m;
  p.n = n;
  p.k = k;
  p.a_type = p.b_type = in;
  p.c_type = out;
  p.scale_mode = in == xcclFloat8e4m3 ? xcclGemmScalePtpc : xcclGemmScaleNone;
  p.lda = p.ldb = k;
  p.ldc = n;
  return p;
}

// Rows per source in ag_gemm's C for a call of m rows (xcclAgGemmPaddedM's documented answer,
// computed here so that buffers can be sized before an op exists, and independently of it).
inline int64_t PaddedRows(int64_t m) { return (m + 255) / 256 * 256; }

// How far ag_gemm's C is from a double-precision GEMM of the decoded inputs. C holds `padded`
// rows per source, row-major with n columns of out_type; source s's operands come from
// operands_of(s), this rank's B from `mine`. Returns the relative L2 error over the m real rows
// of every source and counts the padding values that are not exactly zero.
inline double GatheredGemmError(const void* c, xcclDataType_t out_type, int world, int64_t m,
                                int64_t padded, int64_t n, int64_t k, xcclDataType_t in,
                                const GemmOperands& mine,
                                const std::function<GemmOperands(int)>& operands_of,
                                int64_t* nonzero_padding) {
  double err2 = 0, ref2 = 0;
  *nonzero_padding = 0;
  // Inputs decoded once rather than per product: the same products of the same doubles, summed
  // in the same order, at a fraction of the cost (the GPU suite checks many calls at world 8).
  auto decode = [in](const std::vector<uint8_t>& codes, int64_t count) {
    std::vector<double> values(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i) values[i] = Value(in, codes.data(), i);
    return values;
  };
  const std::vector<double> b = decode(mine.b, n * k);
  for (int s = 0; s < world; ++s) {
    const GemmOperands src = operands_of(s);
    const std::vector<double> a = decode(src.a, m * k);
    for (int64_t i = 0; i < padded; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        const double got = Value(out_type, c, (s * padded + i) * n + j);
        if (i >= m) {
          *nonzero_padding += got != 0.0;
          continue;
        }
        double sum = 0;
        if (src.k_blocks > 0) {
          for (int64_t kb = 0; kb < src.k_blocks; ++kb) {
            double part = 0;
            for (int64_t q = kb * 128; q < std::min(k, kb * 128 + 128); ++q)
              part += a[i * k + q] * b[j * k + q];
            sum += part * src.a_scale[kb * m + i] * mine.b_scale[(j / 128) * src.k_blocks + kb];
          }
        } else {
          for (int64_t q = 0; q < k; ++q) sum += a[i * k + q] * b[j * k + q];
          if (in == xcclFloat8e4m3) sum *= static_cast<double>(src.a_scale[i]) * mine.b_scale[j];
        }
        err2 += (got - sum) * (got - sum);
        ref2 += sum * sum;
      }
    }
  }
  return std::sqrt(err2 / (ref2 > 0 ? ref2 : 1));
}

}  // namespace xccl_test
