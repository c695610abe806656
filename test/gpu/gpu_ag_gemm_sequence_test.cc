// ag_gemm on a GPU platform, the host suite's remaining cases (test/mp/ag_gemm_test.cc) on every
// world of the gpu suite: a partial last column tile; back-to-back calls and alternating M with
// a rank held on the device before each call and no host synchronisation between calls; local
// rows (zero copy) with the op's own and a caller's output; calls across the epoch wrap; the self
// test passing, catching a corrupted receive slot on the rank that holds it without any rank
// hanging, and passing on a warm op with one rank 0.5 s late. Split mode everywhere, fused where
// the communicator has a DMA queue per peer (create is refused with xcclInvalidUsage elsewhere),
// with the reference plugin (with and without tile-wait) and cuBLASLt where built; and the fused
// cases once more on one GPU with two ranks given a queue each (XCCL_GPU_QUEUES=1), so that a
// machine of one GPU runs the fused path too. Every call gets fresh operands, every output is
// poisoned first and compared in full against a double-precision reference after the sequence.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "api/comm_handle.h"
#include "fused/ag_gemm/ag_gemm_testing.h"
#include "gpu/gpu_ag_gemm_helpers.h"
#include "gpu/gpu_harness.h"
#include "mp/test_params.h"

namespace xccl_test {
namespace {

#if defined(XCCL_GEMM_REFERENCE_PATH)

// One rank's part of a case, for one plugin.
using Body = std::function<void(const PluginChoice&, RankContext&)>;

class GpuAgGemmSequenceTest : public GpuWorldTest {
 protected:
  // One run per plugin, each on a fresh communicator (so a preset epoch base applies to each).
  void RunEveryPlugin(Body body, const RunOptions& options = RunOptions()) {
    ForEachPlugin([&](const PluginChoice& plugin) {
      Run([plugin, body](RankContext& ctx) { body(plugin, ctx); }, options);
    });
  }
};

// "split bf16", "fused fp8": what failure messages start with.
std::string ModeType(int mode, xcclDataType_t in) {
  return std::string(AgGemmModeName(mode)) + (in == xcclFloat8e4m3 ? " fp8" : " bf16");
}

std::string Label(int mode, xcclDataType_t in, int call, int64_t m) {
  return ModeType(mode, in) + " call " + std::to_string(call) + " (m " + std::to_string(m) + ")";
}

// ---- the bodies (one rank's part), shared by the per-world tests and the forced-queue test ----

// The setup of the cases that run bf16 and fp8 in both modes: a stream, one AgGemmCalls per type
// (a call per entry of `ms`) and the ops [type][mode], destroyed when the case's body ends
// (after its last synchronisation, see DestroyOps).
class EveryTypeAndMode {
 public:
  static constexpr xcclDataType_t kTypes[2] = {xcclBfloat16, xcclFloat8e4m3};

  explicit EveryTypeAndMode(RankContext& ctx) : ctx_(ctx) {}
  ~EveryTypeAndMode() {
    for (auto& pair : ops) DestroyOps(ctx_, pair, 2);
  }
  EveryTypeAndMode(const EveryTypeAndMode&) = delete;
  EveryTypeAndMode& operator=(const EveryTypeAndMode&) = delete;

  // False (the failure recorded) when the stream, the buffers or a split op could not be made.
  // `hold_later`: the case holds ranks on the device, so the delay kernel is warmed up first.
  bool Set(const PluginChoice& plugin, int64_t n, int64_t k, int64_t m_max,
           const std::vector<int64_t>& ms, bool hold_later) {
    if (!stream.Create(ctx_) || (hold_later && !WarmUpDelay(ctx_, stream))) return false;
    for (int t = 0; t < 2; ++t)
      if (!calls[t].Allocate(ctx_, n, k, kTypes[t], ms)) return false;
    for (int t = 0; t < 2; ++t)
      if (!CreateBothModes(ctx_, plugin, kTypes[t], n, k, m_max, 0, ops[t])) return false;
    return true;
  }

  // body(type index, mode, op, "mode type" label) for every op made, split then fused, bf16
  // then fp8, until a failure is recorded or body returns false.
  void ForEachOp(
      const std::function<bool(int t, int mode, xcclAgGemm_t op, const std::string& what)>& body) {
    for (int t = 0; t < 2 && ctx_.failures.empty(); ++t) {
      for (int mode = kSplit; mode <= kFused && ctx_.failures.empty(); ++mode) {
        if (ops[t][mode] == nullptr) continue;
        if (!body(t, mode, ops[t][mode], ModeType(mode, kTypes[t]))) return;
      }
    }
  }

  Stream stream;
  AgGemmCalls calls[2];
  xcclAgGemm_t ops[2][2] = {{nullptr, nullptr}, {nullptr, nullptr}};

 private:
  RankContext& ctx_;
};

// N = 1168: the last 256-column tile of a GEMM is partial (the reference kernel's 16-column
// tiles divide it; a tiled plugin's do not); C stays contiguous [rows][1168]. Both modes on the
// same operands, so that, with the reference plugin, their bytes must agree too.
void PartialLastColumnTileBody(const PluginChoice& plugin, RankContext& ctx) {
  const int64_t n = 1168, k = 64, m = 200, m_max = 256;
  Stream stream;
  AgGemmCalls calls;
  if (!stream.Create(ctx) || !calls.Allocate(ctx, n, k, xcclBfloat16, {m})) return;
  xcclAgGemm_t ops[2];
  if (!CreateBothModes(ctx, plugin, xcclBfloat16, n, k, m_max, 0, ops)) return;
  std::vector<unsigned char> bytes[2];
  for (int mode = kSplit; mode <= kFused && ctx.failures.empty(); ++mode) {
    if (ops[mode] == nullptr) continue;
    if (!calls.Refill(ctx, stream, 700)) break;
    if (!calls.Run(ctx, ops[mode], 0, stream, Label(mode, xcclBfloat16, 0, m))) break;
    calls.Check(ctx, stream);
    ExpectNoAsyncError(ctx, "after the call");
    bytes[mode].assign(calls.host_c(0), calls.host_c(0) + calls.c_bytes(0));
  }
  if (!bytes[kFused].empty() && BytesEqualAcrossModes(plugin))
    RANK_EXPECT(ctx, bytes[kSplit] == bytes[kFused], "N 1168: fused and split differ");
  DestroyOps(ctx, ops, 2);
}

// Destroy is not collective: even ranks destroy op A and at once run op B, whose call waits on
// the device for the odd ranks, which destroy A only 300 ms later. Where ranks share the GPU as
// threads, freeing A's memory then would wait for the whole device, B's call included, which
// waits for this very rank: B must still complete and match the reference (the op is kept until
// the next create; docs/ARCHITECTURE.md, "Device-synchronising calls").
void DestroyWhileAPeerRunsBody(const PluginChoice& plugin, RankContext& ctx) {
  const int64_t n = 64, k = 64, m = 256;
  Stream stream;
  AgGemmCalls calls;
  if (!stream.Create(ctx) || !calls.Allocate(ctx, n, k, xcclBfloat16, {m, m})) return;
  xcclAgGemm_t ops[2] = {nullptr, nullptr};
  for (xcclAgGemm_t& op : ops)
    if (!XCCL_OK(ctx, CreateOp(ctx.comm, plugin, xcclBfloat16, xcclAgGemmSplit, n, k, m, &op)))
      return DestroyOps(ctx, ops, 2);
  if (calls.Refill(ctx, stream, 900) && calls.Run(ctx, ops[0], 0, stream, "op A") &&
      GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) {
    if (ctx.rank % 2 == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    DestroyOps(ctx, ops, 1);
    if (calls.Run(ctx, ops[1], 1, stream, "op B, run while a peer destroys op A"))
      calls.Check(ctx, stream);
    ExpectNoAsyncError(ctx, "after op B");
  }
  DestroyOps(ctx, ops, 2);
}

// Eight calls of m = 1024 enqueued back to back on each rank's stream, rank i % world held on
// the device before call i (its stream busy for 2 ms, so its call starts late on the GPU while
// its peers' run ahead); chunks pinned to 4, so that fused has several bands per source in
// flight. Only the library orders the calls: no host synchronisation until the last one is
// enqueued. Every call has its own operands and its own C, all checked after the one sync.
void BackToBackBody(const PluginChoice& plugin, RankContext& ctx) {
  constexpr int kCalls = 8;
  const int64_t n = 64, k = 64, m = 1024;
  Stream stream;
  AgGemmCalls calls;
  if (!stream.Create(ctx) || !WarmUpDelay(ctx, stream) ||
      !calls.Allocate(ctx, n, k, xcclBfloat16, std::vector<int64_t>(kCalls, m)))
    return;
  xcclAgGemm_t ops[2];
  if (!CreateBothModes(ctx, plugin, xcclBfloat16, n, k, /*m_max=*/m, /*chunks=*/4, ops)) return;
  for (int mode = kSplit; mode <= kFused && ctx.failures.empty(); ++mode) {
    if (ops[mode] == nullptr) continue;
    int chunks = 0;
    RANK_EXPECT(ctx, xcclAgGemmChunks(ops[mode], m, &chunks) == xcclSuccess && chunks == 4,
                AgGemmModeName(mode) << ": chunks " << chunks << " where 4 were pinned");
    if (!calls.Refill(ctx, stream, 1000 + 100 * mode)) break;
    for (int i = 0; i < kCalls; ++i) {
      if (i % ctx.nranks == ctx.rank && !HoldOnDevice(ctx, stream)) break;
      if (!calls.Run(ctx, ops[mode], i, stream, Label(mode, xcclBfloat16, i, m))) {
        ctx.Fail("enqueue of call " + std::to_string(i) + " failed; later calls not made");
        break;  // the peers' streams now wait for a call that never comes: the sync says so
      }
    }
    if (!GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) break;
    ExpectNoAsyncError(ctx, "after the back-to-back calls");
    calls.Check(ctx, stream);
  }
  DestroyOps(ctx, ops, 2);
}

// M alternating as a serving loop would (512, 1024, 768, 1024, 256, 1024) on one op of
// m_max 1024: the window's receive slots move with M (they are laid out for each call's padded M),
// so a rank a call ahead writes where a slower rank's previous call had other rows. A held rank
// before each call, no host synchronisation inside the sequence; bf16 and fp8 (whose scales sit
// after the receive slots and move with M too).
void AlternatingMBody(const PluginChoice& plugin, RankContext& ctx) {
  const std::vector<int64_t> ms = {512, 1024, 768, 1024, 256, 1024};
  const int64_t n = 64, k = 64, m_max = 1024;
  EveryTypeAndMode setup(ctx);
  if (!setup.Set(plugin, n, k, m_max, ms, /*hold_later=*/true)) return;
  const xcclDataType_t* types = EveryTypeAndMode::kTypes;
  Stream& stream = setup.stream;
  AgGemmCalls* calls = setup.calls;
  auto& ops = setup.ops;
  for (int t = 0; t < 2 && ctx.failures.empty(); ++t) {
    for (int mode = kSplit; mode <= kFused && ctx.failures.empty(); ++mode) {
      if (ops[t][mode] == nullptr) continue;
      if (!calls[t].Refill(ctx, stream, 2000 + 100 * (2 * t + mode))) break;
      for (int i = 0; i < calls[t].count(); ++i) {
        if (i % ctx.nranks == ctx.rank && !HoldOnDevice(ctx, stream)) break;
        if (!calls[t].Run(ctx, ops[t][mode], i, stream, Label(mode, types[t], i, ms[i]))) {
          ctx.Fail("enqueue of call " + std::to_string(i) + " failed; later calls not made");
          break;
        }
      }
      if (!GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) break;
      ExpectNoAsyncError(ctx, "after the alternating-M calls");
      calls[t].Check(ctx, stream);
    }
  }
}

// A written straight into the op's local rows (and, for fp8, its scales), and those pointers
// passed as A: the run skips its copy. Call 0 leaves C in the op's own buffer (out NULL), call 1
// puts it into the caller's buffer and must leave the op's own buffer alone. m = 200, so the
// padding rows after the caller's rows are zeroed by the run. bf16 (no scales: the scales
// pointer is NULL) and fp8.
void LocalRowsBody(const PluginChoice& plugin, RankContext& ctx) {
  const int64_t n = 64, k = 64, m = 200, m_max = 512;
  EveryTypeAndMode setup(ctx);
  if (!setup.Set(plugin, n, k, m_max, {m, m}, /*hold_later=*/false)) return;
  const xcclDataType_t* types = EveryTypeAndMode::kTypes;
  Stream& stream = setup.stream;
  AgGemmCalls* calls = setup.calls;
  auto& ops = setup.ops;
  HostBytes own_host;
  own_host.resize(calls[0].c_bytes(0));
  for (int t = 0; t < 2 && ctx.failures.empty(); ++t) {
    const xcclDataType_t in = types[t];
    const bool fp8 = in == xcclFloat8e4m3;
    AgGemmCalls& c = calls[t];
    for (int mode = kSplit; mode <= kFused && ctx.failures.empty(); ++mode) {
      xcclAgGemm_t op = ops[t][mode];
      if (op == nullptr) continue;
      const std::string what = ModeType(mode, in);
      void* rows = nullptr;
      float* scales = nullptr;
      int64_t padded = 0;
      if (!XCCL_OK(ctx, xcclAgGemmLocalRows(op, m, &rows, &scales)) ||
          !XCCL_OK(ctx, xcclAgGemmPaddedM(op, m, &padded)))
        break;
      RANK_EXPECT(ctx, rows != nullptr && (scales != nullptr) == fp8,
                  what << ": local rows " << rows << ", scales " << scales);
      RANK_EXPECT(ctx, padded == PaddedRows(m), what << ": padded m " << padded);
      // The op's own output: a call with m = 0 (on every rank) only says where C goes.
      AgGemmCalls::Args zero = c.args(0);
      void* own = nullptr;
      if (!XCCL_OK(ctx, xcclAgGemmRun(op, nullptr, nullptr, zero.b, zero.b_scale, 0, nullptr, &own,
                                      stream.xccl())))
        break;
      RANK_EXPECT(ctx, own != nullptr, what << ": no own output");
      if (!ctx.failures.empty() || !c.Refill(ctx, stream, 3000 + 100 * (2 * t + mode))) break;
      for (int i = 0; i < 2 && ctx.failures.empty(); ++i) {
        // A (and scales) into the local rows on the stream, after the previous call (whose
        // queues read the receive slot) and before this one.
        AgGemmCalls::Args args = c.args(i);
        if (!GPU_OK(ctx, gpu::MemcpyAsync(rows, args.a, c.a_bytes(i), stream.get())) ||
            (fp8 && !GPU_OK(ctx, gpu::MemcpyAsync(scales, args.a_scale, m * sizeof(float),
                                                  stream.get()))) ||
            !GPU_OK(ctx, gpu::MemsetAsync(own, kPoisonByte, c.c_bytes(i), stream.get())))
          break;
        args.a = rows;
        args.a_scale = scales;
        if (i == 0) {
          void* result = nullptr;
          if (!XCCL_OK(ctx, xcclAgGemmRun(op, args.a, args.a_scale, args.b, args.b_scale, m,
                                          nullptr, &result, stream.xccl())))
            break;
          RANK_EXPECT(ctx, result == own, what << ": out NULL gave " << result << ", not " << own);
        } else if (!c.Run(ctx, op, i, stream, what + " local rows, caller's out", &args)) {
          break;
        }
        if (!GPU_OK(ctx, gpu::MemcpyAsync(own_host.data(), own, c.c_bytes(i), stream.get())) ||
            !GPU_OK(ctx, gpu::StreamSynchronize(stream.get())))
          break;
        if (i == 0) {
          ExpectGemmC(ctx, own_host.data(), in, m, n, k, c.id(0), what + " local rows, own out");
        } else {
          const std::string left = CheckPoisoned(own_host.data(), c.c_bytes(i));
          RANK_EXPECT(ctx, left.empty(),
                      what << ": a call with out wrote the own output: " << left);
        }
      }
      ExpectNoAsyncError(ctx, "after the local-rows calls");
      c.Check(ctx, stream);  // call 1, into the caller's buffer
    }
  }
}

// Every signal starts at 0xFFFFFFFE (XCCL_EPOCH_BASE, set by the test before init), so the first
// calls cross 2^32 -> 0 on the device. Fused advances the device epoch once per call; split's
// all_gather (the kernel engine) takes none, so a barrier after each round advances it: split
// calls then sit on both sides of the wrap on every world, and fused ones cross it themselves.
// A held rank per round, no host synchronisation until the end, every call checked.
void AcrossTheEpochWrapBody(const PluginChoice& plugin, RankContext& ctx) {
  RANK_EXPECT(
      ctx, ctx.comm->impl->current_epoch() == 0xFFFFFFFEu,
      "the preset epoch base did not take: epoch starts at " << ctx.comm->impl->current_epoch());
  constexpr int kRounds = 4;
  const int64_t n = 64, k = 64, m = 256;
  Stream stream;
  AgGemmCalls calls;  // call 2r: fused of round r, 2r + 1: split
  if (!stream.Create(ctx) || !WarmUpDelay(ctx, stream) ||
      !calls.Allocate(ctx, n, k, xcclBfloat16, std::vector<int64_t>(2 * kRounds, m)))
    return;
  xcclAgGemm_t ops[2];
  if (!CreateBothModes(ctx, plugin, xcclBfloat16, n, k, m, 0, ops)) return;
  if (calls.Refill(ctx, stream, 4000)) {
    for (int round = 0; round < kRounds; ++round) {
      if (round % ctx.nranks == ctx.rank && !HoldOnDevice(ctx, stream)) break;
      if (ops[kFused] != nullptr &&
          !calls.Run(ctx, ops[kFused], 2 * round, stream, Label(kFused, xcclBfloat16, round, m)))
        break;
      if (!calls.Run(ctx, ops[kSplit], 2 * round + 1, stream,
                     Label(kSplit, xcclBfloat16, round, m)) ||
          !XCCL_OK(ctx, xcclBarrier(ctx.comm, stream.xccl())))
        break;
    }
    if (GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) {
      ExpectNoAsyncError(ctx, "after the wrap");
      calls.Check(ctx, stream);
    }
  }
  DestroyOps(ctx, ops, 2);
}

// The self test passes on a healthy op; with one byte of rank 0's receive slot damaged in the
// window of the last rank (after the exchange, before the check), it fails there, naming rank 0's
// receive slot, while every other rank passes and none waits for a deadline (the check is reported
// only after the closing barrier); then a run on the same op is still right everywhere. bf16 and
// fp8 (scales exchanged too), split and fused.
void CorruptedRecvSlotBody(const PluginChoice& plugin, RankContext& ctx) {
  const int64_t n = 64, k = 64, m_max = 512, m = 256;
  EveryTypeAndMode setup(ctx);
  if (!setup.Set(plugin, n, k, m_max, {m}, /*hold_later=*/false)) return;
  Stream& stream = setup.stream;
  AgGemmCalls* calls = setup.calls;
  const int victim = ctx.nranks - 1;
  setup.ForEachOp([&](int t, int mode, xcclAgGemm_t op, const std::string& what) {
    RANK_EXPECT(ctx, xcclAgGemmSelfTest(op, m_max, stream.xccl()) == xcclSuccess,
                what << ": healthy self test: " << xcclGetLastError(ctx.comm));
    if (ctx.rank == victim && !XCCL_OK(ctx, xccl::CorruptAgGemmRecvSlotForTesting(op, 0)))
      return false;
    const auto start = std::chrono::steady_clock::now();
    const xcclResult_t r = xcclAgGemmSelfTest(op, 300, stream.xccl());
    const double seconds = SecondsSince(start);
    const std::string message = xcclGetLastError(ctx.comm);
    if (ctx.rank == victim) {
      RANK_EXPECT(
          ctx, r == xcclInternalError && message.find("slot of rank 0") != std::string::npos,
          what << ": corrupted slot not reported: " << xcclGetErrorString(r) << ": " << message);
    } else {
      RANK_EXPECT(ctx, r == xcclSuccess,
                  what << ": healthy rank failed: " << xcclGetErrorString(r) << ": " << message);
    }
    RANK_EXPECT(ctx, seconds < 20, what << ": the self test took " << seconds << " s");
    // The failure was the check's, not the communicator's: nothing asynchronous recorded, and
    // the op still computes right on every rank.
    ExpectNoAsyncError(ctx, "after the corrupted self test");
    if (!calls[t].Refill(ctx, stream, 5000 + 100 * (2 * t + mode)) ||
        !calls[t].Run(ctx, op, 0, stream, what + " run after the failed self test"))
      return false;
    calls[t].Check(ctx, stream);
    return true;
  });
}

// On a warm op (a run and a self test behind it), rank 0 comes to the next self test 0.5 s late
// on the host: the others' exchange waits for it on the device and every rank passes. bf16 and
// fp8, split and fused.
void LateRankBody(const PluginChoice& plugin, RankContext& ctx) {
  const int64_t n = 64, k = 64, m_max = 512, m = 256;
  EveryTypeAndMode setup(ctx);
  if (!setup.Set(plugin, n, k, m_max, {m}, /*hold_later=*/false)) return;
  Stream& stream = setup.stream;
  AgGemmCalls* calls = setup.calls;
  setup.ForEachOp([&](int t, int mode, xcclAgGemm_t op, const std::string& what) {
    if (!calls[t].Refill(ctx, stream, 6000 + 100 * (2 * t + mode)) ||
        !calls[t].Run(ctx, op, 0, stream, what + " warm-up run"))
      return false;
    calls[t].Check(ctx, stream);
    RANK_EXPECT(ctx, xcclAgGemmSelfTest(op, m, stream.xccl()) == xcclSuccess,
                what << ": warm-up self test: " << xcclGetLastError(ctx.comm));
    if (ctx.rank == 0) usleep(500000);
    RANK_EXPECT(ctx, xcclAgGemmSelfTest(op, m, stream.xccl()) == xcclSuccess,
                what << ": self test with rank 0 late: " << xcclGetLastError(ctx.comm));
    ExpectNoAsyncError(ctx, "after the late self test");
    return true;
  });
}

// ---- the tests: every world, every plugin ----

// An op's set-up is done on the device when create returns: rows a rank writes into its local
// rows right after create (zero copy, on its own non-blocking stream) are still there after a
// long kernel on the legacy default stream has finished. Zeroing by cudaMemset queues there and
// returns at once; with the legacy stream busy, it would land after such rows were written (a
// receive slot of zeros: docs/perf-history.md, fifth round). Split mode, so that every placement
// runs it. A plugin whose set-up waits for the device before the op's buffers are allocated
// (cublaslt frees its scratch there) drains the legacy stream first, so this end-to-end check
// may pass over the old code for it; gpu_set_up_test.cc checks the allocation itself.
void SetUpBehindABusyLegacyStreamBody(const PluginChoice& plugin, RankContext& ctx) {
  const int64_t n = 64, k = 64, m = 256;
  constexpr uint64_t kLegacyBusyNs = 300'000'000;  // far longer than create takes
  Stream stream;
  if (!stream.Create(ctx) || !WarmUpDelay(ctx, stream) ||
      !GPU_OK(ctx, gpu::LaunchDelay(gpu::LegacyStream(), kLegacyBusyNs)))
    return;
  xcclAgGemm_t op = nullptr;
  if (!XCCL_OK(ctx, CreateOp(ctx.comm, plugin, xcclBfloat16, xcclAgGemmSplit, n, k, m, &op)))
    return;
  const size_t bytes = static_cast<size_t>(m * k) * 2;
  HostBytes written(bytes), read(bytes);
  std::mt19937_64 rng(ctx.seed ^ (0x9E3779B97F4A7C15ull * (ctx.rank + 1)));
  for (unsigned char& byte : written) byte = static_cast<unsigned char>(rng());
  void* rows = nullptr;
  if (XCCL_OK(ctx, xcclAgGemmLocalRows(op, m, &rows, nullptr)) &&
      GPU_OK(ctx, gpu::MemcpyAsync(rows, written.data(), bytes, stream.get())) &&
      GPU_OK(ctx, gpu::StreamSynchronize(stream.get())) &&
      GPU_OK(ctx, gpu::StreamSynchronize(gpu::LegacyStream())) &&
      GPU_OK(ctx, gpu::MemcpyAsync(read.data(), rows, bytes, stream.get())) &&
      GPU_OK(ctx, gpu::StreamSynchronize(stream.get()))) {
    size_t first = bytes;
    for (size_t i = 0; i < bytes && first == bytes; ++i)
      if (read[i] != written[i]) first = i;
    RANK_EXPECT(ctx, first == bytes,
                "local rows written after create changed from byte "
                    << first << " (now " << int(read[first]) << ", written " << int(written[first])
                    << "): set-up was still running on the legacy stream");
  }
  XCCL_OK(ctx, xcclAgGemmDestroy(op));
}

TEST_P(GpuAgGemmSequenceTest, PartialLastColumnTile) { RunEveryPlugin(PartialLastColumnTileBody); }

TEST_P(GpuAgGemmSequenceTest, BackToBackWithHeldRanksNoHostSync) { RunEveryPlugin(BackToBackBody); }

TEST_P(GpuAgGemmSequenceTest, DestroyWhileAPeerRunsTheNextOp) {
  RunEveryPlugin(DestroyWhileAPeerRunsBody);
}

TEST_P(GpuAgGemmSequenceTest, AlternatingMWithHeldRanksNoHostSync) {
  RunEveryPlugin(AlternatingMBody);
}

TEST_P(GpuAgGemmSequenceTest, SetUpIsDoneBehindABusyLegacyStream) {
  RunEveryPlugin(SetUpBehindABusyLegacyStreamBody);
}

TEST_P(GpuAgGemmSequenceTest, LocalRowsZeroCopyWithOwnAndCallerOutput) {
  RunEveryPlugin(LocalRowsBody);
}

TEST_P(GpuAgGemmSequenceTest, AcrossTheEpochWrap) {
  RunOptions options;
  options.before_init = WithEpochBase(0xFFFFFFFEu);
  RunEveryPlugin(AcrossTheEpochWrapBody, options);
}

TEST_P(GpuAgGemmSequenceTest, SelfTestPassesAndCatchesACorruptedSlotOnItsOwner) {
  RunEveryPlugin(CorruptedRecvSlotBody);
}

TEST_P(GpuAgGemmSequenceTest, SelfTestOnAWarmOpWithALateRank) { RunEveryPlugin(LateRankBody); }

// The fused cases on a machine of one GPU: two ranks sharing it, given one queue each by
// XCCL_GPU_QUEUES=1 (the automatic count is 0 there, because copy engines shared by more ranks
// deadlocked; docs/ARCHITECTURE.md), as GpuAgGemmTest.FusedOnASharedGpuWithForcedQueues does for
// the basic case. A fresh communicator per case, so that the epoch wrap starts at its preset
// base; the first case that fails ends the test (a forced-queue path that deadlocks would
// otherwise spend a deadline on every case and plugin). Not the partial column tile: its
// tile-wait launch (73 x 16 blocks of 256 threads, each block spinning for its band's flag) is
// more than an H200 holds at once (1056 such blocks), so one rank's spinning tiles can keep the
// peer's kernels that lead to those flags (its epoch advance before its queue copies) off the
// SMs. That hazard belongs to sharing a GPU, where the library refuses fused; this test only
// bypasses the refusal to reach the fused code on one GPU, with launches small enough to fit
// together (256 tile-wait blocks per rank at most). Other worlds skip.
TEST_P(GpuAgGemmSequenceTest, FusedCasesOnASharedGpuWithForcedQueues) {
  if (GetParam().placement != Placement::kOneGpu || world() != 2)
    GTEST_SKIP() << "runs on one GPU with 2 ranks only";
  struct Case {
    const char* name;
    void (*body)(const PluginChoice&, RankContext&);
    bool epoch_wrap;
  };
  const Case cases[] = {
      {"back to back", BackToBackBody, false},
      {"alternating M", AlternatingMBody, false},
      {"local rows", LocalRowsBody, false},
      {"epoch wrap", AcrossTheEpochWrapBody, true},
      {"corrupted slot", CorruptedRecvSlotBody, false},
      {"late rank", LateRankBody, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    RunOptions options;
    // A short deadline: if shared copy engines deadlock here, fail in seconds, not minutes.
    const bool wrap = c.epoch_wrap;
    options.before_init = [wrap] {
      WithGpuQueues(1)();
      WithTimeoutMs(15000)();
      if (wrap) WithEpochBase(0xFFFFFFFEu)();
    };
    const Body body = c.body;
    RunEveryPlugin(
        [body](const PluginChoice& plugin, RankContext& ctx) {
          int queues = 0;
          if (!XCCL_OK(ctx, xcclCommQueueCount(ctx.comm, &queues))) return;
          RANK_EXPECT(ctx, queues == 1, queues << " queues where XCCL_GPU_QUEUES=1");
          body(plugin, ctx);
        },
        options);
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuAgGemmSequenceTest, ::testing::ValuesIn(StandardGpuWorlds()),
                         GpuWorldName);

#else

TEST(GpuAgGemmSequenceTest, Sequences) {
  GTEST_SKIP() << "needs the reference GEMM plugin, built with the GPU platforms";
}

#endif

}  // namespace
}  // namespace xccl_test
