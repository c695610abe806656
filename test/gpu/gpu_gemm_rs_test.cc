// gemm_rs on a GPU platform with the reference plugin's kernel: bf16 and fp8 ptpc, split and
// fused (the fused GEMMs on the side stream beside each chunk's reduce-scatter), on fresh
// operands against a double-precision sum of the decoded inputs, fused equal to split byte for
// byte, twice per op with m alternating; fused chunks with their reduce-scatters held to a small
// grid; and a fused call captured in a graph, replayed with fresh A each time while a rank lags;
// on every world of the gpu suite.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "common/float_formats.h"
#include "gpu/gpu_ag_gemm_helpers.h"
#include "gpu/gpu_harness.h"

namespace xccl_test {
namespace {

#if defined(XCCL_GEMM_REFERENCE_PATH)

class GpuGemmRsTest : public GpuWorldTest {};

// Relative L2 of this rank's rows [m / world][n] (bf16) of call `call` against the double sum
// over ranks of A_r @ B_r^T (with ptpc scales).
double RowsError(const RankContext& ctx, const std::vector<unsigned char>& rows, int64_t m,
                 int64_t n, int64_t k, xcclDataType_t in, uint64_t call) {
  const int64_t mine = m / ctx.nranks, first = ctx.rank * mine;
  std::vector<double> want(static_cast<size_t>(mine * n), 0.0);
  for (int s = 0; s < ctx.nranks; ++s) {
    const GemmOperands o = MakeAgGemmOperands(ctx.seed, s, call, m, n, k, in);
    for (int64_t i = 0; i < mine; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t q = 0; q < k; ++q)
          sum += Value(in, o.a.data(), (first + i) * k + q) * Value(in, o.b.data(), j * k + q);
        if (in == xcclFloat8e4m3) sum *= static_cast<double>(o.a_scale[first + i]) * o.b_scale[j];
        want[i * n + j] += sum;
      }
  }
  double err2 = 0, ref2 = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double got = Value(xcclBfloat16, rows.data(), static_cast<int64_t>(i));
    err2 += (got - want[i]) * (got - want[i]);
    ref2 += want[i] * want[i];
  }
  return std::sqrt(err2 / (ref2 > 0 ? ref2 : 1));
}

void BothModesBody(RankContext& ctx) {
  Stream stream;
  if (!stream.Create(ctx) || !WarmUpDelay(ctx, stream)) return;
  const int64_t n = 64, k = 96, per_rank = 96;
  const int64_t m_max = per_rank * ctx.nranks;
  const xcclDataType_t types[] = {xcclBfloat16, xcclFloat8e4m3};
  // Every op made before the first call and destroyed after the last: allocating and freeing
  // device memory waits for the whole device (docs/ARCHITECTURE.md, "Device-synchronising calls").
  xcclGemmRs_t ops[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}};  // [type][fused, split]
  for (int t = 0; t < 2; ++t)
    for (int mode = 0; mode < 2; ++mode)
      if (!XCCL_OK(ctx, xcclGemmRsCreate(ctx.comm, n, k, m_max, types[t], xcclBfloat16,
                                         xcclAgGemmScalesDefault,
                                         static_cast<xcclGemmRsMode_t>(mode), mode == 0 ? 3 : 0,
                                         XCCL_GEMM_REFERENCE_PATH, nullptr, &ops[t][mode])))
        return;
  // The exchange checked on its own first, in both modes.
  for (int t = 0; t < 2; ++t)
    for (int mode = 0; mode < 2; ++mode)
      if (!XCCL_OK(ctx, xcclGemmRsSelfTest(ops[t][mode], m_max, stream.xccl()))) return;
  uint64_t call = 0;
  for (int t = 0; t < 2 && ctx.failures.empty(); ++t) {
    for (const int64_t m : {m_max, m_max / 2}) {
      const GemmOperands o = MakeAgGemmOperands(ctx.seed, ctx.rank, call, m, n, k, types[t]);
      const bool fp8 = types[t] == xcclFloat8e4m3;
      DeviceBuffer a, b, as, bs, out;
      const size_t out_bytes = static_cast<size_t>(m / ctx.nranks * n) * 2;
      if (!ToDevice(ctx, stream, o.a.data(), o.a.size(), &a) ||
          !ToDevice(ctx, stream, o.b.data(), o.b.size(), &b) || !out.Allocate(ctx, out_bytes))
        return;
      if (fp8 && (!ToDevice(ctx, stream, o.a_scale.data(), m * 4, &as) ||
                  !ToDevice(ctx, stream, o.b_scale.data(), n * 4, &bs)))
        return;
      std::vector<unsigned char> rows[2];
      for (int mode = 0; mode < 2; ++mode) {
        HostBytes host(out_bytes);
        if (!GPU_OK(ctx, gpu::MemsetAsync(out.get(), 0xFF, out_bytes, stream.get())) ||
            !XCCL_OK(ctx, xcclGemmRsRun(ops[t][mode], a.get(),
                                        fp8 ? reinterpret_cast<float*>(as.get()) : nullptr, b.get(),
                                        fp8 ? reinterpret_cast<float*>(bs.get()) : nullptr, m,
                                        out.get(), stream.xccl())) ||
            !GPU_OK(ctx, gpu::MemcpyAsync(host.data(), out.get(), out_bytes, stream.get())) ||
            !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
          return;
        rows[mode].assign(host.begin(), host.end());
        const double rel = RowsError(ctx, rows[mode], m, n, k, types[t], call);
        RANK_EXPECT(ctx, std::isfinite(rel) && rel <= 8e-3,
                    (mode == 0 ? "fused" : "split")
                        << (fp8 ? " fp8" : " bf16") << " m " << m << ": relative L2 " << rel);
      }
      RANK_EXPECT(ctx, rows[0] == rows[1],
                  (fp8 ? "fp8" : "bf16") << " m " << m << ": fused and split differ");
      ++call;
    }
  }
  for (auto& pair : ops)
    for (xcclGemmRs_t op : pair)
      if (op != nullptr) RANK_EXPECT(ctx, xcclGemmRsDestroy(op) == xcclSuccess, "destroy");
}

TEST_P(GpuGemmRsTest, SplitAndFusedMatchTheReference) { Run(BothModesBody); }

// Fused chunks whose reduce-scatters are held to 2 blocks (XCCL_GEMMRS_REDUCE_BLOCKS) where each
// would take 8 (a 64 KiB piece), against split at the full grid: byte for byte, and both against
// the double sum, on fresh operands and poisoned outputs.
void HeldChunkGridBody(RankContext& ctx) {
  Stream stream;
  if (!stream.Create(ctx) || !WarmUpDelay(ctx, stream)) return;
  const int64_t n = 256, k = 64, m = 256 * ctx.nranks;
  xcclGemmRs_t ops[2] = {nullptr, nullptr};  // fused (2 chunks), split
  for (int mode = 0; mode < 2; ++mode)
    if (!XCCL_OK(ctx, xcclGemmRsCreate(ctx.comm, n, k, m, xcclBfloat16, xcclBfloat16,
                                       xcclAgGemmScalesDefault, static_cast<xcclGemmRsMode_t>(mode),
                                       mode == 0 ? 2 : 0, XCCL_GEMM_REFERENCE_PATH, nullptr,
                                       &ops[mode])))
      return;
  constexpr uint64_t kCall = 77;
  const GemmOperands o = MakeAgGemmOperands(ctx.seed, ctx.rank, kCall, m, n, k, xcclBfloat16);
  const size_t out_bytes = static_cast<size_t>(m / ctx.nranks * n) * 2;
  DeviceBuffer a, b, out;
  if (!ToDevice(ctx, stream, o.a.data(), o.a.size(), &a) ||
      !ToDevice(ctx, stream, o.b.data(), o.b.size(), &b) || !out.Allocate(ctx, out_bytes))
    return;
  std::vector<unsigned char> rows[2];
  for (int mode = 0; mode < 2 && ctx.failures.empty(); ++mode) {
    HostBytes host(out_bytes);
    if (!GPU_OK(ctx, gpu::MemsetAsync(out.get(), 0xFF, out_bytes, stream.get())) ||
        !XCCL_OK(ctx, xcclGemmRsRun(ops[mode], a.get(), nullptr, b.get(), nullptr, m, out.get(),
                                    stream.xccl())) ||
        !GPU_OK(ctx, gpu::MemcpyAsync(host.data(), out.get(), out_bytes, stream.get())) ||
        !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
      break;
    rows[mode].assign(host.begin(), host.end());
    const double rel = RowsError(ctx, rows[mode], m, n, k, xcclBfloat16, kCall);
    RANK_EXPECT(ctx, std::isfinite(rel) && rel <= 8e-3,
                (mode == 0 ? "fused, held grid" : "split") << ": relative L2 " << rel);
  }
  if (ctx.failures.empty())
    RANK_EXPECT(ctx, rows[0] == rows[1], "fused with a held grid and split differ");
  for (xcclGemmRs_t op : ops)
    if (op != nullptr) RANK_EXPECT(ctx, xcclGemmRsDestroy(op) == xcclSuccess, "destroy");
}

TEST_P(GpuGemmRsTest, FusedChunksWithAHeldReduceGridMatchSplit) {
  RunOptions options;
  options.before_init = WithGemmRsReduceBlocks(2);
  Run(HeldChunkGridBody, options);
}

// One fused call captured after an ordinary one (so at another epoch), then replayed with fresh
// A copied in before each replay; a different rank lags on the host before each. Every replay's
// rows against the double sum of that replay's operands.
void GraphReplayBody(RankContext& ctx) {
  constexpr int kReplays = 6;
  constexpr int kGraphSlot = 16;  // ctx.shared: the capture's host barrier
  Stream stream;
  if (!stream.Create(ctx) || !WarmUpDelay(ctx, stream)) return;
  const int64_t n = 64, k = 96, m = 64 * ctx.nranks;
  xcclGemmRs_t op = nullptr;
  if (!XCCL_OK(ctx, xcclGemmRsCreate(ctx.comm, n, k, m, xcclBfloat16, xcclBfloat16,
                                     xcclAgGemmScalesDefault, xcclGemmRsFused, 2,
                                     XCCL_GEMM_REFERENCE_PATH, nullptr, &op)))
    return;
  const size_t a_bytes = static_cast<size_t>(m * k) * 2,
               out_bytes = static_cast<size_t>(m / ctx.nranks * n) * 2;
  // Call c's operands: B is call 0's for every call (the graph reads the same B).
  const GemmOperands first = MakeAgGemmOperands(ctx.seed, ctx.rank, 0, m, n, k, xcclBfloat16);
  HostBytes a_host(a_bytes * kReplays), out_host(out_bytes * kReplays);
  for (int i = 0; i < kReplays; ++i) {
    const GemmOperands o = MakeAgGemmOperands(ctx.seed, ctx.rank, 10 + i, m, n, k, xcclBfloat16);
    std::memcpy(a_host.data() + i * a_bytes, o.a.data(), a_bytes);
  }
  DeviceBuffer a, b, out;
  if (!ToDevice(ctx, stream, first.a.data(), a_bytes, &a) ||
      !ToDevice(ctx, stream, first.b.data(), first.b.size(), &b) || !out.Allocate(ctx, out_bytes))
    return;
  auto call = [&] {
    return XCCL_OK(
        ctx, xcclGemmRsRun(op, a.get(), nullptr, b.get(), nullptr, m, out.get(), stream.xccl()));
  };
  if (!call() || !GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) return;
  {
    CapturedGraph graph;
    if (!graph.Capture(ctx, stream, kGraphSlot, call)) return;
    for (int i = 0; i < kReplays; ++i) {
      if (i % ctx.nranks == ctx.rank) usleep(300);
      if (!GPU_OK(ctx, gpu::MemsetAsync(out.get(), 0xFF, out_bytes, stream.get())) ||
          !GPU_OK(ctx,
                  gpu::MemcpyAsync(a.get(), a_host.data() + i * a_bytes, a_bytes, stream.get())) ||
          !GPU_OK(ctx, gpu::GraphLaunch(graph.exec(), stream.get())) ||
          !GPU_OK(ctx, gpu::MemcpyAsync(out_host.data() + i * out_bytes, out.get(), out_bytes,
                                        stream.get())))
        break;
    }
    if (!GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) return;
  }
  for (int i = 0; i < kReplays && ctx.failures.empty(); ++i) {
    // The reference with each rank's replay-i A and call-0 B.
    std::vector<unsigned char> rows(out_host.data() + i * out_bytes,
                                    out_host.data() + (i + 1) * out_bytes);
    const int64_t mine = m / ctx.nranks, first_row = ctx.rank * mine;
    std::vector<double> want(static_cast<size_t>(mine * n), 0.0);
    for (int s = 0; s < ctx.nranks; ++s) {
      const GemmOperands o = MakeAgGemmOperands(ctx.seed, s, 10 + i, m, n, k, xcclBfloat16);
      const GemmOperands o0 = MakeAgGemmOperands(ctx.seed, s, 0, m, n, k, xcclBfloat16);
      for (int64_t r = 0; r < mine; ++r)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t q = 0; q < k; ++q)
            want[r * n + j] += Value(xcclBfloat16, o.a.data(), (first_row + r) * k + q) *
                               Value(xcclBfloat16, o0.b.data(), j * k + q);
    }
    double err2 = 0, ref2 = 0;
    for (size_t e = 0; e < want.size(); ++e) {
      const double got = Value(xcclBfloat16, rows.data(), static_cast<int64_t>(e));
      err2 += (got - want[e]) * (got - want[e]);
      ref2 += want[e] * want[e];
    }
    const double rel = std::sqrt(err2 / (ref2 > 0 ? ref2 : 1));
    RANK_EXPECT(ctx, std::isfinite(rel) && rel <= 8e-3,
                "replay " << i << ": relative L2 " << rel << " (a stale or unwritten replay)");
  }
  RANK_EXPECT(ctx, xcclGemmRsDestroy(op) == xcclSuccess, "destroy");
}

TEST_P(GpuGemmRsTest, FusedCapturedGraphReplayedWithFreshA) { Run(GraphReplayBody); }

INSTANTIATE_TEST_SUITE_P(Gpu, GpuGemmRsTest, ::testing::ValuesIn(StandardGpuWorlds()),
                         GpuWorldName);

#endif  // XCCL_GEMM_REFERENCE_PATH

}  // namespace
}  // namespace xccl_test
