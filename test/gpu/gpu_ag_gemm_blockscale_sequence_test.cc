// ag_gemm with fp8 block scales on a GPU platform, the host suite's sequence cases
// (test/mp/ag_gemm_blockscale_test.cc): 8 back-to-back calls with 4 bands per source and M
// alternating 512, 1024, 768, 1024, 256, 1024 (the band tiles move between calls), a rank held
// on the device before each call and no host synchronisation between calls, and calls across
// the epoch wrap. Split everywhere, fused where the communicator has a DMA queue per peer, and
// once more on one GPU with two ranks given a queue each; the reference plugin (k 300: a short
// last K block) and cuBLASLt where built (k 384). Every output poisoned first and compared in
// full against a double-precision reference after the sequence.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/comm_handle.h"
#include "gpu/gpu_ag_gemm_helpers.h"
#include "gpu/gpu_harness.h"
#include "mp/test_params.h"

namespace xccl_test {
namespace {

#if defined(XCCL_GEMM_REFERENCE_PATH)

struct Plugin {
  const char* path;
  int64_t k;
};

std::vector<Plugin> Plugins() {
  std::vector<Plugin> plugins = {{XCCL_GEMM_REFERENCE_PATH, 300}};
#if defined(XCCL_GEMM_CUBLASLT_PATH)
  plugins.push_back({XCCL_GEMM_CUBLASLT_PATH, 384});
#endif
  return plugins;
}

// Split always, fused where there is a DMA queue per peer (refused with xcclInvalidUsage
// elsewhere), both with block scales and `chunks` bands.
bool CreateOps(RankContext& ctx, const Plugin& plugin, int64_t n, int64_t m_max, int chunks,
               xcclAgGemm_t ops[2]) {
  ops[kSplit] = ops[kFused] = nullptr;
  int queues = 0;
  if (!XCCL_OK(ctx, xcclCommQueueCount(ctx.comm, &queues))) return false;
  auto create = [&](xcclAgGemmMode_t mode, xcclAgGemm_t* op) {
    return xcclAgGemmCreateScaled(ctx.comm, n, plugin.k, m_max, xcclFloat8e4m3, xcclBfloat16,
                                  xcclAgGemmScalesBlock128, mode, chunks, plugin.path, nullptr, op);
  };
  if (!XCCL_OK(ctx, create(xcclAgGemmSplit, &ops[kSplit]))) return false;
  const xcclResult_t r = create(xcclAgGemmFused, &ops[kFused]);
  const bool fused_ok = queues >= ctx.nranks - 1;
  RANK_EXPECT(ctx, fused_ok ? r == xcclSuccess : r == xcclInvalidUsage,
              "fused create with " << queues << " queues: " << xcclGetErrorString(r) << ": "
                                   << xcclGetLastError(ctx.comm));
  if (r != xcclSuccess) ops[kFused] = nullptr;
  return true;
}

std::string Label(int mode, int call, int64_t m) {
  return std::string(AgGemmModeName(mode)) + " blockscale call " + std::to_string(call) + " (m " +
         std::to_string(m) + ")";
}

// The calls of `ms`, in both modes, a held rank before each, one synchronisation per sequence.
void SequenceBody(const Plugin& plugin, const std::vector<int64_t>& ms, int chunks,
                  uint64_t first_id, RankContext& ctx) {
  const int64_t n = 144;
  int64_t m_max = 0;
  for (int64_t m : ms) m_max = std::max(m_max, m);
  Stream stream;
  AgGemmCalls calls;
  if (!stream.Create(ctx) || !WarmUpDelay(ctx, stream) ||
      !calls.Allocate(ctx, n, plugin.k, xcclFloat8e4m3, ms, /*block_scales=*/true))
    return;
  xcclAgGemm_t ops[2];
  if (!CreateOps(ctx, plugin, n, m_max, chunks, ops)) return;
  for (int mode = kSplit; mode <= kFused && ctx.failures.empty(); ++mode) {
    if (ops[mode] == nullptr) continue;
    if (!calls.Refill(ctx, stream, first_id + 100 * mode)) break;
    for (int i = 0; i < calls.count(); ++i) {
      if (i % ctx.nranks == ctx.rank && !HoldOnDevice(ctx, stream)) break;
      if (!calls.Run(ctx, ops[mode], i, stream, Label(mode, i, calls.m(i)))) {
        ctx.Fail("enqueue of call " + std::to_string(i) + " failed; later calls not made");
        break;
      }
    }
    if (!GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) break;
    ExpectNoAsyncError(ctx, "after the sequence");
    calls.Check(ctx, stream);
  }
  DestroyOps(ctx, ops, 2);
}

void BackToBackBody(const Plugin& plugin, RankContext& ctx) {
  SequenceBody(plugin, std::vector<int64_t>(8, 1024), /*chunks=*/4, 7000, ctx);
}

void AlternatingMBody(const Plugin& plugin, RankContext& ctx) {
  SequenceBody(plugin, {512, 1024, 768, 1024, 256, 1024}, /*chunks=*/4, 7500, ctx);
}

// Signals start at 0xFFFFFFFE (set before init): the first calls' band flags cross 2^32.
void EpochWrapBody(const Plugin& plugin, RankContext& ctx) {
  RANK_EXPECT(ctx, ctx.comm->impl->current_epoch() == 0xFFFFFFFEu,
              "the preset epoch base did not take: " << ctx.comm->impl->current_epoch());
  SequenceBody(plugin, std::vector<int64_t>(4, 512), /*chunks=*/2, 8000, ctx);
}

class GpuAgGemmBlockscaleSequenceTest : public GpuWorldTest {
 protected:
  void RunEveryPlugin(void (*body)(const Plugin&, RankContext&),
                      const RunOptions& options = RunOptions()) {
    for (const Plugin& plugin : Plugins()) {
      SCOPED_TRACE(plugin.path);
      Run([plugin, body](RankContext& ctx) { body(plugin, ctx); }, options);
    }
  }
};

TEST_P(GpuAgGemmBlockscaleSequenceTest, BackToBackWithHeldRanksNoHostSync) {
  RunEveryPlugin(BackToBackBody);
}

TEST_P(GpuAgGemmBlockscaleSequenceTest, AlternatingMWithHeldRanksNoHostSync) {
  RunEveryPlugin(AlternatingMBody);
}

TEST_P(GpuAgGemmBlockscaleSequenceTest, AcrossTheEpochWrap) {
  RunOptions options;
  options.before_init = WithEpochBase(0xFFFFFFFEu);
  RunEveryPlugin(EpochWrapBody, options);
}

// The fused cases on one GPU: two ranks given a queue each (XCCL_GPU_QUEUES=1).
TEST_P(GpuAgGemmBlockscaleSequenceTest, FusedOnASharedGpuWithForcedQueues) {
  if (GetParam().placement != Placement::kOneGpu || world() != 2)
    GTEST_SKIP() << "runs on one GPU with 2 ranks only";
  RunOptions options;
  options.before_init = [] {
    WithGpuQueues(1)();
    WithTimeoutMs(15000)();
  };
  RunEveryPlugin(BackToBackBody, options);
  RunEveryPlugin(AlternatingMBody, options);
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuAgGemmBlockscaleSequenceTest,
                         ::testing::ValuesIn(StandardGpuWorlds()), GpuWorldName);

#else

TEST(GpuAgGemmBlockscaleSequenceTest, NeedsTheReferencePlugin) {
  GTEST_SKIP() << "the reference GEMM plugin is not built";
}

#endif

}  // namespace
}  // namespace xccl_test
