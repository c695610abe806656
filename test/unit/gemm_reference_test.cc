// The reference GEMM plugin, through its ABI: every e4m3, bf16 and fp16 code decodes to the
// value its formula gives, fp32 -> bf16/fp16 rounds to nearest-even, random shapes match a
// double-precision GEMM of the decoded inputs within a proven bound, and bands of rows give
// the full run's bytes. Decoding and rounding here are written independently of the plugin's.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/float_formats.h"
#include "xccl_gemm.h"

namespace {

using xccl_test::Bf16Value;
using xccl_test::E4m3Value;
using xccl_test::Fp16Value;
using xccl_test::IeeeValue;
using xccl_test::Value;

// Rounds a normal-range value to `p` significant bits, to nearest, ties to even.
double RoundToBits(double v, int p) {
  int e;
  const double f = std::frexp(v, &e);  // v = f * 2^e, 0.5 <= |f| < 1
  return std::ldexp(std::nearbyint(std::ldexp(f, p)), e - p);
}

// ---- Fixture: the plugin loaded by path, one ctx ----

class GemmReferenceTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef XCCL_GEMM_REFERENCE_PATH
    GTEST_SKIP() << "the reference plugin is not built";
#else
    handle_ = dlopen(XCCL_GEMM_REFERENCE_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    api_ = static_cast<const xcclGemmPlugin_v1_t*>(dlsym(handle_, XCCL_GEMM_PLUGIN_SYMBOL_V1));
    ASSERT_NE(api_, nullptr);
    ASSERT_EQ(api_->init(&ctx_, 0), xcclSuccess);
#endif
  }
  void TearDown() override {
    if (api_ && ctx_) {
      EXPECT_EQ(api_->finalize(ctx_), xcclSuccess);
    }
    if (handle_) dlclose(handle_);
  }

  xcclResult_t Run(const xcclGemmProblem& p, int64_t begin, int64_t end) {
    xcclGemmBand band{begin, end};
    return api_->run(ctx_, &p, &band, nullptr);
  }

  void* handle_ = nullptr;
  const xcclGemmPlugin_v1_t* api_ = nullptr;
  void* ctx_ = nullptr;
};

constexpr uint16_t kPoison = 0xFFFF;  // NaN in bf16 and fp16 alike: never a valid result here

size_t Size(xcclDataType_t t) { return t == xcclFloat8e4m3 ? 1 : 2; }

// Operands of one problem, owned; problem() points into them.
struct Operands {
  xcclGemmProblem p{};
  std::vector<uint8_t> a, b;
  std::vector<uint16_t> c;
  std::vector<float> sa, sb;
  xcclGemmProblem problem() {
    xcclGemmProblem q = p;
    q.a = a.data();
    q.b = b.data();
    q.c = c.data();
    q.a_scale = sa.empty() ? nullptr : sa.data();
    q.b_scale = sb.empty() ? nullptr : sb.data();
    return q;
  }
  void Poison() { std::fill(c.begin(), c.end(), kPoison); }
};

Operands MakeOperands(int64_t m, int64_t n, int64_t k, xcclDataType_t in, xcclDataType_t out,
                      bool ptpc, int64_t pad) {
  Operands o;
  o.p.m = m, o.p.n = n, o.p.k = k;
  o.p.a_type = o.p.b_type = in;
  o.p.c_type = out;
  o.p.scale_mode = ptpc ? xcclGemmScalePtpc : xcclGemmScaleNone;
  o.p.lda = k + pad, o.p.ldb = k + 2 * pad, o.p.ldc = n + pad;
  o.a.assign(m * o.p.lda * Size(in), 0);
  o.b.assign(n * o.p.ldb * Size(in), 0);
  o.c.assign(m * o.p.ldc, kPoison);
  if (ptpc) o.sa.assign(m, 1.0f), o.sb.assign(n, 1.0f);
  return o;
}

// Random finite codes of moderate magnitude (|v| < 8), so fp32 sums of a few hundred terms stay
// far inside fp16's range; subnormal e4m3 codes are included.
void FillRandom(xcclDataType_t t, std::vector<uint8_t>* bytes, std::mt19937_64& rng) {
  if (t == xcclFloat8e4m3) {
    for (auto& v : *bytes) v = static_cast<uint8_t>((rng() & 0x87) | ((rng() % 10) << 3));
    return;
  }
  const int mbits = t == xcclBfloat16 ? 7 : 10, bias = t == xcclBfloat16 ? 127 : 15;
  uint16_t* codes = reinterpret_cast<uint16_t*>(bytes->data());
  for (size_t i = 0; i < bytes->size() / 2; ++i) {
    const uint32_t e = bias - 4 + rng() % 7;  // 2^-4 .. 2^2
    codes[i] =
        static_cast<uint16_t>(((rng() & 1) << 15) | (e << mbits) | (rng() & ((1u << mbits) - 1)));
  }
}

// ---- Decoding: every code, through a k=1 GEMM against 1.0 whose output holds it exactly ----

TEST_F(GemmReferenceTest, EveryE4m3CodeDecodes) {
  // The formula's anchors, so that a wrong table cannot agree with a wrong plugin.
  ASSERT_EQ(E4m3Value(0x38), 1.0);
  ASSERT_EQ(E4m3Value(0x7E), 448.0);
  ASSERT_EQ(E4m3Value(0x01), std::ldexp(1.0, -9));
  ASSERT_EQ(E4m3Value(0x08), std::ldexp(1.0, -6));
  ASSERT_EQ(E4m3Value(0xC0), -2.0);
  for (int c = 0; c < 256; ++c) EXPECT_EQ(std::isnan(E4m3Value(c)), (c & 0x7F) == 0x7F) << c;

  for (xcclGemmScaleMode_t mode : {xcclGemmScaleNone, xcclGemmScalePtpc}) {
    Operands o =
        MakeOperands(256, 16, 1, xcclFloat8e4m3, xcclFloat16, mode == xcclGemmScalePtpc, 0);
    for (int c = 0; c < 256; ++c) o.a[c] = static_cast<uint8_t>(c);
    std::fill(o.b.begin(), o.b.end(), 0x38);  // 1.0
    ASSERT_EQ(Run(o.problem(), 0, 256), xcclSuccess);
    for (int c = 0; c < 256; ++c) {
      for (int j = 0; j < 16; ++j) {
        // fp16 holds every e4m3 value exactly (2^-9 .. 448).
        const double got = Fp16Value(o.c[c * 16 + j]);
        if (std::isnan(E4m3Value(c)))
          EXPECT_TRUE(std::isnan(got)) << "code " << c;
        else
          EXPECT_EQ(got, E4m3Value(c)) << "code 0x" << std::hex << c;
      }
    }
  }
}

TEST_F(GemmReferenceTest, Every16BitCodeDecodesAndReencodes) {
  for (xcclDataType_t t : {xcclBfloat16, xcclFloat16}) {
    SCOPED_TRACE(t == xcclBfloat16 ? "bf16" : "fp16");
    Operands o = MakeOperands(65536, 16, 1, t, t, false, 0);
    uint16_t* a = reinterpret_cast<uint16_t*>(o.a.data());
    for (uint32_t c = 0; c < 65536; ++c) a[c] = static_cast<uint16_t>(c);
    const uint16_t one = t == xcclBfloat16 ? 0x3F80 : 0x3C00;
    uint16_t* b = reinterpret_cast<uint16_t*>(o.b.data());
    std::fill(b, b + 16, one);
    ASSERT_EQ(Run(o.problem(), 0, 65536), xcclSuccess);
    int bad = 0;
    for (uint32_t c = 0; c < 65536 && bad < 10; ++c) {
      const double want = IeeeValue(c, t == xcclBfloat16 ? 8 : 5, t == xcclBfloat16 ? 7 : 10);
      for (int j = 0; j < 16; ++j) {
        const uint16_t out = o.c[c * 16 + j];
        const double got = t == xcclBfloat16 ? Bf16Value(out) : Fp16Value(out);
        // By value: -0 comes back +0 (the fp32 sum starts at +0); NaN stays NaN.
        const bool ok = std::isnan(want) ? std::isnan(got) : got == want;
        if (!ok) {
          ADD_FAILURE() << "code 0x" << std::hex << c << " -> 0x" << out;
          ++bad;
          break;
        }
      }
    }
  }
}

// ---- Rounding: x + y (exact in fp32 and double) rounded to the output ----

TEST_F(GemmReferenceTest, RoundsToNearestEven) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (xcclDataType_t t : {xcclBfloat16, xcclFloat16}) {
    SCOPED_TRACE(t == xcclBfloat16 ? "bf16" : "fp16");
    const int p = t == xcclBfloat16 ? 8 : 11;
    const int64_t m = 4096;
    Operands o = MakeOperands(m, 16, 2, t, t, false, 0);
    FillRandom(t, &o.a, rng);
    uint16_t* a = reinterpret_cast<uint16_t*>(o.a.data());
    uint16_t* b = reinterpret_cast<uint16_t*>(o.b.data());
    const uint16_t one = t == xcclBfloat16 ? 0x3F80 : 0x3C00;
    std::fill(b, b + 32, one);
    // Explicit ties: 1 + 2^-p rounds down to 1 (even); (1 + 2^-(p-1)) + 2^-p rounds up to
    // 1 + 2^-(p-2).
    const uint16_t tie_lo = t == xcclBfloat16 ? 0x3B80 : 0x1000;  // 2^-8 / 2^-11: half an ulp of 1
    a[0] = one, a[1] = tie_lo;
    a[2] = one + 1, a[3] = tie_lo;
    o.Poison();
    ASSERT_EQ(Run(o.problem(), 0, m), xcclSuccess);
    const auto value = [&](uint16_t c) { return t == xcclBfloat16 ? Bf16Value(c) : Fp16Value(c); };
    EXPECT_EQ(value(o.c[0]), 1.0);
    EXPECT_EQ(value(o.c[16]), 1.0 + std::ldexp(1.0, 2 - p));  // 1 + 2 ulps
    for (int64_t i = 0; i < m; ++i) {
      const double exact = value(a[2 * i]) + value(a[2 * i + 1]);
      const double want = exact == 0 ? 0.0 : RoundToBits(exact, p);
      ASSERT_EQ(value(o.c[i * 16]), want)
          << "row " << i << ": " << value(a[2 * i]) << " + " << value(a[2 * i + 1]);
    }
  }
  // fp16 overflow: 65504 + 8 stays 65504, 65504 + 16 = 65520 ties to inf.
  Operands o = MakeOperands(2, 16, 2, xcclFloat16, xcclFloat16, false, 0);
  uint16_t* a = reinterpret_cast<uint16_t*>(o.a.data());
  uint16_t* b = reinterpret_cast<uint16_t*>(o.b.data());
  std::fill(b, b + 32, 0x3C00);
  a[0] = 0x7BFF, a[1] = 0x4800;  // 65504 + 8
  a[2] = 0x7BFF, a[3] = 0x4C00;  // 65504 + 16
  ASSERT_EQ(Run(o.problem(), 0, 2), xcclSuccess);
  EXPECT_EQ(o.c[0], 0x7BFF);
  EXPECT_EQ(o.c[16], 0x7C00);
}

// ---- Random shapes against a double GEMM of the decoded inputs ----

struct Config {
  const char* label;
  xcclDataType_t in, out;
  bool ptpc;
};
const Config kConfigs[] = {
    {"bf16->bf16", xcclBfloat16, xcclBfloat16, false},
    {"fp16->fp16", xcclFloat16, xcclFloat16, false},
    {"bf16->fp16", xcclBfloat16, xcclFloat16, false},
    {"fp8 ptpc->bf16", xcclFloat8e4m3, xcclBfloat16, true},
    {"fp8 ptpc->fp16", xcclFloat8e4m3, xcclFloat16, true},
};

Operands RandomOperands(const Config& cfg, std::mt19937_64& rng) {
  const int64_t m = 1 + rng() % 70, n = 16 * (1 + rng() % 6), k = 1 + rng() % 300;
  Operands o = MakeOperands(m, n, k, cfg.in, cfg.out, cfg.ptpc, rng() % 4);
  FillRandom(cfg.in, &o.a, rng);
  FillRandom(cfg.in, &o.b, rng);
  std::uniform_real_distribution<float> scale(0.5f, 2.0f);
  for (float& s : o.sa) s = scale(rng);
  for (float& s : o.sb) s = scale(rng);
  return o;
}

TEST_F(GemmReferenceTest, RandomShapesMatchDoubleReference) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const Config& cfg : kConfigs) {
    for (int round = 0; round < 6; ++round) {
      Operands o = RandomOperands(cfg, rng);
      const xcclGemmProblem& p = o.p;
      SCOPED_TRACE(std::string(cfg.label) + " m=" + std::to_string(p.m) +
                   " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k));
      ASSERT_EQ(api_->supports(ctx_, &p), xcclSuccess);
      o.Poison();
      ASSERT_EQ(Run(o.problem(), 0, p.m), xcclSuccess);
      // Unit roundoff of the output, and of the fp32 accumulation (products are exact in fp32
      // for these inputs: at most 11 + 11 significant bits).
      const double u_out = std::ldexp(1.0, cfg.out == xcclBfloat16 ? -8 : -11);
      const double gamma = (p.k + 2) * std::ldexp(1.0, -24) * 1.01;
      double err2 = 0, ref2 = 0;
      int bad = 0;
      for (int64_t i = 0; i < p.m; ++i) {
        for (int64_t j = 0; j < p.ldc; ++j) {
          const uint16_t out = o.c[i * p.ldc + j];
          if (j >= p.n) {  // the stride's padding is never written
            EXPECT_EQ(out, kPoison) << i << "," << j;
            continue;
          }
          double ref = 0, abs_sum = 0;
          for (int64_t l = 0; l < p.k; ++l) {
            const double x = Value(p.a_type, o.a.data(), i * p.lda + l) *
                             Value(p.b_type, o.b.data(), j * p.ldb + l);
            ref += x, abs_sum += std::fabs(x);
          }
          const double scale = cfg.ptpc ? double(o.sa[i]) * double(o.sb[j]) : 1.0;
          ref *= scale, abs_sum *= scale;
          const double got = cfg.out == xcclBfloat16 ? Bf16Value(out) : Fp16Value(out);
          const double accum_err = gamma * abs_sum;
          const double bound = u_out * (std::fabs(ref) + accum_err) + accum_err + 0x1p-24;
          if (!(std::fabs(got - ref) <= bound) && bad++ < 5)
            ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", want " << ref << " +- "
                          << bound;
          err2 += (got - ref) * (got - ref), ref2 += ref * ref;
        }
      }
      // Output rounding alone bounds the relative L2 error by u_out; accumulation adds little.
      EXPECT_LE(std::sqrt(err2 / ref2), 1.1 * u_out);
    }
  }
}

// ---- Bands: any cut into row bands gives the full run's bytes, and a band writes only its rows

TEST_F(GemmReferenceTest, BandsEqualFullRunByteForByte) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (const Config& cfg : kConfigs) {
    SCOPED_TRACE(cfg.label);
    Operands o = RandomOperands(cfg, rng);
    const xcclGemmProblem& p = o.p;
    o.Poison();
    ASSERT_EQ(Run(o.problem(), 0, p.m), xcclSuccess);
    const std::vector<uint16_t> full = o.c;
    for (int cut = 0; cut < 4; ++cut) {
      o.Poison();
      // Random cut points, empty bands included, computed in a shuffled order.
      std::vector<int64_t> edges = {0, p.m};
      for (int e = 0; e < 1 + cut * 3; ++e) edges.push_back(rng() % (p.m + 1));
      std::sort(edges.begin(), edges.end());
      std::vector<size_t> order(edges.size() - 1);
      for (size_t b = 0; b < order.size(); ++b) order[b] = b;
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t b : order) ASSERT_EQ(Run(o.problem(), edges[b], edges[b + 1]), xcclSuccess);
      ASSERT_EQ(std::memcmp(o.c.data(), full.data(), full.size() * 2), 0) << "cut " << cut;
    }
    // One band alone: rows outside it keep the poison.
    o.Poison();
    const int64_t begin = rng() % (p.m + 1), end = begin + rng() % (p.m - begin + 1);
    ASSERT_EQ(Run(o.problem(), begin, end), xcclSuccess);
    for (int64_t i = 0; i < p.m; ++i) {
      const bool inside = i >= begin && i < end;
      const int cmp = std::memcmp(&o.c[i * p.ldc], &full[i * p.ldc], p.ldc * 2);
      if (inside) {
        EXPECT_EQ(cmp, 0) << "row " << i;
      } else {
        for (int64_t j = 0; j < p.ldc; ++j) ASSERT_EQ(o.c[i * p.ldc + j], kPoison) << i;
      }
    }
  }
}

// ---- Refusals: unsupported problems and bad bands change nothing ----

TEST_F(GemmReferenceTest, RefusesUnsupportedProblemsAndBadBands) {
  Operands base = MakeOperands(8, 16, 8, xcclBfloat16, xcclBfloat16, false, 0);
  const auto refused = [&](xcclGemmProblem p, int64_t begin, int64_t end, const char* what) {
    base.Poison();
    EXPECT_EQ(Run(p, begin, end), xcclInvalidArgument) << what;
    for (uint16_t v : base.c) ASSERT_EQ(v, kPoison) << what;
  };
  xcclGemmProblem p = base.problem();
  EXPECT_EQ(api_->supports(ctx_, &p), xcclSuccess);
  EXPECT_EQ(Run(p, 0, 8), xcclSuccess);
  p = base.problem(), p.b_type = xcclFloat16;
  EXPECT_EQ(api_->supports(ctx_, &p), xcclInvalidArgument);
  refused(p, 0, 8, "mixed input types");
  p = base.problem(), p.c_type = xcclFloat32;
  refused(p, 0, 8, "fp32 output");
  p = base.problem(), p.a_type = p.b_type = xcclFloat8e5m2;
  refused(p, 0, 8, "e5m2 input");
  p = base.problem(), p.ldc = 15;
  refused(p, 0, 8, "ldc < n");
  p = base.problem(), p.lda = 7;
  refused(p, 0, 8, "lda < k");
  p = base.problem(), p.scale_mode = static_cast<xcclGemmScaleMode_t>(7);
  refused(p, 0, 8, "scale mode");
  p = base.problem(), p.scale_mode = xcclGemmScalePtpc;  // no scale pointers
  refused(p, 0, 8, "ptpc without scales");
  p = base.problem();
  refused(p, -1, 4, "band begins before 0");
  refused(p, 5, 4, "band ends before it begins");
  refused(p, 0, 9, "band ends past m");
  EXPECT_EQ(api_->run(ctx_, &p, nullptr, nullptr), xcclInvalidArgument);
}

}  // namespace
