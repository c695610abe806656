// The cublaslt plugin's block scales (xcclGemmScaleBlock128, its version 2 symbol) on GPU 0,
// against a double-precision GEMM of xccl_gemm.h's formula on the host: whole problems (n not a
// multiple of 128, k not a multiple of 128, scale pointers off 16 bytes), a band of a problem
// whose A-scale tile is wider than m (it must read its rows' scales at kb * a_scale_ld + i, never
// at a_scale + row_begin), bands of row counts that are not multiples of 4, and what supports()
// refuses. Skips, saying why, without a GPU, on a GPU other than sm 9.0, or without the plugin.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "common/float_formats.h"
#include "gpu/gpu_runtime.h"
#include "xccl_gemm.h"

namespace xccl_test {
namespace {

#if defined(XCCL_GEMM_CUBLASLT_PATH)

// bf16's rounding alone is about 1.7e-3 of relative L2 (a probe on an H200 measured 1.4e-3 to
// 1.7e-3 for these modes); 3e-3 leaves room for fp32 sums in another order, not for a wrong scale.
constexpr double kTolerance = 3e-3;

struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr != nullptr) (void)gpu::Free(ptr);
  }
};

// One block-scaled problem's host operands: e4m3 A [m][k] and B [n][k], A's scales [KB][ld],
// B's [ceil(n/128)][KB], every scale its own. `strong`: A's scales alternate between about 1/8
// and 8 from one K block to the next, so that a scale read from the wrong block is far off.
struct Operands {
  int64_t m, n, k, ld, blocks;
  std::vector<uint8_t> a, b;
  std::vector<double> av, bv;  // decoded
  std::vector<float> sa, sb;

  Operands(int64_t m_in, int64_t n_in, int64_t k_in, int64_t ld_in, bool strong,
           std::mt19937_64& rng)
      : m(m_in), n(n_in), k(k_in), ld(ld_in), blocks((k_in + 127) / 128) {
    // Exponent fields 0-9: |x| <= 7.5, subnormals included, never the NaN code.
    auto code = [&] { return static_cast<uint8_t>((rng() & 0x87) | ((rng() % 10) << 3)); };
    a.resize(m * k);
    b.resize(n * k);
    for (auto& v : a) v = code();
    for (auto& v : b) v = code();
    for (uint8_t v : a) av.push_back(E4m3Value(v));
    for (uint8_t v : b) bv.push_back(E4m3Value(v));
    std::uniform_real_distribution<float> scale(0.25f, 2.0f), mild(0.5f, 1.5f);
    sa.resize(blocks * ld);
    for (int64_t kb = 0; kb < blocks; ++kb) {
      for (int64_t i = 0; i < ld; ++i)
        sa[kb * ld + i] = strong ? mild(rng) * (kb % 2 == 0 ? 0.125f : 8.0f) : scale(rng);
    }
    sb.resize(((n + 127) / 128) * blocks);
    for (auto& s : sb) s = scale(rng);
  }

  // C[i][j] by xccl_gemm.h's formula in double precision, row i's scale for block kb read at
  // sa[a_index(i, kb)] (the documented kb * ld + i unless a test asks for a wrong one).
  template <typename AIndex>
  std::vector<double> Reference(int64_t row_begin, int64_t row_end, AIndex a_index) const {
    std::vector<double> c((row_end - row_begin) * n);
    for (int64_t i = row_begin; i < row_end; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double acc = 0;
        for (int64_t kb = 0; kb < blocks; ++kb) {
          double part = 0;
          for (int64_t l = 128 * kb; l < std::min<int64_t>(k, 128 * kb + 128); ++l)
            part += av[i * k + l] * bv[j * k + l];
          acc += part * sa[a_index(i, kb)] * sb[(j / 128) * blocks + kb];
        }
        c[(i - row_begin) * n + j] = acc;
      }
    }
    return c;
  }
  std::vector<double> Reference(int64_t row_begin, int64_t row_end) const {
    return Reference(row_begin, row_end, [&](int64_t i, int64_t kb) { return kb * ld + i; });
  }
};

double CodeValue(xcclDataType_t type, uint16_t code) {
  return type == xcclBfloat16 ? Bf16Value(code) : Fp16Value(code);
}

// Relative L2 of rows [row_begin, row_end) of C (codes, [m][n]) against `want` (those rows);
// infinite where any element is not finite, as C's poison (all ones: NaN) is where nothing wrote.
double RelativeL2(const std::vector<uint16_t>& c, xcclDataType_t type, int64_t n, int64_t row_begin,
                  int64_t row_end, const std::vector<double>& want) {
  double err2 = 0, ref2 = 0;
  for (int64_t i = row_begin; i < row_end; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      const double got = CodeValue(type, c[i * n + j]), w = want[(i - row_begin) * n + j];
      if (!std::isfinite(got)) return INFINITY;
      err2 += (got - w) * (got - w);
      ref2 += w * w;
    }
  }
  return std::sqrt(err2 / ref2);
}

// The same, of rows of two results against each other.
double RelativeL2(const std::vector<uint16_t>& c, const std::vector<uint16_t>& want,
                  xcclDataType_t type, int64_t n, int64_t row_begin, int64_t row_end) {
  std::vector<double> w;
  for (int64_t i = row_begin * n; i < row_end * n; ++i) w.push_back(CodeValue(type, want[i]));
  return RelativeL2(c, type, n, row_begin, row_end, w);
}

class CublasltBlockscaleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int gpus = 0;
    if (gpu::GetDeviceCount(&gpus) != gpu::kSuccess || gpus == 0)
      GTEST_SKIP() << "no GPU visible: the cublaslt plugin needs one";
    int major = 0, minor = 0;
    ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0), cudaSuccess);
    ASSERT_EQ(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, 0), cudaSuccess);
    if (major != 9 || minor != 0)
      GTEST_SKIP() << "GPU 0 is sm " << major << "." << minor
                   << ": cuBLASLt's 128-element block scales are Hopper (sm 9.0) only";
    handle_ = dlopen(XCCL_GEMM_CUBLASLT_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    api_ = static_cast<const xcclGemmPlugin_v2_t*>(dlsym(handle_, XCCL_GEMM_PLUGIN_SYMBOL_V2));
    ASSERT_NE(api_, nullptr) << "the cublaslt plugin exports no " XCCL_GEMM_PLUGIN_SYMBOL_V2;
    ASSERT_EQ(api_->abi_version, XCCL_GEMM_PLUGIN_ABI_V2);
    ASSERT_GE(api_->struct_size, sizeof(xcclGemmPlugin_v2_t));
    ASSERT_EQ(gpu::SetDevice(0), gpu::kSuccess);
    ASSERT_EQ(gpu::StreamCreateNonBlocking(&stream_), gpu::kSuccess);
    ASSERT_EQ(api_->init(&ctx_, 0), xcclSuccess);
  }
  void TearDown() override {
    if (api_ != nullptr && ctx_ != nullptr) {
      EXPECT_EQ(api_->finalize(ctx_), xcclSuccess);
    }
    if (stream_ != nullptr) (void)gpu::StreamDestroy(stream_);
    if (handle_ != nullptr) dlclose(handle_);
  }

  // o's operands in device memory, scale arrays `scale_offset` bytes past an allocation's start
  // (16: aligned as cuBLASLt wants; 4: not), as a problem with C NULL.
  struct Uploaded {
    DeviceBuffer a, b, sa, sb;
    xcclGemmProblem p{};
  };
  void Upload(const Operands& o, xcclDataType_t out, size_t scale_offset, Uploaded* u) {
    ASSERT_EQ(gpu::Malloc(&u->a.ptr, o.a.size()), gpu::kSuccess);
    ASSERT_EQ(gpu::Malloc(&u->b.ptr, o.b.size()), gpu::kSuccess);
    ASSERT_EQ(gpu::Malloc(&u->sa.ptr, o.sa.size() * 4 + 16), gpu::kSuccess);
    ASSERT_EQ(gpu::Malloc(&u->sb.ptr, o.sb.size() * 4 + 16), gpu::kSuccess);
    char* sa = static_cast<char*>(u->sa.ptr) + scale_offset;
    char* sb = static_cast<char*>(u->sb.ptr) + scale_offset;
    ASSERT_EQ(gpu::MemcpyAsync(u->a.ptr, o.a.data(), o.a.size(), stream_), gpu::kSuccess);
    ASSERT_EQ(gpu::MemcpyAsync(u->b.ptr, o.b.data(), o.b.size(), stream_), gpu::kSuccess);
    ASSERT_EQ(gpu::MemcpyAsync(sa, o.sa.data(), o.sa.size() * 4, stream_), gpu::kSuccess);
    ASSERT_EQ(gpu::MemcpyAsync(sb, o.sb.data(), o.sb.size() * 4, stream_), gpu::kSuccess);
    ASSERT_EQ(gpu::StreamSynchronize(stream_), gpu::kSuccess);  // before the host copies go
    xcclGemmProblem& p = u->p;
    p.m = o.m, p.n = o.n, p.k = o.k;
    p.a_type = p.b_type = xcclFloat8e4m3;
    p.c_type = out;
    p.scale_mode = xcclGemmScaleBlock128;
    p.lda = p.ldb = o.k, p.ldc = o.n;
    p.a = u->a.ptr, p.b = u->b.ptr;
    p.a_scale = reinterpret_cast<const float*>(sa);
    p.b_scale = reinterpret_cast<const float*>(sb);
    p.a_scale_ld = o.ld;
  }

  // Runs the bands of p into a fresh C poisoned with all-ones bytes (NaN in bf16 and fp16) and
  // returns C.
  void RunBands(xcclGemmProblem p, const std::vector<xcclGemmBand>& bands,
                std::vector<uint16_t>* c) {
    const size_t bytes = p.m * p.ldc * 2;
    DeviceBuffer dc;
    ASSERT_EQ(gpu::Malloc(&dc.ptr, bytes), gpu::kSuccess);
    ASSERT_EQ(gpu::MemsetAsync(dc.ptr, 0xFF, bytes, stream_), gpu::kSuccess);
    p.c = dc.ptr;
    for (const xcclGemmBand& band : bands)
      ASSERT_EQ(api_->run(ctx_, &p, &band, stream_), xcclSuccess)
          << "band [" << band.row_begin << ", " << band.row_end << ")";
    c->assign(p.m * p.ldc, 0);
    ASSERT_EQ(gpu::MemcpyAsync(c->data(), dc.ptr, bytes, stream_), gpu::kSuccess);
    ASSERT_EQ(gpu::StreamSynchronize(stream_), gpu::kSuccess);
  }

  void* handle_ = nullptr;
  const xcclGemmPlugin_v2_t* api_ = nullptr;
  void* ctx_ = nullptr;
  gpu::StreamHandle stream_ = nullptr;
};

// Whole problems, a_scale_ld == m (the tile ag_gemm hands over): cuBLASLt's C against the fp64
// formula, every element. n 144 and 272: a partial last 128-column block of B's scales; k 320 and
// 400: a short last K block (KB 3 and 4); k 320 and 112: KB not a multiple of 4, where cuBLASLt
// wants B's scales padded (the plugin copies them).
TEST_F(CublasltBlockscaleTest, WholeProblemsMatchTheFormula) {
  struct Shape {
    int64_t m, n, k;
    xcclDataType_t out;
  };
  std::mt19937_64 rng(std::random_device{}());
  for (const Shape& s : {Shape{512, 384, 512, xcclBfloat16}, Shape{512, 144, 512, xcclBfloat16},
                         Shape{256, 256, 320, xcclBfloat16}, Shape{256, 272, 400, xcclFloat16},
                         Shape{128, 256, 112, xcclBfloat16}}) {
    SCOPED_TRACE(::testing::Message() << "m " << s.m << " n " << s.n << " k " << s.k
                                      << (s.out == xcclFloat16 ? " fp16" : " bf16") << " out");
    const Operands o(s.m, s.n, s.k, s.m, /*strong=*/false, rng);
    Uploaded u;
    ASSERT_NO_FATAL_FAILURE(Upload(o, s.out, 16, &u));
    ASSERT_EQ(api_->supports(ctx_, &u.p), xcclSuccess);
    std::vector<uint16_t> c;
    ASSERT_NO_FATAL_FAILURE(RunBands(u.p, {{0, s.m}}, &c));
    EXPECT_LE(RelativeL2(c, s.out, s.n, 0, s.m, o.Reference(0, s.m)), kTolerance);
  }
}

// Scale arrays 4 bytes off cuBLASLt's 16-byte alignment: the plugin copies them into its own
// aligned tiles first, and the answer is the same formula's.
TEST_F(CublasltBlockscaleTest, MisalignedScalesAreCopiedFirst) {
  std::mt19937_64 rng(std::random_device{}());
  const Operands o(512, 384, 512, 512, /*strong=*/false, rng);
  Uploaded u;
  ASSERT_NO_FATAL_FAILURE(Upload(o, xcclBfloat16, 4, &u));
  ASSERT_EQ(api_->supports(ctx_, &u.p), xcclSuccess);
  std::vector<uint16_t> c;
  ASSERT_NO_FATAL_FAILURE(RunBands(u.p, {{0, 512}}, &c));
  EXPECT_LE(RelativeL2(c, xcclBfloat16, 384, 0, 512, o.Reference(0, 512)), kTolerance);
}

// A band [256, 512) of a problem whose A-scale tile is 576 wide: its rows equal the full run's
// (within the tolerance, and byte for byte: one algorithm, one summation order), match the
// formula, leave rows [0, 256) unwritten, and are far from what reading the scales at
// a_scale + row_begin as a packed tile (the ptpc arithmetic) would give.
TEST_F(CublasltBlockscaleTest, BandReadsItsScalesAtTheTileStride) {
  const int64_t m = 512, n = 384, k = 512, ld = 576, begin = 256;
  std::mt19937_64 rng(std::random_device{}());
  const Operands o(m, n, k, ld, /*strong=*/true, rng);
  Uploaded u;
  ASSERT_NO_FATAL_FAILURE(Upload(o, xcclBfloat16, 16, &u));
  ASSERT_EQ(api_->supports(ctx_, &u.p), xcclSuccess);
  std::vector<uint16_t> full, band;
  ASSERT_NO_FATAL_FAILURE(RunBands(u.p, {{0, m}}, &full));
  ASSERT_NO_FATAL_FAILURE(RunBands(u.p, {{begin, m}}, &band));
  EXPECT_LE(RelativeL2(full, xcclBfloat16, n, 0, m, o.Reference(0, m)), kTolerance);
  EXPECT_LE(RelativeL2(band, full, xcclBfloat16, n, begin, m), kTolerance);
  EXPECT_TRUE(std::equal(band.begin() + begin * n, band.end(), full.begin() + begin * n))
      << "the band's rows differ from the full run's bytes";
  EXPECT_LE(RelativeL2(band, xcclBfloat16, n, begin, m, o.Reference(begin, m)), kTolerance);
  EXPECT_TRUE(std::all_of(band.begin(), band.begin() + begin * n, [](uint16_t code) {
    return code == 0xFFFF;
  })) << "the band wrote rows outside it";
  const int64_t rows = m - begin;
  const std::vector<double> wrong = o.Reference(begin, m, [&](int64_t i, int64_t kb) {
    return begin + kb * rows + (i - begin);  // (a_scale + begin)[kb * rows + row in the band]
  });
  EXPECT_GT(RelativeL2(band, xcclBfloat16, n, begin, m, wrong), 0.1)
      << "the band matches the ptpc offset arithmetic: the scales cannot tell them apart";
}

// Bands whose row counts are not multiples of 4 (cuBLASLt's minimum): the plugin runs their
// last rows % 4 rows through a 4-row tile. Together they give the formula and the full run.
TEST_F(CublasltBlockscaleTest, BandsOfAnyRowCount) {
  const int64_t m = 512, n = 384, k = 320, ld = 520;
  std::mt19937_64 rng(std::random_device{}());
  const Operands o(m, n, k, ld, /*strong=*/true, rng);
  Uploaded u;
  ASSERT_NO_FATAL_FAILURE(Upload(o, xcclBfloat16, 16, &u));
  ASSERT_EQ(api_->supports(ctx_, &u.p), xcclSuccess);
  std::vector<uint16_t> full, cut;
  ASSERT_NO_FATAL_FAILURE(RunBands(u.p, {{0, m}}, &full));
  ASSERT_NO_FATAL_FAILURE(RunBands(u.p, {{0, 130}, {130, 258}, {258, 510}, {510, 512}}, &cut));
  EXPECT_LE(RelativeL2(cut, xcclBfloat16, n, 0, m, o.Reference(0, m)), kTolerance);
  EXPECT_LE(RelativeL2(cut, full, xcclBfloat16, n, 0, m), kTolerance);
}

// What supports() refuses with xcclInvalidArgument (pointers NULL: a query reads none).
TEST_F(CublasltBlockscaleTest, SupportsRefusesWhatCublasltCannotRun) {
  xcclGemmProblem ok{};
  ok.m = 512, ok.n = 384, ok.k = 512;
  ok.a_type = ok.b_type = xcclFloat8e4m3;
  ok.c_type = xcclBfloat16;
  ok.scale_mode = xcclGemmScaleBlock128;
  ok.lda = ok.ldb = 512, ok.ldc = 384;
  ok.a_scale_ld = 512;
  ASSERT_EQ(api_->supports(ctx_, &ok), xcclSuccess);
  struct Case {
    const char* what;
    xcclGemmProblem p;
  };
  std::vector<Case> cases;
  xcclGemmProblem p = ok;
  p.m = 510, p.a_scale_ld = 510;
  cases.push_back({"m not a multiple of 4", p});
  p = ok;
  p.n = 382;  // ldc 384 stays a multiple of 8
  cases.push_back({"n not a multiple of 4", p});
  p = ok;
  p.c_type = xcclFloat8e4m3;
  cases.push_back({"fp8 output", p});
  p = ok;
  p.a_type = p.b_type = xcclBfloat16;
  cases.push_back({"bf16 inputs with block scales", p});
  p = ok;
  p.a_scale_ld = 508;
  cases.push_back({"an A-scale tile narrower than m", p});
  for (const Case& c : cases) EXPECT_EQ(api_->supports(ctx_, &c.p), xcclInvalidArgument) << c.what;
}

// The version 1 symbol stays, for an older xccl (which never asks for block scales).
TEST_F(CublasltBlockscaleTest, ExportsVersionOneToo) {
  const auto* v1 =
      static_cast<const xcclGemmPlugin_v1_t*>(dlsym(handle_, XCCL_GEMM_PLUGIN_SYMBOL_V1));
  ASSERT_NE(v1, nullptr);
  EXPECT_EQ(v1->abi_version, XCCL_GEMM_PLUGIN_ABI_V1);
  EXPECT_EQ(v1->supports, api_->supports);
}

#else

TEST(CublasltBlockscaleTest, WholeProblemsMatchTheFormula) {
  GTEST_SKIP() << "the cublaslt plugin is built on the cuda platform only";
}

#endif

}  // namespace
}  // namespace xccl_test
