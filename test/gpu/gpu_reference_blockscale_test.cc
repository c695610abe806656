// Block scales (xcclGemmScaleBlock128) on the reference plugin's GPU path, through its version 2
// symbol: the kernel's output equals the CPU loop's byte for byte (the same arithmetic in the same
// order, xccl_gemm.h), in a full run, in bands, and through run_tile_wait (one launch of two
// bands, and one starting mid-matrix), with k and n not multiples of 128, a_scale_ld > m and
// padded strides. A band that read its scales at a_scale + row_begin (the ptpc arithmetic) would
// give different bytes here, which the test checks it can see. Skips, saying why, without a GPU.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "common/float_formats.h"
#include "gpu/gpu_runtime.h"
#include "xccl_gemm.h"

namespace xccl_test {
namespace {

// A device allocation for one single-rank test (no peers share the device, so cudaFree is safe).
struct DeviceBuffer {
  void* ptr = nullptr;
  ~DeviceBuffer() {
    if (ptr != nullptr) (void)gpu::Free(ptr);
  }
};

constexpr uint16_t kCpuPoison = 0xFFFF;  // NaN in both output types
constexpr int kGpuPoison = 0xA5;         // a byte for memset: 0xA5A5 in every element

// One block-scaled problem on the host: A [m][lda], B [n][ldb] e4m3, A scales [KB][ld] whose
// entries past row m are NaN (a kernel reading them would put NaN in C), B scales
// [ceil(n/128)][KB]. Each scale is 2^e * [1, 2) with e drawn per (row or column tile, K block)
// from [-5, 2], so a row that took another row's or another block's scale changes its bytes,
// while C stays inside fp16's finite range.
struct HostBlockscale {
  int64_t m, n, k, lda, ldb, ldc, ld, blocks;
  xcclDataType_t out;
  std::vector<uint8_t> a, b;
  std::vector<float> sa, sb;

  HostBlockscale(int64_t m_in, int64_t n_in, int64_t k_in, int64_t pad, xcclDataType_t out_in,
                 std::mt19937_64& rng)
      : m(m_in),
        n(n_in),
        k(k_in),
        lda(k_in + pad),
        ldb(k_in + 2 * pad),
        ldc(n_in + pad),
        ld(m_in + 13),
        blocks((k_in + 127) / 128),
        out(out_in) {
    a.resize(m * lda);
    b.resize(n * ldb);
    for (auto& v : a) v = RandomE4m3Code(rng);  // the stride gaps too: never read
    for (auto& v : b) v = RandomE4m3Code(rng);
    std::uniform_real_distribution<float> mantissa(1.0f, 2.0f);
    std::uniform_int_distribution<int> exponent(-5, 2);
    auto scale = [&] { return std::ldexp(mantissa(rng), exponent(rng)); };
    sa.assign(blocks * ld, NAN);
    for (int64_t kb = 0; kb < blocks; ++kb)
      for (int64_t i = 0; i < m; ++i) sa[kb * ld + i] = scale();
    sb.resize(((n + 127) / 128) * blocks);
    for (auto& s : sb) s = scale();
  }

  size_t CElements() const { return static_cast<size_t>(m * ldc); }

  // The problem without pointers.
  xcclGemmProblem Problem() const {
    xcclGemmProblem p{};
    p.m = m, p.n = n, p.k = k;
    p.a_type = p.b_type = xcclFloat8e4m3;
    p.c_type = out;
    p.scale_mode = xcclGemmScaleBlock128;
    p.lda = lda, p.ldb = ldb, p.ldc = ldc;
    p.a_scale_ld = ld;
    return p;
  }
};

// The same operands in device memory, and the device C.
struct DeviceBlockscale {
  DeviceBuffer a, b, sa, sb, c;
};

class GpuReferenceBlockscaleTest : public ::testing::Test {
 protected:
  void SetUp() override {
#ifndef XCCL_GEMM_REFERENCE_PATH
    GTEST_SKIP() << "the reference plugin is not built";
#else
    int gpus = 0;
    if (gpu::GetDeviceCount(&gpus) != gpu::kSuccess || gpus == 0)
      GTEST_SKIP() << "no GPU visible: the reference kernel needs one";
    handle_ = dlopen(XCCL_GEMM_REFERENCE_PATH, RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    api_ = static_cast<const xcclGemmPlugin_v2_t*>(dlsym(handle_, XCCL_GEMM_PLUGIN_SYMBOL_V2));
    ASSERT_NE(api_, nullptr) << "the reference plugin exports no " XCCL_GEMM_PLUGIN_SYMBOL_V2;
    ASSERT_EQ(api_->abi_version, XCCL_GEMM_PLUGIN_ABI_V2);
    ASSERT_NE(api_->run_tile_wait, nullptr) << "a GPU build of the reference plugin has tile-wait";
    // Older xccl builds load version 1: the plugin keeps exporting it.
    const auto* v1 =
        static_cast<const xcclGemmPlugin_v1_t*>(dlsym(handle_, XCCL_GEMM_PLUGIN_SYMBOL_V1));
    ASSERT_NE(v1, nullptr) << "the reference plugin exports no " XCCL_GEMM_PLUGIN_SYMBOL_V1;
    EXPECT_EQ(v1->abi_version, XCCL_GEMM_PLUGIN_ABI_V1);
    // The CPU loop takes host memory and the kernel device memory (run() looks at C); a context
    // without a device keeps the CPU one from loading kernels at all.
    ASSERT_EQ(api_->init(&cpu_ctx_, -1), xcclSuccess);
    ASSERT_EQ(gpu::SetDevice(0), gpu::kSuccess);
    ASSERT_EQ(api_->init(&gpu_ctx_, 0), xcclSuccess);
    ASSERT_EQ(gpu::StreamCreateNonBlocking(&stream_), gpu::kSuccess);
#endif
  }
  void TearDown() override {
    if (stream_ != nullptr) (void)gpu::StreamDestroy(stream_);
    if (api_ != nullptr && gpu_ctx_ != nullptr) {
      EXPECT_EQ(api_->finalize(gpu_ctx_), xcclSuccess);
    }
    if (api_ != nullptr && cpu_ctx_ != nullptr) {
      EXPECT_EQ(api_->finalize(cpu_ctx_), xcclSuccess);
    }
    if (handle_ != nullptr) dlclose(handle_);
  }

  // The CPU loop's C for rows [begin, end) of `h` (with A scales `sa`), the rest poison.
  std::vector<uint16_t> Cpu(const HostBlockscale& h, const std::vector<float>& sa, int64_t begin,
                            int64_t end) {
    std::vector<uint16_t> c(h.CElements(), kCpuPoison);
    xcclGemmProblem p = h.Problem();
    p.a = h.a.data(), p.b = h.b.data(), p.c = c.data();
    p.a_scale = sa.data(), p.b_scale = h.sb.data();
    const xcclGemmBand band{begin, end};
    EXPECT_EQ(api_->run(cpu_ctx_, &p, &band, nullptr), xcclSuccess);
    return c;
  }

  // Copies the operands to the device and poisons its C.
  void Upload(const HostBlockscale& h, DeviceBlockscale* d) {
    ASSERT_EQ(gpu::Malloc(&d->a.ptr, h.a.size()), gpu::kSuccess);
    ASSERT_EQ(gpu::Malloc(&d->b.ptr, h.b.size()), gpu::kSuccess);
    ASSERT_EQ(gpu::Malloc(&d->sa.ptr, h.sa.size() * 4), gpu::kSuccess);
    ASSERT_EQ(gpu::Malloc(&d->sb.ptr, h.sb.size() * 4), gpu::kSuccess);
    ASSERT_EQ(gpu::Malloc(&d->c.ptr, h.CElements() * 2), gpu::kSuccess);
    ASSERT_EQ(gpu::MemcpyAsync(d->a.ptr, h.a.data(), h.a.size(), stream_), gpu::kSuccess);
    ASSERT_EQ(gpu::MemcpyAsync(d->b.ptr, h.b.data(), h.b.size(), stream_), gpu::kSuccess);
    ASSERT_EQ(gpu::MemcpyAsync(d->sa.ptr, h.sa.data(), h.sa.size() * 4, stream_), gpu::kSuccess);
    ASSERT_EQ(gpu::MemcpyAsync(d->sb.ptr, h.sb.data(), h.sb.size() * 4, stream_), gpu::kSuccess);
    ASSERT_NO_FATAL_FAILURE(Poison(h, d));
  }
  void Poison(const HostBlockscale& h, DeviceBlockscale* d) {
    ASSERT_EQ(gpu::MemsetAsync(d->c.ptr, kGpuPoison, h.CElements() * 2, stream_), gpu::kSuccess);
  }
  static xcclGemmProblem OnDevice(const HostBlockscale& h, const DeviceBlockscale& d) {
    xcclGemmProblem p = h.Problem();
    p.a = d.a.ptr, p.b = d.b.ptr, p.c = d.c.ptr;
    p.a_scale = static_cast<const float*>(d.sa.ptr);
    p.b_scale = static_cast<const float*>(d.sb.ptr);
    return p;
  }
  xcclResult_t GpuRun(const HostBlockscale& h, const DeviceBlockscale& d, int64_t begin,
                      int64_t end) {
    const xcclGemmProblem p = OnDevice(h, d);
    const xcclGemmBand band{begin, end};
    return api_->run(gpu_ctx_, &p, &band, stream_);
  }
  std::vector<uint16_t> Download(const HostBlockscale& h, const DeviceBlockscale& d) {
    std::vector<uint16_t> c(h.CElements());
    EXPECT_EQ(gpu::MemcpyAsync(c.data(), d.c.ptr, c.size() * 2, stream_), gpu::kSuccess);
    EXPECT_EQ(gpu::StreamSynchronize(stream_), gpu::kSuccess);
    return c;
  }

  // Every element of rows [begin, end) equals `want`'s; the stride gaps of those rows and every
  // other row keep the device poison (nothing was written outside the band's [rows][n]).
  static void ExpectRows(const HostBlockscale& h, const std::vector<uint16_t>& got,
                         const std::vector<uint16_t>& want, int64_t begin, int64_t end,
                         const char* what) {
    const uint16_t poison = kGpuPoison << 8 | kGpuPoison;
    int64_t wrong = 0, written_outside = 0;
    for (int64_t i = 0; i < h.m; ++i) {
      for (int64_t j = 0; j < h.ldc; ++j) {
        const size_t x = static_cast<size_t>(i * h.ldc + j);
        if (i >= begin && i < end && j < h.n) {
          if (got[x] != want[x] && wrong++ < 3)
            ADD_FAILURE() << what << ": C[" << i << "][" << j << "] bits " << got[x] << ", CPU "
                          << want[x] << " (m " << h.m << " n " << h.n << " k " << h.k << ")";
        } else {
          written_outside += got[x] != poison;
        }
      }
    }
    EXPECT_EQ(wrong, 0) << what;
    EXPECT_EQ(written_outside, 0) << what << ": elements outside the rows' [n] columns written";
  }

  void* handle_ = nullptr;
  const xcclGemmPlugin_v2_t* api_ = nullptr;
  void* cpu_ctx_ = nullptr;
  void* gpu_ctx_ = nullptr;
  gpu::StreamHandle stream_ = nullptr;
};

// k 300: KB 3 with a 44-wide last block; n 144 and 257: a partial tile of B scales (and of the
// kernel's 16 x 16 tiles); m past 256 so the bands below are uneven.
struct Shape {
  int64_t m, n, k, pad;
};
constexpr Shape kShapes[] = {{270, 144, 300, 0}, {261, 257, 77, 5}};

// (1) and (2): the kernel's full run and its bands [0, 256), [256, m) equal the CPU loop's full
// run in every element, for both output types.
TEST_F(GpuReferenceBlockscaleTest, RunAndBandsMatchTheCpuLoop) {
  std::mt19937_64 rng(std::random_device{}());
  for (const Shape& s : kShapes) {
    for (xcclDataType_t out : {xcclBfloat16, xcclFloat16}) {
      SCOPED_TRACE(::testing::Message() << "m " << s.m << " n " << s.n << " k " << s.k << " pad "
                                        << s.pad << " out " << out);
      const HostBlockscale h(s.m, s.n, s.k, s.pad, out, rng);
      const std::vector<uint16_t> want = Cpu(h, h.sa, 0, h.m);
      DeviceBlockscale d;
      ASSERT_NO_FATAL_FAILURE(Upload(h, &d));
      const xcclGemmProblem p = OnDevice(h, d);
      ASSERT_EQ(api_->supports(gpu_ctx_, &p), xcclSuccess);
      ASSERT_EQ(GpuRun(h, d, 0, h.m), xcclSuccess);
      ExpectRows(h, Download(h, d), want, 0, h.m, "full run");
      ASSERT_NO_FATAL_FAILURE(Poison(h, &d));
      ASSERT_EQ(GpuRun(h, d, 0, 256), xcclSuccess);
      ASSERT_EQ(GpuRun(h, d, 256, h.m), xcclSuccess);
      ExpectRows(h, Download(h, d), want, 0, h.m, "bands [0, 256) and [256, m)");
      // One band alone writes only its rows.
      ASSERT_NO_FATAL_FAILURE(Poison(h, &d));
      ASSERT_EQ(GpuRun(h, d, 256, h.m), xcclSuccess);
      ExpectRows(h, Download(h, d), want, 256, h.m, "band [256, m) alone");
    }
  }
}

// (3): run_tile_wait with every flag already at the epoch gives the full run's bytes, as one
// launch of two bands over all rows, and as run() for [0, 128) then one launch of rows [128, m)
// cut into bands of 100 (tiles straddling a band boundary, a band start off the tile grid).
TEST_F(GpuReferenceBlockscaleTest, TileWaitMatchesTheCpuLoop) {
  std::mt19937_64 rng(std::random_device{}());
  DeviceBuffer flags, epoch;
  ASSERT_EQ(gpu::Malloc(&flags.ptr, 2 * sizeof(uint32_t)), gpu::kSuccess);
  ASSERT_EQ(gpu::Malloc(&epoch.ptr, sizeof(uint32_t)), gpu::kSuccess);
  // Flags past the epoch count as reached (compared modulo 2^32): one at it, one past it.
  const uint32_t epoch_value = 0xFFFFFFFEu, flag_values[2] = {0xFFFFFFFEu, 3u};
  ASSERT_EQ(gpu::MemcpyAsync(epoch.ptr, &epoch_value, sizeof(epoch_value), stream_), gpu::kSuccess);
  ASSERT_EQ(gpu::MemcpyAsync(flags.ptr, flag_values, sizeof(flag_values), stream_), gpu::kSuccess);
  for (const Shape& s : kShapes) {
    for (xcclDataType_t out : {xcclBfloat16, xcclFloat16}) {
      SCOPED_TRACE(::testing::Message() << "m " << s.m << " n " << s.n << " k " << s.k << " pad "
                                        << s.pad << " out " << out);
      const HostBlockscale h(s.m, s.n, s.k, s.pad, out, rng);
      const std::vector<uint16_t> want = Cpu(h, h.sa, 0, h.m);
      DeviceBlockscale d;
      ASSERT_NO_FATAL_FAILURE(Upload(h, &d));
      const xcclGemmProblem p = OnDevice(h, d);
      xcclGemmTileWait w{};
      w.flags = static_cast<const volatile uint32_t*>(flags.ptr);
      w.epoch = static_cast<const volatile uint32_t*>(epoch.ptr);
      w.timeout_ns = 20ull * 1000 * 1000 * 1000;  // flags are set: a wait that long is a bug
      w.row_begin = 0, w.row_end = h.m, w.band_rows = 256, w.num_bands = 2;
      ASSERT_EQ(api_->run_tile_wait(gpu_ctx_, &p, &w, stream_), xcclSuccess);
      ExpectRows(h, Download(h, d), want, 0, h.m, "tile-wait, bands [0, 256) and [256, m)");
      ASSERT_NO_FATAL_FAILURE(Poison(h, &d));
      ASSERT_EQ(GpuRun(h, d, 0, 128), xcclSuccess);
      w.row_begin = 128, w.row_end = h.m, w.band_rows = 100, w.num_bands = 2;
      ASSERT_EQ(api_->run_tile_wait(gpu_ctx_, &p, &w, stream_), xcclSuccess);
      ExpectRows(h, Download(h, d), want, 0, h.m, "run [0, 128), tile-wait [128, m) by 100");
    }
  }
}

// (4): the checks above have teeth. The CPU loop fed a scale tile shifted by row_begin (what a
// band reading a_scale + row_begin would see) gives other bytes for band [256, m) than the
// correct ones the kernel's band matched, so a kernel making that mistake would have failed.
TEST_F(GpuReferenceBlockscaleTest, ABandReadingScalesAtRowBeginWouldBeSeen) {
  std::mt19937_64 rng(std::random_device{}());
  const HostBlockscale h(270, 144, 300, 0, xcclBfloat16, rng);
  const int64_t begin = 256;
  const std::vector<uint16_t> want = Cpu(h, h.sa, 0, h.m);
  std::vector<float> shifted(h.sa.size(), 1.0f);
  for (size_t x = 0; x + begin < h.sa.size(); ++x) shifted[x] = h.sa[x + begin];
  const std::vector<uint16_t> wrong = Cpu(h, shifted, begin, h.m);
  int64_t same = 0;
  for (int64_t i = begin; i < h.m; ++i)
    for (int64_t j = 0; j < h.n; ++j) same += want[i * h.ldc + j] == wrong[i * h.ldc + j];
  EXPECT_LT(same, (h.m - begin) * h.n / 16) << "shifted scales leave most of the band's bytes";
  // The kernel's band has the correct bytes, hence not the shifted ones.
  DeviceBlockscale d;
  ASSERT_NO_FATAL_FAILURE(Upload(h, &d));
  ASSERT_EQ(GpuRun(h, d, begin, h.m), xcclSuccess);
  ExpectRows(h, Download(h, d), want, begin, h.m, "band [256, m)");
}

// supports() on the GPU context takes block scales under the CPU path's rules and refuses the
// rest; run_tile_wait refuses missing scales instead of faulting.
TEST_F(GpuReferenceBlockscaleTest, SupportsTakesTheCpuPathsRules) {
  std::mt19937_64 rng(1);
  const HostBlockscale h(32, 128, 128, 0, xcclBfloat16, rng);
  DeviceBlockscale d;
  ASSERT_NO_FATAL_FAILURE(Upload(h, &d));
  const xcclGemmProblem good = OnDevice(h, d);
  for (void* ctx : {cpu_ctx_, gpu_ctx_}) {
    xcclGemmProblem p = good;
    EXPECT_EQ(api_->supports(ctx, &p), xcclSuccess);
    p.c_type = xcclFloat16;
    EXPECT_EQ(api_->supports(ctx, &p), xcclSuccess);
    p.a_scale_ld = p.m;  // the smallest tile that holds every row
    EXPECT_EQ(api_->supports(ctx, &p), xcclSuccess);
    p.a_scale_ld = p.m - 1;
    EXPECT_EQ(api_->supports(ctx, &p), xcclInvalidArgument);
    p = good;
    p.c_type = xcclFloat32;
    EXPECT_EQ(api_->supports(ctx, &p), xcclInvalidArgument);
    p = good;
    p.a_type = p.b_type = xcclBfloat16;
    EXPECT_EQ(api_->supports(ctx, &p), xcclInvalidArgument);
    p = good;
    p.b_type = xcclBfloat16;
    EXPECT_EQ(api_->supports(ctx, &p), xcclInvalidArgument);
    p = good;
    p.lda = p.k - 1;
    EXPECT_EQ(api_->supports(ctx, &p), xcclInvalidArgument);
  }
  DeviceBuffer flags, epoch;
  ASSERT_EQ(gpu::Malloc(&flags.ptr, sizeof(uint32_t)), gpu::kSuccess);
  ASSERT_EQ(gpu::Malloc(&epoch.ptr, sizeof(uint32_t)), gpu::kSuccess);
  xcclGemmTileWait w{};
  w.row_begin = 0, w.row_end = h.m, w.band_rows = h.m, w.num_bands = 1;
  w.flags = static_cast<const volatile uint32_t*>(flags.ptr);
  w.epoch = static_cast<const volatile uint32_t*>(epoch.ptr);
  xcclGemmProblem p = good;
  p.a_scale = nullptr;
  EXPECT_EQ(api_->run_tile_wait(gpu_ctx_, &p, &w, stream_), xcclInvalidArgument);
  const xcclGemmBand all{0, h.m};
  EXPECT_EQ(api_->run(gpu_ctx_, &p, &all, stream_), xcclInvalidArgument);
  EXPECT_EQ(gpu::StreamSynchronize(stream_), gpu::kSuccess);
}

}  // namespace
}  // namespace xccl_test
