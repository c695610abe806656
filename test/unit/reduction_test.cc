// The reduction arithmetic (collectives/reduce) against references written here independently:
// every code of fp16, bf16, fp8 e4m3 and e5m2 decoded by formula; rounding checked against a
// search for the nearest representable value (ties to the even code, fp16/bf16 to infinity
// past the largest value, fp8 saturating) on random values, every tie and the neighbours of
// every tie; and ReduceOnHost for all 12 types and 5 ops on fresh random inputs over 1-8 ranks,
// in place too, against a reference that widens, accumulates in rank order in the promised
// type, and rounds once.
#include "collectives/reduce/reduction.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace xccl {
namespace {

// A small float format as the test sees it: its bit layout, and the codec under test.
struct Format {
  const char* name;
  int exp_bits, man_bits;
  bool e4m3;       // no infinity, the all-ones magnitude is NaN
  bool saturates;  // past the largest finite value: saturate (fp8) or infinity (fp16, bf16)
  std::function<float(uint32_t)> to_float;
  std::function<uint32_t(float)> from_float;
  int bits() const { return 1 + exp_bits + man_bits; }
};

std::vector<Format> Formats() {
  return {
      {"fp16", 5, 10, false, false, Fp16::ToFloat, Fp16::FromFloat},
      {"bf16", 8, 7, false, false, Bf16::ToFloat, Bf16::FromFloat},
      {"e4m3", 4, 3, true, true, Fp8E4m3::ToFloat, Fp8E4m3::FromFloat},
      {"e5m2", 5, 2, false, true, Fp8E5m2::ToFloat, Fp8E5m2::FromFloat},
  };
}

bool IsNanCode(const Format& f, uint32_t code) {
  const uint32_t magnitude = code & ((1u << (f.bits() - 1)) - 1);
  const uint32_t exp = magnitude >> f.man_bits, man = magnitude & ((1u << f.man_bits) - 1);
  if (f.e4m3) return exp == (1u << f.exp_bits) - 1 && man == (1u << f.man_bits) - 1;
  return exp == (1u << f.exp_bits) - 1 && man != 0;
}

// The value of a code by the textbook formula, in double.
double Decode(const Format& f, uint32_t code) {
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const bool negative = (code >> (f.bits() - 1)) & 1;
  const uint32_t magnitude = code & ((1u << (f.bits() - 1)) - 1);
  const int exp = static_cast<int>(magnitude >> f.man_bits);
  const double man = magnitude & ((1u << f.man_bits) - 1);
  double value;
  if (IsNanCode(f, code)) {
    value = std::numeric_limits<double>::quiet_NaN();
  } else if (!f.e4m3 && exp == (1 << f.exp_bits) - 1) {
    value = std::numeric_limits<double>::infinity();
  } else if (exp == 0) {
    value = std::ldexp(man, 1 - bias - f.man_bits);
  } else {
    value = std::ldexp(1.0 + man / (1 << f.man_bits), exp - bias);
  }
  return negative ? -value : value;
}

// The finite non-negative codes of a format in order of value.
std::vector<std::pair<double, uint32_t>> FiniteCodes(const Format& f) {
  std::vector<std::pair<double, uint32_t>> codes;
  for (uint32_t c = 0; c < (1u << (f.bits() - 1)); ++c) {
    const double v = Decode(f, c);
    if (std::isfinite(v)) codes.push_back({v, c});
  }
  std::sort(codes.begin(), codes.end());
  return codes;
}

// The code round-to-nearest-even gives `x`, found by search.
uint32_t Nearest(const Format& f, const std::vector<std::pair<double, uint32_t>>& codes, double x) {
  const uint32_t sign = std::signbit(x) ? 1u << (f.bits() - 1) : 0u;
  if (std::isnan(x)) return ~0u;  // any NaN code
  const double a = std::fabs(x);
  const auto& top = codes.back();
  const double top_half_ulp = (top.first - codes[codes.size() - 2].first) / 2;
  if (a >= top.first + top_half_ulp || std::isinf(a)) {
    if (f.saturates) return sign | top.second;
    if (a == top.first + top_half_ulp && (top.second & 1) == 0) return sign | top.second;
    return sign | (((1u << f.exp_bits) - 1) << f.man_bits);  // infinity
  }
  if (a >= top.first) return sign | top.second;
  auto upper = std::lower_bound(codes.begin(), codes.end(), std::make_pair(a, 0u),
                                [](const auto& l, const auto& r) { return l.first < r.first; });
  if (upper->first == a) return sign | upper->second;
  const auto lower = upper - 1;
  const double below = a - lower->first, above = upper->first - a;
  if (below < above) return sign | lower->second;
  if (above < below) return sign | upper->second;
  return sign | ((lower->second & 1) == 0 ? lower->second : upper->second);
}

TEST(SmallFloats, EveryCodeDecodesAsTheFormulaSays) {
  for (const Format& f : Formats()) {
    for (uint32_t c = 0; c < (1u << f.bits()); ++c) {
      const double want = Decode(f, c);
      const float got = f.to_float(c);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << f.name << " code " << c;
      } else {
        EXPECT_EQ(static_cast<double>(got), want) << f.name << " code " << c;
        EXPECT_EQ(std::signbit(got), std::signbit(want)) << f.name << " code " << c;
        if (std::isinf(want) && f.saturates) {
          // e5m2's infinity narrows to its largest finite value (saturating, as CUDA's
          // __NV_SATFINITE does), keeping the sign.
          const uint32_t sign = c & (1u << (f.bits() - 1));
          EXPECT_EQ(f.from_float(got), sign | FiniteCodes(f).back().second) << f.name << " " << c;
        } else {
          EXPECT_EQ(f.from_float(got), c) << f.name << ": code " << c << " does not come back";
        }
      }
    }
  }
}

TEST(SmallFloats, NarrowingRoundsToNearestEven) {
  std::mt19937_64 rng(std::random_device{}());
  for (const Format& f : Formats()) {
    const auto codes = FiniteCodes(f);
    std::vector<float> values;
    // Every tie between neighbours, and the floats on either side of it.
    for (size_t i = 0; i + 1 < codes.size(); ++i) {
      const float mid = static_cast<float>((codes[i].first + codes[i + 1].first) / 2);
      values.insert(values.end(), {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f)});
    }
    // Random values over the format's range and beyond it, both signs, and specials.
    const int bias = (1 << (f.exp_bits - 1)) - 1;
    std::uniform_int_distribution<int> exps(-bias - f.man_bits - 3, bias + 3);
    for (int i = 0; i < 20000; ++i) {
      const float mantissa = 1.0f + static_cast<float>(rng() % (1u << 23)) / (1u << 23);
      values.push_back(std::ldexp(mantissa, exps(rng)));
    }
    values.insert(values.end(), {0.0f, std::numeric_limits<float>::infinity(),
                                 std::numeric_limits<float>::denorm_min(), 1e-40f});
    for (float v : std::vector<float>(values)) values.push_back(-v);
    for (float v : values) {
      const uint32_t want = Nearest(f, codes, v), got = f.from_float(v);
      ASSERT_EQ(got, want) << f.name << " from " << v;
    }
    const uint32_t nan = f.from_float(std::numeric_limits<float>::quiet_NaN());
    EXPECT_TRUE(IsNanCode(f, nan)) << f.name;
  }
}

// ---- ReduceOnHost ----

struct TypeCase {
  int type;
  size_t size;
};

const TypeCase kTypes[] = {{xcclInt8, 1},     {xcclUint8, 1},      {xcclInt32, 4},
                           {xcclUint32, 4},   {xcclInt64, 8},      {xcclUint64, 8},
                           {xcclFloat16, 2},  {xcclFloat32, 4},    {xcclFloat64, 8},
                           {xcclBfloat16, 2}, {xcclFloat8e4m3, 1}, {xcclFloat8e5m2, 1}};

const Format* SmallFormat(int type) {
  static const std::vector<Format> formats = Formats();
  switch (type) {
    case xcclFloat16:
      return &formats[0];
    case xcclBfloat16:
      return &formats[1];
    case xcclFloat8e4m3:
      return &formats[2];
    case xcclFloat8e5m2:
      return &formats[3];
    default:
      return nullptr;
  }
}

uint64_t Raw(const uint8_t* p, size_t size) {
  uint64_t v = 0;
  memcpy(&v, p, size);
  return v;
}

// Integer types: sums and products in 128 bits taken modulo 2^bits, max/min by value, avg as the
// wrapped sum's value divided with truncation.
uint64_t ReferenceInteger(int type, size_t size, int op, const std::vector<uint64_t>& raw) {
  const bool is_signed = type == xcclInt8 || type == xcclInt32 || type == xcclInt64;
  const int bits = static_cast<int>(size * 8);
  const unsigned __int128 mask = bits == 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  auto value = [&](uint64_t r) -> __int128 {
    if (!is_signed || bits == 64) return is_signed ? static_cast<int64_t>(r) : __int128(r);
    const uint64_t top = uint64_t(1) << (bits - 1);
    return (r & top) ? __int128(r) - (__int128(1) << bits) : __int128(r);
  };
  unsigned __int128 acc = raw[0];
  __int128 best = value(raw[0]);
  uint64_t best_raw = raw[0];
  for (size_t r = 1; r < raw.size(); ++r) {
    if (op == 1) acc = (acc * raw[r]) & mask;
    if (op == 0 || op == 4) acc = (acc + raw[r]) & mask;
    const __int128 v = value(raw[r]);
    if ((op == 2 && v > best) || (op == 3 && v < best)) {
      best = v;
      best_raw = raw[r];
    }
  }
  if (op == 2 || op == 3) return best_raw;
  if (op == 4) {
    const __int128 sum = value(static_cast<uint64_t>(acc & mask));
    const __int128 n = static_cast<__int128>(raw.size());
    const __int128 q = sum / n;  // truncation toward zero
    return static_cast<uint64_t>(q) & static_cast<uint64_t>(mask);
  }
  return static_cast<uint64_t>(acc & mask);
}

// Floating types: widen (by formula), accumulate in rank order in fp32 (fp64 for fp64), NaN
// wins max and min, then round once (by search).
uint64_t ReferenceFloat(int type, int op, const std::vector<uint64_t>& raw) {
  auto combine = [op](auto a, auto b) {
    if (op == 1) return a * b;
    if (op == 2) return std::isnan(a) ? a : std::isnan(b) ? b : (a < b ? b : a);
    if (op == 3) return std::isnan(a) ? a : std::isnan(b) ? b : (b < a ? b : a);
    return a + b;
  };
  const int n = static_cast<int>(raw.size());
  if (type == xcclFloat64) {
    auto load = [](uint64_t r) {
      double v;
      memcpy(&v, &r, 8);
      return v;
    };
    double acc = load(raw[0]);
    for (int r = 1; r < n; ++r) acc = combine(acc, load(raw[r]));
    if (op == 4) acc /= n;
    uint64_t out;
    memcpy(&out, &acc, 8);
    return out;
  }
  const Format* f = SmallFormat(type);
  auto load = [&](uint64_t r) {
    if (f != nullptr) return static_cast<float>(Decode(*f, static_cast<uint32_t>(r)));
    float v;
    const uint32_t bits = static_cast<uint32_t>(r);
    memcpy(&v, &bits, 4);
    return v;
  };
  float acc = load(raw[0]);
  for (int r = 1; r < n; ++r) acc = combine(acc, load(raw[r]));
  if (op == 4) acc /= static_cast<float>(n);
  if (f == nullptr) {
    uint32_t out;
    memcpy(&out, &acc, 4);
    return out;
  }
  static std::vector<std::vector<std::pair<double, uint32_t>>> codes(4);
  const size_t index = f - SmallFormat(xcclFloat16);
  if (codes[index].empty()) codes[index] = FiniteCodes(*f);
  return Nearest(*f, codes[index], acc);
}

bool SameResult(int type, uint64_t got, uint64_t want) {
  const Format* f = SmallFormat(type);
  if (f != nullptr && want == ~0u) return IsNanCode(*f, static_cast<uint32_t>(got));
  if (type == xcclFloat32) {
    float g, w;
    const uint32_t gb = static_cast<uint32_t>(got), wb = static_cast<uint32_t>(want);
    memcpy(&g, &gb, 4);
    memcpy(&w, &wb, 4);
    if (std::isnan(w)) return std::isnan(g);
  }
  if (type == xcclFloat64) {
    double g, w;
    memcpy(&g, &got, 8);
    memcpy(&w, &want, 8);
    if (std::isnan(w)) return std::isnan(g);
  }
  return got == want;
}

// Random element bits; for the narrow floats most of them finite and modest, so that sums mean
// something, with NaN and extremes among them.
uint64_t RandomElement(std::mt19937_64& rng, int type, size_t size) {
  uint64_t r = rng();
  if (size < 8) r &= (uint64_t(1) << (size * 8)) - 1;
  if (type == xcclFloat32 && rng() % 16 != 0) {
    const float v = std::ldexp(static_cast<float>(static_cast<int64_t>(rng() % 2000001) - 1000000),
                               -static_cast<int>(rng() % 20));
    uint32_t bits;
    memcpy(&bits, &v, 4);
    return bits;
  }
  if (type == xcclFloat64 && rng() % 16 != 0) {
    const double v =
        std::ldexp(static_cast<double>(static_cast<int64_t>(rng() % 2000001) - 1000000),
                   -static_cast<int>(rng() % 40));
    uint64_t bits;
    memcpy(&bits, &v, 8);
    return bits;
  }
  return r;
}

TEST(ReduceOnHost, EveryTypeAndOpMatchesTheReferenceInRankOrder) {
  std::mt19937_64 rng(std::random_device{}());
  const size_t count = 257;
  for (const TypeCase& t : kTypes) {
    for (int op = 0; op < 5; ++op) {
      for (int nranks : {1, 2, 3, 5, 8}) {
        std::vector<std::vector<uint8_t>> inputs(nranks, std::vector<uint8_t>(count * t.size));
        for (auto& in : inputs)
          for (size_t i = 0; i < count; ++i) {
            const uint64_t v = RandomElement(rng, t.type, t.size);
            memcpy(in.data() + i * t.size, &v, t.size);
          }
        std::vector<const void*> pointers;
        for (auto& in : inputs) pointers.push_back(in.data());
        std::vector<uint8_t> out(count * t.size, 0xA5);  // poisoned
        ASSERT_EQ(ReduceOnHost(t.type, op, pointers.data(), nranks, out.data(), count),
                  xcclSuccess);
        // In place: the result written over rank 0's input.
        std::vector<uint8_t> in_place(inputs[0]);
        pointers[0] = in_place.data();
        ASSERT_EQ(ReduceOnHost(t.type, op, pointers.data(), nranks, in_place.data(), count),
                  xcclSuccess);
        for (size_t i = 0; i < count; ++i) {
          std::vector<uint64_t> raw;
          for (auto& in : inputs) raw.push_back(Raw(in.data() + i * t.size, t.size));
          const bool integer = t.type <= xcclUint64;
          const uint64_t want =
              integer ? ReferenceInteger(t.type, t.size, op, raw) : ReferenceFloat(t.type, op, raw);
          const uint64_t got = Raw(out.data() + i * t.size, t.size);
          ASSERT_TRUE(SameResult(t.type, got, want))
              << "type " << t.type << " op " << op << " ranks " << nranks << " element " << i
              << ": got " << got << " want " << want;
          ASSERT_EQ(Raw(in_place.data() + i * t.size, t.size), got) << "in place, element " << i;
        }
      }
    }
  }
}

TEST(ReduceOnHost, BadTypeOrOpIsRefused) {
  int32_t a = 1, out = 0;
  const void* in[] = {&a};
  EXPECT_EQ(ReduceOnHost(xcclNumTypes, 0, in, 1, &out, 1), xcclInvalidArgument);
  EXPECT_EQ(ReduceOnHost(xcclInt32, 5, in, 1, &out, 1), xcclInvalidArgument);
  EXPECT_EQ(ReduceOnHost(xcclInt32, -1, in, 1, &out, 1), xcclInvalidArgument);
  EXPECT_EQ(ReduceOnHost(xcclInt32, 0, in, 0, &out, 1), xcclInvalidArgument);
  EXPECT_EQ(out, 0);
}

}  // namespace
}  // namespace xccl
