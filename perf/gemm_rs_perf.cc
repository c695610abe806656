// gemm_rs_perf: GEMM fused with reduce-scatter (gemm_rs) against its split forms, per global M
// and (N, K).
//
// Every rank holds A_r [M][K] and B_r [N][K], K its shard of the inner dimension; C = sum over
// ranks of A_r @ B_r^T, of which each rank receives its M / world rows. Per row: split-vendor
// (with --compare vendor: the same GEMM plugin called directly over all M rows into an [M][N]
// bf16 partial, then the vendor's reduce-scatter of it; only where the vendor library runs, never
// on the host platform), split-xccl (xcclGemmRsSplit: one GEMM, then xcclReduceScatter), fused
// with 1, 2 and 4 chunks per owner's block and with the default, gemm-only (the plugin over all M
// rows into the partial, alone) and rs-only (xcclReduceScatter of that partial, bf16 sum, alone),
// at-once (both at once with nothing between them: rs-only on a second stream of the highest
// priority over gemm-only's partial while the GEMM makes it again into another buffer), overlap =
// max(gemm-only, rs-only) / the best fused time, ceiling = the same bound / at-once (the most
// overlap this device gives the two halves), the best fused variant, its ratio to
// split-vendor (or split-xccl where there is no vendor), and the largest relative L2 error of the
// variants' rows against a double-precision reference on sampled rows and columns. Times are the
// median over --rounds rounds of -n calls each (variants interleaved within a round), each call's
// time the slowest rank's.
//
// Each variant's rows are checked once, in the first round, on a poisoned output: the buffer is
// filled with 0xFF bytes (NaN in bf16) before the variant's first call and read after its timed
// loop, so a variant that leaves rows unwritten shows a non-finite error rather than the rows of
// the variant before it. The reference is the sum over ranks s of A_s row . B_s column with s's
// scales; every rank regenerates every rank's operands from their seed. gemm-only makes only this
// rank's partial: rs-only, which reduces it right after in the checked round, checks it too. An
// error over kMaxRelL2 (or not finite) is reported on stderr and makes the exit status 1.
//
// A pinned fused-c2 / fused-c4 column with more chunks than a block has rows (M / world) would
// repeat another count's run under the wrong name: it is not run and shows '-'.
//
// fp8-block (DeepSeek-V3 block scales, xcclAgGemmScalesBlock128): A scales [KB][M], B scales
// [ceil(N/128)][KB], KB = ceil(K/128), each block's scale drawn on its own so a wrong one shows.
// Unlike ag_gemm's gathered rows, every rank's A scales are already the [KB][M] one GEMM over all
// rows reads, so split-vendor and gemm-only make one call (a_scale_ld = M) as for ptpc.
//
// Own flags (the rest are nccl-tests' -np/-t/-g/-n/-w and --compare):
//   --m "M ..."            global M list (rows of C; each rank receives M / world of them, so
//                          every M must be a multiple of the world size, else the run is refused)
//   --shapes "NxK ..."     N x K list (N a multiple of 16; K each rank's inner shard)
//   --dtype bf16|fp16|fp8|fp8-block  input type (output bf16); fp8 is e4m3 with ptpc scales,
//                          fp8-block e4m3 with 1x128 / 128x128 block scales
//   --plugin NAME|PATH     GEMM plugin (default XCCL_GEMM_PLUGIN, else "reference")
//   --rounds R             rounds (default 3)
// Defaults depend on the platform the binary was built for: on GPUs M 4096 8192 16384 32768 and
// N x K 7168x1024 7168x2048 7168x2304 (under TP8: Kimi-K2's o_proj, DeepSeek-V3's o_proj, and the
// down_proj of both); on the host platform, whose reference GEMM is scalar C++, M 64 128 and
// N x K 48x32 96x32.
//
// The own flags, the run header, the interleaved rounds, the checks and the table row are
// harness/fused_gemm_bench.h's, shared with ag_gemm_perf; this file sets up a cell's variants.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/float_formats.h"
#include "harness/built_plugin.h"
#include "harness/device_buffers.h"
#include "harness/fused_gemm_bench.h"
#include "harness/gemm_direct.h"
#include "harness/launcher.h"
#include "harness/rank_sync.h"
#include "harness/vendor_nccl.h"
#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl_perf {
namespace {

using xccl_test::GemmOperands;

// The halves alone: the plugin over all M rows into the [M][N] partial, then xccl's
// reduce-scatter of that partial.
constexpr int kGemmOnly = kFirstHalf;
constexpr int kRsOnly = kSecondHalf;

xcclGemmRsMode_t Mode(const OpVariant& v) { return v.fused ? xcclGemmRsFused : xcclGemmRsSplit; }

// The double-precision sum over ranks of the decoded GEMMs on a sample of this rank's rows of C:
// about 16 rows (the last included, so every chunk and the block's end are hit) and 128 columns.
// Made once per row of the table; every variant's rows are compared with it.
struct Sample {
  std::vector<int64_t> row, col;  // row within this rank's M / world rows
  std::vector<double> value;
};

Sample ReferenceSample(const RankContext& ctx, const FusedGemmSettings& set, const GemmShape& s,
                       int64_t m, const GemmOperands& mine) {
  Sample sample;
  const int64_t rows = m / ctx.nranks, first = ctx.rank * rows;
  auto picks = [](int64_t count, int64_t step) {
    std::vector<int64_t> at;
    for (int64_t x = 0; x < count; x += step) at.push_back(x);
    if (at.back() != count - 1) at.push_back(count - 1);
    return at;
  };
  for (int64_t i : picks(rows, std::max<int64_t>(1, rows / 16)))
    for (int64_t j : picks(s.n, std::max<int64_t>(1, s.n / 128))) {
      sample.row.push_back(i);
      sample.col.push_back(j);
    }
  sample.value.assign(sample.row.size(), 0.0);
  for (int src = 0; src < ctx.nranks; ++src) {
    // Both operands and their scales are the source rank's.
    const GemmOperands o = src == ctx.rank ? mine : MakeOperands(src, m, s, set);
    for (size_t x = 0; x < sample.value.size(); ++x)
      sample.value[x] += ReferenceDot(set, s, m, o, first + sample.row[x], o, sample.col[x]);
  }
  return sample;
}

// `c` is this rank's rows of C, [M / world][n] bf16.
double RelativeL2(const Sample& sample, const uint16_t* c, int64_t n) {
  return SampledRelativeL2(sample.value,
                           [&](size_t x) { return c[sample.row[x] * n + sample.col[x]]; });
}

class GemmRs final : public FusedGemmOp {
 public:
  const char* Program() const override { return "gemm_rs_perf"; }
  const char* OpName() const override { return "gemm_rs"; }
  // The TP8 shards of DeepSeek-V3 and Kimi-K2 on GPUs; small ones for the host platform's scalar
  // reference GEMM.
  void Defaults(bool gpu, std::vector<int64_t>* global_m,
                std::vector<GemmShape>* shapes) const override {
    *global_m =
        gpu ? std::vector<int64_t>{4096, 8192, 16384, 32768} : std::vector<int64_t>{64, 128};
    *shapes = gpu ? std::vector<GemmShape>{{7168, 1024}, {7168, 2048}, {7168, 2304}}
                  : std::vector<GemmShape>{{48, 32}, {96, 32}};
  }
  const char* GpuDefaultsName() const override {
    return "GPU defaults (DeepSeek-V3/Kimi-K2 TP8 o_proj, down_proj)";
  }
  void PrintOwnUsage() const override;
  void PrintLegend(const FusedGemmSettings& set) const override;
  const char* FirstHalfName() const override { return "gemm-only"; }
  const char* SecondHalfName() const override { return "rs-only"; }
  const char* SecondHalfCheckName() const override { return "rs-only (over gemm-only's partial)"; }
  const char* VendorRole() const override {
    return "the same GEMM plugin, then its bf16 reduce-scatter";
  }
  // The vendor reduce-scatters the bf16 partial with a sum.
  std::string VendorCannot(const VendorLibrary& library) const override {
    return library.CannotReduce(xcclBfloat16, xcclSum);
  }
  bool MeasureCell(FusedGemmRank& rank, const FusedGemmSettings& set, const GemmShape& s,
                   int64_t global_m) const override;
};

bool GemmRs::MeasureCell(FusedGemmRank& rank, const FusedGemmSettings& set, const GemmShape& s,
                         int64_t global_m) const {
  const RankContext& ctx = rank.ctx();
  DeviceBuffers* buffers = &rank.buffers();
  const xcclStream_t stream = buffers->Stream();
  const xcclComm_t comm = rank.comm();
  const int64_t rows = global_m / ctx.nranks;  // this rank's rows of C
  std::vector<xcclGemmRs_t> ops(kOpVariantCount, nullptr);
  bool ok = true;
  for (int v = 0; v < kOpVariantCount && ok; ++v) {
    const OpVariant& variant = kOpVariants[v];
    ok = rank.Ok(xcclGemmRsCreate(comm, s.n, s.k, global_m, set.in_type, xcclBfloat16, set.scales,
                                  Mode(variant), variant.chunks, rank.plugin(), nullptr, &ops[v]),
                 variant.name);
  }
  if (!ok) return false;
  // A block cuts into at most one chunk per row: a pinned count beyond that would time
  // another count under this column's name, so such a column is not run.
  std::vector<bool> clamped(kOpVariantCount, false);
  for (int v = 0; v < kOpVariantCount; ++v)
    clamped[v] = kOpVariants[v].fused && kOpVariants[v].chunks > rows;
  const GemmOperands o = MakeOperands(ctx.rank, global_m, s, set);
  const size_t out_bytes = static_cast<size_t>(rows * s.n) * 2;
  const size_t partial_bytes = static_cast<size_t>(global_m * s.n) * 2;
  // Every output starts as, and is reset to before its checked run, this pattern (one host
  // copy serves them all).
  const std::vector<uint8_t> poison(std::max<size_t>(partial_bytes, 1), kPoisonByte);
  StagedOperands in;
  if (!rank.Stage(o, poison, out_bytes, &in)) return false;
  auto run = [&](int v) {
    return rank.Ok(xcclGemmRsRun(ops[v], in.a.ptr, in.AScales(), in.b.ptr, in.BScales(), global_m,
                                 in.c.ptr, stream),
                   kOpVariants[v].name);
  };
  const Sample sample = ReferenceSample(ctx, set, s, global_m, o);
  // Split-vendor: one GEMM through the same plugin, called directly, into the [M][N] partial,
  // then the vendor's reduce-scatter of it into `cv`. The two halves alone, for the overlap
  // bound max(GEMM, reduce-scatter): gemm-only, the plugin into the partial, and rs-only, xccl's
  // reduce-scatter of it into `cv`.
  const bool with_direct = rank.DirectRuns();
  const bool with_vendor = rank.VendorRuns();
  // at-once: the GEMM writes `partial2` while the reduce-scatter reads `partial`.
  Staged partial, partial2, cv;
  if (with_direct && (!partial.Fill(buffers, poison.data(), partial_bytes) ||
                      !partial2.Fill(buffers, poison.data(), partial_bytes) ||
                      !cv.Fill(buffers, poison.data(), out_bytes))) {
    ctx.sync->Abort();
    return false;
  }
  // One call over all M rows, for block scales too: A's [KB][M] scales are what it reads.
  const xcclGemmProblem vp =
      DirectProblem(set, s, global_m, in.a.ptr, in.AScales(), in.b.ptr, in.BScales(), partial.ptr);
  if (with_direct && !rank.gemm().Prepare(vp)) {
    fprintf(stderr,
            "gemm_rs_perf: rank %d: the plugin called directly refuses M %lld N %lld K %lld\n",
            ctx.rank, static_cast<long long>(vp.m), static_cast<long long>(vp.n),
            static_cast<long long>(vp.k));
    ctx.sync->Abort();
    return false;
  }
  xcclGemmProblem vp2 = vp;
  vp2.c = partial2.ptr;
  const size_t recv_count = static_cast<size_t>(rows * s.n);
  auto run_gemm_only = [&]() { return rank.gemm().Run(vp, stream); };
  auto run_vendor = [&]() {
    return run_gemm_only() && rank.vendor().ReduceScatter(partial.ptr, cv.ptr, recv_count,
                                                          xcclBfloat16, xcclSum, stream);
  };
  auto run_rs_only = [&]() {
    return rank.Ok(
        xcclReduceScatter(partial.ptr, cv.ptr, recv_count, xcclBfloat16, xcclSum, comm, stream),
        "rs-only");
  };
  // Both halves at once, with nothing between them: rs-only on the side stream over the partial
  // gemm-only made, while the GEMM makes the same product into `partial2`.
  auto run_at_once = [&]() {
    return buffers->ForkSide() &&
           rank.Ok(xcclReduceScatter(partial.ptr, cv.ptr, recv_count, xcclBfloat16, xcclSum, comm,
                                     buffers->SideStream()),
                   "at-once") &&
           rank.gemm().Run(vp2, stream) && buffers->JoinSide();
  };
  CellVariants variants;
  variants.runs = [&](int v) {
    if (v == kVendorSplit) return with_vendor;
    if (v == kGemmOnly || v == kRsOnly || v == kBothHalves) return with_direct;
    return !clamped[v];
  };
  // The vendor split and gemm-only both fill `partial`, which rs-only then reduces: poisoning it
  // before each makes rs-only's check one of gemm-only's partial too.
  variants.poison_outputs = [&](int v) {
    auto reset = [&](const Staged& buffer, size_t bytes) {
      return buffers->CopyToDevice(buffer.ptr, poison.data(), bytes);
    };
    if (v < kOpVariantCount) return reset(in.c, out_bytes);
    if (v == kGemmOnly) return reset(partial, partial_bytes);
    if (v == kRsOnly) return reset(cv, out_bytes);
    // at-once reduces `partial`: gemm-only's product, made again here so that no order of the
    // variants can leave it poisoned.
    if (v == kBothHalves) return reset(cv, out_bytes) && run_gemm_only() && buffers->Synchronize();
    return reset(partial, partial_bytes) && reset(cv, out_bytes);
  };
  variants.call = [&](int v) {
    if (v == kVendorSplit) return run_vendor();
    if (v == kGemmOnly) return run_gemm_only();
    if (v == kRsOnly) return run_rs_only();
    if (v == kBothHalves) return run_at_once();
    return run(v);
  };
  std::vector<uint8_t> host_c(out_bytes);
  variants.output_error = [&](int v, double* error) {
    const Staged& rows_of_c = v < kOpVariantCount ? in.c : cv;
    if (!buffers->CopyToHost(host_c.data(), rows_of_c.ptr, out_bytes)) return false;
    *error = RelativeL2(sample, reinterpret_cast<const uint16_t*>(host_c.data()), s.n);
    return true;
  };
  return rank.RunVariants(s, global_m, /*default_chunks=*/0, variants, [&]() {
    for (xcclGemmRs_t op : ops)
      if (op != nullptr) xcclGemmRsDestroy(op);
  });
}

// The own flags, after the harness's usage (which lists only its own).
void GemmRs::PrintOwnUsage() const {
  printf(
      "\tOwn flags (defaults: host platform / GPU platforms; this build: %s):\n"
      "\t[--m \"M ...\"] global M list, rows of C; each rank receives M / world of them, so every\n"
      "\t\tM must be a multiple of the world size (np * nthreads * ngpus): others are refused\n"
      "\t\t(default \"64 128\" / \"4096 8192 16384 32768\")\n"
      "\t[--shapes \"NxK ...\"] N x K list, N a multiple of 16, K each rank's inner shard\n"
      "\t\t(default \"48x32 96x32\" / \"7168x1024 7168x2048 7168x2304\")\n"
      "\t[--dtype bf16|fp16|fp8|fp8-block] input type, output bf16 (default bf16); fp8: e4m3\n"
      "\t\twith per-token / per-channel scales; fp8-block: e4m3 with DeepSeek-V3 block scales\n"
      "\t\t(1x128 A, 128x128 B)\n"
      "\t[--plugin NAME|PATH] GEMM plugin (default XCCL_GEMM_PLUGIN, else the reference plugin)\n"
      "\t[--rounds R] rounds of interleaved variants, the median reported (1 to 10000,\n"
      "\t\tdefault 3)\n"
      "\tEach variant's rows are checked once, in the first round, on a poisoned output; an\n"
      "\terror over %.0e or not finite makes the exit status 1.\n",
      DeviceBuffers::Platform(), kMaxRelL2);
}

void GemmRs::PrintLegend(const FusedGemmSettings&) const {
  printf(
      "# M: global rows of C, each rank receiving M / world; K: each rank's inner shard. "
      "split-vendor: the plugin over all M rows, then the vendor's reduce-scatter; '-' where no "
      "vendor library runs (the host platform). gemm-only: the plugin over all M rows into an "
      "[M][N] partial alone; rs-only: xcclReduceScatter of that partial alone; overlap: "
      "max(gemm-only, rs-only) / best fused (1.00 = perfect overlap); at-once: both halves at "
      "once, "
      "nothing between them (rs-only on a second stream of the highest priority while the GEMM "
      "runs again into another buffer); ceiling: max(gemm-only, rs-only) / at-once, the most "
      "overlap this device gives the halves. best/x split: the best "
      "fused variant against split-vendor, else split-xccl. fused-c2/c4: '-' where a block's rows "
      "(M / world) are fewer than the pinned chunks: not run and not in best. relL2max: the "
      "largest relative L2 error; each variant's rows are checked once, in the first round, on a "
      "poisoned output (0xFF bytes, NaN: 'inf' if any sampled element stays unwritten); rs-only's "
      "check covers gemm-only's partial\n");
}

}  // namespace
}  // namespace xccl_perf

int main(int argc, char** argv) {
  // BuiltPlugin is compiled here, where perf/CMakeLists.txt gives this tree's plugin folder.
  return xccl_perf::FusedGemmBenchMain(argc, argv, xccl_perf::GemmRs(), xccl_perf::BuiltPlugin);
}
