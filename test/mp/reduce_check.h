// Fresh reproducible inputs and two independent references for reductions, shared by the host
// (mp) and gpu suites. Rank r's element i of call c is a pure function of (run seed, r, c, i),
// so every rank can compute every rank's inputs for the part it checks, with no exchange.
// Every element of an output is checked twice:
//   (a) against the exact result (long double for floats, modular arithmetic for integers): the
//       output must lie within one rounding of the output type of a value within the error
//       bound of the promised accumulation (fp32 for fp16/bf16/fp8/fp32, fp64 for fp64);
//   (b) bit for bit against the rank-order accumulation ((x0 op x1) op x2 ... in the promised
//       accumulator, rounded once), written here from the codecs of small_floats.h only; on the
//       host platform with ranks split over nodes (XCCL_FAKE_NODES), the order xccl.h promises
//       there: each node's ranks in rank order, then the nodes' accumulators in node order.
// Where (b) leaves a choice to the library it accepts any NaN for a NaN and, for max and min,
// either zero for a zero; the suites' cross-rank and rerun comparisons are bitwise. With one
// rank the output must be the input's bits: the header promises a copy.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "base/params.h"
#include "collectives/reduce/small_floats.h"
#include "mp/data_pattern.h"
#include "xccl.h"

namespace xccl_test {

// What a call's inputs look like. kPlain: values over most of each type's range (prod: of
// magnitude 1/16..16, so that products neither overflow nor underflow the accumulator); kSpecials:
// one element in six NaN, an infinity, a signed zero, the largest or smallest magnitude;
// kNearMax: the top two binades with mixed signs, so that sums overflow fp8 (saturating),
// fp16/bf16 (infinity) and even the accumulator.
enum class Flavor { kPlain, kSpecials, kNearMax };

inline const char* FlavorName(Flavor f) {
  return f == Flavor::kPlain ? "plain" : f == Flavor::kSpecials ? "specials" : "near-max";
}

inline const char* RedOpName(int op) {
  static const char* kNames[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < 5 ? kNames[op] : "invalid";
}

inline const char* ReduceTypeName(int dtype) {
  static const char* kNames[] = {"int8",    "uint8",   "int32",   "uint32",   "int64",   "uint64",
                                 "float16", "float32", "float64", "bfloat16", "fp8e4m3", "fp8e5m2"};
  return dtype >= 0 && dtype < xcclNumTypes ? kNames[dtype] : "invalid";
}

namespace reduce_check {

constexpr int kMaxRanks = 64;

// ---- the types as this file sees them ----

template <typename S>
struct IntType {
  using Storage = S;
  using Acc = S;
  static constexpr bool kInt = true;
  static constexpr bool kNarrow = false;
  static constexpr bool kE4m3 = false;
};

// A float format of kExp exponent and kMan mantissa bits held in Storage; Acc is what it
// accumulates in. Codec converts codes to and from fp32 (the narrow ones), else void.
template <typename S, typename A, int kE, int kM, typename C, bool kE4m3Format = false>
struct FloatType {
  using Storage = S;
  using Acc = A;
  using Codec = C;
  static constexpr bool kInt = false;
  static constexpr int kExp = kE, kMan = kM;
  static constexpr bool kNarrow = !std::is_same<C, void>::value;
  static constexpr bool kE4m3 = kE4m3Format;  // no infinity; the all-ones magnitude is NaN
  static constexpr int kBias = (1 << (kE - 1)) - 1;
  static constexpr uint64_t kSignBit = uint64_t{1} << (kE + kM);
  static constexpr uint64_t kMagMask = kSignBit - 1;
  static constexpr uint64_t kInfCode = ((uint64_t{1} << kE) - 1) << kM;  // unused for e4m3
  static constexpr uint64_t kMaxCode =
      kE4m3Format ? kInfCode | ((uint64_t{1} << kM) - 2) : kInfCode - 1;
  static constexpr uint64_t kNanCode =
      kE4m3Format ? kInfCode | ((uint64_t{1} << kM) - 1) : kInfCode | (uint64_t{1} << (kM - 1));
  // fp8 saturates at its largest finite value, the others overflow to infinity.
  static constexpr bool kSaturates = kE + kM == 7;
};

using F16 = FloatType<uint16_t, float, 5, 10, xccl::Fp16>;
using Bf16 = FloatType<uint16_t, float, 8, 7, xccl::Bf16>;
using E4m3 = FloatType<uint8_t, float, 4, 3, xccl::Fp8E4m3, true>;
using E5m2 = FloatType<uint8_t, float, 5, 2, xccl::Fp8E5m2>;
using F32 = FloatType<float, float, 8, 23, void>;
using F64 = FloatType<double, double, 11, 52, void>;

template <typename T>
uint64_t CodeOf(typename T::Storage v) {
  uint64_t code = 0;
  memcpy(&code, &v, sizeof(v));
  return code;
}

template <typename T>
typename T::Storage FromCode(uint64_t code) {
  typename T::Storage v;
  memcpy(&v, &code, sizeof(v));
  return v;
}

// Exact widening of a float code into its accumulator.
template <typename T>
typename T::Acc Widen(typename T::Storage v) {
  if constexpr (T::kNarrow) {
    return T::Codec::ToFloat(static_cast<uint32_t>(v));
  } else {
    return v;
  }
}

// The value of a float code, exactly, in long double.
template <typename T>
long double ValueOf(typename T::Storage v) {
  return static_cast<long double>(Widen<T>(v));
}

template <typename T>
bool IsNan(typename T::Storage v) {
  if constexpr (T::kInt) {
    return false;
  } else {
    return std::isnan(Widen<T>(v));
  }
}

// Runs f(T{}) with the type descriptor of `dtype`.
template <typename F>
auto WithType(int dtype, F&& f) {
  switch (dtype) {
    case xcclInt8:
      return f(IntType<int8_t>{});
    case xcclUint8:
      return f(IntType<uint8_t>{});
    case xcclInt32:
      return f(IntType<int32_t>{});
    case xcclUint32:
      return f(IntType<uint32_t>{});
    case xcclInt64:
      return f(IntType<int64_t>{});
    case xcclUint64:
      return f(IntType<uint64_t>{});
    case xcclFloat16:
      return f(F16{});
    case xcclFloat32:
      return f(F32{});
    case xcclFloat64:
      return f(F64{});
    case xcclBfloat16:
      return f(Bf16{});
    case xcclFloat8e4m3:
      return f(E4m3{});
    default:
      return f(E5m2{});
  }
}

// ---- inputs ----

inline uint64_t ElementRandom(uint64_t seed, int rank, uint64_t call, size_t index) {
  uint64_t state = seed ^ (uint64_t(rank) * 0x9E3779B97F4A7C15ull) ^
                   (call * 0xD1B54A32D192ED03ull) ^ (uint64_t(index) * 0xA24BAED4963EE407ull);
  SplitMix64(&state);
  return SplitMix64(&state);
}

// A finite code: the sign from `a`'s top bit, the exponent field in [exp_lo, exp_hi] from `a`'s
// other bits, the mantissa from `b`.
template <typename T>
uint64_t FloatCode(uint64_t a, uint64_t b, uint64_t exp_lo, uint64_t exp_hi) {
  const uint64_t sign = (a >> 63) ? T::kSignBit : 0;
  const uint64_t exp = exp_lo + (a >> 16) % (exp_hi - exp_lo + 1);
  uint64_t man = b & ((uint64_t{1} << T::kMan) - 1);
  if (T::kE4m3 && exp == (uint64_t{1} << T::kExp) - 1 && man == (uint64_t{1} << T::kMan) - 1)
    man -= 1;  // 0x7f / 0xff is e4m3's NaN; keep plain data finite
  return sign | exp << T::kMan | man;
}

template <typename T>
typename T::Storage MakeInput(uint64_t bits, int op, Flavor flavor) {
  using S = typename T::Storage;
  uint64_t state = bits;
  const uint64_t a = SplitMix64(&state), b = SplitMix64(&state);
  if constexpr (T::kInt) {
    S v = FromCode<T>(bits);
    if (op == xcclAvg) {
      // Avg's sum must not wrap (the result of a wrapped sum divided is not a promise worth
      // pinning): |x| < 2^(bits-5) keeps the sum of 8 ranks inside the type.
      using U = typename std::make_unsigned<S>::type;
      const int shift = 5;
      if (std::is_signed<S>::value) {
        v = static_cast<S>(static_cast<S>(static_cast<U>(v)) >> shift);  // arithmetic
      } else {
        v = static_cast<S>(static_cast<U>(v) >> shift);
      }
      return v;
    }
    if (flavor != Flavor::kPlain && (a & 7) == 0) {
      // The edges of the range: wrap-around in sums and products, max/min at the ends.
      switch ((a >> 3) & 3) {
        case 0:
          return std::numeric_limits<S>::min();
        case 1:
          return std::numeric_limits<S>::max();
        case 2:
          return S(0);
        default:
          return static_cast<S>(-1);
      }
    }
    return v;
  } else {
    // The largest finite exponent field (e4m3 has no infinity: its top binade is finite but
    // for the NaN code).
    const uint64_t top = ((uint64_t{1} << T::kExp) - 1) - (T::kE4m3 ? 0 : 1);
    const uint64_t sign = (a >> 63) ? T::kSignBit : 0;
    const bool prod = op == xcclProd;
    if (flavor == Flavor::kSpecials && b % 6 == 0) {
      // NaN (quiet, and signalling where the format has one), the infinities, signed zeros,
      // and outside prod (where they would overflow or underflow the accumulator) the largest
      // and smallest magnitudes.
      const int pick = static_cast<int>((b >> 8) % (prod ? 4 : 6));
      switch (pick) {
        case 0:
          return FromCode<T>(sign | T::kNanCode);
        case 1:
          return FromCode<T>(sign | (T::kE4m3 ? T::kNanCode : T::kInfCode | 1));
        case 2:
          return FromCode<T>(sign | (T::kE4m3 ? T::kMaxCode : T::kInfCode));
        case 3:
          return FromCode<T>(sign);  // +0 or -0
        case 4:
          return FromCode<T>(sign | T::kMaxCode);
        default:
          return FromCode<T>(sign | 1);  // the smallest subnormal
      }
    }
    if (flavor == Flavor::kNearMax && !prod) {
      return FromCode<T>(FloatCode<T>(a, b, top - 1, top));
    }
    if (prod) {
      return FromCode<T>(FloatCode<T>(a, b, T::kBias - 4, T::kBias + 3));
    }
    // Plain: fp16/fp8 over their whole range (subnormals to the largest, so sums overflow now
    // and then); bf16 from its subnormals up to a band that sums of 8 cannot take past fp32's
    // range; fp32 and fp64 over 2^-30..2^31.
    if constexpr (T::kExp <= 5) {
      return FromCode<T>(FloatCode<T>(a, b, 0, top));
    } else if constexpr (std::is_same<T, Bf16>::value) {
      return FromCode<T>(FloatCode<T>(a, b, 0, top - 4));
    } else {
      return FromCode<T>(FloatCode<T>(a, b, T::kBias - 30, T::kBias + 30));
    }
  }
}

// Rank `rank`'s element `index` of call `call`.
template <typename T>
typename T::Storage Input(uint64_t seed, int rank, uint64_t call, size_t index, int op,
                          Flavor flavor) {
  return MakeInput<T>(ElementRandom(seed, rank, call, index), op, flavor);
}

}  // namespace reduce_check

// Writes elements [first, first + count) of rank `rank`'s send buffer for `call` to `out`.
inline void FillReduceInput(void* out, size_t first, size_t count, int dtype, int op, Flavor flavor,
                            uint64_t seed, int rank, uint64_t call) {
  reduce_check::WithType(dtype, [&](auto t) {
    using T = decltype(t);
    using S = typename T::Storage;
    unsigned char* p = static_cast<unsigned char*>(out);
    for (size_t i = 0; i < count; ++i) {
      const S v = reduce_check::Input<T>(seed, rank, call, first + i, op, flavor);
      memcpy(p + i * sizeof(S), &v, sizeof(S));
    }
    return 0;
  });
}

namespace reduce_check {

// ---- reference (b): the rank-order accumulation ----

template <typename T>
typename T::Acc Combine(int op, typename T::Acc a, typename T::Acc b) {
  using A = typename T::Acc;
  if constexpr (T::kInt) {
    using U = typename std::make_unsigned<A>::type;
    switch (op) {
      case xcclProd:
        return static_cast<A>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
      case xcclMax:
        return b > a ? b : a;
      case xcclMin:
        return b < a ? b : a;
      default:  // sum, avg
        return static_cast<A>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
    }
  } else {
    switch (op) {
      case xcclProd:
        return a * b;
      case xcclMax:
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<A>::quiet_NaN();
        return b > a ? b : a;
      case xcclMin:
        if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<A>::quiet_NaN();
        return b < a ? b : a;
      default:
        return a + b;
    }
  }
}

// `node_sizes`: ranks per node in rank order, the order's grouping (empty: one node).
template <typename T>
typename T::Storage RankOrder(int op, const typename T::Storage* x, int nranks,
                              const std::vector<int>& node_sizes = {}) {
  using A = typename T::Acc;
  A acc{};
  int r = 0;
  for (size_t node = 0; node < std::max<size_t>(node_sizes.size(), 1); ++node) {
    const int end = node_sizes.empty() ? nranks : r + node_sizes[node];
    A partial = Widen<T>(x[r]);
    for (++r; r < end; ++r) partial = Combine<T>(op, partial, Widen<T>(x[r]));
    acc = node == 0 ? partial : Combine<T>(op, acc, partial);
  }
  if (op == xcclAvg) {
    if constexpr (T::kInt) {
      acc = static_cast<A>(acc / static_cast<A>(nranks));  // truncates toward zero
    } else {
      acc = acc / static_cast<A>(nranks);
    }
  }
  if constexpr (T::kNarrow) {
    return static_cast<typename T::Storage>(T::Codec::FromFloat(acc));
  } else {
    return static_cast<typename T::Storage>(acc);
  }
}

// ---- reference (a): exact, and the tolerance ----

// Closed interval of the reals that round to `v` (ties to either side; fp8's largest value and
// fp16/bf16's infinity reach to infinity). Narrow formats only.
template <typename T>
void RoundingInterval(typename T::Storage v, long double* lo, long double* hi) {
  const uint64_t code = CodeOf<T>(v);
  const bool negative = (code & T::kSignBit) != 0;
  const uint64_t mag = code & T::kMagMask;
  auto at = [](uint64_t m) { return ValueOf<T>(FromCode<T>(m)); };
  const long double inf = std::numeric_limits<long double>::infinity();
  long double low, high;
  if (!T::kE4m3 && mag == T::kInfCode) {
    const long double max = at(T::kMaxCode);
    low = max + (max - at(T::kMaxCode - 1)) / 2;
    high = inf;
  } else {
    const long double value = at(mag);
    low = mag == 0 ? -at(1) / 2 : (at(mag - 1) + value) / 2;
    if (mag == T::kMaxCode)
      high = T::kSaturates ? inf : value + (value - at(mag - 1)) / 2;
    else
      high = (value + at(mag + 1)) / 2;
  }
  if (negative && mag != 0) {
    *lo = -high;
    *hi = -low;
  } else {
    *lo = low;
    *hi = high;
  }
}

struct ExactResult {
  bool nan = false;
  long double value = 0;  // exact, or +-inf
  long double err = 0;    // the accumulation's error bound around value
  bool skip = false;      // the accumulator itself overflowed on the way: (b) alone decides
};

template <typename T>
ExactResult Exact(int op, const typename T::Storage* x, int nranks,
                  const std::vector<int>& node_sizes = {}) {
  ExactResult r;
  constexpr bool fp32_acc = std::is_same<typename T::Acc, float>::value;
  constexpr long double inf = std::numeric_limits<long double>::infinity();
  // The accumulator's unit roundoff, largest value and smallest step, and long double's own
  // rounding (relative), as constants: this runs for every element.
  constexpr long double u = fp32_acc ? 1.0L / (1ull << 24) : 1.0L / (1ull << 53);
  constexpr long double acc_max =
      fp32_acc ? std::numeric_limits<float>::max()
               : static_cast<long double>(std::numeric_limits<double>::max());
  constexpr long double tiny =
      fp32_acc ? std::numeric_limits<float>::denorm_min()
               : static_cast<long double>(std::numeric_limits<double>::denorm_min());
  constexpr long double slack = 1.0L / (1ull << 62);
  constexpr long double near_max = acc_max * (1 - 1.0L / (1 << 22));
  long double v[kMaxRanks];
  v[0] = ValueOf<T>(x[0]);  // nranks >= 1
  for (int i = 1; i < nranks; ++i) v[i] = ValueOf<T>(x[i]);
  for (int i = 0; i < nranks; ++i)
    if (std::isnan(v[i])) r.nan = true;
  if (r.nan) return r;
  if (op == xcclMax || op == xcclMin) {
    r.value = v[0];
    for (int i = 1; i < nranks; ++i)
      r.value = op == xcclMax ? std::fmax(r.value, v[i]) : std::fmin(r.value, v[i]);
    return r;
  }
  if (op == xcclProd) {
    long double p = 1;
    for (int i = 0; i < nranks; ++i) p *= v[i];
    if (std::isnan(p)) {
      r.nan = true;
      return r;
    }
    r.value = p;
    if (!std::isinf(p))
      r.err = ((nranks - 1) * u * 1.001L + nranks * slack) * std::fabs(p) + (nranks - 1) * tiny;
    return r;
  }
  // sum and avg: the exact sum, the partial sums in rank order (an accumulator overflow on the
  // way makes the fp64 reference meaningless), and the bound (n-1) u sum|x|.
  long double sum = 0, abs_sum = 0;
  // Across nodes the accumulator also holds each node's partial, and the nodes' running total.
  long double node_partial = 0, nodes_total = 0;
  size_t node = 0;
  int node_end = node_sizes.empty() ? nranks : node_sizes[0];
  bool pos_inf = false, neg_inf = false;
  for (int i = 0; i < nranks; ++i) {
    const long double a = v[i];
    if (std::isinf(a)) {
      (a > 0 ? pos_inf : neg_inf) = true;
    } else {
      sum += a;
      node_partial += a;
      abs_sum += std::fabs(a);
    }
    const long double bound = 2 * nranks * u * abs_sum;
    // The accumulator's partial sum may be off by its bound: near its overflow it may be inf.
    if (std::max(std::fabs(sum), std::fabs(node_partial)) + bound > near_max) r.skip = true;
    if (i + 1 == node_end && ++node < node_sizes.size()) {
      nodes_total += node_partial;
      node_partial = 0;
      node_end += node_sizes[node];
      if (std::fabs(nodes_total) + bound > near_max) r.skip = true;
    }
  }
  if (pos_inf && neg_inf) {
    r.nan = true;
    return r;
  }
  if (pos_inf || neg_inf) {
    r.value = pos_inf ? inf : -inf;  // avg too
    return r;
  }
  const long double err_sum = ((nranks - 1) * u * 1.001L + nranks * slack) * abs_sum;
  if (op == xcclAvg) {
    r.value = sum / nranks;
    r.err = err_sum / nranks + u * (std::fabs(sum) + err_sum) / nranks + tiny;
  } else {
    r.value = sum;
    r.err = err_sum;
  }
  return r;
}

// For integers: the exact result modulo 2^bits (unsigned __int128 arithmetic wraps at 2^128,
// a multiple of every width), avg from the true (unwrapped) sum.
template <typename T>
typename T::Storage ExactInt(int op, const typename T::Storage* x, int nranks) {
  using S = typename T::Storage;
  using W = unsigned __int128;
  if (op == xcclMax || op == xcclMin) {
    S best = x[0];
    for (int i = 1; i < nranks; ++i)
      best = op == xcclMax ? std::max(best, x[i]) : std::min(best, x[i]);
    return best;
  }
  if (op == xcclAvg) {
    __int128 sum = 0;
    for (int i = 0; i < nranks; ++i) sum += static_cast<__int128>(x[i]);
    return static_cast<S>(sum / nranks);  // C++ division truncates toward zero
  }
  W acc = op == xcclProd ? 1 : 0;
  for (int i = 0; i < nranks; ++i) {
    const W xi = static_cast<W>(static_cast<__int128>(x[i]));  // sign-extended
    acc = op == xcclProd ? acc * xi : acc + xi;
  }
  return static_cast<S>(static_cast<typename std::make_unsigned<S>::type>(acc));
}

template <typename T>
std::string Show(typename T::Storage v) {
  std::ostringstream s;
  if constexpr (T::kInt) {
    s << +v;
  } else {
    char hex[24];
    snprintf(hex, sizeof(hex), "0x%0*llx", static_cast<int>(2 * sizeof(v)),
             static_cast<unsigned long long>(CodeOf<T>(v)));
    s.precision(17);
    s << hex << " (" << static_cast<double>(ValueOf<T>(v)) << ")";
  }
  return s.str();
}

}  // namespace reduce_check

// One reduction's description, for messages.
struct ReduceCall {
  int dtype = xcclFloat32;
  int op = xcclSum;
  Flavor flavor = Flavor::kPlain;
  uint64_t call = 0;
  std::string Describe() const {
    return std::string(ReduceTypeName(dtype)) + " " + RedOpName(op) + ", " + FlavorName(flavor) +
           " data, call " + std::to_string(call);
  }
};

// Checks `count` output elements at `out` that reduce elements [first, first + count) of every
// rank's send buffer, for `nranks` ranks. With one rank the output must be the input's bits (a
// copy). Returns "" or the number of wrong elements by each reference and the first one: its
// index, what came, what each reference wanted, and every rank's input.
inline std::string CheckReduced(const void* out, size_t first, size_t count, const ReduceCall& c,
                                uint64_t seed, int nranks) {
  using namespace reduce_check;
  // Across nodes, node by node (every platform).
  std::vector<int> node_sizes;
  const std::string& spec = xccl::GetParams().fake_nodes;
  if (!spec.empty()) {
    std::stringstream list(spec);
    std::string size;
    while (std::getline(list, size, ',')) node_sizes.push_back(std::stoi(size));
    int split = 0;
    for (int n : node_sizes) split += n;
    if (split != nranks) node_sizes.clear();  // a communicator of other ranks (a shrink)
  }
  return WithType(c.dtype, [&](auto t) -> std::string {
    using T = decltype(t);
    using S = typename T::Storage;
    std::vector<S> x(nranks);
    size_t wrong_exact = 0, wrong_order = 0, first_wrong = count;
    std::string detail;
    for (size_t i = 0; i < count; ++i) {
      for (int r = 0; r < nranks; ++r) x[r] = Input<T>(seed, r, c.call, first + i, c.op, c.flavor);
      S got;
      memcpy(&got, static_cast<const unsigned char*>(out) + i * sizeof(S), sizeof(S));
      const S order = RankOrder<T>(c.op, x.data(), nranks, node_sizes);
      bool order_ok, exact_ok = true;
      if (nranks == 1) {
        order_ok = CodeOf<T>(got) == CodeOf<T>(x[0]);
      } else if (IsNan<T>(order)) {
        order_ok = IsNan<T>(got);
      } else if (!T::kInt && (c.op == xcclMax || c.op == xcclMin) && ValueOf<T>(order) == 0) {
        order_ok = !IsNan<T>(got) && ValueOf<T>(got) == 0;
      } else {
        order_ok = CodeOf<T>(got) == CodeOf<T>(order);
      }
      // The exact reference (as words only for the first wrong element: this runs per element).
      ExactResult e;
      S exact_int{};
      if constexpr (T::kInt) {
        exact_int = ExactInt<T>(c.op, x.data(), nranks);
        exact_ok = got == exact_int;
      } else {
        e = Exact<T>(c.op, x.data(), nranks, node_sizes);
        if (nranks == 1 || e.skip) {
          // Not used: one rank's result is a copy; an accumulator overflow is (b)'s alone.
        } else if (e.nan) {
          exact_ok = IsNan<T>(got);
        } else {
          const long double lo = e.value - e.err, hi = e.value + e.err;
          if (IsNan<T>(got)) {
            exact_ok = false;
          } else if constexpr (T::kNarrow) {
            long double glo, ghi;
            RoundingInterval<T>(got, &glo, &ghi);
            exact_ok = ghi >= lo && glo <= hi;
          } else {
            const long double g = ValueOf<T>(got);
            exact_ok = std::isinf(e.value) ? g == e.value : (g >= lo && g <= hi);
          }
        }
      }
      if (order_ok && exact_ok) continue;
      wrong_order += !order_ok;
      wrong_exact += !exact_ok;
      if (first_wrong == count) {
        first_wrong = i;
        std::ostringstream d;
        d << "first at element " << first + i << " (output index " << i << "): got " << Show<T>(got)
          << ", rank-order reference " << (nranks == 1 ? Show<T>(x[0]) : Show<T>(order))
          << (order_ok ? " (matches)" : "") << ", exact reference ";
        if constexpr (T::kInt) {
          d << +exact_int;
        } else if (nranks == 1 || e.skip) {
          d << "(not used: " << (nranks == 1 ? "one rank" : "the accumulator overflows") << ")";
        } else if (e.nan) {
          d << "NaN";
        } else {
          d.precision(17);
          d << static_cast<double>(e.value) << " +- " << static_cast<double>(e.err);
        }
        d << (exact_ok ? " (within bound)" : "") << "; inputs by rank:";
        for (int r = 0; r < nranks; ++r) d << " " << Show<T>(x[r]);
        detail = d.str();
      }
    }
    if (first_wrong == count) return "";
    std::ostringstream s;
    s << c.Describe() << ": " << wrong_order << " of " << count
      << " elements differ from the rank-order reference, " << wrong_exact
      << " from the exact one; " << detail;
    return s.str();
  });
}

// FNV-1a of a buffer: what ranks exchange to compare their outputs bitwise.
inline uint64_t HashBytes(const void* data, size_t bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  const unsigned char* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

}  // namespace xccl_test
