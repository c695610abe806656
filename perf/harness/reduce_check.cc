#include "harness/reduce_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/mix64.h"
#include "harness/datatypes.h"
#include "harness/type_values.h"

namespace xccl_perf {
namespace {

using xccl::SplitMix64;

// Significand bits (the implicit one included) of a float type's inputs, and of the accumulator
// include/xccl.h says it reduces in: fp32 for every float but fp64.
int SignificandBits(xcclDataType_t type) {
  switch (type) {
    case xcclFloat8e4m3:
      return 4;
    case xcclFloat8e5m2:
      return 3;
    case xcclFloat16:
      return 11;
    case xcclBfloat16:
      return 8;
    case xcclFloat32:
      return 24;
    default:
      return 53;
  }
}
int AccumulatorBits(xcclDataType_t type) { return type == xcclFloat64 ? 53 : 24; }

bool IsSigned(xcclDataType_t type) {
  return type == xcclInt8 || type == xcclInt32 || type == xcclInt64;
}

int CeilLog2(int n) {
  int bits = 0;
  while ((1ll << bits) < n) ++bits;
  return bits;
}

// Float inputs of sum, avg, max and min are integers below 2^magnitude_bits times 2^-3 .. 2^0:
// a multiple of 2^-3 below 2^magnitude_bits, so with magnitude_bits + 3 + log2(nranks) bits at
// most every partial sum is exact in the accumulator. The type must hold the inputs themselves
// too; 2^-3 is a normal number of every type.
constexpr int kLowestExponent = -3;

uint64_t LoadBits(const void* data, size_t word, size_t index) {
  uint64_t bits = 0;
  memcpy(&bits, static_cast<const char*>(data) + index * word, word);  // little-endian
  return bits;
}

void StoreBits(void* data, size_t word, size_t index, uint64_t bits) {
  memcpy(static_cast<char*>(data) + index * word, &bits, word);
}

int64_t SignExtend(uint64_t bits, size_t word) {
  const unsigned shift = 64 - 8 * static_cast<unsigned>(word);
  return static_cast<int64_t>(bits << shift) >> shift;
}

}  // namespace

ReduceCheck::ReduceCheck(xcclDataType_t type, xcclRedOp_t op, int nranks, uint64_t seed)
    : type_(type),
      op_(op),
      nranks_(nranks),
      float_(IsFloatType(type)),
      word_(TypeSize(type)),
      mask_(word_ == 8 ? ~0ull : (1ull << (8 * word_)) - 1) {
  const int accumulator = AccumulatorBits(type);
  magnitude_bits_ = std::max(
      1, std::min(SignificandBits(type), accumulator + kLowestExponent - CeilLog2(nranks)));
  // A product of k factors of 1.5 needs log2(3^k) bits; without 1.5, factors are powers of two.
  three_halves_ = nranks * std::log2(3.0) < accumulator;
  for (int r = 0; r < nranks; ++r) {
    rank_base_.push_back(SplitMix64(seed * 0xD1B54A32D192ED03ull + static_cast<uint64_t>(r)));
  }
}

uint64_t ReduceCheck::Hash(int rank, size_t index) const {
  return SplitMix64(rank_base_[rank] + index * 0x9E3779B97F4A7C15ull);
}

uint64_t ReduceCheck::IntegerInput(int rank, size_t index) const {
  const uint64_t h = Hash(rank, index);
  // Any bits: sums and products wrap. Odd factors keep every factor visible in a product (odd
  // numbers are invertible modulo 2^width), where even ones would soon give 0.
  return (op_ == xcclProd ? h | 1 : h) & mask_;
}

double ReduceCheck::FloatInput(int rank, size_t index) const {
  const uint64_t h = Hash(rank, index);
  double v;
  if (op_ == xcclProd) {
    // +-2^e (e in -1, 0, 0, 1), or 1.5 times that: exact products over the ranks.
    static constexpr double kPowers[4] = {0.5, 1, 1, 2};
    const double mantissa = three_halves_ && (h >> 3 & 1) ? 1.5 : 1.0;
    v = mantissa * kPowers[h >> 1 & 3];
  } else {
    if ((op_ == xcclMax || op_ == xcclMin) && (h >> 3 & 63) == 0) return NAN;  // NaN wins: 1 in 64
    // 2^kLowestExponent .. 2^0, multiplied rather than ldexp'd: this runs nranks times per element.
    static constexpr double kPowers[4] = {0.125, 0.25, 0.5, 1};
    static_assert(kLowestExponent == -3, "kPowers starts at 2^kLowestExponent");
    const uint64_t magnitude = (h >> 9) & ((1ull << magnitude_bits_) - 1);
    v = static_cast<double>(magnitude) * kPowers[h >> 1 & 3];
  }
  return (h & 1) && v != 0 ? -v : v;
}

uint64_t ReduceCheck::InputBits(int rank, size_t index) const {
  if (!float_) return IntegerInput(rank, index);
  const double v = FloatInput(rank, index);
  return std::isnan(v) ? NanBits(type_) : ExactBits(type_, v);
}

ReduceCheck::Expected ReduceCheck::Reference(size_t index) const {
  Expected e{0, false, 0, 0};
  if (!float_) {
    uint64_t acc = IntegerInput(0, index);
    for (int r = 1; r < nranks_; ++r) {
      const uint64_t b = IntegerInput(r, index);
      switch (op_) {
        case xcclProd:
          acc = acc * b & mask_;
          break;
        case xcclMax:
        case xcclMin: {
          const bool less =
              IsSigned(type_) ? SignExtend(b, word_) < SignExtend(acc, word_) : b < acc;
          if (less == (op_ == xcclMin)) acc = b;
          break;
        }
        default:  // sum, avg
          acc = (acc + b) & mask_;
      }
    }
    if (op_ == xcclAvg) {
      acc = IsSigned(type_) ? static_cast<uint64_t>(SignExtend(acc, word_) / nranks_)
                            : acc / static_cast<uint64_t>(nranks_);
    }
    e.bits = acc & mask_;
    return e;
  }
  // Exact in double: sums and products as argued above, max and min pick an input.
  double acc = FloatInput(0, index);
  bool nan = std::isnan(acc);
  for (int r = 1; r < nranks_; ++r) {
    const double value = FloatInput(r, index);
    nan = nan || std::isnan(value);
    switch (op_) {
      case xcclProd:
        acc *= value;
        break;
      case xcclMax:
        acc = std::max(acc, value);
        break;
      case xcclMin:
        acc = std::min(acc, value);
        break;
      default:
        acc += value;
    }
  }
  if (nan) {
    e.nan = true;
    return e;
  }
  double lo = acc, hi = acc;
  if (op_ == xcclAvg) {
    // sum / n rounded; the remainder says on which side of the quotient the exact one lies.
    const double q = acc / nranks_;
    const double remainder = std::fma(-q, static_cast<double>(nranks_), acc);
    lo = hi = q;
    if (remainder > 0) hi = std::nextafter(q, INFINITY);
    if (remainder < 0) lo = std::nextafter(q, -INFINITY);
  }
  RoundingBracket(type_, lo, hi, &e.down, &e.up);
  return e;
}

void ReduceCheck::FillInput(void* dst, int rank, size_t first, size_t count) const {
  for (size_t i = 0; i < count; ++i) StoreBits(dst, word_, i, InputBits(rank, first + i));
}

size_t ReduceCheck::CountInputWrong(const void* got, int rank, size_t first, size_t count) const {
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += LoadBits(got, word_, i) != InputBits(rank, first + i);
  return wrong;
}

void ReduceCheck::FillPoison(void* dst, size_t first, size_t count) const {
  if (float_ && op_ != xcclMax && op_ != xcclMin) {
    // Finite inputs: only max and min can give NaN, so NaN poisons without the reference.
    for (size_t i = 0; i < count; ++i) StoreBits(dst, word_, i, NanBits(type_));
    return;
  }
  for (size_t i = 0; i < count; ++i) {
    const Expected e = Reference(first + i);
    uint64_t bits = ~e.bits & mask_;
    if (float_) bits = e.nan ? ExactBits(type_, 0) : NanBits(type_);
    StoreBits(dst, word_, i, bits);
  }
}

size_t ReduceCheck::CountWrong(const void* got, size_t first, size_t count) const {
  size_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const Expected e = Reference(first + i);
    if (!float_) {
      wrong += LoadBits(got, word_, i) != e.bits;
      continue;
    }
    const double g = FloatValue(type_, got, i);
    const bool ok = e.nan ? std::isnan(g) : !std::isnan(g) && e.down <= g && g <= e.up;
    wrong += !ok;
  }
  return wrong;
}

}  // namespace xccl_perf
