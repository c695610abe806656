// ag_gemm on a GPU platform (split mode; fused is not built there yet and must be refused) with
// the cublaslt plugin: bf16 and fp8 ptpc on fresh operands against a double-precision reference
// of the decoded inputs, padding rows exactly zero, a warm self test, on every world of the gpu
// suite (ranks sharing one GPU as threads and processes, every GPU where there are several).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/float_formats.h"
#include "gpu/gpu_harness.h"

namespace xccl_test {
namespace {

#if defined(XCCL_GEMM_CUBLASLT_PATH)

class GpuAgGemmTest : public GpuWorldTest {};

struct Operands {
  std::vector<uint8_t> a, b;
  std::vector<float> a_scale, b_scale;
};

Operands MakeOperands(uint64_t seed, int rank, int64_t m, int64_t n, int64_t k, xcclDataType_t t) {
  std::mt19937_64 rng(seed ^ (0x9E3779B97F4A7C15ull * (rank + 1)));
  Operands o;
  FillCodes(&o.a, m * k, t, rng);
  FillCodes(&o.b, n * k, t, rng);
  std::uniform_real_distribution<float> scale(0.25f, 2.0f);
  for (int64_t i = 0; t == xcclFloat8e4m3 && i < m; ++i) o.a_scale.push_back(scale(rng));
  for (int64_t j = 0; t == xcclFloat8e4m3 && j < n; ++j) o.b_scale.push_back(scale(rng));
  return o;
}

// Copies host bytes into a new device buffer through pinned memory (never pageable: ranks may
// share the GPU).
bool ToDevice(RankContext& ctx, const Stream& stream, const void* data, size_t bytes,
              DeviceBuffer* out) {
  if (!out->Allocate(ctx, bytes)) return false;
  HostBytes pinned(bytes);
  memcpy(pinned.data(), data, bytes);
  return GPU_OK(ctx, gpu::MemcpyAsync(out->get(), pinned.data(), bytes, stream.get())) &&
         GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
}

TEST_P(GpuAgGemmTest, SplitMatchesTheReferenceFusedIsRefused) {
  Run([](RankContext& ctx) {
    Stream stream;
    if (!stream.Create(ctx)) return;
    const int64_t n = 64, k = 64, m = 200, m_max = 256, padded = 256;
    xcclAgGemm_t refused = nullptr;
    RANK_EXPECT(ctx,
                xcclAgGemmCreate(ctx.comm, n, k, m_max, xcclBfloat16, xcclBfloat16, xcclAgGemmFused,
                                 0, XCCL_GEMM_CUBLASLT_PATH, nullptr, &refused) == xcclInvalidUsage,
                "fused create was not refused on the GPU platform");
    // Both ops made before any call and destroyed after the last: their device memory is
    // allocated and freed (cudaFree waits for the whole device) while no peer sharing the GPU
    // has a call in flight that waits for this rank.
    const xcclDataType_t types[] = {xcclBfloat16, xcclFloat8e4m3};
    xcclAgGemm_t ops[2] = {nullptr, nullptr};
    for (int t = 0; t < 2; ++t) {
      if (!XCCL_OK(ctx,
                   xcclAgGemmCreate(ctx.comm, n, k, m_max, types[t], xcclBfloat16, xcclAgGemmSplit,
                                    0, XCCL_GEMM_CUBLASLT_PATH, nullptr, &ops[t])))
        return;
    }
    for (int t = 0; t < 2 && ctx.failures.empty(); ++t) {
      const xcclDataType_t in = types[t];
      xcclAgGemm_t op = ops[t];
      const Operands o = MakeOperands(ctx.seed, ctx.rank, m, n, k, in);
      const bool fp8 = in == xcclFloat8e4m3;
      DeviceBuffer a, b, as, bs, c;
      const size_t c_bytes = static_cast<size_t>(ctx.nranks * padded * n) * 2;
      if (!ToDevice(ctx, stream, o.a.data(), o.a.size(), &a) ||
          !ToDevice(ctx, stream, o.b.data(), o.b.size(), &b) || !c.Allocate(ctx, c_bytes))
        return;
      if (fp8 && (!ToDevice(ctx, stream, o.a_scale.data(), m * 4, &as) ||
                  !ToDevice(ctx, stream, o.b_scale.data(), n * 4, &bs)))
        return;
      if (!GPU_OK(ctx, gpu::MemsetAsync(c.get(), kPoisonByte, c_bytes, stream.get()))) return;
      void* result = nullptr;
      if (!XCCL_OK(ctx,
                   xcclAgGemmRun(op, a.get(), fp8 ? reinterpret_cast<float*>(as.get()) : nullptr,
                                 b.get(), fp8 ? reinterpret_cast<float*>(bs.get()) : nullptr, m,
                                 c.get(), &result, stream.xccl())))
        return;
      HostBytes got(c_bytes);
      if (!GPU_OK(ctx, gpu::MemcpyAsync(got.data(), c.get(), c_bytes, stream.get())) ||
          !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
        return;
      ExpectNoAsyncError(ctx, "after the split run");
      double err2 = 0, ref2 = 0;
      int64_t bad_padding = 0;
      for (int s = 0; s < ctx.nranks; ++s) {
        const Operands src = MakeOperands(ctx.seed, s, m, n, k, in);
        for (int64_t i = 0; i < padded; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            const double g = Value(xcclBfloat16, got.data(), (s * padded + i) * n + j);
            if (i >= m) {
              bad_padding += g != 0.0;
              continue;
            }
            double sum = 0;
            for (int64_t q = 0; q < k; ++q)
              sum += Value(in, src.a.data(), i * k + q) * Value(in, o.b.data(), j * k + q);
            if (fp8) sum *= double(src.a_scale[i]) * o.b_scale[j];
            err2 += (g - sum) * (g - sum);
            ref2 += sum * sum;
          }
        }
      }
      const double rel = std::sqrt(err2 / ref2);
      RANK_EXPECT(ctx, rel <= 1e-2, (fp8 ? "fp8" : "bf16") << ": relative L2 " << rel);
      RANK_EXPECT(ctx, bad_padding == 0, bad_padding << " padding values are not zero");
      RANK_EXPECT(ctx, xcclAgGemmSelfTest(op, m, stream.xccl()) == xcclSuccess,
                  "self test: " << xcclGetLastError(ctx.comm));
    }
    for (xcclAgGemm_t op : ops)
      RANK_EXPECT(ctx, xcclAgGemmDestroy(op) == xcclSuccess, xcclGetLastError(nullptr));
  });
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuAgGemmTest, ::testing::ValuesIn(StandardGpuWorlds()),
                         GpuWorldName);

#else

TEST(GpuAgGemmTest, SplitMatchesTheReferenceFusedIsRefused) {
  GTEST_SKIP() << "needs the cublaslt GEMM plugin, built on the cuda platform only";
}

#endif

}  // namespace
}  // namespace xccl_test
