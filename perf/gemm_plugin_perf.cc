// gemm_plugin_perf: a GEMM plugin on one GPU against cuBLASLt called directly, and the cost of
// cutting its GEMM into the bands ag_gemm's fused mode runs.
//
// Per (global M, N, K, dtype) row:
//   direct   cublasLtMatmul of the whole problem, cuBLASLt's first heuristic choice with its
//            defaults (split-K allowed), the same TN layout and ptpc scales as the plugin
//   full     the plugin's run() over rows [0, M)
//   c1 c2 c4 the plugin over world x c bands of M / (world x c) rows each, back to back on one
//            stream: what fused ag_gemm asks of it with c bands per source
//   c1x2     the c1 bands on two streams taking them in turn (forked from and joined back into
//            the timed stream), so one band's tail wave can overlap the next band's start: the
//            remedy measured for the banding cost (docs/perf-history.md, third round); each stream
//            has a plugin context of its own (its own workspace), as ag_gemm's two compute streams
//            do
//   g2x2     bands of two sources' rows (world / 2 bands) on two streams in turn: what waiting
//            for two sources before each GEMM would cost, where bands of one source are too
//            small to fill the GPU (M 8192 at world 8: docs/perf-history.md, third round)
//   op       the GEMM calls fused ag_gemm makes on rank 0 with its defaults (FusedGemmSchedule:
//            the chunk rule, sources paired by SourcesPerGemm, two compute streams), without the
//            exchange: the banding cost a default fused call pays (at an even world every rank
//            makes calls of the same sizes in the same order)
//   nosk     cublasLtMatmul with the heuristic asked for split-K-free algorithms only
//            (CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK = NONE), against direct: what the
//            plugin, which needs split-K off for equal bytes across bands, could get
// Printed: TFLOP/s of direct and full, full / direct, each banded time's cost over full (%),
// nosk / direct, whether c1x2's and op's C equal c1's byte for byte (x2same: a check that both
// streams' bands ran, since a band lost would make them look fast),
// and the relative L2 distance of the plugin's C from direct's (different algorithms sum in
// different orders, so not zero, but bf16-rounding small). Times are the median of --rounds
// rounds of -n calls after -w warm-ups, the variants interleaved within each round, each round
// starting at another variant. Every run also checks the plugin's C (full, c1, g2x2, op) and
// direct's against a double-precision GEMM of the decoded operands on 64 rows x 128 columns
// (over 1e-2: named on stderr, exit status 1), so that a mistake shared by both, or by all
// banded calls, still shows.
//
// --dtype fp8-block: e4m3 with DeepSeek-V3 block scales (xcclGemmScaleBlock128), each block's
// scale drawn on its own. Every banded call is then what the op makes (AgGemmOp::RunGemm): a
// sub-problem of the call's rows, m = rows, a_scale a packed [KB][rows] tile with a_scale_ld =
// rows, band [0, rows). A call that is one band reads that band's tile (as the op's window holds
// one per band); one over several bands (g2x2, op's own rows and paired sources) first packs
// their tiles into a call tile with one 2D copy per band on its stream, as the op does. direct
// is cuBLASLt's block-scale modes over the whole problem.
//
// Usage: gemm_plugin_perf [--plugin NAME|PATH] [--dtype fp8|fp8-block|bf16] [--m "8192 16384"]
//                         [--shapes "6400x7168 ..."] [--world W] [--rounds R] [-n N] [-w W]
//                         [-d device]
// Every M must be a multiple of 256 x world (whole 256-row tiles per source, as ag_gemm pads).
#include <cublasLt.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "common/float_formats.h"
#include "fused/ag_gemm/chunk_rule.h"
#include "fused/ag_gemm/gemm_schedule.h"
#include "harness/built_plugin.h"
#include "platform/gpu.h"
#include "xccl_gemm.h"

// cuBLASLt's block-scale modes came with cuBLAS 12.9; built against an older one, direct
// refuses fp8-block (its rows say "not supported").
#if CUBLAS_VER_MAJOR > 12 || (CUBLAS_VER_MAJOR == 12 && CUBLAS_VER_MINOR >= 9)
#define XCCL_PERF_CUBLASLT_BLOCK_SCALES 1
#else
#define XCCL_PERF_CUBLASLT_BLOCK_SCALES 0
#endif

namespace {

struct Shape {
  int64_t n, k;
};

struct Settings {
  std::string plugin;
  xcclDataType_t in_type = xcclFloat8e4m3;
  bool block = false;  // fp8 with block scales (--dtype fp8-block), else ptpc
  std::vector<int64_t> global_m{8192, 16384, 32768};
  std::vector<Shape> shapes{{6400, 7168}, {3840, 7168}, {6288, 7168}, {3648, 7168}};
  int world = 8;
  int rounds = 5;
  int iters = 10;
  int warmup = 3;
  int device = 0;
};

bool Ok(gpuError_t err, const char* what) {
  if (err == gpuSuccess) return true;
  fprintf(stderr, "gemm_plugin_perf: %s failed: %s\n", what, gpuGetErrorString(err));
  return false;
}

bool Ok(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return true;
  fprintf(stderr, "gemm_plugin_perf: %s failed: cuBLAS status %d\n", what,
          static_cast<int>(status));
  return false;
}

bool ParseArgs(int argc, char** argv, Settings* set) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) {
      fprintf(stderr, "gemm_plugin_perf: %s needs a value\n", flag.c_str());
      return false;
    }
    const std::string value = argv[++i];
    std::istringstream list(value);
    if (flag == "--plugin") {
      set->plugin = value;
    } else if (flag == "--dtype") {
      if (value != "fp8" && value != "fp8-block" && value != "bf16") {
        fprintf(stderr, "gemm_plugin_perf: --dtype is fp8, fp8-block or bf16, not %s\n",
                value.c_str());
        return false;
      }
      set->in_type = value == "bf16" ? xcclBfloat16 : xcclFloat8e4m3;
      set->block = value == "fp8-block";
    } else if (flag == "--m") {
      set->global_m.clear();
      for (int64_t m; list >> m;) set->global_m.push_back(m);
    } else if (flag == "--shapes") {
      set->shapes.clear();
      for (std::string item; list >> item;) {
        Shape s{};
        if (sscanf(item.c_str(), "%ldx%ld", &s.n, &s.k) != 2 || s.n <= 0 || s.k <= 0) {
          fprintf(stderr, "gemm_plugin_perf: a shape is NxK, not %s\n", item.c_str());
          return false;
        }
        set->shapes.push_back(s);
      }
    } else if (flag == "--world") {
      set->world = atoi(value.c_str());
    } else if (flag == "--rounds") {
      set->rounds = atoi(value.c_str());
    } else if (flag == "-n") {
      set->iters = atoi(value.c_str());
    } else if (flag == "-w") {
      set->warmup = atoi(value.c_str());
    } else if (flag == "-d") {
      set->device = atoi(value.c_str());
    } else {
      fprintf(stderr, "gemm_plugin_perf: unknown flag %s\n", flag.c_str());
      return false;
    }
  }
  if (set->global_m.empty() || set->shapes.empty() || set->world < 1 || set->rounds < 1 ||
      set->iters < 1 || set->warmup < 0) {
    fprintf(stderr, "gemm_plugin_perf: bad arguments\n");
    return false;
  }
  // The op's bands are whole 256-row tiles of world equal slots, as ag_gemm pads them.
  for (const int64_t m : set->global_m) {
    if (m <= 0 || m % (256 * set->world) != 0) {
      fprintf(stderr, "gemm_plugin_perf: M %ld is not a positive multiple of 256 x world (%d)\n",
              static_cast<long>(m), set->world);
      return false;
    }
  }
  return true;
}

// The plugin, loaded by path (never closed: its kernels may outlive any owner), and one context
// of it per problem, as ag_gemm makes one per op: the cublaslt plugin chooses its algorithm
// once per context and shape, for the M its supports() saw.
class Plugin {
 public:
  ~Plugin() { Finalize(); }
  bool Load(const std::string& path) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      fprintf(stderr, "gemm_plugin_perf: %s\n", dlerror());
      return false;
    }
    // The newest symbol first, as the op's loader takes it: block scales need version 2.
    void* sym = dlsym(handle, XCCL_GEMM_PLUGIN_SYMBOL_V2);
    if (sym == nullptr) sym = dlsym(handle, XCCL_GEMM_PLUGIN_SYMBOL_V1);
    api_ = static_cast<const xcclGemmPlugin_v1_t*>(sym);
    if (api_ == nullptr || (api_->abi_version != XCCL_GEMM_PLUGIN_ABI_V1 &&
                            api_->abi_version != XCCL_GEMM_PLUGIN_ABI_V2)) {
      fprintf(stderr, "gemm_plugin_perf: %s is not a v1 or v2 GEMM plugin\n", path.c_str());
      api_ = nullptr;
      return false;
    }
    return true;
  }
  // A fresh context for `p` (the previous one finalized), with supports() asked for p.
  bool Prepare(const xcclGemmProblem& p, int device) {
    Finalize();
    if (p.scale_mode == xcclGemmScaleBlock128 && api_->abi_version < XCCL_GEMM_PLUGIN_ABI_V2) {
      fprintf(stderr, "gemm_plugin_perf: a version 1 plugin takes no block scales\n");
      return false;
    }
    if (api_->init(&ctx_, device) != xcclSuccess) {
      ctx_ = nullptr;
      fprintf(stderr, "gemm_plugin_perf: the plugin's init failed\n");
      return false;
    }
    return api_->supports(ctx_, &p) == xcclSuccess;
  }
  bool Run(const xcclGemmProblem& p, int64_t begin, int64_t end, gpuStream_t stream) const {
    const xcclGemmBand band{begin, end};
    return api_->run(ctx_, &p, &band, stream) == xcclSuccess;
  }

 private:
  void Finalize() {
    if (ctx_ != nullptr) api_->finalize(ctx_);
    ctx_ = nullptr;
  }
  const xcclGemmPlugin_v1_t* api_ = nullptr;
  void* ctx_ = nullptr;
};

// cuBLASLt's own choice for the whole problem: the comparison the plugin is held to. Written
// here rather than shared with the plugin so that a mistake in one is not copied into the other.
class DirectGemm {
 public:
  ~DirectGemm() {
    if (layout_c_ != nullptr) cublasLtMatrixLayoutDestroy(layout_c_);
    if (layout_a_ != nullptr) cublasLtMatrixLayoutDestroy(layout_a_);
    if (layout_b_ != nullptr) cublasLtMatrixLayoutDestroy(layout_b_);
    if (desc_ != nullptr) cublasLtMatmulDescDestroy(desc_);
  }

  // C^T (n x m) = B (op T of its k x n view) . A^T (k x m view): row-major C = A . B^T.
  bool Prepare(cublasLtHandle_t handle, const xcclGemmProblem& p, void* workspace,
               size_t workspace_bytes, bool split_k_free = false) {
    handle_ = handle;
    p_ = p;
    workspace_ = workspace;
    workspace_bytes_ = workspace_bytes;
    const bool fp8 = p.a_type == xcclFloat8e4m3;
    const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    const cublasOperation_t transa = CUBLAS_OP_T, transb = CUBLAS_OP_N;
    if (!Ok(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F), "desc") ||
        !Ok(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &transa,
                                           sizeof(transa)),
            "transa") ||
        !Ok(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &transb,
                                           sizeof(transb)),
            "transb") ||
        !Ok(cublasLtMatrixLayoutCreate(&layout_b_, in, p.k, p.n, p.ldb), "layout B") ||
        !Ok(cublasLtMatrixLayoutCreate(&layout_a_, in, p.k, p.m, p.lda), "layout A") ||
        !Ok(cublasLtMatrixLayoutCreate(&layout_c_, CUDA_R_16BF, p.n, p.m, p.ldc), "layout C"))
      return false;
    if (fp8) {
      // cuBLASLt's A is our B and its B our A: ptpc is a vector over each; block scales are
      // 128x128 blocks on our B (p.b_scale must be cuBLASLt's padded layout: BlockScaleArrays)
      // and 1x128 on our A ([KB][m], m contiguous).
      int32_t a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F, b_mode = a_mode;
      if (p.scale_mode == xcclGemmScaleBlock128) {
#if XCCL_PERF_CUBLASLT_BLOCK_SCALES
        a_mode = CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F;
        b_mode = CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F;
#else
        fprintf(stderr, "gemm_plugin_perf: this cuBLASLt (before 12.9) has no block scales\n");
        return false;
#endif
      }
      if (!Ok(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &a_mode,
                                             sizeof(a_mode)),
              "A scale mode") ||
          !Ok(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &b_mode,
                                             sizeof(b_mode)),
              "B scale mode") ||
          !Ok(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                             &p.b_scale, sizeof(p.b_scale)),
              "A scale") ||
          !Ok(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                             &p.a_scale, sizeof(p.a_scale)),
              "B scale"))
        return false;
    }
    cublasLtMatmulPreference_t pref = nullptr;
    cublasLtMatmulHeuristicResult_t heuristic;
    int found = 0;
    const bool chosen =
        Ok(cublasLtMatmulPreferenceCreate(&pref), "preference") &&
        Ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                &workspace_bytes, sizeof(workspace_bytes)),
           "workspace") &&
        (!split_k_free ||
         Ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                 &kNoReduction, sizeof(kNoReduction)),
            "reduction scheme mask")) &&
        Ok(cublasLtMatmulAlgoGetHeuristic(handle, desc_, layout_b_, layout_a_, layout_c_, layout_c_,
                                          pref, 1, &heuristic, &found),
           "heuristic");
    if (pref != nullptr) cublasLtMatmulPreferenceDestroy(pref);
    if (!chosen || found == 0) {
      fprintf(stderr, "gemm_plugin_perf: cuBLASLt has no%s algorithm for this problem\n",
              split_k_free ? " split-K-free" : "");
      return false;
    }
    algo_ = heuristic.algo;
    return true;
  }

  bool Run(gpuStream_t stream) const {
    const float alpha = 1.0f, beta = 0.0f;
    return Ok(cublasLtMatmul(handle_, desc_, &alpha, p_.b, layout_b_, p_.a, layout_a_, &beta, p_.c,
                             layout_c_, p_.c, layout_c_, &algo_, workspace_, workspace_bytes_,
                             static_cast<cudaStream_t>(stream)),
              "matmul");
  }

 private:
  static constexpr uint32_t kNoReduction = CUBLASLT_REDUCTION_SCHEME_NONE;
  cublasLtHandle_t handle_ = nullptr;
  xcclGemmProblem p_{};
  void* workspace_ = nullptr;
  size_t workspace_bytes_ = 0;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t layout_b_ = nullptr, layout_a_ = nullptr, layout_c_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
};

// Device memory freed with the object.
class DeviceMemory {
 public:
  ~DeviceMemory() {
    if (ptr_ != nullptr) (void)gpuFree(ptr_);
  }
  bool Allocate(size_t bytes) { return Ok(gpuMalloc(&ptr_, bytes), "device allocation"); }
  // cudaMemcpy from pageable memory may return before the device has the bytes, and the timed
  // streams are non-blocking (unordered with it): wait for the device (this tool has it alone).
  bool Upload(const void* data, size_t bytes) {
    return Allocate(bytes) && Ok(gpuMemcpy(ptr_, data, bytes, gpuMemcpyDefault), "upload") &&
           Ok(gpuDeviceSynchronize(), "upload");
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
};

// Median microseconds per call of `call` over the rounds, variants interleaved by the caller.
struct Timer {
  gpuStream_t stream = nullptr;
  gpuEvent_t start = nullptr, stop = nullptr;

  template <typename Call>
  bool Time(int iters, const Call& call, double* us) const {
    float ms = 0;
    if (!Ok(gpuEventRecord(start, stream), "record")) return false;
    for (int i = 0; i < iters; ++i)
      if (!call()) return false;
    if (!Ok(gpuEventRecord(stop, stream), "record") || !Ok(gpuEventSynchronize(stop), "sync") ||
        !Ok(gpuEventElapsedTime(&ms, start, stop), "elapsed"))
      return false;
    *us = ms * 1000.0 / iters;
    return true;
  }
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Relative L2 distance between two bf16 matrices of `count` values.
double RelativeL2(const std::vector<uint16_t>& got, const std::vector<uint16_t>& want) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = xccl_test::Bf16Value(got[i]), w = xccl_test::Bf16Value(want[i]);
    diff += (g - w) * (g - w);
    norm += w * w;
  }
  return norm > 0 ? std::sqrt(diff / norm) : (diff > 0 ? INFINITY : 0.0);
}

// Block scales of the operand set, drawn once for the largest sizes with each block's scale on
// its own: A's [max KB][max M], B's [ceil(max N / 128)][max KB]. A problem takes the leading
// blocks and rows of them, laid out as each of its readers wants (below).
struct BlockScaleSource {
  const xccl_test::GemmOperands* operands;
  int64_t max_m, max_blocks;
  float a(int64_t kb, int64_t row) const { return operands->a_scale[kb * max_m + row]; }
  float b(int64_t column_block, int64_t kb) const {
    return operands->b_scale[column_block * max_blocks + kb];
  }
};

// A's scales as the op's window holds them for these bands (row ranges in order from row 0):
// one packed [KB][rows] tile per band, the tile of a band starting at row r at r * KB floats.
std::vector<float> BandTiles(const BlockScaleSource& src, const std::vector<xccl::RowRange>& bands,
                             int64_t blocks) {
  std::vector<float> tiles(static_cast<size_t>(bands.back().end * blocks));
  for (const xccl::RowRange& band : bands) {
    const int64_t rows = band.end - band.begin;
    float* tile = tiles.data() + band.begin * blocks;
    for (int64_t kb = 0; kb < blocks; ++kb)
      for (int64_t i = band.begin; i < band.end; ++i)
        tile[kb * rows + i - band.begin] = src.a(kb, i);
  }
  return tiles;
}

// B's scales [ceil(n/128)][KB] (xccl's layout, what the plugin gets), or with each row padded
// to a multiple of 4 blocks, zeros after: the layout cuBLASLt reads (measured on an H200 for the
// cublaslt plugin, whose header note has the numbers), what direct gets.
std::vector<float> ColumnBlockScales(const BlockScaleSource& src, int64_t n, int64_t blocks,
                                     bool padded) {
  const int64_t column_blocks = (n + 127) / 128, pitch = padded ? (blocks + 3) / 4 * 4 : blocks;
  std::vector<float> scales(static_cast<size_t>(column_blocks * pitch), 0.0f);
  for (int64_t jb = 0; jb < column_blocks; ++jb)
    for (int64_t kb = 0; kb < blocks; ++kb) scales[jb * pitch + kb] = src.b(jb, kb);
  return scales;
}

// The double-precision GEMM of the decoded operands on a sample of C: up to 64 rows and 128
// columns spread evenly, enough to hit every band of every banding here (at most 4 x world).
struct Reference {
  std::vector<int64_t> rows, cols;
  std::vector<double> value;  // [rows][cols]
};

Reference MakeReference(const xccl_test::GemmOperands& host, int64_t ld, xcclDataType_t type,
                        bool block, const BlockScaleSource& scales, int64_t m, int64_t n,
                        int64_t k) {
  Reference ref;
  const int64_t row_count = std::min<int64_t>(m, 64), col_count = std::min<int64_t>(n, 128);
  for (int64_t t = 0; t < row_count; ++t) ref.rows.push_back((2 * t + 1) * m / (2 * row_count));
  for (int64_t t = 0; t < col_count; ++t) ref.cols.push_back((2 * t + 1) * n / (2 * col_count));
  // Each sampled row of A and of B decoded once.
  auto decode = [&](const std::vector<uint8_t>& codes, const std::vector<int64_t>& which) {
    std::vector<double> out;
    for (const int64_t r : which)
      for (int64_t q = 0; q < k; ++q)
        out.push_back(xccl_test::Value(type, codes.data(), r * ld + q));
    return out;
  };
  const std::vector<double> a = decode(host.a, ref.rows), b = decode(host.b, ref.cols);
  const int64_t blocks = (k + 127) / 128;
  for (size_t x = 0; x < ref.rows.size(); ++x) {
    for (size_t y = 0; y < ref.cols.size(); ++y) {
      const int64_t i = ref.rows[x], j = ref.cols[y];
      auto part = [&](int64_t q_begin, int64_t q_end) {
        double sum = 0;
        for (int64_t q = q_begin; q < q_end; ++q) sum += a[x * k + q] * b[y * k + q];
        return sum;
      };
      double sum = 0;
      if (block) {  // xccl_gemm.h's blockscale arithmetic, K block by K block
        for (int64_t kb = 0; kb < blocks; ++kb)
          sum += part(kb * 128, std::min(k, kb * 128 + 128)) * double(scales.a(kb, i)) *
                 scales.b(j / 128, kb);
      } else {
        sum = part(0, k);
        if (type == xcclFloat8e4m3) sum *= double(host.a_scale[i]) * host.b_scale[j];
      }
      ref.value.push_back(sum);
    }
  }
  return ref;
}

// Relative L2 distance of a bf16 C [m][n] from the reference on its sample.
double ReferenceL2(const Reference& ref, const std::vector<uint16_t>& c, int64_t n) {
  double diff = 0, norm = 0;
  for (size_t x = 0; x < ref.rows.size(); ++x) {
    for (size_t y = 0; y < ref.cols.size(); ++y) {
      const double want = ref.value[x * ref.cols.size() + y];
      const double got = xccl_test::Bf16Value(c[ref.rows[x] * n + ref.cols[y]]);
      diff += (got - want) * (got - want);
      norm += want * want;
    }
  }
  const double l2 = std::sqrt(diff / (norm > 0 ? norm : 1));
  return std::isfinite(l2) ? l2 : INFINITY;
}

}  // namespace

int main(int argc, char** argv) {
  Settings set;
  if (!ParseArgs(argc, argv, &set)) return 2;
  // By default (or by name) the plugin built in this tree; a name not built here is dlopen's
  // to find, by its library name.
  set.plugin = xccl_perf::BuiltPlugin(set.plugin.empty() ? "cublaslt" : set.plugin);
  if (set.plugin.find('/') == std::string::npos) set.plugin = "libxccl-gemm-" + set.plugin + ".so";
  const int64_t max_m = *std::max_element(set.global_m.begin(), set.global_m.end());
  int64_t max_n = 0, max_k = 0;
  for (const Shape& s : set.shapes) {
    max_n = std::max(max_n, s.n);
    max_k = std::max(max_k, s.k);
  }
  const bool fp8 = set.in_type == xcclFloat8e4m3;
  constexpr size_t kWorkspaceBytes = 32u << 20;

  Plugin plugin, side_plugin;  // side_plugin: c1x2's second stream
  Timer timer;
  gpuStream_t second = nullptr;  // c1x2's other stream
  gpuEvent_t fork = nullptr, join = nullptr;
  cublasLtHandle_t handle = nullptr;
  DeviceMemory a, b, a_scale, b_scale, c_plugin, c_direct, workspace;
  if (!Ok(gpuSetDevice(set.device), "set device") || !plugin.Load(set.plugin) ||
      !side_plugin.Load(set.plugin) || !Ok(cublasLtCreate(&handle), "cublasLtCreate") ||
      !Ok(gpuStreamCreateWithFlags(&timer.stream, gpuStreamNonBlocking), "stream") ||
      !Ok(gpuEventCreate(&timer.start), "event") || !Ok(gpuEventCreate(&timer.stop), "event") ||
      !Ok(gpuStreamCreateWithFlags(&second, gpuStreamNonBlocking), "stream") ||
      !Ok(gpuEventCreateWithFlags(&fork, gpuEventDisableTiming), "event") ||
      !Ok(gpuEventCreateWithFlags(&join, gpuEventDisableTiming), "event"))
    return 1;
  // One operand set of the largest sizes; smaller problems use its leading rows (A [m][k] and
  // B [n][k] keep lda = ldb = the largest K, so every shape reads valid codes).
  std::mt19937_64 rng(20261129);
  const xccl_test::GemmOperands host =
      set.block ? xccl_test::RandomBlockscaleOperands(max_m, max_n, max_k, rng)
                : xccl_test::RandomGemmOperands(max_m, max_n, max_k, set.in_type, rng);
  const BlockScaleSource block_scales{&host, max_m, host.k_blocks};
  // Block scales are laid out per problem (in the loop); ptpc's are one vector each.
  if (!a.Upload(host.a.data(), host.a.size()) || !b.Upload(host.b.data(), host.b.size()) ||
      (fp8 && !set.block &&
       (!a_scale.Upload(host.a_scale.data(), host.a_scale.size() * 4) ||
        !b_scale.Upload(host.b_scale.data(), host.b_scale.size() * 4))) ||
      !c_plugin.Allocate(static_cast<size_t>(max_m) * max_n * 2) ||
      !c_direct.Allocate(static_cast<size_t>(max_m) * max_n * 2) ||
      !workspace.Allocate(kWorkspaceBytes))
    return 1;

  printf(
      "# gemm_plugin_perf: %s -> bf16, plugin %s, device %d; median of %d rounds of %d calls "
      "after %d warm-ups, variants interleaved; bands over world %d\n",
      set.block ? "fp8 e4m3 (blockscale 1x128 / 128x128)"
      : fp8     ? "fp8 e4m3 (ptpc)"
                : "bf16",
      set.plugin.c_str(), set.device, set.rounds, set.iters, set.warmup, set.world);
  if (set.block)
    printf(
        "# blockscale: each banded call a sub-problem of its rows reading a packed [KB][rows] "
        "scale tile (a_scale_ld = rows), as ag_gemm calls the plugin; calls over several bands "
        "(g2x2, op) pack their bands' tiles by 2D copies first; direct: cuBLASLt's "
        "VEC128 / BLK128x128 scale modes\n");
  printf(
      "# C of full, direct, c1, g2x2 and op checked against an fp64 GEMM on 64 rows x 128 "
      "columns (over 1e-2 fails)\n");
  printf("# %7s %6s %6s %11s %11s %9s %8s %8s %8s %8s %8s %8s %9s %6s %10s\n", "M", "N", "K",
         "direct(TF/s)", "full(TF/s)", "full/dir", "c1(+%)", "c2(+%)", "c4(+%)", "c1x2(+%)",
         "g2x2(+%)", "op(+%)", "nosk/dir", "x2same", "relL2");
  int failures = 0;
  for (const Shape& shape : set.shapes) {
    for (const int64_t m : set.global_m) {
      xcclGemmProblem p = xccl_test::DenseProblem(m, shape.n, shape.k, set.in_type, xcclBfloat16);
      p.lda = p.ldb = max_k;
      p.a = a.as<void>();
      p.b = b.as<void>();
      p.a_scale = fp8 ? a_scale.as<float>() : nullptr;
      p.b_scale = fp8 ? b_scale.as<float>() : nullptr;
      p.c = c_plugin.as<void>();
      // What fused ag_gemm would run on rank 0 with its defaults (without the exchange).
      const int64_t per_rank = m / set.world;
      const std::vector<xccl::RowRange> op_bands =
          xccl::BandRows(per_rank, xccl::ChooseChunks(per_rank, shape.n, set.world, 0));
      const int op_chunks = static_cast<int>(op_bands.size());
      const std::vector<xccl::GemmStep> op_steps = xccl::FusedGemmSchedule(
          0, set.world, per_rank, op_bands,
          xccl::SourcesPerGemm(per_rank, shape.n, set.world, op_chunks, 0), 2);
      // The bandings whose band tiles a call may read (block scales): the whole problem, c = 1,
      // 2, 4 equal bands per source, and the op's bands of every source's slot.
      struct Banding {
        std::vector<xccl::RowRange> bands;
        DeviceMemory tiles;
      };
      enum { kWhole, kC1, kC2, kC4, kOp, kBandings };
      Banding bandings[kBandings];
      auto equal_bands = [&](int64_t count) {
        std::vector<xccl::RowRange> bands;
        for (int64_t i = 0; i < count; ++i) bands.push_back({m * i / count, m * (i + 1) / count});
        return bands;
      };
      bandings[kWhole].bands = equal_bands(1);
      bandings[kC1].bands = equal_bands(set.world);
      bandings[kC2].bands = equal_bands(2 * set.world);
      bandings[kC4].bands = equal_bands(4 * set.world);
      for (int source = 0; source < set.world; ++source)
        for (const xccl::RowRange& band : op_bands)
          bandings[kOp].bands.push_back(
              {source * per_rank + band.begin, source * per_rank + band.end});
      const int64_t blocks = (shape.k + 127) / 128;
      DeviceMemory plugin_b_scale, direct_b_scale, call_tiles;
      bool staged = true;
      if (set.block) {
        p.scale_mode = xcclGemmScaleBlock128;
        p.a_scale_ld = m;
        for (Banding& banding : bandings) {
          const std::vector<float> tiles = BandTiles(block_scales, banding.bands, blocks);
          staged = staged && banding.tiles.Upload(tiles.data(), tiles.size() * sizeof(float));
        }
        const std::vector<float> plugin_b = ColumnBlockScales(block_scales, shape.n, blocks, false),
                                 direct_b = ColumnBlockScales(block_scales, shape.n, blocks, true);
        staged = staged &&
                 plugin_b_scale.Upload(plugin_b.data(), plugin_b.size() * sizeof(float)) &&
                 direct_b_scale.Upload(direct_b.data(), direct_b.size() * sizeof(float)) &&
                 call_tiles.Allocate(static_cast<size_t>(m * blocks) * sizeof(float));
        if (!staged) return 1;
        p.a_scale = bandings[kWhole].tiles.as<float>();  // [KB][m]
        p.b_scale = plugin_b_scale.as<float>();
      }
      xcclGemmProblem direct_problem = p;
      direct_problem.c = c_direct.as<void>();
      if (set.block) direct_problem.b_scale = direct_b_scale.as<float>();
      // Rows [begin, end) of C by `context`, as the op calls the plugin (AgGemmOp::RunGemm): a band
      // of p, or, with block scales, a sub-problem of those rows reading their packed scale tile:
      // the band's own where the call is one band of `banding`, else one packed from the bands'
      // tiles by 2D copies on the call's stream (each call its own rows of call_tiles, so calls
      // on two streams never share one).
      auto run_call = [&](const Plugin& context, const Banding& banding, int64_t begin, int64_t end,
                          gpuStream_t stream) {
        if (!set.block) return context.Run(p, begin, end, stream);
        xcclGemmProblem call = p;
        call.m = end - begin;
        call.a = static_cast<const uint8_t*>(p.a) + begin * p.lda;  // e4m3: a byte an element
        call.c = static_cast<uint16_t*>(p.c) + begin * p.ldc;       // bf16
        call.a_scale_ld = call.m;
        call.a_scale = nullptr;
        const float* tiles = banding.tiles.as<float>();
        for (const xccl::RowRange& band : banding.bands)
          if (band.begin == begin && band.end == end) call.a_scale = tiles + begin * blocks;
        if (call.a_scale == nullptr) {
          float* tile = call_tiles.as<float>() + begin * blocks;
          for (const xccl::RowRange& band : banding.bands) {
            const int64_t lo = std::max(begin, band.begin), hi = std::min(end, band.end);
            if (lo >= hi) continue;
            const size_t band_pitch = static_cast<size_t>(band.end - band.begin) * sizeof(float);
            if (!Ok(gpuMemcpy2DAsync(tile + (lo - begin), call.m * sizeof(float),
                                     tiles + band.begin * blocks + (lo - band.begin), band_pitch,
                                     (hi - lo) * sizeof(float), blocks, gpuMemcpyDeviceToDevice,
                                     stream),
                    "call scale tile"))
              return false;
          }
          call.a_scale = tile;
        }
        return context.Run(call, 0, call.m, stream);
      };
      DirectGemm direct, split_k_free;
      if (!plugin.Prepare(p, set.device) || !side_plugin.Prepare(p, set.device) ||
          !direct.Prepare(handle, direct_problem, workspace.as<void>(), kWorkspaceBytes)) {
        printf("  %7ld %6ld %6ld  (not supported)\n", m, shape.n, shape.k);
        ++failures;
        continue;
      }
      // Without a split-K-free algorithm the nosk column says so (-) and the rest still runs.
      const bool have_nosk = split_k_free.Prepare(handle, direct_problem, workspace.as<void>(),
                                                  kWorkspaceBytes, /*split_k_free=*/true);
      // GEMM calls over rows [begin, end) on compute stream 0 (the timed stream) or 1 (the second),
      // the second forked from and joined into the timed stream.
      auto on_two_streams = [&](const std::vector<xccl::GemmStep>& steps, const Banding& banding) {
        if (!Ok(gpuEventRecord(fork, timer.stream), "record") ||
            !Ok(gpuStreamWaitEvent(second, fork, 0), "wait"))
          return false;
        for (const xccl::GemmStep& step : steps) {
          const Plugin& context = step.compute_stream == 0 ? plugin : side_plugin;
          if (!run_call(context, banding, step.row_begin, step.row_end,
                        step.compute_stream == 0 ? timer.stream : second))
            return false;
        }
        return Ok(gpuEventRecord(join, second), "record") &&
               Ok(gpuStreamWaitEvent(timer.stream, join, 0), "wait");
      };
      // `bands` equal bands of all m rows, taking the two streams in turn.
      auto alternating = [&](int64_t bands) {
        std::vector<xccl::GemmStep> steps;
        for (int64_t i = 0; i < bands; ++i)
          steps.push_back({m * i / bands, m * (i + 1) / bands, {}, static_cast<int>(i % 2)});
        return steps;
      };
      const std::vector<xccl::GemmStep> c1x2 = alternating(set.world),
                                        g2x2 = alternating(std::max(1, set.world / 2));
      // Variant 0: direct; 1: the plugin's full run; 2-4: c = 1, 2, 4 bands per source; 5: the
      // c = 1 bands on two streams in turn; 6: direct without split-K; 7: bands of two
      // sources' rows on two streams in turn; 8: the op's default schedule.
      constexpr int kVariants = 9;
      auto run_variant = [&](int v) {
        if (v == 0) return direct.Run(timer.stream);
        if (v == 1) return run_call(plugin, bandings[kWhole], 0, m, timer.stream);
        if (v == 5) return on_two_streams(c1x2, bandings[kC1]);
        if (v == 6) return !have_nosk || split_k_free.Run(timer.stream);
        // g2x2's calls each cover two sources' c = 1 bands, as paired sources do in the op.
        if (v == 7) return on_two_streams(g2x2, bandings[kC1]);
        if (v == 8) return on_two_streams(op_steps, bandings[kOp]);
        const Banding& banding = bandings[kC1 + (v - 2)];
        for (const xccl::RowRange& band : banding.bands)
          if (!run_call(plugin, banding, band.begin, band.end, timer.stream)) return false;
        return true;
      };
      std::vector<double> times[kVariants];
      bool ok = true;
      for (int v = 0; v < kVariants && ok; ++v)  // warm-ups, which also load every kernel
        for (int i = 0; i < set.warmup && ok; ++i) ok = run_variant(v);
      // Each round starts at another variant, so that none always runs in the same place: in a
      // fixed order the last variant read slower than the same calls in another place
      // (docs/perf-history.md, fourth round).
      for (int round = 0; round < set.rounds && ok; ++round) {
        for (int i = 0; i < kVariants && ok; ++i) {
          // Starts 0, 2, 4, ...: every start within 9 rounds, as 2 and kVariants are coprime.
          static_assert(kVariants % 2 == 1, "the stride of 2 must reach every start");
          const int v = (round * 2 + i) % kVariants;
          double us = 0;
          ok = timer.Time(
              set.iters, [&] { return run_variant(v); }, &us);
          times[v].push_back(us);
        }
      }
      // c1 and c1x2 on poisoned C, kept to compare (the same bands with the same algorithms:
      // equal bytes unless a band was lost); then the plugin's full run and cuBLASLt's, compared
      // once more on fresh outputs.
      const size_t c_bytes = static_cast<size_t>(m) * shape.n * 2;
      std::vector<uint16_t> got(c_bytes / 2), want(got.size());
      std::vector<uint16_t> one_stream(got.size()), two_streams(got.size()), op(got.size()),
          pairs(got.size());
      auto banded_c = [&](int v, std::vector<uint16_t>* out) {
        return Ok(gpuMemsetAsync(p.c, 0xFF, c_bytes, timer.stream), "poison") && run_variant(v) &&
               Ok(gpuMemcpyAsync(out->data(), p.c, c_bytes, gpuMemcpyDefault, timer.stream),
                  "download");
      };
      ok =
          ok && banded_c(2, &one_stream) && banded_c(5, &two_streams) && banded_c(8, &op) &&
          banded_c(7, &pairs) && Ok(gpuMemsetAsync(p.c, 0xFF, c_bytes, timer.stream), "poison") &&
          Ok(gpuMemsetAsync(direct_problem.c, 0xFF, c_bytes, timer.stream), "poison") &&
          run_variant(0) && run_variant(1) &&
          Ok(gpuMemcpyAsync(got.data(), p.c, c_bytes, gpuMemcpyDefault, timer.stream),
             "download") &&
          Ok(gpuMemcpyAsync(want.data(), direct_problem.c, c_bytes, gpuMemcpyDefault, timer.stream),
             "download") &&
          Ok(gpuStreamSynchronize(timer.stream), "sync");
      if (!ok) {
        printf("  %7ld %6ld %6ld  (failed)\n", m, shape.n, shape.k);
        ++failures;
        continue;
      }
      const double flops = 2.0 * m * shape.n * shape.k;
      const double direct_us = Median(times[0]), full_us = Median(times[1]);
      const double rel = RelativeL2(got, want);
      char nosk[16] = "-";
      if (have_nosk) snprintf(nosk, sizeof(nosk), "%.3f", direct_us / Median(times[6]));
      const bool x2_same = two_streams == one_stream && op == one_stream;
      auto cost = [&](int v) { return 100.0 * (Median(times[v]) / full_us - 1); };
      printf(
          "  %7ld %6ld %6ld %11.1f %11.1f %9.3f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %9s %6s "
          "%10.2e\n",
          m, shape.n, shape.k, flops / direct_us / 1e6, flops / full_us / 1e6, direct_us / full_us,
          cost(2), cost(3), cost(4), cost(5), cost(7), cost(8), nosk, x2_same ? "yes" : "NO", rel);
      if (!x2_same) {
        fprintf(stderr, "gemm_plugin_perf: M %ld N %ld: c1x2's or op's C differs from c1's\n", m,
                shape.n);
        ++failures;
      }
      if (!(rel <= 1e-2)) {
        fprintf(stderr, "gemm_plugin_perf: M %ld N %ld: plugin and cuBLASLt differ (rel L2 %g)\n",
                m, shape.n, rel);
        ++failures;
      }
      const Reference ref =
          MakeReference(host, max_k, set.in_type, set.block, block_scales, m, shape.n, shape.k);
      const struct {
        const char* name;
        const std::vector<uint16_t>* c;
      } checked[] = {
          {"full", &got}, {"direct", &want}, {"c1", &one_stream}, {"g2x2", &pairs}, {"op", &op}};
      for (const auto& each : checked) {
        const double l2 = ReferenceL2(ref, *each.c, shape.n);
        if (l2 <= 1e-2) continue;
        fprintf(stderr,
                "gemm_plugin_perf: M %ld N %ld K %ld: %s's C is off the fp64 GEMM "
                "(rel L2 %g)\n",
                m, shape.n, shape.k, each.name, l2);
        ++failures;
      }
    }
  }
  return failures == 0 ? 0 : 1;
}
