#include "harness/type_values.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

// The formats' values by their formulas, the tests' one copy (also ag_gemm_perf's).
#include "common/float_formats.h"
#include "harness/datatypes.h"

namespace xccl_perf {
namespace {

double DecodeNarrow(xcclDataType_t type, uint32_t code) {
  switch (type) {
    case xcclFloat16:
      return xccl_test::Fp16Value(static_cast<uint16_t>(code));
    case xcclBfloat16:
      return xccl_test::Bf16Value(static_cast<uint16_t>(code));
    case xcclFloat8e4m3:
      return xccl_test::E4m3Value(static_cast<uint8_t>(code));
    case xcclFloat8e5m2:
      return xccl_test::IeeeValue(code, 5, 2);
    default:
      return NAN;
  }
}

// The layout of a narrow type: sign, `exponent_bits`, `mantissa_bits`, IEEE-style (e4m3 differs
// only at its top: no inf, S.1111.111 NaN, so its largest finite value is 448, not 480).
struct NarrowFormat {
  int exponent_bits;
  int mantissa_bits;
  int bias;
  double max;      // largest finite value
  bool saturates;  // include/xccl.h: fp8 saturates, fp16 and bf16 overflow to inf
};

const NarrowFormat& Format(xcclDataType_t type) {
  static constexpr NarrowFormat kFp16{5, 10, 15, 65504.0, false};
  static constexpr NarrowFormat kBf16{8, 7, 127, 0x1.fep127, false};
  static constexpr NarrowFormat kE4m3{4, 3, 7, 448.0, true};
  static constexpr NarrowFormat kE5m2{5, 2, 15, 57344.0, true};
  switch (type) {
    case xcclFloat16:
      return kFp16;
    case xcclBfloat16:
      return kBf16;
    case xcclFloat8e4m3:
      return kE4m3;
    default:
      return kE5m2;
  }
}

bool IsNarrow(xcclDataType_t type) {
  return type == xcclFloat16 || type == xcclBfloat16 || type == xcclFloat8e4m3 ||
         type == xcclFloat8e5m2;
}

// Every code of a narrow type decoded, built once per type on first use (function statics are
// thread-safe to initialise): the checks decode millions of elements.
std::vector<double> BuildDecodeTable(xcclDataType_t type) {
  std::vector<double> values(size_t{1} << (8 * TypeSize(type)));
  for (uint32_t code = 0; code < values.size(); ++code) values[code] = DecodeNarrow(type, code);
  return values;
}

const std::vector<double>& DecodeTable(xcclDataType_t type) {
  switch (type) {
    case xcclFloat16: {
      static const std::vector<double> t = BuildDecodeTable(xcclFloat16);
      return t;
    }
    case xcclBfloat16: {
      static const std::vector<double> t = BuildDecodeTable(xcclBfloat16);
      return t;
    }
    case xcclFloat8e4m3: {
      static const std::vector<double> t = BuildDecodeTable(xcclFloat8e4m3);
      return t;
    }
    default: {
      static const std::vector<double> t = BuildDecodeTable(xcclFloat8e5m2);
      return t;
    }
  }
}

[[noreturn]] void NotExact(xcclDataType_t type, double value) {
  fprintf(stderr, "type_values: %.17g is not a value of type %d\n", value, static_cast<int>(type));
  abort();
}

// The spacing of the narrow format's values around |x| (finite, nonzero): 2^(e - mantissa_bits)
// in the binade of 2^e, the subnormals' spacing below the smallest normal.
double Spacing(const NarrowFormat& f, double x) {
  int k = 0;
  std::frexp(x, &k);  // |x| = m * 2^k, m in [0.5, 1)
  return std::ldexp(1.0, std::max(k - 1, 1 - f.bias) - f.mantissa_bits);
}

// Largest value of the narrow `type` <= x and smallest >= x, with its overflow rule beyond the
// finite range. Dividing by a power of two is exact, so floor and ceil find the grid points.
void NarrowBracket(xcclDataType_t type, double x, double* down, double* up) {
  const NarrowFormat& f = Format(type);
  const double beyond = f.saturates ? f.max : INFINITY;
  if (x > f.max) {
    *down = f.max;
    *up = beyond;
  } else if (x < -f.max) {
    *down = -beyond;
    *up = -f.max;
  } else if (x == 0) {
    *down = *up = 0;
  } else {
    const double spacing = Spacing(f, x);
    *down = std::floor(x / spacing) * spacing;
    *up = std::ceil(x / spacing) * spacing;
  }
}

// The bits of x in the narrow `type`, which must hold it exactly.
uint64_t NarrowBits(xcclDataType_t type, double x) {
  const NarrowFormat& f = Format(type);
  if (!(std::fabs(x) <= f.max)) NotExact(type, x);
  const uint64_t sign = std::signbit(x) ? 1ull << (f.exponent_bits + f.mantissa_bits) : 0;
  if (x == 0) return 0;
  const double magnitude = std::fabs(x);
  const double steps = magnitude / Spacing(f, magnitude);  // the significand as an integer
  if (steps != std::floor(steps)) NotExact(type, x);
  int k = 0;
  std::frexp(magnitude, &k);
  const int field = k - 1 + f.bias;  // below 1: a subnormal, whose steps are the mantissa
  const uint64_t mantissa_mask = (1ull << f.mantissa_bits) - 1;
  if (field < 1) return sign | static_cast<uint64_t>(steps);
  return sign | static_cast<uint64_t>(field) << f.mantissa_bits |
         (static_cast<uint64_t>(steps) & mantissa_mask);
}

}  // namespace

bool IsFloatType(xcclDataType_t type) {
  return IsNarrow(type) || type == xcclFloat32 || type == xcclFloat64;
}

double FloatValue(xcclDataType_t type, const void* data, size_t index) {
  if (type == xcclFloat32) {
    float v;
    memcpy(&v, static_cast<const char*>(data) + index * sizeof(v), sizeof(v));
    return v;
  }
  if (type == xcclFloat64) {
    double v;
    memcpy(&v, static_cast<const char*>(data) + index * sizeof(v), sizeof(v));
    return v;
  }
  uint32_t code = type == xcclFloat8e4m3 || type == xcclFloat8e5m2
                      ? static_cast<const uint8_t*>(data)[index]
                      : static_cast<const uint16_t*>(data)[index];
  return DecodeTable(type)[code];
}

uint64_t ExactBits(xcclDataType_t type, double value) {
  if (value == 0) value = 0;  // -0 becomes +0
  if (type == xcclFloat64) {
    uint64_t bits;
    memcpy(&bits, &value, sizeof(bits));
    return bits;
  }
  if (type == xcclFloat32) {
    const float f = static_cast<float>(value);
    if (static_cast<double>(f) != value) NotExact(type, value);
    uint32_t bits;
    memcpy(&bits, &f, sizeof(bits));
    return bits;
  }
  if (!IsNarrow(type)) NotExact(type, value);
  return NarrowBits(type, value);
}

uint64_t NanBits(xcclDataType_t type) {
  switch (type) {
    case xcclFloat16:
      return 0x7e00;
    case xcclBfloat16:
      return 0x7fc0;
    case xcclFloat32:
      return 0x7fc00000;
    case xcclFloat64:
      return 0x7ff8000000000000ull;
    case xcclFloat8e4m3:
      return 0x7f;  // e4m3 (fn): S.1111.111 is its only NaN
    case xcclFloat8e5m2:
      return 0x7e;
    default:
      return 0;
  }
}

void RoundingBracket(xcclDataType_t type, double lo, double hi, double* down, double* up) {
  if (type == xcclFloat64) {
    *down = lo;
    *up = hi;
    return;
  }
  if (type == xcclFloat32) {
    // float(x) rounds to nearest; its neighbour on x's other side is the other rounding. Beyond
    // FLT_MAX, float(x) is inf or FLT_MAX, and inf is the far side either way.
    auto bracket = [](double x, float* below, float* above) {
      const float f = static_cast<float>(x);
      *below = *above = f;
      if (static_cast<double>(f) < x) *above = std::nextafter(f, INFINITY);
      if (static_cast<double>(f) > x) *below = std::nextafter(f, -INFINITY);
    };
    float below, above, ignored;
    bracket(lo, &below, &ignored);
    bracket(hi, &ignored, &above);
    *down = below;
    *up = above;
    return;
  }
  double ignored;
  NarrowBracket(type, lo, down, &ignored);
  NarrowBracket(type, hi, &ignored, up);
}

}  // namespace xccl_perf
