// The cublaslt plugin's choice of cuBLASLt algorithm: the process-wide tuned one per shape, the
// context's cache per row count and alignment, and the one call that runs it (Launch).
//
// One algorithm per problem (m, n, k, leading dimensions, types, scale mode) and device in a
// process, chosen at supports(): the fastest, timed over the whole problem, of the heuristic's
// first 8 split-K-free algorithms (XCCL_GEMM_CUBLASLT_TUNE=0: its first, untimed), and used for
// every band whose row count it accepts (cublasLtMatmulAlgoCheck), also of a problem whose m it was
// not chosen for (an op chooses at m_max and runs smaller m: no kernel loads inside a call).
// Timed, so two processes (or runs) may choose differently and give different bytes; within a
// process every context of a problem gets the same choice (fused and split ops of one m_max give
// the same bytes). One algorithm means one summation order, so such a band's bytes equal the full
// run's. A row count it refuses gets an algorithm of its own, cached per row count; its bytes
// may then differ, and its kernel loads at that band's first run, inside a call (so the stall
// AlgoFor describes remains possible there; ag_gemm's bands and paired sources are multiples of
// 256 rows, and no refusal of those has been seen).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "algo_key.h"
#include "cublaslt_internal.h"
#include "xccl_gemm.h"

namespace xccl_cublaslt {
namespace {

// Split-K off: each output element's sum then runs over k in one order whatever the row count.
void TurnSplitKOff(cublasLtMatmulAlgo_t* algo) {
  const int32_t one = 1;
  const uint32_t none = CUBLASLT_REDUCTION_SCHEME_NONE;
  cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &one, sizeof(one));
  cublasLtMatmulAlgoConfigSetAttribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &none,
                                       sizeof(none));
}

// cuBLASLt's heuristic for these descriptors, asked for split-K-free algorithms only
// (CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK): up to `max` of them, best first. Asking for them
// beats taking the first answer and turning split-K off afterwards, which left that kernel's
// tiling tuned for a split it no longer did (docs/perf-history.md, "GEMM plugin: cublaslt
// against cuBLASLt called directly").
// `alignment`: the bytes every buffer's address is a multiple of (cuBLASLt assumes 256).
xcclResult_t SplitKFreeCandidates(Context* c, Descriptors& d, int max,
                                  std::vector<cublasLtMatmulAlgo_t>* out,
                                  uint32_t alignment = 256) {
  std::vector<cublasLtMatmulHeuristicResult_t> results(max);
  const uint32_t no_reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
  cublasLtMatmulPreference_t pref = nullptr;
  int found = 0;
  bool set =
      d.Check(cublasLtMatmulPreferenceCreate(&pref)) &&
      d.Check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &kWorkspaceBytes, sizeof(kWorkspaceBytes))) &&
      d.Check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                   &no_reduction, sizeof(no_reduction)));
  for (cublasLtMatmulPreferenceAttributes_t attribute :
       {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
    set = set && (alignment >= 256 || d.Check(cublasLtMatmulPreferenceSetAttribute(
                                          pref, attribute, &alignment, sizeof(alignment))));
  if (set)
    d.Check(cublasLtMatmulAlgoGetHeuristic(c->handle, d.desc, d.la, d.lb, d.lc, d.lc, pref, max,
                                           results.data(), &found));
  if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
  if (d.result != xcclSuccess) return d.result;
  if (found == 0) return xcclInvalidArgument;  // no kernel for this shape
  out->clear();
  for (int i = 0; i < found; ++i) {
    if (results[i].state != CUBLAS_STATUS_SUCCESS) continue;
    out->push_back(results[i].algo);
    TurnSplitKOff(&out->back());  // already off; kept so that no reduction can slip in
  }
  return out->empty() ? xcclInvalidArgument : xcclSuccess;
}

// The heuristic's best split-K-free algorithm for these descriptors (and buffer alignment).
xcclResult_t Heuristic(Context* c, Descriptors& d, cublasLtMatmulAlgo_t* algo,
                       uint32_t alignment = 256) {
  std::vector<cublasLtMatmulAlgo_t> candidates;
  const xcclResult_t r = SplitKFreeCandidates(c, d, 1, &candidates, alignment);
  if (r == xcclSuccess) *algo = candidates.front();
  return r;
}

// The algorithm for these descriptors of `rows` rows: cached; else the shape's (ShapeAlgoOf) if
// cuBLASLt accepts it for them; else the heuristic's for them. Reusing the shape's algorithm for
// another m keeps the bytes of equal rows equal across m and, more to the point, loads no new
// kernel inside a call: a first launch can wait for the whole device, and with ranks sharing a
// GPU whose kernels wait on each other that stalls calls until their deadline
// (docs/perf-history.md, fourth round).
// Called with c->mu held.
xcclResult_t AlgoFor(Context* c, const xcclGemmProblem& p, int64_t rows, Descriptors& d,
                     cublasLtMatmulAlgo_t* algo) {
  auto it = c->algos.find(KeyOf(p, rows));
  if (it != c->algos.end()) {
    *algo = it->second;
    return xcclSuccess;
  }
  const cublasLtMatmulAlgo_t* shape = xccl_cublaslt::ShapeAlgoOf(c->algos, p);
  cublasLtMatmulHeuristicResult_t checked;
  if (shape != nullptr &&
      cublasLtMatmulAlgoCheck(c->handle, d.desc, d.la, d.lb, d.lc, d.lc, shape, &checked) ==
          CUBLAS_STATUS_SUCCESS &&
      checked.workspaceSize <= kWorkspaceBytes) {
    *algo = *shape;
  } else {
    const xcclResult_t r = Heuristic(c, d, algo);
    if (r != xcclSuccess) return r;
  }
  c->algos[KeyOf(p, rows)] = *algo;
  return xcclSuccess;
}

// The largest power of two, up to 256, that `ptr` is a multiple of.
uint32_t AlignmentOf(const void* ptr) {
  const uintptr_t bits = reinterpret_cast<uintptr_t>(ptr) | 256u;
  return static_cast<uint32_t>(bits & (~bits + 1));
}

// Whether `algo` works on buffers whose addresses are multiples of `alignment` bytes (its own
// minimum for each of A, B, C and D, which also covers the leading dimensions it was chosen for).
bool AcceptsAlignment(const cublasLtMatmulAlgo_t& algo, uint32_t alignment) {
  for (cublasLtMatmulAlgoCapAttributes_t attribute :
       {CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES, CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES}) {
    uint32_t need = 0;
    size_t written = 0;
    if (cublasLtMatmulAlgoCapGetAttribute(&algo, attribute, &need, sizeof(need), &written) !=
            CUBLAS_STATUS_SUCCESS ||
        need > alignment)
      return false;
  }
  return true;
}

// `*algo` (chosen, as cuBLASLt's heuristic assumes, for 256-byte-aligned buffers) if it accepts
// buffers aligned to `alignment` only, else the heuristic's choice for that alignment, cached.
// The tuned algorithm usually needs 16 bytes, so a caller's B or C at a 16-byte offset keeps it;
// only a call it cannot run takes another kernel (loaded then: see AlgoFor). Called with c->mu.
xcclResult_t AlignedFor(Context* c, const xcclGemmProblem& p, int64_t rows, Descriptors& d,
                        uint32_t alignment, cublasLtMatmulAlgo_t* algo) {
  if (alignment >= 256 || AcceptsAlignment(*algo, alignment)) return xcclSuccess;
  const auto key = std::make_pair(KeyOf(p, rows), alignment);
  auto it = c->by_alignment.find(key);
  if (it != c->by_alignment.end()) {
    *algo = it->second;
    return xcclSuccess;
  }
  const xcclResult_t r = Heuristic(c, d, algo, alignment);
  if (r == xcclSuccess) c->by_alignment[key] = *algo;
  return r;
}

}  // namespace

// Rows [row_begin, row_end) of p in one cuBLASLt call that reads `scales`.
xcclResult_t Launch(Context* c, const xcclGemmProblem& p, int64_t row_begin, int64_t row_end,
                    CallScales scales, cudaStream_t stream) {
  Descriptors d(p, row_begin, row_end, scales);
  if (d.result != xcclSuccess) return d.result;
  const size_t in_size = p.a_type == xcclFloat8e4m3 ? 1 : 2;
  const char* a = static_cast<const char*>(p.a) + row_begin * p.lda * in_size;
  char* cptr = static_cast<char*>(p.c) + row_begin * p.ldc * 2;
  const uint32_t alignment = std::min({AlignmentOf(p.b), AlignmentOf(a), AlignmentOf(cptr)});
  cublasLtMatmulAlgo_t algo;
  {
    std::lock_guard<std::mutex> lock(c->mu);
    xcclResult_t r = AlgoFor(c, p, row_end - row_begin, d, &algo);
    if (r == xcclSuccess) r = AlignedFor(c, p, row_end - row_begin, d, alignment, &algo);
    if (r != xcclSuccess) return r;
  }
  const float alpha = 1.0f, beta = 0.0f;
  d.Check(cublasLtMatmul(c->handle, d.desc, &alpha, p.b, d.la, a, d.lb, &beta, cptr, d.lc, cptr,
                         d.lc, &algo, c->workspace, kWorkspaceBytes, stream));
  return d.result;
}

namespace {

// The algorithm of each problem on each device, one per process: every context (every op, every
// compute stream of one) runs the same one, so fused and split calls of one m give the same bytes
// even where tuning's timings would differ from one choice to the next. Keyed by the problem's m
// too: the choice is timed over all of p.m rows, and the heuristic's answer changes with m
// (docs/perf-history.md, third round).
struct ShapeOnDevice {
  int device;
  int64_t m;
  AlgoKey key;
  bool operator<(const ShapeOnDevice& o) const {
    return std::tie(device, m, key) < std::tie(o.device, o.m, o.key);
  }
};
// One lock per device (devices beyond 64 share): contexts of one device choose one after
// another, those of different devices at once.
std::mutex& ShapeChoicesMutex(int device) {
  static std::mutex mu[64];
  return mu[static_cast<unsigned>(device) % 64];
}
std::mutex& ShapeChoicesMapMutex() {  // the map itself, held only to read or write it
  static std::mutex mu;
  return mu;
}
std::map<ShapeOnDevice, cublasLtMatmulAlgo_t>& ShapeChoices() {
  static auto* choices = new std::map<ShapeOnDevice, cublasLtMatmulAlgo_t>;  // outlives exit
  return *choices;
}

// XCCL_GEMM_CUBLASLT_TUNE=0 takes the heuristic's first split-K-free algorithm untimed.
bool TuningWanted() {
  const char* v = getenv("XCCL_GEMM_CUBLASLT_TUNE");
  return v == nullptr || strcmp(v, "0") != 0;
}

// The fastest of `candidates` for p, timed on scratch operands of all p.m rows. Every
// candidate runs once (loading its kernel); the first then runs for kClockUpMs, so that the
// GPU's clocks have left idle before anything is timed (timing from idle would favour the
// candidates timed last). Then kPasses passes, alternately forward and backward,
// time each candidate over enough runs to last kTimedMs, each keeping its best pass. The first
// (the heuristic's choice) is kept unless the fastest beats it by more than noise (2%). Where the
// scratch cannot be had (memory), the first is taken untimed. XCCL_GEMM_CUBLASLT_TUNE=2 prints
// the timings to stderr.
xcclResult_t FastestOf(Context* c, const xcclGemmProblem& p,
                       const std::vector<cublasLtMatmulAlgo_t>& candidates, cudaStream_t stream,
                       cublasLtMatmulAlgo_t* best) {
  constexpr int kPasses = 3;
  constexpr float kClockUpMs = 30, kTimedMs = 3;
  *best = candidates.front();
  if (candidates.size() == 1 || p.m == 0) return xcclSuccess;
  WarmUpOperands scratch;
  xcclGemmProblem warm{};
  cudaEvent_t start = nullptr, stop = nullptr;
  if (!scratch.Make(p, p.m, stream, &warm, WarmUpOperands::kData) ||
      cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) {
    if (start != nullptr) cudaEventDestroy(start);
    (void)cudaGetLastError();
    return xcclSuccess;
  }
  Descriptors d(warm, 0, warm.m);
  const float alpha = 1.0f, beta = 0.0f;
  auto matmul = [&](const cublasLtMatmulAlgo_t& algo) {
    return cublasLtMatmul(c->handle, d.desc, &alpha, warm.b, d.la, warm.a, d.lb, &beta, warm.c,
                          d.lc, warm.c, d.lc, &algo, c->workspace, kWorkspaceBytes,
                          stream) == CUBLAS_STATUS_SUCCESS;
  };
  // Milliseconds per run of `runs` runs of candidate i; negative where it would not run.
  auto time_runs = [&](size_t i, int runs) {
    bool ran = cudaEventRecord(start, stream) == cudaSuccess;
    for (int run = 0; run < runs && ran; ++run) ran = matmul(candidates[i]);
    float ms = 0;
    ran = ran && cudaEventRecord(stop, stream) == cudaSuccess &&
          cudaEventSynchronize(stop) == cudaSuccess &&
          cudaEventElapsedTime(&ms, start, stop) == cudaSuccess;
    if (!ran) (void)cudaGetLastError();
    return ran ? ms / runs : -1.0f;
  };
  // Each candidate's best time per run in ms; negative: cuBLASLt would not run it (passed over).
  std::vector<float> best_ms(candidates.size(), -1.0f);
  for (size_t i = 0; i < candidates.size(); ++i) best_ms[i] = time_runs(i, 1);
  float first_ms = best_ms[0] > 0 ? best_ms[0] : 1.0f, clocked_ms = 0;
  // Up to 400 runs: a GEMM under 75 us clocks up for less than kClockUpMs.
  for (int round = 0; round < 100 && clocked_ms < kClockUpMs && best_ms[0] > 0; ++round) {
    first_ms = time_runs(0, 4);
    clocked_ms += 4 * first_ms;
  }
  const int runs =
      std::max(3, std::min(50, static_cast<int>(kTimedMs / std::max(first_ms, 1e-3f)) + 1));
  for (int pass = 0; pass < kPasses; ++pass) {
    for (size_t step = 0; step < candidates.size(); ++step) {
      const size_t i = pass % 2 == 0 ? step : candidates.size() - 1 - step;
      if (best_ms[i] < 0) continue;
      const float ms = time_runs(i, runs);
      best_ms[i] = ms < 0 ? -1.0f : std::min(best_ms[i], ms);
    }
  }
  // The fastest; the first (the heuristic's choice) unless the fastest beats it by over 2%.
  size_t chosen = 0;
  for (size_t i = 1; i < candidates.size(); ++i) {
    if (best_ms[i] >= 0 && (best_ms[chosen] < 0 || best_ms[i] < best_ms[chosen])) chosen = i;
  }
  if (best_ms[0] >= 0 && !(best_ms[chosen] < 0.98f * best_ms[0])) chosen = 0;
  *best = candidates[chosen];
  const char* verbose = getenv("XCCL_GEMM_CUBLASLT_TUNE");
  if (verbose != nullptr && strcmp(verbose, "2") == 0) {
    fprintf(stderr, "# tune m %lld n %lld k %lld: chose %zu of", static_cast<long long>(p.m),
            static_cast<long long>(p.n), static_cast<long long>(p.k), chosen);
    for (float ms : best_ms) fprintf(stderr, " %.3f", ms);
    fprintf(stderr, " ms\n");
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return cudaStreamSynchronize(stream) == cudaSuccess ? xcclSuccess : xcclUnhandledDeviceError;
}

}  // namespace

// The process's algorithm for p's shape on c's device: chosen once, then shared. The heuristic
// lists up to kCandidates split-K-free algorithms (over descriptors whose scale pointers lie in
// `warm`: it refuses fp8 without them); FastestOf picks among them unless
// XCCL_GEMM_CUBLASLT_TUNE=0. Holds the device's lock while choosing: contexts of one device
// asking at once (ranks of one process sharing a GPU) wait for the one choice instead of timing
// against each other.
xcclResult_t ShapeAlgo(Context* c, const xcclGemmProblem& p, const xcclGemmProblem& warm,
                       cudaStream_t stream, cublasLtMatmulAlgo_t* algo) {
  constexpr int kCandidates = 8;
  std::lock_guard<std::mutex> choosing(ShapeChoicesMutex(c->device));
  const ShapeOnDevice key{c->device, p.m, KeyOf(p, kShapeAlgo)};
  {
    std::lock_guard<std::mutex> reading(ShapeChoicesMapMutex());
    auto it = ShapeChoices().find(key);
    if (it != ShapeChoices().end()) {
      *algo = it->second;
      return xcclSuccess;
    }
  }
  Descriptors whole(warm, 0, p.m);
  std::vector<cublasLtMatmulAlgo_t> candidates;
  xcclResult_t r =
      whole.result != xcclSuccess
          ? whole.result
          : SplitKFreeCandidates(c, whole, TuningWanted() ? kCandidates : 1, &candidates);
  if (r == xcclSuccess) r = FastestOf(c, p, candidates, stream, algo);
  if (r == xcclSuccess) {
    std::lock_guard<std::mutex> writing(ShapeChoicesMapMutex());
    ShapeChoices()[key] = *algo;
  }
  return r;
}

}  // namespace xccl_cublaslt
