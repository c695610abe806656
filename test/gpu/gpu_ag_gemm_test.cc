// ag_gemm on a GPU platform with the reference plugin's kernel and the cublaslt plugin: split mode
// everywhere, fused where every rank has its own GPU (refused where ranks share one: no DMA
// queues), bf16 and fp8 ptpc on fresh operands against a double-precision reference of the decoded
// inputs, padding rows exactly zero, fused equal to split, a warm self test, and graph replay with
// fresh data, on every world of the gpu suite (ranks sharing one GPU, every GPU where there are
// several); fused on one GPU with two ranks given a queue each (XCCL_GPU_QUEUES=1), so that
// a machine of one GPU runs the fused path too; and all of it with the bands on two compute
// streams (XCCL_AGGEMM_COMPUTE_STREAMS=2, the GPU default) and on one.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "gpu/gpu_ag_gemm_helpers.h"
#include "gpu/gpu_harness.h"
#include "mp/counting_gemm_plugin.h"
#include "mp/test_params.h"

namespace xccl_test {
namespace {

#if defined(XCCL_GEMM_REFERENCE_PATH)

class GpuAgGemmTest : public GpuWorldTest {};

// One rank's part: split everywhere; fused where the communicator has a DMA queue per peer
// (refused otherwise); fused and split byte for byte; then the fused (else split) call captured
// in a graph and replayed with fresh A each time, another rank held on the device before each
// replay: the peers' waits must read the device epoch of that replay (a wait target baked into
// the graph would pass at once and read the previous replay's rows).
void SplitAndFusedBody(const PluginChoice& plugin, RankContext& ctx) {
  Stream stream;
  if (!stream.Create(ctx) || !WarmUpDelay(ctx, stream)) return;
  const int64_t n = 64, k = 64, m = 200, m_max = 256, padded = 256;
  int queues = 0;
  if (!XCCL_OK(ctx, xcclCommQueueCount(ctx.comm, &queues))) return;
  const bool fused_ok = queues >= ctx.nranks - 1;
  // Every op made before any call and destroyed after the last: device memory is allocated
  // and freed (cudaFree waits for the whole device) while no peer sharing the GPU has a call
  // in flight that waits for this rank.
  const xcclDataType_t types[] = {xcclBfloat16, xcclFloat8e4m3};
  xcclAgGemm_t ops[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}};  // [type][split, fused]
  for (int t = 0; t < 2; ++t) {
    if (!XCCL_OK(ctx,
                 CreateOp(ctx.comm, plugin, types[t], xcclAgGemmSplit, n, k, m_max, &ops[t][0])))
      return;
    xcclResult_t r = CreateOp(ctx.comm, plugin, types[t], xcclAgGemmFused, n, k, m_max, &ops[t][1]);
    RANK_EXPECT(ctx, fused_ok ? r == xcclSuccess : r == xcclInvalidUsage,
                "fused create with " << queues << " queues: " << xcclGetErrorString(r) << ": "
                                     << xcclGetLastError(ctx.comm));
  }
  const size_t c_bytes = static_cast<size_t>(ctx.nranks * padded * n) * 2;
  for (int t = 0; t < 2 && ctx.failures.empty(); ++t) {
    const xcclDataType_t in = types[t];
    const bool fp8 = in == xcclFloat8e4m3;
    const GemmOperands o = MakeAgGemmOperands(ctx.seed, ctx.rank, /*call=*/0, m, n, k, in);
    DeviceBuffer a, b, as, bs, c;
    if (!ToDevice(ctx, stream, o.a.data(), o.a.size(), &a) ||
        !ToDevice(ctx, stream, o.b.data(), o.b.size(), &b) || !c.Allocate(ctx, c_bytes))
      return;
    if (fp8 && (!ToDevice(ctx, stream, o.a_scale.data(), m * 4, &as) ||
                !ToDevice(ctx, stream, o.b_scale.data(), n * 4, &bs)))
      return;
    const float* a_scale = fp8 ? reinterpret_cast<float*>(as.get()) : nullptr;
    const float* b_scale = fp8 ? reinterpret_cast<float*>(bs.get()) : nullptr;
    std::vector<unsigned char> bytes[2];
    for (int mode = 0; mode < 2; ++mode) {
      xcclAgGemm_t op = ops[t][mode];
      if (op == nullptr) continue;
      if (!GPU_OK(ctx, gpu::MemsetAsync(c.get(), kPoisonByte, c_bytes, stream.get()))) return;
      const int64_t tile_waits = TileWaitLaunches().load();
      if (!XCCL_OK(ctx, xcclAgGemmRun(op, a.get(), a_scale, b.get(), b_scale, m, c.get(), nullptr,
                                      stream.xccl())))
        return;
      // A fused call over a plugin with a tile-wait entry takes it (one launch per peer source),
      // rather than waiting per band on the stream.
      if (mode == kFused && CountsTileWaits(plugin))
        RANK_EXPECT(ctx, TileWaitLaunches().load() > tile_waits,
                    "the fused call made no tile-wait launch");
      HostBytes got(c_bytes);
      if (!GPU_OK(ctx, gpu::MemcpyAsync(got.data(), c.get(), c_bytes, stream.get())) ||
          !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
        return;
      ExpectNoAsyncError(ctx, "after the run");
      int64_t bad_padding = 0;
      const double rel = AgGemmError(ctx, got.data(), in, m, n, k, /*call=*/0, &bad_padding);
      const char* what = mode == 0 ? "split" : "fused";
      RANK_EXPECT(ctx, rel <= kAgGemmTolerance,
                  what << (fp8 ? " fp8" : " bf16") << ": relative L2 " << rel);
      RANK_EXPECT(ctx, bad_padding == 0, what << ": " << bad_padding << " padding values not 0");
      RANK_EXPECT(ctx, xcclAgGemmSelfTest(op, m, stream.xccl()) == xcclSuccess,
                  what << " self test: " << xcclGetLastError(ctx.comm));
      bytes[mode].assign(got.begin(), got.end());
    }
    if (!bytes[1].empty())
      RANK_EXPECT(ctx, bytes[0] == bytes[1], (fp8 ? "fp8" : "bf16") << ": fused and split differ");
    if (!ctx.failures.empty()) break;

    // Graph: one call captured, replayed three times with fresh A (and scales) each time.
    xcclAgGemm_t op = ops[t][1] != nullptr ? ops[t][1] : ops[t][0];
    gpu::GraphHandle graph = nullptr;
    gpu::GraphExecHandle exec = nullptr;
    if (!GPU_OK(ctx, gpu::StreamBeginCaptureThreadLocal(stream.get()))) return;
    xcclResult_t captured =
        xcclAgGemmRun(op, a.get(), a_scale, b.get(), b_scale, m, c.get(), nullptr, stream.xccl());
    if (!GPU_OK(ctx, gpu::StreamEndCapture(stream.get(), &graph))) return;
    if (!XCCL_OK(ctx, captured) || !GPU_OK(ctx, gpu::GraphInstantiate(&exec, graph))) return;
    for (uint64_t replay = 1; replay <= 3 && ctx.failures.empty(); ++replay) {
      const GemmOperands fresh = MakeAgGemmOperands(ctx.seed, ctx.rank, replay, m, n, k, in);
      HostBytes pa(fresh.a.size()), pb(fresh.b.size()), ps(m * 4), pbs(n * 4);
      memcpy(pa.data(), fresh.a.data(), fresh.a.size());
      memcpy(pb.data(), fresh.b.data(), fresh.b.size());
      if (fp8) {
        memcpy(ps.data(), fresh.a_scale.data(), m * 4);
        memcpy(pbs.data(), fresh.b_scale.data(), n * 4);
      }
      if (!GPU_OK(ctx, gpu::MemcpyAsync(a.get(), pa.data(), pa.size(), stream.get())) ||
          !GPU_OK(ctx, gpu::MemcpyAsync(b.get(), pb.data(), pb.size(), stream.get())) ||
          (fp8 && (!GPU_OK(ctx, gpu::MemcpyAsync(as.get(), ps.data(), m * 4, stream.get())) ||
                   !GPU_OK(ctx, gpu::MemcpyAsync(bs.get(), pbs.data(), n * 4, stream.get())))) ||
          !GPU_OK(ctx, gpu::MemsetAsync(c.get(), kPoisonByte, c_bytes, stream.get())) ||
          (static_cast<int>(replay % ctx.nranks) == ctx.rank && !HoldOnDevice(ctx, stream)) ||
          !GPU_OK(ctx, gpu::GraphLaunch(exec, stream.get())))
        break;
      HostBytes got(c_bytes);
      if (!GPU_OK(ctx, gpu::MemcpyAsync(got.data(), c.get(), c_bytes, stream.get())) ||
          !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
        break;
      int64_t bad_padding = 0;
      const double rel = AgGemmError(ctx, got.data(), in, m, n, k, replay, &bad_padding);
      RANK_EXPECT(ctx, rel <= kAgGemmTolerance && bad_padding == 0,
                  "graph replay " << replay << (fp8 ? " fp8" : " bf16") << ": relative L2 " << rel
                                  << ", " << bad_padding << " padding values not 0");
    }
    (void)gpu::GraphExecDestroy(exec);
    (void)gpu::GraphDestroy(graph);
  }
  for (auto& pair : ops)
    for (xcclAgGemm_t op : pair)
      if (op != nullptr)
        RANK_EXPECT(ctx, xcclAgGemmDestroy(op) == xcclSuccess, xcclGetLastError(nullptr));
}

// Fused where every rank has a GPU of its own, refused where ranks share one.
TEST_P(GpuAgGemmTest, SplitAndFusedMatchTheReferenceAndGraphReplay) {
  ForEachPlugin([this](const PluginChoice& plugin) {
    Run([plugin](RankContext& ctx) { SplitAndFusedBody(plugin, ctx); });
  });
}

// The fused machinery (bands over copy-engine queues, flags, stream waits or tile waits, the
// closing barrier) on a machine of one GPU: two ranks sharing it, given one queue each by
// XCCL_GPU_QUEUES=1 (the automatic count is 0 there, because copy engines shared by more ranks
// deadlock, docs/perf-history.md). Other worlds skip.
TEST_P(GpuAgGemmTest, FusedOnASharedGpuWithForcedQueues) {
  if (GetParam().placement != Placement::kOneGpu || world() != 2)
    GTEST_SKIP() << "runs on one GPU with 2 ranks only";
  RunOptions options;
  // A short deadline: copy engines shared by ranks can deadlock (docs/perf-history.md), and if
  // they do here the test should fail in seconds, not hold the suite for minutes.
  options.before_init = [] {
    WithGpuQueues(1)();
    WithTimeoutMs(15000)();
  };
  ForEachPlugin([this, &options](const PluginChoice& plugin) {
    Run(
        [plugin](RankContext& ctx) {
          int queues = 0;
          if (!XCCL_OK(ctx, xcclCommQueueCount(ctx.comm, &queues))) return;
          RANK_EXPECT(ctx, queues == 1, queues << " queues where XCCL_GPU_QUEUES=1");
          SplitAndFusedBody(plugin, ctx);
        },
        options);
  });
}

// The side stream exists and computes bands: the reference plugin behind the counting wrapper
// (which has no tile-wait entry) makes two contexts, the second runs at least one band of a
// fused call (chunks 1: world - 1 pairs, the first on the side stream), and C is right.
void SideStreamBody(const xcclGemmPlugin_v1_t* counting, RankContext& ctx) {
  Stream stream;
  if (!stream.Create(ctx)) return;
  const int64_t n = 64, k = 64, m = 200, m_max = 256;
  const size_t known = CountedGemmContexts().size();
  xcclAgGemm_t op = nullptr;
  if (!XCCL_OK(ctx, xcclAgGemmCreate(ctx.comm, n, k, m_max, xcclBfloat16, xcclBfloat16,
                                     xcclAgGemmFused, 1, nullptr, counting, &op)))
    return;
  const size_t contexts = CountedGemmContexts().size() - known;
  RANK_EXPECT(ctx, contexts == 2, "two compute streams made " << contexts << " plugin contexts");
  const GemmOperands o = MakeAgGemmOperands(ctx.seed, ctx.rank, /*call=*/0, m, n, k, xcclBfloat16);
  const size_t c_bytes = static_cast<size_t>(ctx.nranks * PaddedRows(m) * n) * 2;
  DeviceBuffer a, b, c;
  HostBytes got(c_bytes);
  if (ToDevice(ctx, stream, o.a.data(), o.a.size(), &a) &&
      ToDevice(ctx, stream, o.b.data(), o.b.size(), &b) && c.Allocate(ctx, c_bytes) &&
      GPU_OK(ctx, gpu::MemsetAsync(c.get(), kPoisonByte, c_bytes, stream.get())) &&
      XCCL_OK(ctx, xcclAgGemmRun(op, a.get(), nullptr, b.get(), nullptr, m, c.get(), nullptr,
                                 stream.xccl())) &&
      GPU_OK(ctx, gpu::MemcpyAsync(got.data(), c.get(), c_bytes, stream.get())) &&
      GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) {
    ExpectGemmC(ctx, got.data(), xcclBfloat16, m, n, k, /*call=*/0, "fused on two compute streams");
    if (contexts == 2)
      RANK_EXPECT(ctx, CountedGemmContexts()[known + 1]->bands > 0, "the side stream ran no band");
  }
  RANK_EXPECT(ctx, xcclAgGemmDestroy(op) == xcclSuccess, xcclGetLastError(nullptr));
}

// Fused mode with its bands' GEMMs on `streams` compute streams, where it runs: one process per
// GPU over every GPU, and two ranks on one GPU given a queue each; other worlds skip.
class GpuAgGemmStreamsTest : public GpuAgGemmTest {
 protected:
  bool FusedRuns() const {
    return GetParam().placement == Placement::kOneGpu ? world() == 2 : GetParam().n == 1;
  }
  RunOptions OptionsFor(int64_t streams) const {
    RunOptions options;
    const bool one_gpu = GetParam().placement == Placement::kOneGpu;
    options.before_init = [one_gpu, streams] {
      if (one_gpu) WithGpuQueues(1)();
      WithTimeoutMs(15000)();
      WithComputeStreams(streams)();
    };
    return options;
  }
  // SplitAndFusedBody for every plugin under OptionsFor(streams).
  void RunEveryPlugin(int64_t streams) {
    const RunOptions options = OptionsFor(streams);
    ForEachPlugin([this, &options](const PluginChoice& plugin) {
      Run([plugin](RankContext& ctx) { SplitAndFusedBody(plugin, ctx); }, options);
    });
  }
};

// XCCL_AGGEMM_COMPUTE_STREAMS=2 (the GPU default): the bands of a plugin without a tile-wait
// entry (cublaslt, the reference plugin with its entry stripped) take the caller's stream and a
// side stream in turn, with a plugin context each (SideStreamBody checks that the side stream
// runs); the results, fused equal to split and graph replay (the side stream forked and joined
// inside the capture) as above.
TEST_P(GpuAgGemmStreamsTest, FusedOnTwoComputeStreams) {
  if (!FusedRuns()) GTEST_SKIP() << "runs with 2 ranks on one GPU or one rank per GPU only";
  const xcclGemmPlugin_v1_t* counting = CountingGemmPlugin(XCCL_GEMM_REFERENCE_PATH);
  ASSERT_NE(counting, nullptr) << "cannot load " << XCCL_GEMM_REFERENCE_PATH;
  Run([counting](RankContext& ctx) { SideStreamBody(counting, ctx); }, OptionsFor(2));
  RunEveryPlugin(2);
}

// XCCL_AGGEMM_COMPUTE_STREAMS=1: every band's GEMM on the caller's stream, the same checks.
TEST_P(GpuAgGemmStreamsTest, FusedOnOneComputeStream) {
  if (!FusedRuns()) GTEST_SKIP() << "runs with 2 ranks on one GPU or one rank per GPU only";
  RunEveryPlugin(1);
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuAgGemmTest, ::testing::ValuesIn(StandardGpuWorlds()),
                         GpuWorldName);
INSTANTIATE_TEST_SUITE_P(Gpu, GpuAgGemmStreamsTest, ::testing::ValuesIn(StandardGpuWorlds()),
                         GpuWorldName);

#else

TEST(GpuAgGemmTest, SplitAndFusedMatchTheReferenceAndGraphReplay) {
  GTEST_SKIP() << "needs the reference GEMM plugin, built with the GPU platforms";
}

#endif

}  // namespace
}  // namespace xccl_test
