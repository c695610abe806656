#include "harness/fused_gemm_bench.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <utility>

#include "common/gpu_runtime_settings.h"
#include "harness/options.h"
#include "harness/rank_sync.h"
#include "harness/vendor_setup.h"

namespace xccl_perf {
namespace {

// Whether this binary was built for a GPU platform (cuda or hip) rather than the host one.
bool GpuPlatform() { return strcmp(DeviceBuffers::Platform(), "host") != 0; }

// Fills only what the flags left empty and records which defaults it used, for the header.
void ApplyDefaults(const FusedGemmOp& op, FusedGemmSettings* set) {
  const bool gpu = GpuPlatform();
  const char* kind = gpu ? op.GpuDefaultsName() : "host-platform defaults";
  std::vector<int64_t> global_m;
  std::vector<GemmShape> shapes;
  op.Defaults(gpu, &global_m, &shapes);
  if (set->global_m.empty()) {
    set->global_m = global_m;
    set->m_from = kind;
  }
  if (set->shapes.empty()) {
    set->shapes = shapes;
    set->shapes_from = kind;
  }
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
bool ParseList(const char* program, const std::string& value, const char* flag, const char* item,
               const std::string& refusal, Parse parse, std::vector<T>* out) {
  out->clear();
  for (const std::string& w : Words(value)) {
    T parsed{};
    if (!parse(w, &parsed)) {
      fprintf(stderr, "%s: %s '%s' %s\n", program, item, w.c_str(), refusal.c_str());
      return false;
    }
    out->push_back(parsed);
  }
  if (out->empty()) fprintf(stderr, "%s: %s needs at least one %s\n", program, flag, item);
  return !out->empty();
}

// More rounds than any sensible run (each round calls every variant -n times per cell).
constexpr int kMaxRounds = 10000;

// Takes the own flags out of argv; false (with a message) on a malformed one.
bool TakeOwnFlags(const FusedGemmOp& op, int* argc, char** argv, FusedGemmSettings* set) {
  const char* program = op.Program();
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
      fprintf(stderr, "%s: %s needs a value\n", program, flag.c_str());
      return false;
    }
    const std::string value = argv[++i];
    if (flag == "--m") {
      const bool ok = ParseList(
          program, value, "--m", "global M", "is not a positive integer",
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
          program, value, "--shapes", "shape",
          std::string("is not NxK with N a positive multiple of 16 (") + op.OpName() +
              "'s rule) and K positive",
          [](const std::string& w, GemmShape* s) {
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
        fprintf(stderr, "%s: --dtype is bf16, fp16, fp8 or fp8-block, not '%s'\n", program,
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
        fprintf(stderr, "%s: --rounds takes an integer in [1, %d], not '%s'\n", program, kMaxRounds,
                value.c_str());
        return false;
      }
      set->rounds = static_cast<int>(rounds);
    }
  }
  *argc = kept;
  return true;
}

// The table's column names: printed by rank 0 once the vendor line above them is out, so that
// the header reads top down as nccl-tests' does.
void PrintColumnHeader(const FusedGemmOp& op) {
  printf("# %7s %6s %6s %12s", "M", "N", "K", "split-vendor");
  for (const OpVariant& v : kOpVariants) printf(" %10s", v.name);
  printf(" %9s %9s %9s %7s %7s", op.FirstHalfName(), op.SecondHalfName(), "at-once", "overlap",
         "ceiling");
  printf("  ");
  if (op.ShowsDefaultChunks()) printf("%3s ", "def");
  printf("%10s %7s %9s\n", "best", "x split", "relL2max");
  fflush(stdout);
}

}  // namespace

xccl_test::GemmOperands MakeOperands(int rank, int64_t m, const GemmShape& s,
                                     const FusedGemmSettings& set) {
  std::mt19937_64 rng(0x5eed0000ull + static_cast<uint64_t>(rank) * 7919 + m * 31 + s.n);
  if (set.BlockScales()) return xccl_test::RandomBlockscaleOperands(m, s.n, s.k, rng);
  return xccl_test::RandomGemmOperands(m, s.n, s.k, set.in_type, rng);
}

double ReferenceDot(const FusedGemmSettings& set, const GemmShape& s, int64_t m,
                    const xccl_test::GemmOperands& a_side, int64_t i,
                    const xccl_test::GemmOperands& b_side, int64_t j) {
  auto product = [&](int64_t q_begin, int64_t q_end) {
    double sum = 0;
    for (int64_t q = q_begin; q < q_end; ++q)
      sum += xccl_test::Value(set.in_type, a_side.a.data(), i * s.k + q) *
             xccl_test::Value(set.in_type, b_side.b.data(), j * s.k + q);
    return sum;
  };
  double sum = 0;
  if (set.BlockScales()) {
    // xccl_gemm.h's blockscale arithmetic: each K block's partial sum times its own scales
    // (A's [KB][m], B's [ceil(n/128)][KB]).
    const int64_t blocks = a_side.k_blocks;
    for (int64_t kb = 0; kb < blocks; ++kb)
      sum += product(kb * 128, std::min(s.k, kb * 128 + 128)) * double(a_side.a_scale[kb * m + i]) *
             b_side.b_scale[(j / 128) * blocks + kb];
  } else {
    sum = product(0, s.k);
    if (set.in_type == xcclFloat8e4m3) sum *= double(a_side.a_scale[i]) * b_side.b_scale[j];
  }
  return sum;
}

double SampledRelativeL2(const std::vector<double>& want,
                         const std::function<uint16_t(size_t)>& bf16_at) {
  double err2 = 0, ref2 = 0;
  for (size_t x = 0; x < want.size(); ++x) {
    const double got = xccl_test::Bf16Value(bf16_at(x));
    err2 += (got - want[x]) * (got - want[x]);
    ref2 += want[x] * want[x];
  }
  const double l2 = std::sqrt(err2 / (ref2 > 0 ? ref2 : 1));
  return std::isfinite(l2) ? l2 : HUGE_VAL;
}

xcclGemmProblem DirectProblem(const FusedGemmSettings& set, const GemmShape& s, int64_t m,
                              const void* a, const float* a_scale, const void* b,
                              const float* b_scale, void* c) {
  xcclGemmProblem p = xccl_test::DenseProblem(m, s.n, s.k, set.in_type, xcclBfloat16);
  p.a = a;
  p.a_scale = a_scale;
  p.b = b;
  p.b_scale = b_scale;
  p.c = c;
  if (set.BlockScales()) {
    p.scale_mode = xcclGemmScaleBlock128;
    p.a_scale_ld = m;
  }
  return p;
}

bool FusedGemmRank::Ok(xcclResult_t r, const char* what) const { return Ok(r, what, comm_); }

bool FusedGemmRank::Ok(xcclResult_t r, const char* what, xcclComm_t comm) const {
  if (r == xcclSuccess) return true;
  fprintf(stderr, "%s: rank %d: %s: %s: %s\n", op_.Program(), ctx_.rank, what,
          xcclGetErrorString(r), xcclGetLastError(comm));
  ctx_.sync->Abort();
  return false;
}

bool FusedGemmRank::Stage(const xccl_test::GemmOperands& o, const std::vector<uint8_t>& poison,
                          size_t c_bytes, StagedOperands* staged) {
  DeviceBuffers* buffers = buffers_.get();
  staged->scaled = set_.in_type == xcclFloat8e4m3;
  const bool ok =
      staged->a.Fill(buffers, o.a.data(), o.a.size()) &&
      staged->b.Fill(buffers, o.b.data(), o.b.size()) &&
      staged->c.Fill(buffers, poison.data(), c_bytes) &&
      (!staged->scaled || (staged->a_scale.Fill(buffers, o.a_scale.data(), o.a_scale.size() * 4) &&
                           staged->b_scale.Fill(buffers, o.b_scale.data(), o.b_scale.size() * 4)));
  if (!ok) {
    fprintf(stderr, "%s: rank %d: cannot stage the operands\n", op_.Program(), ctx_.rank);
    ctx_.sync->Abort();
  }
  return ok;
}

// Fills this rank's line of the device table, agrees on the vendor library and, where it can
// run (one GPU per rank, and what the op asks of it), makes its communicator (collective over
// all ranks).
bool FusedGemmRank::SetUpVendor() {
  ctx_.sync->Info(ctx_.rank) = DescribeRank(*buffers_);
  if (!ctx_.sync->Barrier()) return false;
  if (!ctx_.options->compare_vendor) return true;
  std::string why;
  const VendorLibrary* library = AgreeOnVendor(*ctx_.sync, ctx_.rank, &why);
  if (library != nullptr) {
    std::string blocked = op_.VendorCannot(*library);
    if (blocked.empty()) blocked = VendorBlocked(*ctx_.sync, ctx_.nranks);
    if (!blocked.empty()) {
      why = blocked;
      library = nullptr;
    }
  }
  if (library != nullptr && !JoinVendorComm(*library, *ctx_.sync, ctx_.rank, ctx_.nranks, &vendor_))
    return false;
  if (ctx_.rank == 0) {
    if (library != nullptr) {
      printf("# vendor: %s, version %s (%s)\n", library->path().c_str(),
             library->VersionText().c_str(), op_.VendorRole());
    } else {
      printf("# vendor: not run: %s\n", why.c_str());
    }
  }
  return true;
}

bool FusedGemmRank::Run(const xcclUniqueId& id) {
  // The rank's device first (a GPU build binds the thread to it), then the communicator.
  buffers_ = DeviceBuffers::Create(ctx_.rank);
  if (!buffers_) {
    ctx_.sync->Abort();
    return false;
  }
  xcclComm_t comm = nullptr;
  if (!Ok(xcclCommInitRank(&comm, ctx_.nranks, id, ctx_.rank), "init", nullptr)) return false;
  comm_ = comm;
  if (!SetUpVendor()) {
    ctx_.sync->Abort();
    xcclCommAbort(comm_);
    return false;
  }
  if (ctx_.rank == 0) PrintColumnHeader(op_);
  const char* env_plugin = getenv("XCCL_GEMM_PLUGIN");
  gemm_ = std::make_unique<DirectPlugin>(
      plugin() != nullptr ? plugin() : (env_plugin != nullptr ? env_plugin : ""),
      buffers_->Device());
  bool ok = true;
  for (const GemmShape& s : set_.shapes) {
    for (int64_t global_m : set_.global_m) {
      ok = op_.MeasureCell(*this, set_, s, global_m);
      if (!ok) break;
    }
    if (!ok) break;
  }
  xcclCommDestroy(comm_);
  return ok && !wrong_;
}

bool FusedGemmRank::RunVariants(const GemmShape& s, int64_t global_m, int default_chunks,
                                const CellVariants& variants,
                                const std::function<void()>& release_ops) {
  // Staging and the plugin's tuning allocate, copy and free, which can wait for the whole
  // device: no rank starts a call, which peers sharing the GPU would wait in, before every rank
  // is past them.
  if (!ctx_.sync->Barrier()) return false;
  std::vector<std::vector<double>> times(kAllVariants);
  double worst_l2 = 0;
  bool ok = true;
  // Each round after the first starts at another variant, so that none always runs in the
  // same place: in a fixed order a variant's place moved its time by more than the variants
  // differ (docs/perf-history.md, fifth round).
  // Round 0, the checked one, keeps the print order: the first half fills what the second
  // half's check reads.
  static_assert(kAllVariants % 2 != 0, "the stride of 2 must reach every start");
  for (int round = 0; round < set_.rounds && ok; ++round) {
    for (int place = 0; place < kAllVariants && ok; ++place) {
      const int v = (round * 2 + place) % kAllVariants;
      if (!variants.runs(v)) continue;
      if (round == 0 && !variants.poison_outputs(v)) {
        ok = false;
        break;
      }
      for (int w = 0; w < ctx_.options->warmup_iters && ok; ++w) ok = variants.call(v);
      if (!ok || !buffers_->Synchronize() || !ctx_.sync->Barrier()) {
        ok = false;
        break;
      }
      double seconds = 0;
      ok = buffers_->StartTimer();
      for (int i = 0; i < ctx_.options->iters && ok; ++i) ok = variants.call(v);
      ok = ok && buffers_->StopTimer(&seconds);
      const double us = seconds * 1e6 / std::max(1, ctx_.options->iters);
      double slowest = 0, l2 = 0;
      if (!ok || !ctx_.sync->AllReduce(ctx_.rank, us, Reduce::kMax, &slowest)) break;
      times[v].push_back(slowest);
      if (round == 0 && v != kFirstHalf) {
        double mine = 0;
        if (!variants.output_error(v, &mine)) {
          ok = false;
          break;
        }
        if (!ctx_.sync->AllReduce(ctx_.rank, mine, Reduce::kMax, &l2)) break;
        worst_l2 = std::max(worst_l2, l2);
        if (!(l2 <= kMaxRelL2)) {
          wrong_ = true;  // the run goes on, the exit status is 1
          if (ctx_.rank == 0) {
            const char* name = v == kVendorSplit  ? "split-vendor"
                               : v == kSecondHalf ? op_.SecondHalfCheckName()
                               : v == kBothHalves ? "at-once"
                                                  : kOpVariants[v].name;
            fprintf(stderr, "%s: M %lld N %lld K %lld: %s: relative L2 error %.2e over %.0e%s\n",
                    op_.Program(), static_cast<long long>(global_m), static_cast<long long>(s.n),
                    static_cast<long long>(s.k), name, l2, kMaxRelL2,
                    std::isfinite(l2) ? "" : " (not finite: a poisoned element was never written)");
          }
        }
      }
    }
  }
  // Buffers and ops go only once no rank has a call in flight: freeing device memory waits for
  // the whole device, which must not wait for a peer's call that waits for this rank.
  buffers_->Synchronize();
  ctx_.sync->Barrier();
  release_ops();
  if (!ok) return false;
  if (ctx_.rank == 0) PrintRow(s, global_m, default_chunks, std::move(times), worst_l2);
  return true;
}

void FusedGemmRank::PrintRow(const GemmShape& s, int64_t global_m, int default_chunks,
                             std::vector<std::vector<double>> times, double worst_l2) const {
  std::vector<double> median(kAllVariants, 0.0);
  for (int v = 0; v < kAllVariants; ++v) {
    if (times[v].empty()) continue;
    std::sort(times[v].begin(), times[v].end());
    median[v] = times[v][times[v].size() / 2];
  }
  int best = 0;  // the best fused variant; split where none ran
  for (int v = 1; v < kOpVariantCount; ++v)
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
  column(median[kVendorSplit], 12);
  for (int v = 0; v < kOpVariantCount; ++v) column(median[v], 10);
  column(median[kFirstHalf], 9);
  column(median[kSecondHalf], 9);
  column(median[kBothHalves], 9);
  // Overlap: the bound max(first half alone, second half alone) over the best fused time (1.00 =
  // perfect overlap; '-' where no fused variant or no half ran). Ceiling: the same bound over the
  // halves at once, the most overlap this device gives them.
  const double bound = std::max(median[kFirstHalf], median[kSecondHalf]);
  const bool halves = median[kFirstHalf] > 0 && median[kSecondHalf] > 0;
  auto ratio = [](bool known, double value) {
    if (known) {
      printf(" %7.2f", value);
    } else {
      printf(" %7s", "-");
    }
  };
  ratio(best > 0 && halves, bound / median[best]);
  ratio(halves && median[kBothHalves] > 0, bound / median[kBothHalves]);
  const double split = median[kVendorSplit] > 0 ? median[kVendorSplit] : median[0];
  printf("  ");
  if (op_.ShowsDefaultChunks()) printf("c=%d ", default_chunks);
  printf("%10s %7.2f %9.2e\n", kOpVariants[best].name, split / median[best], worst_l2);
}

int FusedGemmBenchMain(int argc, char** argv, const FusedGemmOp& op,
                       std::string (*built_plugin)(const std::string&)) {
  const char* program = op.Program();
  setlinebuf(stdout);
  xccl_test::RequestGpuRuntimeSettings();  // before the first runtime call
  FusedGemmSettings set;
  if (!TakeOwnFlags(op, &argc, argv, &set)) return 2;
  if (set.plugin.empty() && (getenv("XCCL_GEMM_PLUGIN") == nullptr || !*getenv("XCCL_GEMM_PLUGIN")))
    set.plugin = "reference";
  set.plugin = built_plugin(set.plugin);
  Options options;
  options.iters = 2;
  options.warmup_iters = 1;
  FlagSet flags;
  flags.sizes = flags.check = flags.types = flags.blocking = flags.timed_loop = false;
  flags.nccl_tests = false;
  int code = ParseOptions(argc, argv, flags, &options);
  if (code == 0) op.PrintOwnUsage();  // -h
  if (code >= 0) return code;
  ApplyDefaults(op, &set);
  // Each rank holds M / world rows, and a remainder would be dropped without a word (ag_gemm)
  // or refused by the op (gemm_rs): say so before starting.
  for (int64_t m : set.global_m) {
    if (m % options.TotalRanks() != 0) {
      fprintf(stderr,
              "%s: global M %lld (M %s) is not a multiple of the world size %d; pass --m with "
              "multiples of %d\n",
              program, static_cast<long long>(m), set.m_from.c_str(), options.TotalRanks(),
              options.TotalRanks());
      return 2;
    }
  }
  const char* in_name = set.BlockScales()               ? "fp8 e4m3 (blockscale 1x128 / 128x128)"
                        : set.in_type == xcclFloat8e4m3 ? "fp8 e4m3 (ptpc)"
                        : set.in_type == xcclFloat16    ? "fp16"
                                                        : "bf16";
  printf(
      "# %s: world %d, %s -> bf16, plugin %s, median of %d rounds (variants interleaved) of %d "
      "calls after %d warm-up, each call the slowest rank's; times in us; %s\n",
      program, options.TotalRanks(), in_name,
      set.plugin.empty() ? getenv("XCCL_GEMM_PLUGIN") : set.plugin.c_str(), set.rounds,
      options.iters, options.warmup_iters,
      ("M " + set.m_from + ", shapes " + set.shapes_from).c_str());
  op.PrintLegend(set);
  xcclUniqueId id;
  if (xcclGetUniqueId(&id) != xcclSuccess) {
    fprintf(stderr, "%s: xcclGetUniqueId: %s\n", program, xcclGetLastError(nullptr));
    return 1;
  }
  std::unique_ptr<RankSync> sync = RankSync::Create(options.TotalRanks());
  if (!sync) return 1;
  return LaunchRanks(options, sync.get(),
                     [&](const RankContext& ctx) { return FusedGemmRank(op, ctx, set).Run(id); });
}

}  // namespace xccl_perf
