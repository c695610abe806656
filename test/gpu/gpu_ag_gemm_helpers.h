// Pieces shared by the GPU ag_gemm suites (gpu_ag_gemm_test.cc, gpu_ag_gemm_sequence_test.cc):
// the plugins they run with, op creation in both modes (fused refused where ranks share a GPU),
// fresh operands that any rank can regenerate for any rank, device memory for a sequence of
// calls made without host synchronisation, and the check of C against a double-precision
// reference of the decoded inputs. Only with the reference plugin built (GPU platforms).
#pragma once

#if defined(XCCL_GEMM_REFERENCE_PATH)

#include <dlfcn.h>

#include <atomic>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "common/float_formats.h"
#include "gpu/gpu_delay.h"
#include "gpu/gpu_harness.h"
#include "xccl_gemm.h"

namespace xccl_test {

// ---- plugins ----

// The plugins the tests run with: the reference kernel with its tile-wait entry (fused calls
// hand each source's rows to one launch whose tiles wait), the same plugin with that entry taken
// out (fused calls wait per band on the stream), and cuBLASLt where it is built.
struct PluginChoice {
  const char* path;
  bool without_tile_wait;
};
inline constexpr PluginChoice kPlugins[] = {
    {XCCL_GEMM_REFERENCE_PATH, false},
    {XCCL_GEMM_REFERENCE_PATH, true},
#if defined(XCCL_GEMM_CUBLASLT_PATH)
    {XCCL_GEMM_CUBLASLT_PATH, false},
#endif
};

inline std::string PluginName(const PluginChoice& plugin) {
  return std::string(plugin.path) + (plugin.without_tile_wait ? " without tile-wait" : "");
}

// The reference plugin computes every band with its full run's arithmetic, so fused and split
// give the same bytes at every shape; cuBLASLt only while it accepts the shape's algorithm for
// a band's row count (docs/ARCHITECTURE.md), which a test cannot know for every shape.
inline bool BytesEqualAcrossModes(const PluginChoice& plugin) {
  return strcmp(plugin.path, XCCL_GEMM_REFERENCE_PATH) == 0;
}

// The plugin at `path`'s struct (the library stays loaded for the process), else NULL.
inline const xcclGemmPlugin_v1_t* LoadPluginStruct(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return nullptr;
  return static_cast<const xcclGemmPlugin_v1_t*>(dlsym(handle, XCCL_GEMM_PLUGIN_SYMBOL_V1));
}

// The plugin's struct with run_tile_wait cleared, for xcclAgGemmCreate's struct argument.
inline const xcclGemmPlugin_v1_t* WithoutTileWait(const char* path) {
  const xcclGemmPlugin_v1_t* api = LoadPluginStruct(path);
  if (api == nullptr) return nullptr;
  static xcclGemmPlugin_v1_t copy;
  copy = *api;
  copy.run_tile_wait = nullptr;
  return &copy;
}

// Tile-wait launches made, in this process, through the struct WithCountedTileWait gives: a
// test that expects the fused path to take the plugin's tile-wait entry checks that it grew.
inline std::atomic<int64_t>& TileWaitLaunches() {
  static std::atomic<int64_t> launches{0};
  return launches;
}

// The plugin's struct with run_tile_wait counted (TileWaitLaunches), else NULL (no such entry).
inline const xcclGemmPlugin_v1_t* WithCountedTileWait(const char* path) {
  using Entry = decltype(xcclGemmPlugin_v1_t::run_tile_wait);
  static Entry original = nullptr;
  static xcclGemmPlugin_v1_t copy;
  const xcclGemmPlugin_v1_t* api = LoadPluginStruct(path);
  if (api == nullptr || api->run_tile_wait == nullptr) return nullptr;
  original = api->run_tile_wait;
  copy = *api;
  copy.run_tile_wait = [](void* ctx, const xcclGemmProblem* problem, const xcclGemmTileWait* wait,
                          void* stream) {
    TileWaitLaunches().fetch_add(1);
    return original(ctx, problem, wait, stream);
  };
  return &copy;
}

// The reference plugin with its tile-wait entry: its struct with that entry counted.
inline bool CountsTileWaits(const PluginChoice& plugin) {
  return !plugin.without_tile_wait && strcmp(plugin.path, XCCL_GEMM_REFERENCE_PATH) == 0;
}

inline xcclResult_t CreateOp(xcclComm_t comm, const PluginChoice& plugin, xcclDataType_t in,
                             xcclAgGemmMode_t mode, int64_t n, int64_t k, int64_t m_max,
                             xcclAgGemm_t* op, int chunks = 0) {
  const xcclGemmPlugin_v1_t* api = plugin.without_tile_wait  ? WithoutTileWait(plugin.path)
                                   : CountsTileWaits(plugin) ? WithCountedTileWait(plugin.path)
                                                             : nullptr;
  if ((plugin.without_tile_wait || CountsTileWaits(plugin)) && api == nullptr)
    return xcclInternalError;
  return xcclAgGemmCreate(comm, n, k, m_max, in, xcclBfloat16, mode, chunks,
                          api != nullptr ? nullptr : plugin.path, api, op);
}

inline void ForEachPlugin(const std::function<void(const PluginChoice&)>& run) {
  for (const PluginChoice& plugin : kPlugins) {
    SCOPED_TRACE(PluginName(plugin));
    run(plugin);
  }
}

// ---- ops in both modes ----

constexpr int kSplit = 0, kFused = 1;
inline const char* AgGemmModeName(int mode) { return mode == kFused ? "fused" : "split"; }

// ops[kSplit] always; ops[kFused] where the communicator has a DMA queue per peer, and there
// the create must succeed; elsewhere (ranks sharing a GPU) it must be refused with
// xcclInvalidUsage and leave ops[kFused] NULL. Collective (split first, then fused, on every
// rank). False when the split op could not be made.
inline bool CreateBothModes(RankContext& ctx, const PluginChoice& plugin, xcclDataType_t in,
                            int64_t n, int64_t k, int64_t m_max, int chunks, xcclAgGemm_t ops[2]) {
  ops[kSplit] = ops[kFused] = nullptr;
  int queues = 0;
  if (!XCCL_OK(ctx, xcclCommQueueCount(ctx.comm, &queues))) return false;
  const bool fused_ok = queues >= ctx.nranks - 1;
  if (!XCCL_OK(ctx,
               CreateOp(ctx.comm, plugin, in, xcclAgGemmSplit, n, k, m_max, &ops[kSplit], chunks)))
    return false;
  const xcclResult_t r =
      CreateOp(ctx.comm, plugin, in, xcclAgGemmFused, n, k, m_max, &ops[kFused], chunks);
  RANK_EXPECT(ctx, fused_ok ? r == xcclSuccess : r == xcclInvalidUsage,
              "fused create with " << queues << " queues for " << ctx.nranks - 1 << " peers: "
                                   << xcclGetErrorString(r) << ": " << xcclGetLastError(ctx.comm));
  if (r != xcclSuccess) ops[kFused] = nullptr;
  return true;
}

// Destroy after the last call: it frees device memory, which waits for the whole device, so it
// must not come while a peer sharing the GPU has a call in flight that waits for this rank.
inline void DestroyOps(RankContext& ctx, xcclAgGemm_t* ops, int count) {
  for (int i = 0; i < count; ++i) {
    if (ops[i] == nullptr) continue;
    RANK_EXPECT(ctx, xcclAgGemmDestroy(ops[i]) == xcclSuccess,
                "destroy: " << xcclGetLastError(nullptr));
    ops[i] = nullptr;
  }
}

// ---- operands and the reference ----

// Rank `rank`'s operands of call `call`: any rank can regenerate any rank's. `block_scales`:
// fp8 with DeepSeek-V3 block scales instead of ptpc.
inline GemmOperands MakeAgGemmOperands(uint64_t seed, int rank, uint64_t call, int64_t m, int64_t n,
                                       int64_t k, xcclDataType_t t, bool block_scales = false) {
  std::mt19937_64 rng(seed ^ (0x9E3779B97F4A7C15ull * (rank + 1)) ^ (call << 20));
  return block_scales ? RandomBlockscaleOperands(m, n, k, rng)
                      : RandomGemmOperands(m, n, k, t, rng);
}

// Relative L2 of C (host copy of [world][PaddedRows(m)][n] bf16) of call `call` against the
// double reference of every source's regenerated operands; counts padding values not zero.
inline double AgGemmError(RankContext& ctx, const unsigned char* c, xcclDataType_t in, int64_t m,
                          int64_t n, int64_t k, uint64_t call, int64_t* bad_padding,
                          bool block_scales = false) {
  const GemmOperands mine = MakeAgGemmOperands(ctx.seed, ctx.rank, call, m, n, k, in, block_scales);
  return GatheredGemmError(
      c, xcclBfloat16, ctx.nranks, m, PaddedRows(m), n, k, in, mine,
      [&](int s) { return MakeAgGemmOperands(ctx.seed, s, call, m, n, k, in, block_scales); },
      bad_padding);
}

// Rounding C to bf16 alone stays under 2e-3 against the double reference (docs/perf-history.md,
// "The host suite's error floor"), for fp8 and bf16 inputs alike, since the reference decodes
// the same inputs: 4e-3 is that floor with a margin (the "about 2e-3"). A missing, stale
// or misplaced band (at least 16 of the world * padded rows) is far above it.
constexpr double kAgGemmTolerance = 4e-3;

// Records a failure unless C of call `call` matches the reference and its padding rows are 0.
inline bool ExpectGemmC(RankContext& ctx, const unsigned char* c, xcclDataType_t in, int64_t m,
                        int64_t n, int64_t k, uint64_t call, const std::string& what,
                        bool block_scales = false) {
  int64_t bad_padding = 0;
  const double rel = AgGemmError(ctx, c, in, m, n, k, call, &bad_padding, block_scales);
  const bool ok = rel <= kAgGemmTolerance && std::isfinite(rel) && bad_padding == 0;
  RANK_EXPECT(ctx, ok,
              what << ": relative L2 " << rel << " (at most " << kAgGemmTolerance << "), "
                   << bad_padding << " padding values not 0");
  return ok;
}

// Copies host bytes into a new device buffer through pinned memory (never pageable: ranks may
// share the GPU), synchronised.
inline bool ToDevice(RankContext& ctx, const Stream& stream, const void* data, size_t bytes,
                     DeviceBuffer* out) {
  if (!out->Allocate(ctx, bytes)) return false;
  HostBytes pinned(bytes);
  memcpy(pinned.data(), data, bytes);
  return GPU_OK(ctx, gpu::MemcpyAsync(out->get(), pinned.data(), bytes, stream.get())) &&
         GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
}

// ---- holding a rank ----

// Long against a call of these small shapes (tens of microseconds), short against the deadline.
constexpr uint64_t kHoldNs = 2000000;

// Holds this rank's stream on the device for kHoldNs before its next call (gpu_delay.h).
inline bool HoldOnDevice(RankContext& ctx, const Stream& stream) {
  return GPU_OK(ctx, gpu::LaunchDelay(stream.get(), kHoldNs));
}

// Runs the delay kernel once, before any collective call: the binary loads its modules eagerly
// (gpu_harness.cc), but should CUDA_MODULE_LOADING say otherwise, a first launch made while a
// peer's call waits for this rank could wait for the whole device (docs/ARCHITECTURE.md).
inline bool WarmUpDelay(RankContext& ctx, const Stream& stream) {
  return GPU_OK(ctx, gpu::LaunchDelay(stream.get(), 0)) &&
         GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
}

// ---- a sequence of calls ----

// Device memory for a sequence of calls: every call's operands in buffers of their own and every
// call's C in a region of its own followed by guard bytes, with pinned mirrors. All of it is
// allocated before the first call (allocations can wait for the whole device: see
// gpu_harness.h), refilled with fresh operands and poison before each sequence, and checked
// after the sequence's one synchronisation, so the calls themselves run back to back.
class AgGemmCalls {
 public:
  struct Args {
    const void* a;
    const float* a_scale;  // fp8 only
    const void* b;
    const float* b_scale;  // fp8 only
    void* c;
  };

  // Room for calls of ms[i] rows each, shape n x k, inputs `in`, output bf16; fp8 with block
  // scales where `block_scales`.
  bool Allocate(RankContext& ctx, int64_t n, int64_t k, xcclDataType_t in,
                const std::vector<int64_t>& ms, bool block_scales = false) {
    n_ = n;
    k_ = k;
    in_ = in;
    block_ = block_scales;
    const int64_t blocks = block_scales ? (k + 127) / 128 : 1;
    const int64_t b_scales = block_scales ? (n + 127) / 128 * blocks : n;
    ms_ = ms;
    layout_.assign(ms.size(), Layout());
    size_t operand_bytes = 0, c_bytes = 0;
    auto take = [](size_t* total, size_t bytes) {
      const size_t at = *total;
      *total += (bytes + 255) / 256 * 256;  // every array 256-byte aligned
      return at;
    };
    for (size_t i = 0; i < ms.size(); ++i) {
      Layout& l = layout_[i];
      l.a = take(&operand_bytes, ms[i] * k * TypeSize(in));
      l.b = take(&operand_bytes, n * k * TypeSize(in));
      l.a_scale = take(&operand_bytes, ms[i] * blocks * sizeof(float));
      l.b_scale = take(&operand_bytes, b_scales * sizeof(float));
      l.c_bytes = static_cast<size_t>(ctx.nranks * PaddedRows(ms[i]) * n) * 2;
      l.c = take(&c_bytes, l.c_bytes + kGuardBytes);
      l.guard_bytes = (l.c_bytes + kGuardBytes + 255) / 256 * 256 - l.c_bytes;
    }
    if (!operands_.Allocate(ctx, operand_bytes) || !c_.Allocate(ctx, c_bytes)) return false;
    operands_host_.resize(operand_bytes);
    c_host_.resize(c_bytes);
    ids_.assign(ms.size(), 0);
    labels_.assign(ms.size(), "");
    return true;
  }

  int count() const { return static_cast<int>(ms_.size()); }
  int64_t m(int i) const { return ms_[i]; }
  uint64_t id(int i) const { return ids_[i]; }
  size_t a_bytes(int i) const { return static_cast<size_t>(ms_[i] * k_) * TypeSize(in_); }
  size_t c_bytes(int i) const { return layout_[i].c_bytes; }

  // Call i's operands become those of call id first_id + i (fresh for every id), generated for
  // this rank, copied in; every C and guard is poisoned. Synchronises the stream: it belongs
  // before a sequence, not inside it.
  bool Refill(RankContext& ctx, const Stream& stream, uint64_t first_id) {
    for (int i = 0; i < count(); ++i) {
      const Layout& l = layout_[i];
      ids_[i] = first_id + i;
      labels_[i].clear();
      const GemmOperands o =
          MakeAgGemmOperands(ctx.seed, ctx.rank, ids_[i], ms_[i], n_, k_, in_, block_);
      memcpy(operands_host_.data() + l.a, o.a.data(), o.a.size());
      memcpy(operands_host_.data() + l.b, o.b.data(), o.b.size());
      if (!o.a_scale.empty())
        memcpy(operands_host_.data() + l.a_scale, o.a_scale.data(), o.a_scale.size() * 4);
      if (!o.b_scale.empty())
        memcpy(operands_host_.data() + l.b_scale, o.b_scale.data(), o.b_scale.size() * 4);
    }
    return GPU_OK(ctx, gpu::MemcpyAsync(operands_.get(), operands_host_.data(),
                                        operands_host_.size(), stream.get())) &&
           GPU_OK(ctx, gpu::MemsetAsync(c_.get(), kPoisonByte, c_host_.size(), stream.get())) &&
           GPU_OK(ctx, gpu::StreamSynchronize(stream.get()));
  }

  // Call i's device operands and its own C region (scales NULL unless fp8).
  Args args(int i) const {
    const Layout& l = layout_[i];
    unsigned char* base = operands_.get();
    const bool fp8 = in_ == xcclFloat8e4m3;
    return {base + l.a, fp8 ? reinterpret_cast<const float*>(base + l.a_scale) : nullptr,
            base + l.b, fp8 ? reinterpret_cast<const float*>(base + l.b_scale) : nullptr,
            c_.get() + l.c};
  }

  // Enqueues call i on `op` with `args` (default: args(i)); C must land in args.c, the call's
  // own region, which Check then compares, labelled `what`. No synchronisation.
  bool Run(RankContext& ctx, xcclAgGemm_t op, int i, const Stream& stream, const std::string& what,
           const Args* with = nullptr) {
    const Args a = with != nullptr ? *with : args(i);
    void* result = nullptr;
    const xcclResult_t r =
        xcclAgGemmRun(op, a.a, a.a_scale, a.b, a.b_scale, ms_[i], a.c, &result, stream.xccl());
    RANK_EXPECT(ctx, r == xcclSuccess,
                what << ": " << xcclGetErrorString(r) << ": " << xcclGetLastError(ctx.comm));
    if (r != xcclSuccess) return false;
    RANK_EXPECT(ctx, result == a.c, what << ": result " << result << " is not out " << a.c);
    labels_[i] = what;
    return true;
  }

  // After the sequence: copies every C back (synchronising the stream) and compares each call
  // that ran with the reference of its operands, and its guard bytes with the poison (no store
  // past its end).
  void Check(RankContext& ctx, const Stream& stream) {
    if (!GPU_OK(ctx, gpu::MemcpyAsync(c_host_.data(), c_.get(), c_host_.size(), stream.get())) ||
        !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
      return;
    for (int i = 0; i < count() && ctx.failures.size() < 8; ++i) {
      if (labels_[i].empty()) continue;
      const Layout& l = layout_[i];
      ExpectGemmC(ctx, c_host_.data() + l.c, in_, ms_[i], n_, k_, ids_[i], labels_[i], block_);
      const std::string guard = CheckPoisoned(c_host_.data() + l.c + l.c_bytes, l.guard_bytes);
      RANK_EXPECT(ctx, guard.empty(), labels_[i] << ": past its output: " << guard);
    }
  }

  // Call i's C as the last Check copied it.
  const unsigned char* host_c(int i) const { return c_host_.data() + layout_[i].c; }

 private:
  static constexpr size_t kGuardBytes = 64;
  struct Layout {
    size_t a = 0, b = 0, a_scale = 0, b_scale = 0;  // offsets into operands_
    size_t c = 0, c_bytes = 0, guard_bytes = 0;     // offset into c_, C's size, guard after it
  };
  int64_t n_ = 0, k_ = 0;
  xcclDataType_t in_ = xcclBfloat16;
  bool block_ = false;
  std::vector<int64_t> ms_;
  std::vector<Layout> layout_;
  std::vector<uint64_t> ids_;
  std::vector<std::string> labels_;  // "" for a call that did not run since the last Refill
  DeviceBuffer operands_, c_;
  HostBytes operands_host_, c_host_;
};

}  // namespace xccl_test

#endif  // XCCL_GEMM_REFERENCE_PATH
