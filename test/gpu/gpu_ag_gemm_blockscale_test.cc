// ag_gemm with fp8 block scales on a GPU platform, with the reference plugin's kernel and with
// cuBLASLt (VEC128 activations, BLK128x128 weights) where it is built: split everywhere, fused
// where the communicator has a DMA queue per peer (on one GPU: two ranks given a queue each),
// fresh operands whose every scale differs against a double-precision reference, padding rows
// zero, fused equal to split byte for byte (reference plugin), a self test, and graph replay with
// fresh data and a held rank.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gpu/gpu_ag_gemm_helpers.h"
#include "gpu/gpu_harness.h"
#include "mp/test_params.h"

namespace xccl_test {
namespace {

#if defined(XCCL_GEMM_REFERENCE_PATH)

class GpuAgGemmBlockscaleTest : public GpuWorldTest {};

struct BlockscaleShape {
  const char* plugin;
  int64_t n, k;  // cuBLASLt's block modes want whole K blocks; the reference takes a short one
};

std::vector<BlockscaleShape> Shapes() {
  std::vector<BlockscaleShape> shapes = {{XCCL_GEMM_REFERENCE_PATH, 144, 300}};
#if defined(XCCL_GEMM_CUBLASLT_PATH)
  shapes.push_back({XCCL_GEMM_CUBLASLT_PATH, 144, 384});
#endif
  return shapes;
}

GemmOperands Operands(const RankContext& ctx, int rank, uint64_t call, int64_t m,
                      const BlockscaleShape& s) {
  std::mt19937_64 rng(ctx.seed ^ (0xD1B54A32D192ED03ull * (rank + 1)) ^ (call << 24));
  return RandomBlockscaleOperands(m, s.n, s.k, rng);
}

bool CheckC(RankContext& ctx, const unsigned char* c, int64_t m, uint64_t call,
            const BlockscaleShape& s, const std::string& what) {
  int64_t bad_padding = 0;
  const double rel = GatheredGemmError(
      c, xcclBfloat16, ctx.nranks, m, PaddedRows(m), s.n, s.k, xcclFloat8e4m3,
      Operands(ctx, ctx.rank, call, m, s), [&](int r) { return Operands(ctx, r, call, m, s); },
      &bad_padding);
  RANK_EXPECT(ctx, rel <= kAgGemmTolerance && bad_padding == 0,
              what << ": relative L2 " << rel << ", " << bad_padding << " padding values not 0");
  return ctx.failures.empty();
}

// Device copies of one call's operands.
struct DeviceOperands {
  DeviceBuffer a, b, as, bs;
  bool Fill(RankContext& ctx, const Stream& stream, const GemmOperands& o) {
    return ToDevice(ctx, stream, o.a.data(), o.a.size(), &a) &&
           ToDevice(ctx, stream, o.b.data(), o.b.size(), &b) &&
           ToDevice(ctx, stream, o.a_scale.data(), o.a_scale.size() * 4, &as) &&
           ToDevice(ctx, stream, o.b_scale.data(), o.b_scale.size() * 4, &bs);
  }
  const float* a_scale() { return reinterpret_cast<const float*>(as.get()); }
  const float* b_scale() { return reinterpret_cast<const float*>(bs.get()); }
};

void BlockscaleBody(const BlockscaleShape& s, RankContext& ctx) {
  Stream stream;
  if (!stream.Create(ctx) || !WarmUpDelay(ctx, stream)) return;
  const int64_t m_max = 512;
  int queues = 0;
  if (!XCCL_OK(ctx, xcclCommQueueCount(ctx.comm, &queues))) return;
  const bool fused_ok = queues >= ctx.nranks - 1;
  xcclAgGemm_t ops[2] = {nullptr, nullptr};  // split, fused (two bands per source)
  if (!XCCL_OK(ctx, xcclAgGemmCreateScaled(ctx.comm, s.n, s.k, m_max, xcclFloat8e4m3, xcclBfloat16,
                                           xcclAgGemmScalesBlock128, xcclAgGemmSplit, 0, s.plugin,
                                           nullptr, &ops[kSplit])))
    return;
  const xcclResult_t r = xcclAgGemmCreateScaled(
      ctx.comm, s.n, s.k, m_max, xcclFloat8e4m3, xcclBfloat16, xcclAgGemmScalesBlock128,
      xcclAgGemmFused, 2, s.plugin, nullptr, &ops[kFused]);
  RANK_EXPECT(ctx, fused_ok ? r == xcclSuccess : r == xcclInvalidUsage,
              "fused create with " << queues << " queues: " << xcclGetErrorString(r) << ": "
                                   << xcclGetLastError(ctx.comm));
  const size_t c_bytes = static_cast<size_t>(ctx.nranks * m_max * s.n) * 2;
  DeviceBuffer c;
  if (!c.Allocate(ctx, c_bytes)) return;
  const bool same_bytes = strcmp(s.plugin, XCCL_GEMM_REFERENCE_PATH) == 0;
  for (uint64_t call = 0; call < 2 && ctx.failures.empty(); ++call) {
    const int64_t m = call == 0 ? 300 : 512;  // padding rows, then two full bands
    DeviceOperands d;
    if (!d.Fill(ctx, stream, Operands(ctx, ctx.rank, call, m, s))) return;
    std::vector<unsigned char> bytes[2];
    for (int mode : {kSplit, kFused}) {
      if (ops[mode] == nullptr) continue;
      const std::string what = std::string(AgGemmModeName(mode)) + " m " + std::to_string(m);
      const size_t bytes_now = static_cast<size_t>(ctx.nranks * PaddedRows(m) * s.n) * 2;
      HostBytes got(bytes_now);
      if (!GPU_OK(ctx, gpu::MemsetAsync(c.get(), kPoisonByte, c_bytes, stream.get())) ||
          !XCCL_OK(ctx, xcclAgGemmRun(ops[mode], d.a.get(), d.a_scale(), d.b.get(), d.b_scale(), m,
                                      c.get(), nullptr, stream.xccl())) ||
          !GPU_OK(ctx, gpu::MemcpyAsync(got.data(), c.get(), bytes_now, stream.get())) ||
          !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
        return;
      ExpectNoAsyncError(ctx, what.c_str());
      CheckC(ctx, got.data(), m, call, s, what);
      RANK_EXPECT(ctx, xcclAgGemmSelfTest(ops[mode], m, stream.xccl()) == xcclSuccess,
                  what << " self test: " << xcclGetLastError(ctx.comm));
      bytes[mode].assign(got.begin(), got.end());
    }
    if (same_bytes && !bytes[kFused].empty())
      RANK_EXPECT(ctx, bytes[kSplit] == bytes[kFused], "m " << m << ": fused and split differ");
  }
  // One call captured, replayed three times with fresh operands, another rank held before each.
  xcclAgGemm_t op = ops[kFused] != nullptr ? ops[kFused] : ops[kSplit];
  const int64_t m = 512;
  DeviceOperands d;
  if (!ctx.failures.empty() || !d.Fill(ctx, stream, Operands(ctx, ctx.rank, 10, m, s))) {
    DestroyOps(ctx, ops, 2);
    return;
  }
  gpu::GraphHandle graph = nullptr;
  gpu::GraphExecHandle exec = nullptr;
  bool ok = GPU_OK(ctx, gpu::StreamBeginCaptureThreadLocal(stream.get()));
  const xcclResult_t captured = ok ? xcclAgGemmRun(op, d.a.get(), d.a_scale(), d.b.get(),
                                                   d.b_scale(), m, c.get(), nullptr, stream.xccl())
                                   : xcclInternalError;
  ok = ok && GPU_OK(ctx, gpu::StreamEndCapture(stream.get(), &graph)) && XCCL_OK(ctx, captured) &&
       GPU_OK(ctx, gpu::GraphInstantiate(&exec, graph));
  for (uint64_t replay = 11; ok && replay <= 13 && ctx.failures.empty(); ++replay) {
    const GemmOperands fresh = Operands(ctx, ctx.rank, replay, m, s);
    HostBytes pa(fresh.a.size()), pb(fresh.b.size()), ps(fresh.a_scale.size() * 4),
        pbs(fresh.b_scale.size() * 4), got(c_bytes);
    memcpy(pa.data(), fresh.a.data(), pa.size());
    memcpy(pb.data(), fresh.b.data(), pb.size());
    memcpy(ps.data(), fresh.a_scale.data(), ps.size());
    memcpy(pbs.data(), fresh.b_scale.data(), pbs.size());
    ok = GPU_OK(ctx, gpu::MemcpyAsync(d.a.get(), pa.data(), pa.size(), stream.get())) &&
         GPU_OK(ctx, gpu::MemcpyAsync(d.b.get(), pb.data(), pb.size(), stream.get())) &&
         GPU_OK(ctx, gpu::MemcpyAsync(d.as.get(), ps.data(), ps.size(), stream.get())) &&
         GPU_OK(ctx, gpu::MemcpyAsync(d.bs.get(), pbs.data(), pbs.size(), stream.get())) &&
         GPU_OK(ctx, gpu::MemsetAsync(c.get(), kPoisonByte, c_bytes, stream.get())) &&
         (static_cast<int>(replay % ctx.nranks) != ctx.rank || HoldOnDevice(ctx, stream)) &&
         GPU_OK(ctx, gpu::GraphLaunch(exec, stream.get())) &&
         GPU_OK(ctx, gpu::MemcpyAsync(got.data(), c.get(), c_bytes, stream.get())) &&
         GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
    if (ok) CheckC(ctx, got.data(), m, replay, s, "graph replay " + std::to_string(replay));
  }
  if (exec != nullptr) (void)gpu::GraphExecDestroy(exec);
  if (graph != nullptr) (void)gpu::GraphDestroy(graph);
  DestroyOps(ctx, ops, 2);
}

TEST_P(GpuAgGemmBlockscaleTest, SplitAndFusedMatchTheReferenceAndGraphReplay) {
  for (const BlockscaleShape& s : Shapes()) {
    SCOPED_TRACE(s.plugin);
    Run([s](RankContext& ctx) { BlockscaleBody(s, ctx); });
  }
}

// Fused on one GPU: two ranks given a queue each (XCCL_GPU_QUEUES=1), as the ptpc suite does.
TEST_P(GpuAgGemmBlockscaleTest, FusedOnASharedGpuWithForcedQueues) {
  if (GetParam().placement != Placement::kOneGpu || world() != 2)
    GTEST_SKIP() << "runs on one GPU with 2 ranks only";
  RunOptions options;
  options.before_init = [] {
    WithGpuQueues(1)();
    WithTimeoutMs(15000)();
  };
  for (const BlockscaleShape& s : Shapes()) {
    SCOPED_TRACE(s.plugin);
    Run([s](RankContext& ctx) { BlockscaleBody(s, ctx); }, options);
  }
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuAgGemmBlockscaleTest, ::testing::ValuesIn(StandardGpuWorlds()),
                         GpuWorldName);

#else

TEST(GpuAgGemmBlockscaleTest, NeedsTheReferencePlugin) {
  GTEST_SKIP() << "the reference GEMM plugin is not built";
}

#endif

}  // namespace
}  // namespace xccl_test
