// ag_gemm_perf: fused all-gather + GEMM against its split forms, per global M and (N, K).
//
// Per row: split-vendor (with --compare vendor: the vendor's all-gather, then the same GEMM
// plugin called directly; only where the vendor library runs, never on the host platform),
// split-xccl (xcclAllGather, then one GEMM), fused with 1, 2 and 4 bands per source and with the
// default rule, the best of these, its ratio to split-vendor (or split-xccl where there is no
// vendor), and the largest relative L2 error of the variants' C against a double-precision
// reference on sampled rows and columns. Times are the median over --rounds rounds of -n calls
// each (variants interleaved within a round), each call's time the slowest rank's.
//
// Each variant's C is checked once, in the first round, on a poisoned output: the buffer is
// filled with 0xFF bytes (NaN in bf16) before the variant's first call and read after its timed
// loop, so a variant that leaves C unwritten shows a non-finite error rather than the C of the
// variant before it. An error over kMaxRelL2 (or not finite) is reported on stderr and makes the
// exit status 1.
//
// A pinned fused-c2 / fused-c4 column whose count the op clamps to fewer bands (xcclAgGemmChunks)
// would repeat another count's run under the wrong name: it is not run and shows '-'.
//
// fp8-block (DeepSeek-V3 block scales, xcclAgGemmScalesBlock128): A scales [KB][m], B scales
// [ceil(n/128)][KB], KB = ceil(k/128), each block's scale drawn on its own so a wrong one shows.
// xcclAllGather leaves the gathered A scales as [world][KB][m], not the [KB][world*m] one GEMM
// over all rows reads, and this binary reaches the GPU only through harness/device_buffers.h,
// which has no 2D copy to re-pack them: so split-vendor and gemm-only make one GEMM per source
// (a_scale_ld = m), world calls where ptpc makes one.
//
// Own flags (the rest are nccl-tests' -np/-t/-g/-n/-w and --compare):
//   --m "M ..."            global M list (rows over all ranks; each rank has M / world, so every
//                          M must be a multiple of the world size, else the run is refused)
//   --shapes "NxK ..."     N x K list (N a multiple of 16)
//   --dtype bf16|fp16|fp8|fp8-block  input type (output bf16); fp8 is e4m3 with ptpc scales,
//                          fp8-block e4m3 with 1x128 / 128x128 block scales
//   --plugin NAME|PATH     GEMM plugin (default XCCL_GEMM_PLUGIN, else "reference")
//   --rounds R             rounds (default 3)
// Defaults depend on the platform the binary was built for: on GPUs the Kimi-K3 TP8 table of issue
// 4, item 7 (M 4096 8192 16384 32768, N x K 6288x7168 3648x7168 6400x7168 3840x7168); on the host
// platform, whose reference GEMM is scalar C++ and would take hours on those, M 4096 8192 and
// N x K 96x32 48x32.
//
// The own flags, the run header, the interleaved rounds, the checks and the table row are
// harness/fused_gemm_bench.h's, shared with gemm_rs_perf; this file sets up a cell's variants.
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
#include "xccl.h"
#include "xccl_gemm.h"

namespace xccl_perf {
namespace {

using xccl_test::GemmOperands;
using xccl_test::TypeSize;

// The halves alone: xccl's all-gather of A (and scales) into the gathered buffer, then the plugin
// over the gathered rows.
constexpr int kAgOnly = kFirstHalf;
constexpr int kGemmOnly = kSecondHalf;

xcclAgGemmMode_t Mode(const OpVariant& v) { return v.fused ? xcclAgGemmFused : xcclAgGemmSplit; }

// The double-precision GEMM of the decoded inputs on a sample of C: about 8 rows per source and
// 128 columns, enough to catch a wrong band or scale and cheap at K = 7168. Made once per row of
// the table; every variant's C is compared with it.
struct Sample {
  std::vector<int> source;
  std::vector<int64_t> row, col;  // within the source's rows
  std::vector<double> value;
};

Sample ReferenceSample(const RankContext& ctx, const FusedGemmSettings& set, const GemmShape& s,
                       int64_t m, const GemmOperands& mine) {
  Sample sample;
  const int64_t step = std::max<int64_t>(1, m / 8), col_step = std::max<int64_t>(1, s.n / 128);
  for (int src = 0; src < ctx.nranks; ++src) {
    // The source's A rows and scales, this rank's B and B scales.
    const GemmOperands o = src == ctx.rank ? mine : MakeOperands(src, m, s, set);
    for (int64_t i = 0; i < m; i += step) {
      for (int64_t j = 0; j < s.n; j += col_step) {
        sample.source.push_back(src);
        sample.row.push_back(i);
        sample.col.push_back(j);
        sample.value.push_back(ReferenceDot(set, s, m, o, i, mine, j));
      }
    }
  }
  return sample;
}

// C holds `rows_per_source` rows of each source in turn (the op pads them, the vendor split
// does not), n columns each.
double RelativeL2(const Sample& sample, const uint16_t* c, int64_t rows_per_source, int64_t n) {
  return SampledRelativeL2(sample.value, [&](size_t x) {
    return c[(sample.source[x] * rows_per_source + sample.row[x]) * n + sample.col[x]];
  });
}

class AgGemm final : public FusedGemmOp {
 public:
  const char* Program() const override { return "ag_gemm_perf"; }
  const char* OpName() const override { return "ag_gemm"; }
  // The Kimi-K3 TP8 table (docs/PERF.md) on GPUs; small ones for the host platform's scalar
  // reference GEMM, which needs minutes per row at K = 7168.
  void Defaults(bool gpu, std::vector<int64_t>* global_m,
                std::vector<GemmShape>* shapes) const override {
    *global_m =
        gpu ? std::vector<int64_t>{4096, 8192, 16384, 32768} : std::vector<int64_t>{4096, 8192};
    *shapes = gpu ? std::vector<GemmShape>{{6288, 7168}, {3648, 7168}, {6400, 7168}, {3840, 7168}}
                  : std::vector<GemmShape>{{96, 32}, {48, 32}};
  }
  const char* GpuDefaultsName() const override { return "GPU defaults (Kimi-K3 TP8)"; }
  void PrintOwnUsage() const override;
  void PrintLegend(const FusedGemmSettings& set) const override;
  const char* FirstHalfName() const override { return "ag-only"; }
  const char* SecondHalfName() const override { return "gemm-only"; }
  bool ShowsDefaultChunks() const override { return true; }
  const char* SecondHalfCheckName() const override { return "gemm-only (over ag-only's gather)"; }
  const char* VendorRole() const override {
    return "its all-gather of A, then the same GEMM plugin";
  }
  bool MeasureCell(FusedGemmRank& rank, const FusedGemmSettings& set, const GemmShape& s,
                   int64_t global_m) const override;
};

bool AgGemm::MeasureCell(FusedGemmRank& rank, const FusedGemmSettings& set, const GemmShape& s,
                         int64_t global_m) const {
  const RankContext& ctx = rank.ctx();
  DeviceBuffers* buffers = &rank.buffers();
  const xcclStream_t stream = buffers->Stream();
  const xcclComm_t comm = rank.comm();
  const int64_t m = global_m / ctx.nranks;
  std::vector<xcclAgGemm_t> ops(kOpVariantCount, nullptr);
  bool ok = true;
  for (int v = 0; v < kOpVariantCount && ok; ++v) {
    const OpVariant& variant = kOpVariants[v];
    const xcclResult_t r =
        xcclAgGemmCreateScaled(comm, s.n, s.k, m, set.in_type, xcclBfloat16, set.scales,
                               Mode(variant), variant.chunks, rank.plugin(), nullptr, &ops[v]);
    // Fused needs a GPU per rank (DMA queues): where ranks share one, its columns say '-'.
    if (r == xcclInvalidUsage && variant.fused) {
      if (ctx.rank == 0 && v == 1) printf("# %s: %s\n", variant.name, xcclGetLastError(comm));
      ops[v] = nullptr;
      continue;
    }
    ok = rank.Ok(r, variant.name);
  }
  if (!ok) return false;
  int64_t padded = 0;
  int default_chunks = 0;
  xcclAgGemmPaddedM(ops[0], m, &padded);
  if (ops[kOpVariantCount - 1] != nullptr)
    xcclAgGemmChunks(ops[kOpVariantCount - 1], m, &default_chunks);
  // A pinned count the op clamps (fewer row tiles than bands, or bands that do not divide
  // them) would time another count under this column's name: such a column is not run.
  std::vector<bool> clamped(kOpVariantCount, false);
  for (int v = 0; v < kOpVariantCount; ++v) {
    int used = 0;
    if (ops[v] != nullptr && kOpVariants[v].fused && kOpVariants[v].chunks > 0 &&
        xcclAgGemmChunks(ops[v], m, &used) == xcclSuccess && used != kOpVariants[v].chunks)
      clamped[v] = true;
  }
  const GemmOperands o = MakeOperands(ctx.rank, m, s, set);
  const bool fp8 = set.in_type == xcclFloat8e4m3;  // with scales, ptpc or block
  const bool block = set.BlockScales();
  // One rank's A scales: [m] (ptpc) or [KB][m] (block); gathered, world of them in turn.
  const size_t a_scale_count = o.a_scale.size();
  const size_t gathered_scale_bytes = ctx.nranks * a_scale_count * 4;
  const size_t c_bytes = static_cast<size_t>(ctx.nranks * padded * s.n) * 2;
  const size_t in_size = TypeSize(set.in_type);
  const size_t cv_bytes = static_cast<size_t>(ctx.nranks * m * s.n) * 2;
  const size_t gathered_bytes = static_cast<size_t>(ctx.nranks * m * s.k) * in_size;
  // Every output and gathered buffer starts as, and is reset to before its checked run,
  // this pattern (one host copy serves them all).
  const std::vector<uint8_t> poison(
      std::max<size_t>({c_bytes, cv_bytes, gathered_bytes, gathered_scale_bytes, size_t(1)}),
      kPoisonByte);
  StagedOperands in;
  if (!rank.Stage(o, poison, c_bytes, &in)) return false;
  auto run = [&](int v) {
    return rank.Ok(xcclAgGemmRun(ops[v], in.a.ptr, in.AScales(), in.b.ptr, in.BScales(), m,
                                 in.c.ptr, nullptr, stream),
                   kOpVariants[v].name);
  };
  const Sample sample = ReferenceSample(ctx, set, s, m, o);
  // Split-vendor: the vendor's all-gather of A (and scales) into one buffer, then one GEMM
  // through the same plugin, called directly. The two halves alone, for the overlap bound
  // max(all-gather, GEMM): ag-only, xccl's all-gather into that buffer, and gemm-only, the
  // plugin over the gathered rows.
  const bool with_direct = rank.DirectRuns();
  const bool with_vendor = rank.VendorRuns();
  // at-once: the all-gather fills `gathered2` (and its scales) while the GEMM reads `gathered`.
  Staged gathered, gathered_scales, gathered2, gathered_scales2, cv;
  if (with_direct &&
      (!gathered.Fill(buffers, poison.data(), gathered_bytes) ||
       !gathered2.Fill(buffers, poison.data(), gathered_bytes) ||
       !cv.Fill(buffers, poison.data(), cv_bytes) ||
       (fp8 && (!gathered_scales.Fill(buffers, poison.data(), gathered_scale_bytes) ||
                !gathered_scales2.Fill(buffers, poison.data(), gathered_scale_bytes))))) {
    ctx.sync->Abort();
    return false;
  }
  // The GEMM over the gathered rows: one call over all world * m (no scales, ptpc), or, with
  // block scales, one per source over its m rows and its [KB][m] scales (see the top).
  const int gemm_calls = block ? ctx.nranks : 1;
  const xcclGemmProblem vp =
      DirectProblem(set, s, block ? m : ctx.nranks * m, gathered.ptr,
                    fp8 ? static_cast<const float*>(gathered_scales.ptr) : nullptr, in.b.ptr,
                    in.BScales(), cv.ptr);
  if (with_direct && !rank.gemm().Prepare(vp)) {
    fprintf(stderr, "ag_gemm_perf: rank %d: the plugin called directly refuses M %lld N %lld\n",
            ctx.rank, static_cast<long long>(vp.m), static_cast<long long>(vp.n));
    ctx.sync->Abort();
    return false;
  }
  auto run_gathered_gemm = [&]() {
    for (int call = 0; call < gemm_calls; ++call) {
      xcclGemmProblem p = vp;
      p.a = static_cast<const uint8_t*>(gathered.ptr) + call * m * s.k * in_size;
      p.c = static_cast<uint8_t*>(cv.ptr) + call * m * s.n * 2;
      if (fp8) p.a_scale = static_cast<const float*>(gathered_scales.ptr) + call * a_scale_count;
      if (!rank.gemm().Run(p, stream)) return false;
    }
    return true;
  };
  auto run_vendor = [&]() {
    if (!rank.vendor().AllGather(in.a.ptr, gathered.ptr, m * s.k * in_size, stream)) return false;
    if (fp8 &&
        !rank.vendor().AllGather(in.a_scale.ptr, gathered_scales.ptr, a_scale_count * 4, stream))
      return false;
    return run_gathered_gemm();
  };
  auto gather_into = [&](const Staged& rows, const Staged& scales, xcclStream_t on) {
    return rank.Ok(xcclAllGather(in.a.ptr, rows.ptr, m * s.k * in_size, xcclUint8, comm, on),
                   "ag-only") &&
           (!fp8 ||
            rank.Ok(xcclAllGather(in.a_scale.ptr, scales.ptr, a_scale_count, xcclFloat32, comm, on),
                    "ag-only scales"));
  };
  auto run_ag_only = [&]() { return gather_into(gathered, gathered_scales, stream); };
  // Both halves at once, with nothing between them: the all-gather into `gathered2` on the side
  // stream while the GEMM runs over ag-only's gather.
  auto run_at_once = [&]() {
    return buffers->ForkSide() && gather_into(gathered2, gathered_scales2, buffers->SideStream()) &&
           run_gathered_gemm() && buffers->JoinSide();
  };
  CellVariants variants;
  variants.runs = [&](int v) {
    if (v == kVendorSplit) return with_vendor;
    if (v == kAgOnly || v == kGemmOnly || v == kBothHalves) return with_direct;
    return ops[v] != nullptr && !clamped[v];
  };
  // The vendor split and ag-only both fill `gathered`, which gemm-only then reads: poisoning it
  // before each makes gemm-only's check one of ag-only's gather too.
  variants.poison_outputs = [&](int v) {
    auto reset = [&](const Staged& buffer, size_t bytes) {
      return buffers->CopyToDevice(buffer.ptr, poison.data(), bytes);
    };
    if (v < kOpVariantCount) return reset(in.c, c_bytes);
    if (v == kGemmOnly) return reset(cv, cv_bytes);
    // at-once's GEMM reads ag-only's gather, made again here so that no order of the variants can
    // leave it poisoned.
    if (v == kBothHalves) return reset(cv, cv_bytes) && run_ag_only() && buffers->Synchronize();
    const bool gathers =
        reset(gathered, gathered_bytes) && (!fp8 || reset(gathered_scales, gathered_scale_bytes));
    return gathers && (v != kVendorSplit || reset(cv, cv_bytes));
  };
  variants.call = [&](int v) {
    if (v == kVendorSplit) return run_vendor();
    if (v == kAgOnly) return run_ag_only();
    if (v == kGemmOnly) return run_gathered_gemm();
    if (v == kBothHalves) return run_at_once();
    return run(v);
  };
  std::vector<uint8_t> host_c(std::max(c_bytes, cv_bytes));
  variants.output_error = [&](int v, double* error) {
    if (v < kOpVariantCount && !buffers->CopyToHost(host_c.data(), in.c.ptr, c_bytes)) return false;
    const bool vendor_run = v == kVendorSplit || v == kGemmOnly || v == kBothHalves;
    if (vendor_run && !buffers->CopyToHost(host_c.data(), cv.ptr, cv_bytes)) return false;
    *error = RelativeL2(sample, reinterpret_cast<const uint16_t*>(host_c.data()),
                        vendor_run ? m : padded, s.n);
    return true;
  };
  return rank.RunVariants(s, global_m, default_chunks, variants, [&]() {
    for (xcclAgGemm_t op : ops)
      if (op != nullptr) xcclAgGemmDestroy(op);
  });
}

// The own flags, after the harness's usage (which lists only its own).
void AgGemm::PrintOwnUsage() const {
  printf(
      "\tOwn flags (defaults: host platform / GPU platforms; this build: %s):\n"
      "\t[--m \"M ...\"] global M list, rows over all ranks; each rank has M / world, so every M\n"
      "\t\tmust be a multiple of the world size (np * nthreads * ngpus): others are refused\n"
      "\t\t(default \"4096 8192\" / \"4096 8192 16384 32768\")\n"
      "\t[--shapes \"NxK ...\"] N x K list, N a multiple of 16 (default \"96x32 48x32\" /\n"
      "\t\t\"6288x7168 3648x7168 6400x7168 3840x7168\")\n"
      "\t[--dtype bf16|fp16|fp8|fp8-block] input type, output bf16 (default bf16); fp8: e4m3\n"
      "\t\twith per-token / per-channel scales; fp8-block: e4m3 with DeepSeek-V3 block scales\n"
      "\t\t(1x128 A, 128x128 B; split-vendor and gemm-only then run one GEMM per source)\n"
      "\t[--plugin NAME|PATH] GEMM plugin (default XCCL_GEMM_PLUGIN, else the reference plugin)\n"
      "\t[--rounds R] rounds of interleaved variants, the median reported (1 to 10000,\n"
      "\t\tdefault 3)\n"
      "\tEach variant's C is checked once, in the first round, on a poisoned output; an error\n"
      "\tover %.0e or not finite makes the exit status 1.\n",
      DeviceBuffers::Platform(), kMaxRelL2);
}

void AgGemm::PrintLegend(const FusedGemmSettings& set) const {
  printf(
      "# split-vendor: '-' where no vendor library runs (the host platform). ag-only: "
      "xcclAllGather of A (and scales) alone; gemm-only: the plugin over the gathered rows "
      "alone; at-once: both at once, nothing between them (the all-gather on a second stream of "
      "the "
      "highest priority into another buffer while the GEMM runs over ag-only's gather); overlap: "
      "max(ag-only, gemm-only) / best fused (1.00 = perfect overlap); ceiling: max(ag-only, "
      "gemm-only) / at-once, the most overlap this device gives the halves. "
      "best/split: the best variant against split-vendor, else split-xccl. fused-c2/c4: '-' "
      "also where the op clamps the pinned count to fewer bands (xcclAgGemmChunks; def shows "
      "the default's count): that count is not run and not in best. relL2max: the largest "
      "relative L2 error; each variant's C is checked once, in the first round, on a poisoned "
      "output (0xFF bytes, NaN: 'inf' if any sampled element stays unwritten)\n");
  if (set.BlockScales())
    printf(
        "# blockscale: split-vendor and gemm-only run one GEMM per source (m rows, a_scale_ld = "
        "m): the all-gather leaves the A scales [world][KB][m], not the [KB][world*m] of one "
        "GEMM over all rows, and this binary has no 2D copy to re-pack them\n");
}

}  // namespace
}  // namespace xccl_perf

int main(int argc, char** argv) {
  // BuiltPlugin is compiled here, where perf/CMakeLists.txt gives this tree's plugin folder.
  return xccl_perf::FusedGemmBenchMain(argc, argv, xccl_perf::AgGemm(), xccl_perf::BuiltPlugin);
}
