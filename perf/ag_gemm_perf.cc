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
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/float_formats.h"
#include "common/gpu_runtime_settings.h"
#include "harness/built_plugin.h"
#include "harness/device_buffers.h"
#include "harness/gemm_direct.h"
#include "harness/launcher.h"
#include "harness/options.h"
#include "harness/rank_sync.h"
#include "harness/table_printer.h"
#include "harness/vendor_nccl.h"
#include "harness/vendor_setup.h"
#include "xccl.h"
#include "xccl_gemm.h"

namespace {

using xccl_perf::DirectPlugin;
using xccl_perf::RankContext;
using xccl_perf::RankSync;
using xccl_perf::Reduce;
using xccl_perf::Staged;

struct Shape {
  int64_t n, k;
};

// Empty lists until the flags are read: the defaults depend on the platform (ApplyDefaults).
struct Settings {
  std::vector<int64_t> global_m;
  std::vector<Shape> shapes;
  xcclDataType_t in_type = xcclBfloat16;
  // fp8's scales: per token and channel (ptpc) or in blocks (--dtype fp8-block).
  xcclAgGemmScales_t scales = xcclAgGemmScalesDefault;
  std::string plugin;
  int rounds = 3;
  // Where the lists came from, for the header: "as given" or which defaults.
  std::string m_from = "as given", shapes_from = "as given";
};

// The variants of one row, in print order.
struct Variant {
  const char* name;
  xcclAgGemmMode_t mode;
  int chunks;
};
const Variant kVariants[] = {{"split-xccl", xcclAgGemmSplit, 0},
                             {"fused-c1", xcclAgGemmFused, 1},
                             {"fused-c2", xcclAgGemmFused, 2},
                             {"fused-c4", xcclAgGemmFused, 4},
                             {"fused-def", xcclAgGemmFused, 0}};
constexpr int kVariantCount = sizeof(kVariants) / sizeof(kVariants[0]);

// The largest relative L2 error a checked run may show: bf16 output rounding gives about 2e-3
// (docs/PERF.md), a wrong band, scale or unwritten row gives far more (as gemm_plugin_perf).
constexpr double kMaxRelL2 = 1e-2;

// The byte every checked output starts as: 0xFFFF is NaN in bf16 and fp16, 0xFF in fp8 e4m3 and
// 0xFFFFFFFF in fp32 (the gathered scales), so any element left unwritten poisons the error.
constexpr uint8_t kPoisonByte = 0xFF;

// Whether this binary was built for a GPU platform (cuda or hip) rather than the host one.
bool GpuPlatform() { return strcmp(xccl_perf::DeviceBuffers::Platform(), "host") != 0; }

// The Kimi-K3 TP8 table (docs/PERF.md) on GPUs; small ones for the host platform's scalar
// reference GEMM, which needs minutes per row at K = 7168. Fills only what the flags left empty and
// records which defaults it used, for the header.
void ApplyDefaults(Settings* set) {
  const bool gpu = GpuPlatform();
  const char* kind = gpu ? "GPU defaults (Kimi-K3 TP8)" : "host-platform defaults";
  if (set->global_m.empty()) {
    set->global_m =
        gpu ? std::vector<int64_t>{4096, 8192, 16384, 32768} : std::vector<int64_t>{4096, 8192};
    set->m_from = kind;
  }
  if (set->shapes.empty()) {
    set->shapes = gpu ? std::vector<Shape>{{6288, 7168}, {3648, 7168}, {6400, 7168}, {3840, 7168}}
                      : std::vector<Shape>{{96, 32}, {48, 32}};
    set->shapes_from = kind;
  }
}

using xccl_test::Bf16Value;
using xccl_test::GemmOperands;
using xccl_test::TypeSize;
using xccl_test::Value;
using Operands = GemmOperands;

bool BlockScales(const Settings& set) { return set.scales == xcclAgGemmScalesBlock128; }

// Rank `rank`'s operands for a table row: any rank can regenerate any rank's (shared with the
// tests: test/common/float_formats.h).
Operands MakeOperands(int rank, int64_t m, const Shape& s, const Settings& set) {
  std::mt19937_64 rng(0x5eed0000ull + static_cast<uint64_t>(rank) * 7919 + m * 31 + s.n);
  if (BlockScales(set)) return xccl_test::RandomBlockscaleOperands(m, s.n, s.k, rng);
  return xccl_test::RandomGemmOperands(m, s.n, s.k, set.in_type, rng);
}

// The double-precision GEMM of the decoded inputs on a sample of C: about 8 rows per source and
// 128 columns, enough to catch a wrong band or scale and cheap at K = 7168. Made once per row of
// the table; every variant's C is compared with it.
struct Sample {
  std::vector<int> source;
  std::vector<int64_t> row, col;  // within the source's rows
  std::vector<double> value;
};

Sample ReferenceSample(const RankContext& ctx, const Settings& set, const Shape& s, int64_t m,
                       const Operands& mine) {
  Sample sample;
  const int64_t step = std::max<int64_t>(1, m / 8), col_step = std::max<int64_t>(1, s.n / 128);
  for (int src = 0; src < ctx.nranks; ++src) {
    const Operands o = src == ctx.rank ? mine : MakeOperands(src, m, s, set);
    auto product = [&](int64_t i, int64_t j, int64_t q_begin, int64_t q_end) {
      double sum = 0;
      for (int64_t q = q_begin; q < q_end; ++q)
        sum += Value(set.in_type, o.a.data(), i * s.k + q) *
               Value(set.in_type, mine.b.data(), j * s.k + q);
      return sum;
    };
    for (int64_t i = 0; i < m; i += step) {
      for (int64_t j = 0; j < s.n; j += col_step) {
        double sum = 0;
        if (BlockScales(set)) {
          // xccl_gemm.h's blockscale arithmetic: each K block's partial sum times its own
          // scales (A's [KB][m] of the source, B's [ceil(n/128)][KB] of this rank).
          const int64_t blocks = o.k_blocks;
          for (int64_t kb = 0; kb < blocks; ++kb)
            sum += product(i, j, kb * 128, std::min(s.k, kb * 128 + 128)) *
                   double(o.a_scale[kb * m + i]) * mine.b_scale[(j / 128) * blocks + kb];
        } else {
          sum = product(i, j, 0, s.k);
          if (set.in_type == xcclFloat8e4m3) sum *= double(o.a_scale[i]) * mine.b_scale[j];
        }
        sample.source.push_back(src);
        sample.row.push_back(i);
        sample.col.push_back(j);
        sample.value.push_back(sum);
      }
    }
  }
  return sample;
}

// C holds `rows_per_source` rows of each source in turn (the op pads them, the vendor split
// does not), n columns each.
double RelativeL2(const Sample& sample, const uint16_t* c, int64_t rows_per_source, int64_t n) {
  double err2 = 0, ref2 = 0;
  for (size_t x = 0; x < sample.value.size(); ++x) {
    const int64_t index = (sample.source[x] * rows_per_source + sample.row[x]) * n + sample.col[x];
    const double got = Bf16Value(c[index]), want = sample.value[x];
    err2 += (got - want) * (got - want);
    ref2 += want * want;
  }
  const double l2 = std::sqrt(err2 / (ref2 > 0 ? ref2 : 1));
  // NaN (a poisoned element left unwritten) as infinity: std::max, which the rank reduction
  // and the row's worst use, drops a NaN on its right-hand side, so it would vanish.
  return std::isfinite(l2) ? l2 : HUGE_VAL;
}

bool Ok(const RankContext& ctx, xcclResult_t r, const char* what, xcclComm_t comm) {
  if (r == xcclSuccess) return true;
  fprintf(stderr, "ag_gemm_perf: rank %d: %s: %s: %s\n", ctx.rank, what, xcclGetErrorString(r),
          xcclGetLastError(comm));
  ctx.sync->Abort();
  return false;
}

// Fills this rank's line of the device table, agrees on the vendor library and, where it can
// run (one GPU per rank), makes its communicator (collective over all ranks).
bool SetUpVendor(const RankContext& ctx, xccl_perf::DeviceBuffers& buffers,
                 std::unique_ptr<xccl_perf::VendorComm>* vendor) {
  ctx.sync->Info(ctx.rank) = xccl_perf::DescribeRank(buffers);
  if (!ctx.sync->Barrier()) return false;
  if (!ctx.options->compare_vendor) return true;
  std::string why;
  const xccl_perf::VendorLibrary* library = xccl_perf::AgreeOnVendor(*ctx.sync, ctx.rank, &why);
  if (library != nullptr) {
    const std::string blocked = xccl_perf::VendorBlocked(*ctx.sync, ctx.nranks);
    if (!blocked.empty()) {
      why = blocked;
      library = nullptr;
    }
  }
  if (library != nullptr &&
      !xccl_perf::JoinVendorComm(*library, *ctx.sync, ctx.rank, ctx.nranks, vendor))
    return false;
  if (ctx.rank == 0) {
    if (library != nullptr) {
      printf("# vendor: %s, version %s (its all-gather of A, then the same GEMM plugin)\n",
             library->path().c_str(), library->VersionText().c_str());
    } else {
      printf("# vendor: not run: %s\n", why.c_str());
    }
  }
  return true;
}

// The table's column names: printed by rank 0 once the vendor line above them is out, so that
// the header reads top down as nccl-tests' does.
void PrintColumnHeader() {
  printf("# %7s %6s %6s %12s", "M", "N", "K", "split-vendor");
  for (const Variant& v : kVariants) printf(" %10s", v.name);
  printf(" %9s %9s %7s", "ag-only", "gemm-only", "overlap");
  printf("  %3s %10s %7s %9s\n", "def", "best", "x split", "relL2max");
  fflush(stdout);
}

bool RunRank(const RankContext& ctx, const Settings& set, const xcclUniqueId& id) {
  // The rank's device first (a GPU build binds the thread to it), then the communicator.
  std::unique_ptr<xccl_perf::DeviceBuffers> buffers = xccl_perf::DeviceBuffers::Create(ctx.rank);
  if (!buffers) {
    ctx.sync->Abort();
    return false;
  }
  xcclComm_t comm = nullptr;
  if (!Ok(ctx, xcclCommInitRank(&comm, ctx.nranks, id, ctx.rank), "init", nullptr)) return false;
  const char* plugin = set.plugin.empty() ? nullptr : set.plugin.c_str();
  xcclStream_t stream = buffers->Stream();
  std::unique_ptr<xccl_perf::VendorComm> vendor;
  if (!SetUpVendor(ctx, *buffers, &vendor)) {
    ctx.sync->Abort();
    xcclCommAbort(comm);
    return false;
  }
  if (ctx.rank == 0) PrintColumnHeader();
  const char* env_plugin = getenv("XCCL_GEMM_PLUGIN");
  DirectPlugin gemm(plugin != nullptr ? plugin : (env_plugin != nullptr ? env_plugin : ""),
                    buffers->Device());
  bool ok = true;
  bool wrong = false;  // a checked run over kMaxRelL2: the run goes on, the exit status is 1
  for (const Shape& s : set.shapes) {
    for (int64_t global_m : set.global_m) {
      const int64_t m = global_m / ctx.nranks;
      std::vector<xcclAgGemm_t> ops(kVariantCount, nullptr);
      for (int v = 0; v < kVariantCount && ok; ++v) {
        const xcclResult_t r = xcclAgGemmCreateScaled(
            comm, s.n, s.k, m, set.in_type, xcclBfloat16, set.scales, kVariants[v].mode,
            kVariants[v].chunks, plugin, nullptr, &ops[v]);
        // Fused needs a GPU per rank (DMA queues): where ranks share one, its columns say '-'.
        if (r == xcclInvalidUsage && kVariants[v].mode == xcclAgGemmFused) {
          if (ctx.rank == 0 && v == 1)
            printf("# %s: %s\n", kVariants[v].name, xcclGetLastError(comm));
          ops[v] = nullptr;
          continue;
        }
        ok = Ok(ctx, r, kVariants[v].name, comm);
      }
      if (!ok) break;
      int64_t padded = 0;
      int default_chunks = 0;
      xcclAgGemmPaddedM(ops[0], m, &padded);
      if (ops[kVariantCount - 1] != nullptr)
        xcclAgGemmChunks(ops[kVariantCount - 1], m, &default_chunks);
      // A pinned count the op clamps (fewer row tiles than bands, or bands that do not divide
      // them) would time another count under this column's name: such a column is not run.
      std::vector<bool> clamped(kVariantCount, false);
      for (int v = 0; v < kVariantCount; ++v) {
        int used = 0;
        if (ops[v] != nullptr && kVariants[v].mode == xcclAgGemmFused && kVariants[v].chunks > 0 &&
            xcclAgGemmChunks(ops[v], m, &used) == xcclSuccess && used != kVariants[v].chunks)
          clamped[v] = true;
      }
      const Operands o = MakeOperands(ctx.rank, m, s, set);
      const bool fp8 = set.in_type == xcclFloat8e4m3;  // with scales, ptpc or block
      const bool block = BlockScales(set);
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
      Staged a, b, as, bs, c;
      ok = a.Fill(buffers.get(), o.a.data(), o.a.size()) &&
           b.Fill(buffers.get(), o.b.data(), o.b.size()) &&
           c.Fill(buffers.get(), poison.data(), c_bytes) &&
           (!fp8 || (as.Fill(buffers.get(), o.a_scale.data(), o.a_scale.size() * 4) &&
                     bs.Fill(buffers.get(), o.b_scale.data(), o.b_scale.size() * 4)));
      if (!ok) {
        fprintf(stderr, "ag_gemm_perf: rank %d: cannot stage the operands\n", ctx.rank);
        ctx.sync->Abort();
        break;
      }
      const float* a_scale = fp8 ? static_cast<const float*>(as.ptr) : nullptr;
      const float* b_scale = fp8 ? static_cast<const float*>(bs.ptr) : nullptr;
      auto run = [&](int v) {
        return Ok(ctx,
                  xcclAgGemmRun(ops[v], a.ptr, a_scale, b.ptr, b_scale, m, c.ptr, nullptr, stream),
                  kVariants[v].name, comm);
      };
      const Sample sample = ReferenceSample(ctx, set, s, m, o);
      // Split-vendor (index kVariantCount): the vendor's all-gather of A (and scales) into one
      // buffer, then one GEMM through the same plugin, called directly. The two halves alone,
      // for the overlap bound max(all-gather, GEMM): ag-only (kAgOnly), xccl's all-gather into
      // that buffer, and gemm-only (kGemmOnly), the plugin over the gathered rows.
      const int kVendor = kVariantCount, kAgOnly = kVariantCount + 1, kGemmOnly = kVariantCount + 2;
      const bool with_direct = gemm.ok();
      const bool with_vendor = vendor != nullptr && with_direct;
      Staged gathered, gathered_scales, cv;
      if (with_direct &&
          (!gathered.Fill(buffers.get(), poison.data(), gathered_bytes) ||
           !cv.Fill(buffers.get(), poison.data(), cv_bytes) ||
           (fp8 && !gathered_scales.Fill(buffers.get(), poison.data(), gathered_scale_bytes)))) {
        ok = false;
        ctx.sync->Abort();
        break;
      }
      // The GEMM over the gathered rows: one call over all world * m (no scales, ptpc), or, with
      // block scales, one per source over its m rows and its [KB][m] scales (see the top).
      const int gemm_calls = block ? ctx.nranks : 1;
      xcclGemmProblem vp{};
      vp.m = block ? m : ctx.nranks * m;
      vp.n = s.n;
      vp.k = s.k;
      vp.a_type = vp.b_type = set.in_type;
      vp.c_type = xcclBfloat16;
      vp.scale_mode = block ? xcclGemmScaleBlock128 : fp8 ? xcclGemmScalePtpc : xcclGemmScaleNone;
      vp.a_scale_ld = block ? m : 0;
      vp.lda = vp.ldb = s.k;
      vp.ldc = s.n;
      vp.a = gathered.ptr;
      vp.b = b.ptr;
      vp.c = cv.ptr;
      vp.a_scale = fp8 ? static_cast<const float*>(gathered_scales.ptr) : nullptr;
      vp.b_scale = b_scale;
      if (with_direct && !gemm.Prepare(vp)) {
        fprintf(stderr, "ag_gemm_perf: rank %d: the plugin called directly refuses M %lld N %lld\n",
                ctx.rank, static_cast<long long>(vp.m), static_cast<long long>(vp.n));
        ok = false;
        ctx.sync->Abort();
        break;
      }
      auto run_gathered_gemm = [&]() {
        for (int call = 0; call < gemm_calls; ++call) {
          xcclGemmProblem p = vp;
          p.a = static_cast<const uint8_t*>(gathered.ptr) + call * m * s.k * in_size;
          p.c = static_cast<uint8_t*>(cv.ptr) + call * m * s.n * 2;
          if (fp8)
            p.a_scale = static_cast<const float*>(gathered_scales.ptr) + call * a_scale_count;
          if (!gemm.Run(p, stream)) return false;
        }
        return true;
      };
      auto run_vendor = [&]() {
        if (!vendor->AllGather(a.ptr, gathered.ptr, m * s.k * in_size, stream)) return false;
        if (fp8 && !vendor->AllGather(as.ptr, gathered_scales.ptr, a_scale_count * 4, stream))
          return false;
        return run_gathered_gemm();
      };
      auto run_ag_only = [&]() {
        return Ok(ctx,
                  xcclAllGather(a.ptr, gathered.ptr, m * s.k * in_size, xcclUint8, comm, stream),
                  "ag-only", comm) &&
               (!fp8 || Ok(ctx,
                           xcclAllGather(as.ptr, gathered_scales.ptr, a_scale_count, xcclFloat32,
                                         comm, stream),
                           "ag-only scales", comm));
      };
      auto runs = [&](int v) {
        if (v == kVendor) return with_vendor;
        if (v == kAgOnly || v == kGemmOnly) return with_direct;
        return ops[v] != nullptr && !clamped[v];
      };
      // The buffers variant v writes, poisoned before its first call of the first round (the
      // checked one). The vendor split and ag-only both fill `gathered`, which gemm-only then
      // reads: poisoning it before each makes gemm-only's check one of ag-only's gather too.
      auto poison_outputs = [&](int v) {
        auto reset = [&](const Staged& buffer, size_t bytes) {
          return buffers->CopyToDevice(buffer.ptr, poison.data(), bytes);
        };
        if (v < kVariantCount) return reset(c, c_bytes);
        if (v == kGemmOnly) return reset(cv, cv_bytes);
        const bool gathers = reset(gathered, gathered_bytes) &&
                             (!fp8 || reset(gathered_scales, gathered_scale_bytes));
        return gathers && (v != kVendor || reset(cv, cv_bytes));
      };
      // Staging and the plugin's tuning above allocate, copy and free, which can wait for the whole
      // device: no rank starts a call, which peers sharing the GPU would wait in, before every
      // rank is past them.
      if (!ctx.sync->Barrier()) {
        ok = false;
        break;
      }
      std::vector<std::vector<double>> times(kVariantCount + 3);
      double worst_l2 = 0;
      std::vector<uint8_t> host_c(std::max(c_bytes, cv_bytes));
      // Each round after the first starts at another variant, so that none always runs in the
      // same place: in a fixed order a variant's place moved its time by more than the variants
      // differ (docs/perf-history.md, fifth round).
      // Round 0, the checked one, keeps the print order: ag-only fills the gather gemm-only checks.
      constexpr int kAllVariants = kVariantCount + 3;
      static_assert(kAllVariants % 3 != 0, "the stride of 3 must reach every start");
      for (int round = 0; round < set.rounds && ok; ++round) {
        for (int place = 0; place < kAllVariants && ok; ++place) {
          const int v = (round * 3 + place) % kAllVariants;
          if (!runs(v)) continue;
          if (round == 0 && !poison_outputs(v)) {
            ok = false;
            break;
          }
          auto call = [&]() {
            if (v == kVendor) return run_vendor();
            if (v == kAgOnly) return run_ag_only();
            if (v == kGemmOnly) return run_gathered_gemm();
            return run(v);
          };
          for (int w = 0; w < ctx.options->warmup_iters && ok; ++w) ok = call();
          if (!ok || !buffers->Synchronize() || !ctx.sync->Barrier()) {
            ok = false;
            break;
          }
          double seconds = 0;
          ok = buffers->StartTimer();
          for (int i = 0; i < ctx.options->iters && ok; ++i) ok = call();
          ok = ok && buffers->StopTimer(&seconds);
          const double us = seconds * 1e6 / std::max(1, ctx.options->iters);
          double slowest = 0, l2 = 0;
          if (!ok || !ctx.sync->AllReduce(ctx.rank, us, Reduce::kMax, &slowest)) break;
          times[v].push_back(slowest);
          if (round == 0 && v != kAgOnly) {  // ag-only makes no C (gemm-only checks its rows)
            if (v < kVariantCount && !buffers->CopyToHost(host_c.data(), c.ptr, c_bytes)) {
              ok = false;
              break;
            }
            const bool vendor_run = v == kVendor || v == kGemmOnly;
            if (vendor_run && !buffers->CopyToHost(host_c.data(), cv.ptr, cv_bytes)) {
              ok = false;
              break;
            }
            const double mine = RelativeL2(sample, reinterpret_cast<const uint16_t*>(host_c.data()),
                                           vendor_run ? m : padded, s.n);
            if (!ctx.sync->AllReduce(ctx.rank, mine, Reduce::kMax, &l2)) break;
            worst_l2 = std::max(worst_l2, l2);
            if (!(l2 <= kMaxRelL2)) {
              wrong = true;
              if (ctx.rank == 0) {
                const char* name = v == kVendor     ? "split-vendor"
                                   : v == kGemmOnly ? "gemm-only (over ag-only's gather)"
                                                    : kVariants[v].name;
                fprintf(
                    stderr,
                    "ag_gemm_perf: M %lld N %lld K %lld: %s: relative L2 error %.2e over "
                    "%.0e%s\n",
                    static_cast<long long>(global_m), static_cast<long long>(s.n),
                    static_cast<long long>(s.k), name, l2, kMaxRelL2,
                    std::isfinite(l2) ? "" : " (not finite: a poisoned element was never written)");
              }
            }
          }
        }
      }
      // Buffers and ops go only once no rank has a call in flight: freeing device memory waits
      // for the whole device, which must not wait for a peer's call that waits for this rank.
      buffers->Synchronize();
      ctx.sync->Barrier();
      for (xcclAgGemm_t op : ops)
        if (op != nullptr) xcclAgGemmDestroy(op);
      if (!ok) break;
      if (ctx.rank == 0) {
        std::vector<double> median(kVariantCount + 3, 0.0);
        for (int v = 0; v <= kGemmOnly; ++v) {
          if (times[v].empty()) continue;
          std::sort(times[v].begin(), times[v].end());
          median[v] = times[v][times[v].size() / 2];
        }
        int best = 0;  // the best fused variant; split where none ran
        for (int v = 1; v < kVariantCount; ++v)
          if (median[v] > 0 && (best == 0 || median[v] < median[best])) best = v;
        printf("%9lld %6lld %6lld", static_cast<long long>(global_m), static_cast<long long>(s.n),
               static_cast<long long>(s.k));
        if (median[kVariantCount] > 0) {
          printf(" %12.1f", median[kVariantCount]);
        } else {
          printf(" %12s", "-");
        }
        for (int v = 0; v < kVariantCount; ++v) {
          if (median[v] > 0) {
            printf(" %10.1f", median[v]);
          } else {
            printf(" %10s", "-");
          }
        }
        const double split = median[kVariantCount] > 0 ? median[kVariantCount] : median[0];
        for (int v : {kAgOnly, kGemmOnly}) {
          if (median[v] > 0) {
            printf(" %9.1f", median[v]);
          } else {
            printf(" %9s", "-");
          }
        }
        // Overlap: the bound max(all-gather alone, GEMM alone) over the best fused time (1.00 =
        // perfect overlap; '-' where no fused variant or no half ran).
        const double bound = std::max(median[kAgOnly], median[kGemmOnly]);
        if (best > 0 && median[kAgOnly] > 0 && median[kGemmOnly] > 0) {
          printf(" %7.2f", bound / median[best]);
        } else {
          printf(" %7s", "-");
        }
        printf("  c=%d %10s %7.2f %9.2e\n", default_chunks, kVariants[best].name,
               split / median[best], worst_l2);
      }
    }
    if (!ok) break;
  }
  xcclCommDestroy(comm);
  return ok && !wrong;
}

std::vector<std::string> Words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// The words of a list flag's value, each parsed by `parse` into *out (replacing what it held);
// false, with a message, on a word it refuses or on no words.
template <typename T, typename Parse>
bool ParseList(const std::string& value, const char* flag, const char* item, const char* refusal,
               Parse parse, std::vector<T>* out) {
  out->clear();
  for (const std::string& w : Words(value)) {
    T parsed{};
    if (!parse(w, &parsed)) {
      fprintf(stderr, "ag_gemm_perf: %s '%s' %s\n", item, w.c_str(), refusal);
      return false;
    }
    out->push_back(parsed);
  }
  if (out->empty()) fprintf(stderr, "ag_gemm_perf: %s needs at least one %s\n", flag, item);
  return !out->empty();
}

// More rounds than any sensible run (each round calls every variant -n times per cell).
constexpr int kMaxRounds = 10000;

// Takes this binary's own flags out of argv; false (with a message) on a malformed one.
bool TakeOwnFlags(int* argc, char** argv, Settings* set) {
  int kept = 1;
  for (int i = 1; i < *argc; ++i) {
    const std::string flag = argv[i];
    const bool own = flag == "--m" || flag == "--shapes" || flag == "--dtype" ||
                     flag == "--plugin" || flag == "--rounds";
    if (!own) {
      argv[kept++] = argv[i];
      continue;
    }
    if (i + 1 >= *argc) {
      fprintf(stderr, "ag_gemm_perf: %s needs a value\n", flag.c_str());
      return false;
    }
    const std::string value = argv[++i];
    if (flag == "--m") {
      const bool ok = ParseList(
          value, "--m", "global M", "is not a positive integer",
          [](const std::string& w, int64_t* m) {
            char* end = nullptr;
            *m = strtoll(w.c_str(), &end, 10);
            return *end == '\0' && *m > 0;
          },
          &set->global_m);
      if (!ok) return false;
    } else if (flag == "--shapes") {
      const bool ok = ParseList(
          value, "--shapes", "shape",
          "is not NxK with N a positive multiple of 16 (ag_gemm's rule) and K positive",
          [](const std::string& w, Shape* s) {
            int used = 0;
            return sscanf(w.c_str(), "%lldx%lld%n", reinterpret_cast<long long*>(&s->n),
                          reinterpret_cast<long long*>(&s->k), &used) == 2 &&
                   static_cast<size_t>(used) == w.size() && s->n > 0 && s->n % 16 == 0 && s->k > 0;
          },
          &set->shapes);
      if (!ok) return false;
    } else if (flag == "--dtype") {
      if (value == "bf16")
        set->in_type = xcclBfloat16;
      else if (value == "fp16")
        set->in_type = xcclFloat16;
      else if (value == "fp8" || value == "fp8-block")
        set->in_type = xcclFloat8e4m3;
      else {
        fprintf(stderr, "ag_gemm_perf: --dtype is bf16, fp16, fp8 or fp8-block, not '%s'\n",
                value.c_str());
        return false;
      }
      set->scales = value == "fp8-block" ? xcclAgGemmScalesBlock128 : xcclAgGemmScalesDefault;
    } else if (flag == "--plugin") {
      set->plugin = value;
    } else {
      char* end = nullptr;
      errno = 0;
      const long rounds = strtol(value.c_str(), &end, 10);
      if (errno != 0 || end == value.c_str() || *end != '\0' || rounds < 1 || rounds > kMaxRounds) {
        fprintf(stderr, "ag_gemm_perf: --rounds takes an integer in [1, %d], not '%s'\n",
                kMaxRounds, value.c_str());
        return false;
      }
      set->rounds = static_cast<int>(rounds);
    }
  }
  *argc = kept;
  return true;
}

// The flags TakeOwnFlags takes, after the harness's usage (which lists only its own).
void PrintOwnUsage() {
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
      xccl_perf::DeviceBuffers::Platform(), kMaxRelL2);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace xccl_perf;
  setlinebuf(stdout);
  xccl_test::RequestGpuRuntimeSettings();  // before the first runtime call
  Settings set;
  if (!TakeOwnFlags(&argc, argv, &set)) return 2;
  if (set.plugin.empty() && (getenv("XCCL_GEMM_PLUGIN") == nullptr || !*getenv("XCCL_GEMM_PLUGIN")))
    set.plugin = "reference";
  set.plugin = xccl_perf::BuiltPlugin(set.plugin);
  Options options;
  options.iters = 2;
  options.warmup_iters = 1;
  FlagSet flags;
  flags.sizes = flags.check = flags.types = flags.blocking = flags.timed_loop = false;
  flags.nccl_tests = false;
  int code = ParseOptions(argc, argv, flags, &options);
  if (code == 0) PrintOwnUsage();  // -h
  if (code >= 0) return code;
  ApplyDefaults(&set);
  // Each rank holds M / world rows: a remainder would be dropped without a word and the row
  // would name an M that never ran.
  for (int64_t m : set.global_m) {
    if (m % options.TotalRanks() != 0) {
      fprintf(stderr,
              "ag_gemm_perf: global M %lld (M %s) is not a multiple of the world size %d; pass "
              "--m with multiples of %d\n",
              static_cast<long long>(m), set.m_from.c_str(), options.TotalRanks(),
              options.TotalRanks());
      return 2;
    }
  }
  const char* in_name = BlockScales(set)                ? "fp8 e4m3 (blockscale 1x128 / 128x128)"
                        : set.in_type == xcclFloat8e4m3 ? "fp8 e4m3 (ptpc)"
                        : set.in_type == xcclFloat16    ? "fp16"
                                                        : "bf16";
  printf(
      "# ag_gemm_perf: world %d, %s -> bf16, plugin %s, median of %d rounds (variants "
      "interleaved) of %d calls after %d warm-up, each call the slowest rank's; times in us; "
      "%s\n",
      options.TotalRanks(), in_name,
      set.plugin.empty() ? getenv("XCCL_GEMM_PLUGIN") : set.plugin.c_str(), set.rounds,
      options.iters, options.warmup_iters,
      ("M " + set.m_from + ", shapes " + set.shapes_from).c_str());
  printf(
      "# split-vendor: '-' where no vendor library runs (the host platform). ag-only: "
      "xcclAllGather of A (and scales) alone; gemm-only: the plugin over the gathered rows "
      "alone; overlap: max(ag-only, gemm-only) / best fused (1.00 = perfect overlap). "
      "best/split: the best variant against split-vendor, else split-xccl. fused-c2/c4: '-' "
      "also where the op clamps the pinned count to fewer bands (xcclAgGemmChunks; def shows "
      "the default's count): that count is not run and not in best. relL2max: the largest "
      "relative L2 error; each variant's C is checked once, in the first round, on a poisoned "
      "output (0xFF bytes, NaN: 'inf' if any sampled element stays unwritten)\n");
  if (BlockScales(set))
    printf(
        "# blockscale: split-vendor and gemm-only run one GEMM per source (m rows, a_scale_ld = "
        "m): the all-gather leaves the A scales [world][KB][m], not the [KB][world*m] of one "
        "GEMM over all rows, and this binary has no 2D copy to re-pack them\n");
  xcclUniqueId id;
  if (xcclGetUniqueId(&id) != xcclSuccess) {
    fprintf(stderr, "ag_gemm_perf: xcclGetUniqueId: %s\n", xcclGetLastError(nullptr));
    return 1;
  }
  std::unique_ptr<RankSync> sync = RankSync::Create(options.TotalRanks());
  if (!sync) return 1;
  return LaunchRanks(options, sync.get(),
                     [&](const RankContext& ctx) { return RunRank(ctx, set, id); });
}
