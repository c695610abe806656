// Block scales (xcclGemmScaleBlock128, DeepSeek-V3's format) in the reference plugin, through
// its version 2 symbol: every output element equals the documented arithmetic done here in fp32
// (bits), stays within fp16 rounding of a double-precision GEMM of the decoded inputs, bands give
// the full run's bytes (a band that read its scales at a_scale + row_begin, the ptpc arithmetic,
// would not), and supports() refuses what the format forbids. k not a multiple of 128 (a short
// last K block), n not a multiple of 128, a_scale_ld larger than m.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "common/float_formats.h"
#include "xccl_gemm.h"

namespace {

using xccl_test::E4m3Value;
using xccl_test::Fp16Value;

class GemmBlockscaleTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef XCCL_GEMM_REFERENCE_PATH
    GTEST_SKIP() << "the reference plugin is not built";
#else
    handle_ = dlopen(XCCL_GEMM_REFERENCE_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    api_ = static_cast<const xcclGemmPlugin_v2_t*>(dlsym(handle_, XCCL_GEMM_PLUGIN_SYMBOL_V2));
    ASSERT_NE(api_, nullptr) << "the reference plugin exports no " XCCL_GEMM_PLUGIN_SYMBOL_V2;
    ASSERT_EQ(api_->abi_version, XCCL_GEMM_PLUGIN_ABI_V2);
    ASSERT_EQ(api_->init(&ctx_, -1), xcclSuccess);
#endif
  }
  void TearDown() override {
    if (api_ && ctx_) {
      EXPECT_EQ(api_->finalize(ctx_), xcclSuccess);
    }
    if (handle_) dlclose(handle_);
  }
  xcclResult_t Run(const xcclGemmProblem& p, int64_t begin, int64_t end) {
    const xcclGemmBand band{begin, end};
    return api_->run(ctx_, &p, &band, nullptr);
  }

  void* handle_ = nullptr;
  const xcclGemmPlugin_v2_t* api_ = nullptr;
  void* ctx_ = nullptr;
};

// One block-scaled problem with fresh operands: A [m][k], B [n][k] e4m3 codes of moderate
// magnitude, A scales [KB][ld], B scales [ceil(n/128)][KB], every scale different.
struct Blockscale {
  int64_t m, n, k, ld, blocks;
  std::vector<uint8_t> a, b;
  std::vector<float> sa, sb;
  std::vector<uint16_t> c;
  Blockscale(int64_t m_in, int64_t n_in, int64_t k_in, int64_t ld_extra, std::mt19937_64& rng)
      : m(m_in), n(n_in), k(k_in), ld(m_in + ld_extra), blocks((k_in + 127) / 128) {
    auto code = [&] { return static_cast<uint8_t>((rng() & 0x87) | ((rng() % 10) << 3)); };
    a.resize(m * k);
    b.resize(n * k);
    for (auto& v : a) v = code();
    for (auto& v : b) v = code();
    std::uniform_real_distribution<float> scale(0.25f, 2.0f);
    sa.resize(blocks * ld);
    sb.resize(((n + 127) / 128) * blocks);
    for (auto& s : sa) s = scale(rng);
    for (auto& s : sb) s = scale(rng);
    c.assign(m * n, 0xFFFF);
  }
  xcclGemmProblem Problem() {
    xcclGemmProblem p{};
    p.m = m, p.n = n, p.k = k;
    p.a_type = p.b_type = xcclFloat8e4m3;
    p.c_type = xcclFloat16;
    p.scale_mode = xcclGemmScaleBlock128;
    p.lda = p.ldb = k, p.ldc = n;
    p.a = a.data(), p.b = b.data(), p.c = c.data();
    p.a_scale = sa.data(), p.b_scale = sb.data();
    p.a_scale_ld = ld;
    return p;
  }
  // The documented arithmetic in fp32, written from xccl_gemm.h (not from the plugin).
  float Fp32(int64_t i, int64_t j) const {
    volatile float acc = 0.0f;  // volatile: each sum rounded to fp32, as documented
    for (int64_t kb = 0; kb < blocks; ++kb) {
      volatile float part = 0.0f;
      for (int64_t l = 128 * kb; l < std::min<int64_t>(k, 128 * kb + 128); ++l) {
        // Each product stored before its sum, so that no multiply-add fuses them.
        volatile float product = static_cast<float>(E4m3Value(a[i * k + l])) *
                                 static_cast<float>(E4m3Value(b[j * k + l]));
        part = part + product;
      }
      volatile float scaled = part * sa[kb * ld + i];
      scaled = scaled * sb[(j / 128) * blocks + kb];
      acc = acc + scaled;
    }
    return acc;
  }
  double Fp64(int64_t i, int64_t j) const {
    double acc = 0;
    for (int64_t kb = 0; kb < blocks; ++kb) {
      double part = 0;
      for (int64_t l = 128 * kb; l < std::min<int64_t>(k, 128 * kb + 128); ++l)
        part += E4m3Value(a[i * k + l]) * E4m3Value(b[j * k + l]);
      acc += part * sa[kb * ld + i] * sb[(j / 128) * blocks + kb];
    }
    return acc;
  }
};

// fp32 -> fp16 bits, round to nearest, ties to even, written from the format (not the plugin's
// encoder): the values here are finite.
uint16_t ToFp16(float f) {
  const double v = std::fabs(static_cast<double>(f));
  const uint16_t sign = f < 0 ? 0x8000 : 0;
  if (v < std::ldexp(1.0, -14))  // subnormal: a multiple of 2^-24 (1024 is the smallest normal)
    return sign | static_cast<uint16_t>(std::nearbyint(std::ldexp(v, 24)));
  int e;
  std::frexp(v, &e);  // v in [2^(e-1), 2^e)
  const double ulp = std::ldexp(1.0, e - 11);
  const double q = std::nearbyint(v / ulp) * ulp;  // an even multiple on a tie
  if (q >= 65520.0) return sign | 0x7C00;
  int qe;
  std::frexp(q, &qe);
  const uint32_t exponent = static_cast<uint32_t>(qe - 1 + 15);
  const uint32_t mantissa = static_cast<uint32_t>(std::ldexp(q, -(qe - 1)) * 1024.0) - 1024;
  return sign | static_cast<uint16_t>(exponent << 10 | mantissa);
}

TEST_F(GemmBlockscaleTest, MatchesTheDocumentedArithmeticAndAnFp64Gemm) {
  std::mt19937_64 rng(std::random_device{}());
  // k 300: KB 3 with a 44-wide last block; n 200: two column tiles of B scales, one partial.
  for (const auto& shape :
       {std::vector<int64_t>{37, 200, 300, 5}, {64, 128, 128, 0}, {19, 257, 77, 3}}) {
    Blockscale o(shape[0], shape[1], shape[2], shape[3], rng);
    ASSERT_EQ(Run(o.Problem(), 0, o.m), xcclSuccess);
    double err2 = 0, ref2 = 0;
    int64_t wrong_bits = 0;
    for (int64_t i = 0; i < o.m; ++i) {
      for (int64_t j = 0; j < o.n; ++j) {
        const uint16_t got = o.c[i * o.n + j];
        if (got != ToFp16(o.Fp32(i, j)) && wrong_bits++ < 3)
          ADD_FAILURE() << "C[" << i << "][" << j << "] bits " << got << ", documented "
                        << ToFp16(o.Fp32(i, j)) << " (m " << o.m << " n " << o.n << " k " << o.k
                        << ")";
        const double ref = o.Fp64(i, j);
        err2 += (Fp16Value(got) - ref) * (Fp16Value(got) - ref);
        ref2 += ref * ref;
      }
    }
    EXPECT_EQ(wrong_bits, 0);
    EXPECT_LT(std::sqrt(err2 / ref2), 1e-3) << "m " << o.m << " n " << o.n << " k " << o.k;
  }
}

// Bands of rows give the full run's bytes; with every row's scale different, a band reading
// a_scale + row_begin (or any offset but kb * a_scale_ld + i) would not.
TEST_F(GemmBlockscaleTest, BandsAreByteIdenticalAndReadTheirRowsScales) {
  std::mt19937_64 rng(std::random_device{}());
  Blockscale o(53, 160, 260, 11, rng);
  ASSERT_EQ(Run(o.Problem(), 0, o.m), xcclSuccess);
  const std::vector<uint16_t> full = o.c;
  std::fill(o.c.begin(), o.c.end(), 0xFFFF);
  for (const auto& band : {std::pair<int64_t, int64_t>{0, 7}, {7, 8}, {8, 30}, {30, 53}})
    ASSERT_EQ(Run(o.Problem(), band.first, band.second), xcclSuccess);
  EXPECT_EQ(memcmp(full.data(), o.c.data(), full.size() * 2), 0) << "bands differ from one run";
  // The trap itself: shifting the scale tile by row_begin changes a later band's bytes.
  Blockscale shifted = o;
  std::vector<float> moved(o.sa.size());
  for (size_t x = 0; x + 8 < moved.size(); ++x) moved[x] = o.sa[x + 8];
  shifted.sa = moved;
  std::fill(shifted.c.begin(), shifted.c.end(), 0xFFFF);
  ASSERT_EQ(Run(shifted.Problem(), 8, 30), xcclSuccess);
  EXPECT_NE(memcmp(full.data() + 8 * o.n, shifted.c.data() + 8 * o.n, 22 * o.n * 2), 0)
      << "the scales of a band do not reach its bytes: the check above has no teeth";
}

TEST_F(GemmBlockscaleTest, SupportsRefusesWhatTheFormatForbids) {
  std::mt19937_64 rng(1);
  Blockscale o(16, 128, 128, 0, rng);
  xcclGemmProblem p = o.Problem();
  EXPECT_EQ(api_->supports(ctx_, &p), xcclSuccess);
  p.a_scale_ld = p.m - 1;  // the tile cannot hold every row
  EXPECT_EQ(api_->supports(ctx_, &p), xcclInvalidArgument);
  p = o.Problem();
  p.a_type = p.b_type = xcclBfloat16;  // block scales come with fp8
  EXPECT_EQ(api_->supports(ctx_, &p), xcclInvalidArgument);
  p = o.Problem();
  p.b_scale = nullptr;
  EXPECT_EQ(Run(p, 0, p.m), xcclInvalidArgument);
}

}  // namespace
