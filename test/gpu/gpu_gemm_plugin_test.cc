// The GEMM plugins on a GPU. The cublaslt plugin (cuda platform) against the CPU reference
// plugin, through the plugin ABI: bf16 and fp8 ptpc on fresh random operands, relative L2 of the
// full run against the reference, and a run cut into two row bands equal to the full run byte for
// byte (what makes ag_gemm's fused and split modes agree). Skips, saying why, without a GPU or the
// plugins.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "common/float_formats.h"
#include "fused/gemm_plugin_loader.h"
#include "gpu/gpu_runtime.h"

namespace xccl_test {
namespace {

// A device allocation for one single-rank test (no peers share the device, so cudaFree is safe).
struct DeviceCopy {
  void* ptr = nullptr;
  ~DeviceCopy() {
    if (ptr != nullptr) (void)gpu::Free(ptr);
  }
};

#if defined(XCCL_GEMM_CUBLASLT_PATH) && defined(XCCL_GEMM_REFERENCE_PATH)

class GpuGemmPluginTest : public ::testing::TestWithParam<xcclDataType_t> {};

TEST_P(GpuGemmPluginTest, CublasltMatchesReferenceAndBandsMatchFull) {
  int gpus = 0;
  if (gpu::GetDeviceCount(&gpus) != gpu::kSuccess || gpus == 0)
    GTEST_SKIP() << "no GPU visible: the cublaslt plugin needs one";
  std::unique_ptr<xccl::GemmPlugin> lt, ref;
  ASSERT_EQ(xccl::GemmPlugin::Load(XCCL_GEMM_CUBLASLT_PATH, "", &lt), xcclSuccess)
      << xcclGetLastError(nullptr);
  ASSERT_EQ(xccl::GemmPlugin::Load(XCCL_GEMM_REFERENCE_PATH, "", &ref), xcclSuccess)
      << xcclGetLastError(nullptr);
  const xcclDataType_t in = GetParam();
  const bool fp8 = in == xcclFloat8e4m3;
  const int64_t m = 512, n = 272, k = 128;  // n: a partial last 256-column tile
  std::mt19937_64 rng(std::random_device{}());
  const GemmOperands o = RandomGemmOperands(m, n, k, in, rng);
  const std::vector<uint8_t>& a = o.a;
  const std::vector<uint8_t>& b = o.b;
  // Scales only matter for fp8; bf16 runs carry ones that must be ignored.
  std::vector<float> as = fp8 ? o.a_scale : std::vector<float>(m, 1.0f);
  std::vector<float> bs = fp8 ? o.b_scale : std::vector<float>(n, 1.0f);
  const xcclGemmProblem p = DenseProblem(m, n, k, in, xcclBfloat16);

  // Reference on the host.
  void* ref_ctx = nullptr;
  ASSERT_EQ(ref->api().init(&ref_ctx, 0), xcclSuccess);
  std::vector<uint16_t> want(m * n, 0);
  xcclGemmProblem hp = p;
  hp.a = a.data();
  hp.b = b.data();
  hp.c = want.data();
  hp.a_scale = fp8 ? as.data() : nullptr;
  hp.b_scale = fp8 ? bs.data() : nullptr;
  const xcclGemmBand all{0, m};
  ASSERT_EQ(ref->api().run(ref_ctx, &hp, &all, nullptr), xcclSuccess);
  ref->api().finalize(ref_ctx);

  // cublaslt on the device: full run into c1, two bands into c2.
  ASSERT_EQ(gpu::SetDevice(0), gpu::kSuccess);
  gpu::StreamHandle stream = nullptr;
  ASSERT_EQ(gpu::StreamCreateNonBlocking(&stream), gpu::kSuccess);
  DeviceCopy da, db, das, dbs, dc1, dc2;
  const size_t c_bytes = m * n * 2;
  ASSERT_EQ(gpu::Malloc(&da.ptr, a.size()), gpu::kSuccess);
  ASSERT_EQ(gpu::Malloc(&db.ptr, b.size()), gpu::kSuccess);
  ASSERT_EQ(gpu::Malloc(&das.ptr, m * 4), gpu::kSuccess);
  ASSERT_EQ(gpu::Malloc(&dbs.ptr, n * 4), gpu::kSuccess);
  ASSERT_EQ(gpu::Malloc(&dc1.ptr, c_bytes), gpu::kSuccess);
  ASSERT_EQ(gpu::Malloc(&dc2.ptr, c_bytes), gpu::kSuccess);
  ASSERT_EQ(gpu::MemcpyAsync(da.ptr, a.data(), a.size(), stream), gpu::kSuccess);
  ASSERT_EQ(gpu::MemcpyAsync(db.ptr, b.data(), b.size(), stream), gpu::kSuccess);
  ASSERT_EQ(gpu::MemcpyAsync(das.ptr, as.data(), m * 4, stream), gpu::kSuccess);
  ASSERT_EQ(gpu::MemcpyAsync(dbs.ptr, bs.data(), n * 4, stream), gpu::kSuccess);
  ASSERT_EQ(gpu::MemsetAsync(dc1.ptr, 0xA5, c_bytes, stream), gpu::kSuccess);
  ASSERT_EQ(gpu::MemsetAsync(dc2.ptr, 0x5A, c_bytes, stream), gpu::kSuccess);
  void* lt_ctx = nullptr;
  ASSERT_EQ(lt->api().init(&lt_ctx, 0), xcclSuccess);
  xcclGemmProblem dp = p;
  dp.a = da.ptr;
  dp.b = db.ptr;
  dp.a_scale = fp8 ? static_cast<const float*>(das.ptr) : nullptr;
  dp.b_scale = fp8 ? static_cast<const float*>(dbs.ptr) : nullptr;
  ASSERT_EQ(lt->api().supports(lt_ctx, &dp), xcclSuccess);
  dp.c = dc1.ptr;
  ASSERT_EQ(lt->api().run(lt_ctx, &dp, &all, stream), xcclSuccess);
  dp.c = dc2.ptr;
  const xcclGemmBand first{0, 256}, second{256, m};
  ASSERT_EQ(lt->api().run(lt_ctx, &dp, &first, stream), xcclSuccess);
  ASSERT_EQ(lt->api().run(lt_ctx, &dp, &second, stream), xcclSuccess);
  // B and C 16 bytes past a 256-byte boundary, as a caller's slices may be (cuBLASLt assumes 256
  // when it chooses): the plugin keeps its algorithm where that accepts them, else takes one
  // that does; either way C must match the reference.
  DeviceCopy db16, dc16;
  ASSERT_EQ(gpu::Malloc(&db16.ptr, b.size() + 256), gpu::kSuccess);
  ASSERT_EQ(gpu::Malloc(&dc16.ptr, c_bytes + 256), gpu::kSuccess);
  void* b16 = static_cast<char*>(db16.ptr) + 16;
  void* c16 = static_cast<char*>(dc16.ptr) + 16;
  ASSERT_EQ(gpu::MemcpyAsync(b16, b.data(), b.size(), stream), gpu::kSuccess);
  ASSERT_EQ(gpu::MemsetAsync(c16, 0xA5, c_bytes, stream), gpu::kSuccess);
  dp.b = b16;
  dp.c = c16;
  ASSERT_EQ(lt->api().run(lt_ctx, &dp, &all, stream), xcclSuccess);
  std::vector<uint16_t> got1(m * n), got2(m * n), got16(m * n);
  ASSERT_EQ(gpu::MemcpyAsync(got1.data(), dc1.ptr, c_bytes, stream), gpu::kSuccess);
  ASSERT_EQ(gpu::MemcpyAsync(got2.data(), dc2.ptr, c_bytes, stream), gpu::kSuccess);
  ASSERT_EQ(gpu::MemcpyAsync(got16.data(), c16, c_bytes, stream), gpu::kSuccess);
  ASSERT_EQ(gpu::StreamSynchronize(stream), gpu::kSuccess);
  lt->api().finalize(lt_ctx);
  (void)gpu::StreamDestroy(stream);

  auto relative_l2 = [&](const std::vector<uint16_t>& got) {
    double err2 = 0, ref2 = 0;
    for (int64_t i = 0; i < m * n; ++i) {
      const double w = Bf16Value(want[i]), g = Bf16Value(got[i]);
      err2 += (g - w) * (g - w);
      ref2 += w * w;
    }
    return std::sqrt(err2 / ref2);  // poison left in C (0xA5 bytes) is far from the reference
  };
  // Two results each rounded to bf16 (about 1.7e-3 apart from the exact one each, at most
  // about twice that apart from each other).
  const double rel = relative_l2(got1), rel16 = relative_l2(got16);
  EXPECT_LE(rel, 5e-3) << "cublaslt vs reference, " << (fp8 ? "fp8 ptpc" : "bf16");
  EXPECT_LE(rel16, 5e-3) << "cublaslt with B and C at 16-byte offsets vs reference, "
                         << (fp8 ? "fp8 ptpc" : "bf16");
  EXPECT_TRUE(got1 == got2) << "two bands differ from the full run";
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuGemmPluginTest, ::testing::Values(xcclBfloat16, xcclFloat8e4m3),
                         [](const ::testing::TestParamInfo<xcclDataType_t>& info) {
                           return std::string(info.param == xcclFloat8e4m3 ? "Fp8Ptpc" : "Bf16");
                         });

#else

TEST(GpuGemmPluginTest, CublasltMatchesReferenceAndBandsMatchFull) {
  GTEST_SKIP() << "the cublaslt plugin is built on the cuda platform only";
}

#endif

#if defined(XCCL_GEMM_REFERENCE_PATH)

// The reference plugin's kernel (operands in device memory) against its CPU loop (operands in
// host memory): the same arithmetic, so the same bits, in full runs and in bands, for every input
// type and both outputs.
TEST(GpuGemmReferenceKernel, SameBitsAsTheCpuLoop) {
  int gpus = 0;
  if (gpu::GetDeviceCount(&gpus) != gpu::kSuccess || gpus == 0)
    GTEST_SKIP() << "no GPU visible: the reference kernel needs one";
  std::unique_ptr<xccl::GemmPlugin> ref;
  ASSERT_EQ(xccl::GemmPlugin::Load(XCCL_GEMM_REFERENCE_PATH, "", &ref), xcclSuccess)
      << xcclGetLastError(nullptr);
  void* ctx = nullptr;
  ASSERT_EQ(ref->api().init(&ctx, 0), xcclSuccess);
  ASSERT_EQ(gpu::SetDevice(0), gpu::kSuccess);
  gpu::StreamHandle stream = nullptr;
  ASSERT_EQ(gpu::StreamCreateNonBlocking(&stream), gpu::kSuccess);
  std::mt19937_64 rng(std::random_device{}());
  for (xcclDataType_t in : {xcclBfloat16, xcclFloat16, xcclFloat8e4m3}) {
    for (xcclDataType_t out : {xcclBfloat16, xcclFloat16}) {
      const int64_t m = 70, n = 37, k = 53;  // nothing a multiple of the 16 x 16 tile
      const GemmOperands o = RandomGemmOperands(m, n, k, in, rng);
      const std::vector<uint8_t>& a = o.a;
      const std::vector<uint8_t>& b = o.b;
      std::vector<float> as = o.a_scale, bs = o.b_scale;
      as.resize(m, 1.0f);  // bf16/fp16: ignored, but the device copies below want them
      bs.resize(n, 1.0f);
      const xcclGemmProblem p = DenseProblem(m, n, k, in, out);
      std::vector<uint16_t> want(m * n);
      xcclGemmProblem hp = p;
      hp.a = a.data();
      hp.b = b.data();
      hp.c = want.data();
      hp.a_scale = as.data();
      hp.b_scale = bs.data();
      const xcclGemmBand all{0, m};
      ASSERT_EQ(ref->api().run(ctx, &hp, &all, nullptr), xcclSuccess);

      DeviceCopy da, db, das, dbs, dc;
      ASSERT_EQ(gpu::Malloc(&da.ptr, a.size()), gpu::kSuccess);
      ASSERT_EQ(gpu::Malloc(&db.ptr, b.size()), gpu::kSuccess);
      ASSERT_EQ(gpu::Malloc(&das.ptr, m * 4), gpu::kSuccess);
      ASSERT_EQ(gpu::Malloc(&dbs.ptr, n * 4), gpu::kSuccess);
      ASSERT_EQ(gpu::Malloc(&dc.ptr, m * n * 2), gpu::kSuccess);
      ASSERT_EQ(gpu::MemcpyAsync(da.ptr, a.data(), a.size(), stream), gpu::kSuccess);
      ASSERT_EQ(gpu::MemcpyAsync(db.ptr, b.data(), b.size(), stream), gpu::kSuccess);
      ASSERT_EQ(gpu::MemcpyAsync(das.ptr, as.data(), m * 4, stream), gpu::kSuccess);
      ASSERT_EQ(gpu::MemcpyAsync(dbs.ptr, bs.data(), n * 4, stream), gpu::kSuccess);
      ASSERT_EQ(gpu::MemsetAsync(dc.ptr, 0xA5, m * n * 2, stream), gpu::kSuccess);
      xcclGemmProblem dp = p;
      dp.a = da.ptr;
      dp.b = db.ptr;
      dp.c = dc.ptr;
      dp.a_scale = static_cast<const float*>(das.ptr);
      dp.b_scale = static_cast<const float*>(dbs.ptr);
      const xcclGemmBand first{0, 33}, second{33, m};  // bands of uneven rows
      ASSERT_EQ(ref->api().run(ctx, &dp, &first, stream), xcclSuccess);
      ASSERT_EQ(ref->api().run(ctx, &dp, &second, stream), xcclSuccess);
      std::vector<uint16_t> got(m * n);
      ASSERT_EQ(gpu::MemcpyAsync(got.data(), dc.ptr, m * n * 2, stream), gpu::kSuccess);
      ASSERT_EQ(gpu::StreamSynchronize(stream), gpu::kSuccess);
      size_t differ = 0;
      for (size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i];
      EXPECT_EQ(differ, 0u) << "input type " << in << ", output type " << out;
    }
  }
  (void)gpu::StreamDestroy(stream);
  ref->api().finalize(ctx);
}

#endif

}  // namespace
}  // namespace xccl_test
