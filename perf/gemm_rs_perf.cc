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
// overlap = max(gemm-only, rs-only) / the best fused time, the best fused variant, its ratio to
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
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
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

// The op variants of one row, in print order.
struct Variant {
  const char* name;
  xcclGemmRsMode_t mode;
  int chunks;
};
const Variant kVariants[] = {{"split-xccl", xcclGemmRsSplit, 0},
                             {"fused-c1", xcclGemmRsFused, 1},
                             {"fused-c2", xcclGemmRsFused, 2},
                             {"fused-c4", xcclGemmRsFused, 4},
                             {"fused-def", xcclGemmRsFused, 0}};
constexpr int kVariantCount = sizeof(kVariants) / sizeof(kVariants[0]);

// The largest relative L2 error a checked run may show: each rank's partial and the sum are
// rounded to bf16 (about 2e-3 each); a wrong chunk, owner or scale gives far more.
constexpr double kMaxRelL2 = 1e-2;

// The byte every checked output starts as: 0xFFFF is NaN in bf16, so any element left unwritten
// poisons the error.
constexpr uint8_t kPoisonByte = 0xFF;

// Whether this binary was built for a GPU platform (cuda or hip) rather than the host one.
bool GpuPlatform() { return strcmp(xccl_perf::DeviceBuffers::Platform(), "host") != 0; }

// The TP8 shards of DeepSeek-V3 and Kimi-K2 on GPUs; small ones for the host platform's scalar
// reference GEMM. Fills only what the flags left empty and records which defaults it used.
void ApplyDefaults(Settings* set) {
  const bool gpu = GpuPlatform();
  const char* kind =
      gpu ? "GPU defaults (DeepSeek-V3/Kimi-K2 TP8 o_proj, down_proj)" : "host-platform defaults";
  if (set->global_m.empty()) {
    set->global_m =
        gpu ? std::vector<int64_t>{4096, 8192, 16384, 32768} : std::vector<int64_t>{64, 128};
    set->m_from = kind;
  }
  if (set->shapes.empty()) {
    set->shapes = gpu ? std::vector<Shape>{{7168, 1024}, {7168, 2048}, {7168, 2304}}
                      : std::vector<Shape>{{48, 32}, {96, 32}};
    set->shapes_from = kind;
  }
}

using xccl_test::Bf16Value;
using xccl_test::GemmOperands;
using xccl_test::TypeSize;
using xccl_test::Value;
using Operands = GemmOperands;

bool BlockScales(const Settings& set) { return set.scales == xcclAgGemmScalesBlock128; }

// Rank `rank`'s operands for a table row (A [M][K], B [N][K], scales): any rank can regenerate
// any rank's (shared with the tests: test/common/float_formats.h).
Operands MakeOperands(int rank, int64_t m, const Shape& s, const Settings& set) {
  std::mt19937_64 rng(0x5eed0000ull + static_cast<uint64_t>(rank) * 7919 + m * 31 + s.n);
  if (BlockScales(set)) return xccl_test::RandomBlockscaleOperands(m, s.n, s.k, rng);
  return xccl_test::RandomGemmOperands(m, s.n, s.k, set.in_type, rng);
}

// The double-precision sum over ranks of the decoded GEMMs on a sample of this rank's rows of C:
// about 16 rows (the last included, so every chunk and the block's end are hit) and 128 columns.
// Made once per row of the table; every variant's rows are compared with it.
struct Sample {
  std::vector<int64_t> row, col;  // row within this rank's M / world rows
  std::vector<double> value;
};

Sample ReferenceSample(const RankContext& ctx, const Settings& set, const Shape& s, int64_t m,
                       const Operands& mine) {
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
    const Operands o = src == ctx.rank ? mine : MakeOperands(src, m, s, set);
    for (size_t x = 0; x < sample.value.size(); ++x) {
      const int64_t i = first + sample.row[x], j = sample.col[x];
      auto product = [&](int64_t q_begin, int64_t q_end) {
        double sum = 0;
        for (int64_t q = q_begin; q < q_end; ++q)
          sum += Value(set.in_type, o.a.data(), i * s.k + q) *
                 Value(set.in_type, o.b.data(), j * s.k + q);
        return sum;
      };
      double sum = 0;
      if (BlockScales(set)) {
        // xccl_gemm.h's blockscale arithmetic: each K block's partial sum times its own scales
        // (A's [KB][M] and B's [ceil(N/128)][KB], both the source rank's).
        const int64_t blocks = o.k_blocks;
        for (int64_t kb = 0; kb < blocks; ++kb)
          sum += product(kb * 128, std::min(s.k, kb * 128 + 128)) * double(o.a_scale[kb * m + i]) *
                 o.b_scale[(j / 128) * blocks + kb];
      } else {
        sum = product(0, s.k);
        if (set.in_type == xcclFloat8e4m3) sum *= double(o.a_scale[i]) * o.b_scale[j];
      }
      sample.value[x] += sum;
    }
  }
  return sample;
}

// `c` is this rank's rows of C, [M / world][n] bf16.
double RelativeL2(const Sample& sample, const uint16_t* c, int64_t n) {
  double err2 = 0, ref2 = 0;
  for (size_t x = 0; x < sample.value.size(); ++x) {
    const double got = Bf16Value(c[sample.row[x] * n + sample.col[x]]), want = sample.value[x];
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
  fprintf(stderr, "gemm_rs_perf: rank %d: %s: %s: %s\n", ctx.rank, what, xcclGetErrorString(r),
          xcclGetLastError(comm));
  ctx.sync->Abort();
  return false;
}

// Fills this rank's line of the device table, agrees on the vendor library and, where it can
// run (one GPU per rank, a bf16 sum), makes its communicator (collective over all ranks).
bool SetUpVendor(const RankContext& ctx, xccl_perf::DeviceBuffers& buffers,
                 std::unique_ptr<xccl_perf::VendorComm>* vendor) {
  ctx.sync->Info(ctx.rank) = xccl_perf::DescribeRank(buffers);
  if (!ctx.sync->Barrier()) return false;
  if (!ctx.options->compare_vendor) return true;
  std::string why;
  const xccl_perf::VendorLibrary* library = xccl_perf::AgreeOnVendor(*ctx.sync, ctx.rank, &why);
  if (library != nullptr) {
    // Both depend only on what every rank sees alike (the version, the published devices).
    std::string blocked = library->CannotReduce(xcclBfloat16, xcclSum);
    if (blocked.empty()) blocked = xccl_perf::VendorBlocked(*ctx.sync, ctx.nranks);
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
      printf("# vendor: %s, version %s (the same GEMM plugin, then its bf16 reduce-scatter)\n",
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
  printf(" %9s %9s %7s", "gemm-only", "rs-only", "overlap");
  printf("  %10s %7s %9s\n", "best", "x split", "relL2max");
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
      const int64_t rows = global_m / ctx.nranks;  // this rank's rows of C
      std::vector<xcclGemmRs_t> ops(kVariantCount, nullptr);
      for (int v = 0; v < kVariantCount && ok; ++v) {
        ok = Ok(ctx,
                xcclGemmRsCreate(comm, s.n, s.k, global_m, set.in_type, xcclBfloat16, set.scales,
                                 kVariants[v].mode, kVariants[v].chunks, plugin, nullptr, &ops[v]),
                kVariants[v].name, comm);
      }
      if (!ok) break;
      // A block cuts into at most one chunk per row: a pinned count beyond that would time
      // another count under this column's name, so such a column is not run.
      std::vector<bool> clamped(kVariantCount, false);
      for (int v = 0; v < kVariantCount; ++v)
        clamped[v] = kVariants[v].mode == xcclGemmRsFused && kVariants[v].chunks > rows;
      const Operands o = MakeOperands(ctx.rank, global_m, s, set);
      const bool fp8 = set.in_type == xcclFloat8e4m3;  // with scales, ptpc or block
      const bool block = BlockScales(set);
      const size_t out_bytes = static_cast<size_t>(rows * s.n) * 2;
      const size_t partial_bytes = static_cast<size_t>(global_m * s.n) * 2;
      // Every output starts as, and is reset to before its checked run, this pattern (one host
      // copy serves them all).
      const std::vector<uint8_t> poison(std::max<size_t>(partial_bytes, 1), kPoisonByte);
      Staged a, b, as, bs, c;
      ok = a.Fill(buffers.get(), o.a.data(), o.a.size()) &&
           b.Fill(buffers.get(), o.b.data(), o.b.size()) &&
           c.Fill(buffers.get(), poison.data(), out_bytes) &&
           (!fp8 || (as.Fill(buffers.get(), o.a_scale.data(), o.a_scale.size() * 4) &&
                     bs.Fill(buffers.get(), o.b_scale.data(), o.b_scale.size() * 4)));
      if (!ok) {
        fprintf(stderr, "gemm_rs_perf: rank %d: cannot stage the operands\n", ctx.rank);
        ctx.sync->Abort();
        break;
      }
      const float* a_scale = fp8 ? static_cast<const float*>(as.ptr) : nullptr;
      const float* b_scale = fp8 ? static_cast<const float*>(bs.ptr) : nullptr;
      auto run = [&](int v) {
        return Ok(ctx,
                  xcclGemmRsRun(ops[v], a.ptr, a_scale, b.ptr, b_scale, global_m, c.ptr, stream),
                  kVariants[v].name, comm);
      };
      const Sample sample = ReferenceSample(ctx, set, s, global_m, o);
      // Split-vendor (index kVariantCount): one GEMM through the same plugin, called directly,
      // into the [M][N] partial, then the vendor's reduce-scatter of it into `cv`. The two halves
      // alone, for the overlap bound max(GEMM, reduce-scatter): gemm-only (kGemmOnly), the plugin
      // into the partial, and rs-only (kRsOnly), xccl's reduce-scatter of it into `cv`.
      const int kVendor = kVariantCount, kGemmOnly = kVariantCount + 1, kRsOnly = kVariantCount + 2;
      const bool with_direct = gemm.ok();
      const bool with_vendor = vendor != nullptr && with_direct;
      Staged partial, cv;
      if (with_direct && (!partial.Fill(buffers.get(), poison.data(), partial_bytes) ||
                          !cv.Fill(buffers.get(), poison.data(), out_bytes))) {
        ok = false;
        ctx.sync->Abort();
        break;
      }
      // One call over all M rows, for block scales too: A's [KB][M] scales are what it reads.
      xcclGemmProblem vp{};
      vp.m = global_m;
      vp.n = s.n;
      vp.k = s.k;
      vp.a_type = vp.b_type = set.in_type;
      vp.c_type = xcclBfloat16;
      vp.scale_mode = block ? xcclGemmScaleBlock128 : fp8 ? xcclGemmScalePtpc : xcclGemmScaleNone;
      vp.a_scale_ld = block ? global_m : 0;
      vp.lda = vp.ldb = s.k;
      vp.ldc = s.n;
      vp.a = a.ptr;
      vp.b = b.ptr;
      vp.c = partial.ptr;
      vp.a_scale = a_scale;
      vp.b_scale = b_scale;
      if (with_direct && !gemm.Prepare(vp)) {
        fprintf(stderr,
                "gemm_rs_perf: rank %d: the plugin called directly refuses M %lld N %lld K %lld\n",
                ctx.rank, static_cast<long long>(vp.m), static_cast<long long>(vp.n),
                static_cast<long long>(vp.k));
        ok = false;
        ctx.sync->Abort();
        break;
      }
      const size_t recv_count = static_cast<size_t>(rows * s.n);
      auto run_gemm_only = [&]() { return gemm.Run(vp, stream); };
      auto run_vendor = [&]() {
        return run_gemm_only() && vendor->ReduceScatter(partial.ptr, cv.ptr, recv_count,
                                                        xcclBfloat16, xcclSum, stream);
      };
      auto run_rs_only = [&]() {
        return Ok(
            ctx,
            xcclReduceScatter(partial.ptr, cv.ptr, recv_count, xcclBfloat16, xcclSum, comm, stream),
            "rs-only", comm);
      };
      auto runs = [&](int v) {
        if (v == kVendor) return with_vendor;
        if (v == kGemmOnly || v == kRsOnly) return with_direct;
        return !clamped[v];
      };
      // The buffers variant v writes, poisoned before its first call of the first round (the
      // checked one). The vendor split and gemm-only both fill `partial`, which rs-only then
      // reduces: poisoning it before each makes rs-only's check one of gemm-only's partial too.
      auto poison_outputs = [&](int v) {
        auto reset = [&](const Staged& buffer, size_t bytes) {
          return buffers->CopyToDevice(buffer.ptr, poison.data(), bytes);
        };
        if (v < kVariantCount) return reset(c, out_bytes);
        if (v == kGemmOnly) return reset(partial, partial_bytes);
        if (v == kRsOnly) return reset(cv, out_bytes);
        return reset(partial, partial_bytes) && reset(cv, out_bytes);
      };
      // Staging and the plugin's tuning above allocate, copy and free, which can wait for the whole
      // device: no rank starts a call, which peers sharing the GPU would wait in, before every
      // rank is past them.
      if (!ctx.sync->Barrier()) {
        ok = false;
        break;
      }
      constexpr int kAllVariants = kVariantCount + 3;
      std::vector<std::vector<double>> times(kAllVariants);
      double worst_l2 = 0;
      std::vector<uint8_t> host_c(out_bytes);
      // Each round after the first starts at another variant, so that none always runs in the
      // same place: in a fixed order a variant's place moved its time by more than the variants
      // differ (docs/perf-history.md, fifth round).
      // Round 0, the checked one, keeps the print order: gemm-only fills the partial rs-only
      // checks.
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
            if (v == kGemmOnly) return run_gemm_only();
            if (v == kRsOnly) return run_rs_only();
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
          if (round == 0 && v != kGemmOnly) {  // gemm-only's partial is checked through rs-only
            const Staged& rows_of_c = v < kVariantCount ? c : cv;
            if (!buffers->CopyToHost(host_c.data(), rows_of_c.ptr, out_bytes)) {
              ok = false;
              break;
            }
            const double mine =
                RelativeL2(sample, reinterpret_cast<const uint16_t*>(host_c.data()), s.n);
            if (!ctx.sync->AllReduce(ctx.rank, mine, Reduce::kMax, &l2)) break;
            worst_l2 = std::max(worst_l2, l2);
            if (!(l2 <= kMaxRelL2)) {
              wrong = true;
              if (ctx.rank == 0) {
                const char* name = v == kVendor   ? "split-vendor"
                                   : v == kRsOnly ? "rs-only (over gemm-only's partial)"
                                                  : kVariants[v].name;
                fprintf(
                    stderr,
                    "gemm_rs_perf: M %lld N %lld K %lld: %s: relative L2 error %.2e over "
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
      for (xcclGemmRs_t op : ops)
        if (op != nullptr) xcclGemmRsDestroy(op);
      if (!ok) break;
      if (ctx.rank == 0) {
        std::vector<double> median(kAllVariants, 0.0);
        for (int v = 0; v < kAllVariants; ++v) {
          if (times[v].empty()) continue;
          std::sort(times[v].begin(), times[v].end());
          median[v] = times[v][times[v].size() / 2];
        }
        int best = 0;  // the best fused variant; split where none ran
        for (int v = 1; v < kVariantCount; ++v)
          if (median[v] > 0 && (best == 0 || median[v] < median[best])) best = v;
        auto column = [](double value, int width) {
          if (value > 0) {
            printf(" %*.1f", width, value);
          } else {
            printf(" %*s", width, "-");
          }
        };
        printf("%9lld %6lld %6lld", static_cast<long long>(global_m), static_cast<long long>(s.n),
               static_cast<long long>(s.k));
        column(median[kVendor], 12);
        for (int v = 0; v < kVariantCount; ++v) column(median[v], 10);
        column(median[kGemmOnly], 9);
        column(median[kRsOnly], 9);
        // Overlap: the bound max(GEMM alone, reduce-scatter alone) over the best fused time
        // (1.00 = perfect overlap; '-' where no fused variant or no half ran).
        const double bound = std::max(median[kGemmOnly], median[kRsOnly]);
        if (best > 0 && median[kGemmOnly] > 0 && median[kRsOnly] > 0) {
          printf(" %7.2f", bound / median[best]);
        } else {
          printf(" %7s", "-");
        }
        const double split = median[kVendor] > 0 ? median[kVendor] : median[0];
        printf("  %10s %7.2f %9.2e\n", kVariants[best].name, split / median[best], worst_l2);
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
      fprintf(stderr, "gemm_rs_perf: %s '%s' %s\n", item, w.c_str(), refusal);
      return false;
    }
    out->push_back(parsed);
  }
  if (out->empty()) fprintf(stderr, "gemm_rs_perf: %s needs at least one %s\n", flag, item);
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
      fprintf(stderr, "gemm_rs_perf: %s needs a value\n", flag.c_str());
      return false;
    }
    const std::string value = argv[++i];
    if (flag == "--m") {
      const bool ok = ParseList(
          value, "--m", "global M", "is not a positive integer",
          [](const std::string& w, int64_t* m) {
            char* end = nullptr;
            errno = 0;
            *m = strtoll(w.c_str(), &end, 10);
            return errno == 0 && *end == '\0' && *m > 0;
          },
          &set->global_m);
      if (!ok) return false;
    } else if (flag == "--shapes") {
      const bool ok = ParseList(
          value, "--shapes", "shape",
          "is not NxK with N a positive multiple of 16 (gemm_rs's rule) and K positive",
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
        fprintf(stderr, "gemm_rs_perf: --dtype is bf16, fp16, fp8 or fp8-block, not '%s'\n",
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
        fprintf(stderr, "gemm_rs_perf: --rounds takes an integer in [1, %d], not '%s'\n",
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
  // Each rank receives M / world rows, and the op refuses any other M: say so before starting.
  for (int64_t m : set.global_m) {
    if (m % options.TotalRanks() != 0) {
      fprintf(stderr,
              "gemm_rs_perf: global M %lld (M %s) is not a multiple of the world size %d; pass "
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
      "# gemm_rs_perf: world %d, %s -> bf16, plugin %s, median of %d rounds (variants "
      "interleaved) of %d calls after %d warm-up, each call the slowest rank's; times in us; "
      "%s\n",
      options.TotalRanks(), in_name,
      set.plugin.empty() ? getenv("XCCL_GEMM_PLUGIN") : set.plugin.c_str(), set.rounds,
      options.iters, options.warmup_iters,
      ("M " + set.m_from + ", shapes " + set.shapes_from).c_str());
  printf(
      "# M: global rows of C, each rank receiving M / world; K: each rank's inner shard. "
      "split-vendor: the plugin over all M rows, then the vendor's reduce-scatter; '-' where no "
      "vendor library runs (the host platform). gemm-only: the plugin over all M rows into an "
      "[M][N] partial alone; rs-only: xcclReduceScatter of that partial alone; overlap: "
      "max(gemm-only, rs-only) / best fused (1.00 = perfect overlap). best/x split: the best "
      "fused variant against split-vendor, else split-xccl. fused-c2/c4: '-' where a block's rows "
      "(M / world) are fewer than the pinned chunks: not run and not in best. relL2max: the "
      "largest relative L2 error; each variant's rows are checked once, in the first round, on a "
      "poisoned output (0xFF bytes, NaN: 'inf' if any sampled element stays unwritten); rs-only's "
      "check covers gemm-only's partial\n");
  xcclUniqueId id;
  if (xcclGetUniqueId(&id) != xcclSuccess) {
    fprintf(stderr, "gemm_rs_perf: xcclGetUniqueId: %s\n", xcclGetLastError(nullptr));
    return 1;
  }
  std::unique_ptr<RankSync> sync = RankSync::Create(options.TotalRanks());
  if (!sync) return 1;
  return LaunchRanks(options, sync.get(),
                     [&](const RankContext& ctx) { return RunRank(ctx, set, id); });
}
