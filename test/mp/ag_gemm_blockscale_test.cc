// ag_gemm with fp8 block scales (DeepSeek-V3's format: A scales [ceil(k/128)][m], B scales
// [ceil(n/128)][ceil(k/128)]) on the host platform with the reference GEMM plugin, at world 2, 4
// and 8 as threads and 2 and 4 as processes: every mode against a double-precision reference on
// fresh operands whose every scale differs (a band reading its scales at a_scale + row_begin, the
// ptpc arithmetic, or from another band's tile, fails it), k not a multiple of 128 and n not a
// multiple of 128, a partial last column tile, fused and split byte for byte, back-to-back calls
// with held ranks, alternating M (the band tiles change between calls), the epoch wrap, local
// rows quantised tile by tile with the op's own output, self tests catching one corrupted scale
// tile on its owner, and the refusals (bf16 with block scales, a version 1 plugin, ranks that
// disagree, tile queries on a ptpc op).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "common/fake_gemm_plugin.h"
#include "common/float_formats.h"
#include "fused/ag_gemm/ag_gemm_testing.h"
#include "mp/rank_runner.h"
#include "mp/test_params.h"
#include "xccl_gemm.h"

#ifndef XCCL_GEMM_REFERENCE_PATH
#error "the build passes the reference plugin's path"
#endif

namespace xccl_test {
namespace {

constexpr const char* kPlugin = XCCL_GEMM_REFERENCE_PATH;

struct Case {
  int64_t n = 48, k = 300, m_max = 512;  // n and k not multiples of 128
  xcclAgGemmMode_t mode = xcclAgGemmFused;
  int chunks = 0;
};

const char* ModeText(xcclAgGemmMode_t mode) { return mode == xcclAgGemmFused ? "fused" : "split"; }

GemmOperands MakeOperands(uint64_t seed, int rank, uint64_t call, int64_t m, const Case& c) {
  std::mt19937_64 rng(seed ^ (0xD1B54A32D192ED03ull * (rank + 1)) ^ (call << 24));
  return RandomBlockscaleOperands(m, c.n, c.k, rng);
}

bool Create(RankContext& ctx, const Case& c, xcclAgGemm_t* op) {
  const xcclResult_t r =
      xcclAgGemmCreateScaled(ctx.comm, c.n, c.k, c.m_max, xcclFloat8e4m3, xcclBfloat16,
                             xcclAgGemmScalesBlock128, c.mode, c.chunks, kPlugin, nullptr, op);
  RANK_EXPECT(ctx, r == xcclSuccess, "create: " << xcclGetLastError(ctx.comm));
  return r == xcclSuccess;
}

// C of call `call` against the fp64 reference (the fp8 suite's floor, 2.5e-3: rounding C to
// bf16 dominates), padding rows exactly zero.
void CheckC(RankContext& ctx, const Case& c, const void* result, int64_t m, uint64_t call,
            const std::string& what) {
  const GemmOperands mine = MakeOperands(ctx.seed, ctx.rank, call, m, c);
  int64_t nonzero_padding = 0;
  const double rel = GatheredGemmError(
      result, xcclBfloat16, ctx.nranks, m, PaddedRows(m), c.n, c.k, xcclFloat8e4m3, mine,
      [&](int s) { return MakeOperands(ctx.seed, s, call, m, c); }, &nonzero_padding);
  RANK_EXPECT(ctx, rel <= 2.5e-3 && std::isfinite(rel), what << ": relative L2 " << rel);
  RANK_EXPECT(ctx, nonzero_padding == 0, what << ": " << nonzero_padding << " padding values");
}

size_t CBytes(const RankContext& ctx, const Case& c, int64_t m) {
  return static_cast<size_t>(ctx.nranks * PaddedRows(m) * c.n) * 2;
}

// One checked call into a poisoned caller's `out`; its bytes in *bytes when asked.
bool CheckedRun(RankContext& ctx, xcclAgGemm_t op, const Case& c, int64_t m, uint64_t call,
                std::vector<uint8_t>* bytes = nullptr) {
  const GemmOperands o = MakeOperands(ctx.seed, ctx.rank, call, m, c);
  std::vector<uint8_t> out(CBytes(ctx, c, m), 0xA5);
  void* result = nullptr;
  const xcclResult_t r = xcclAgGemmRun(op, o.a.data(), o.a_scale.data(), o.b.data(),
                                       o.b_scale.data(), m, out.data(), &result, nullptr);
  const std::string what = std::string(ModeText(c.mode)) + " chunks " + std::to_string(c.chunks) +
                           " call " + std::to_string(call) + " m " + std::to_string(m);
  RANK_EXPECT(ctx, r == xcclSuccess, what << ": " << xcclGetLastError(ctx.comm));
  if (r != xcclSuccess) return false;
  RANK_EXPECT(ctx, result == out.data(), what << ": result is not the caller's out");
  CheckC(ctx, c, out.data(), m, call, what);
  if (bytes != nullptr) *bytes = out;
  return true;
}

class AgGemmBlockscaleTest : public ::testing::TestWithParam<std::tuple<RankMode, int>> {
 protected:
  void Run(const std::function<void(RankContext&)>& body, const RunOptions& options = {}) {
    for (const auto& failure :
         RunRanks(std::get<0>(GetParam()), std::get<1>(GetParam()), body, options))
      ADD_FAILURE() << failure;
  }
};

// Fused with the rule's bands and with 3 per source (the own rows' call and every band's
// tile differ then), split; two fresh operand sets each, m 300 (padding rows) then 512; every
// fused C equal to split's byte for byte.
TEST_P(AgGemmBlockscaleTest, ModesMatchTheReferenceAndEachOther) {
  Run([](RankContext& ctx) {
    Case split;
    split.mode = xcclAgGemmSplit;
    xcclAgGemm_t s = nullptr;
    if (!Create(ctx, split, &s)) return;
    for (int chunks : {0, 3}) {
      Case fused;
      fused.chunks = chunks;
      fused.m_max = 768;
      xcclAgGemm_t f = nullptr;
      if (!Create(ctx, fused, &f)) break;
      for (uint64_t call = 0; call < 2 && ctx.failures.empty(); ++call) {
        const int64_t m = call == 0 ? 300 : 512;
        std::vector<uint8_t> cf, cs;
        if (!CheckedRun(ctx, f, fused, m, call, &cf) || !CheckedRun(ctx, s, split, m, call, &cs))
          break;
        RANK_EXPECT(ctx, cf == cs, "chunks " << chunks << " m " << m << ": fused and split differ");
      }
      if (chunks == 3) {  // 768 rows are 3 tiles: three bands, and so three scale tiles
        Case wide = fused;
        CheckedRun(ctx, f, wide, 768, 9);
        int tiles = 0;
        RANK_EXPECT(
            ctx,
            xcclAgGemmLocalScaleTile(f, 768, 0, &tiles, nullptr, nullptr, nullptr) == xcclSuccess &&
                tiles == (ctx.nranks > 1 ? 3 : 1),
            "768 rows in " << tiles << " tiles");
      }
      RANK_EXPECT(ctx, xcclAgGemmDestroy(f) == xcclSuccess, xcclGetLastError(nullptr));
    }
    xcclAgGemmDestroy(s);
  });
}

// N = 400 (the last 256-column tile partial, the last 128-column scale block too) and k = 200.
TEST_P(AgGemmBlockscaleTest, PartialLastColumnTileAndKBlock) {
  Run([](RankContext& ctx) {
    for (xcclAgGemmMode_t mode : {xcclAgGemmFused, xcclAgGemmSplit}) {
      Case c;
      c.n = 400;
      c.k = 200;
      c.m_max = 256;
      c.mode = mode;
      xcclAgGemm_t op = nullptr;
      if (!Create(ctx, c, &op)) return;
      CheckedRun(ctx, op, c, 200, 7);
      xcclAgGemmDestroy(op);
    }
  });
}

// Eight calls back to back with four bands per source, a different rank held before each.
TEST_P(AgGemmBlockscaleTest, BackToBackWithHeldRanks) {
  Run([](RankContext& ctx) {
    Case c;
    c.n = 32;
    c.k = 160;
    c.m_max = 1024;
    c.chunks = 4;
    xcclAgGemm_t op = nullptr;
    if (!Create(ctx, c, &op)) return;
    for (uint64_t call = 0; call < 8 && ctx.failures.empty(); ++call) {
      if (static_cast<int>(call % ctx.nranks) == ctx.rank) usleep(2000);
      CheckedRun(ctx, op, c, 1024, 100 + call);
    }
    xcclAgGemmDestroy(op);
  });
}

// M as a serving loop alternates it, under held ranks: with 4 bands pinned the op cuts 256 rows
// into 1 tile, 512 into 2, 768 into 3 and 1024 into 4, so the tiles move from call to call.
TEST_P(AgGemmBlockscaleTest, AlternatingMUnderHeldRanks) {
  Run([](RankContext& ctx) {
    for (xcclAgGemmMode_t mode : {xcclAgGemmFused, xcclAgGemmSplit}) {
      Case c;
      c.n = 32;
      c.k = 136;
      c.m_max = 1024;
      c.chunks = 4;
      c.mode = mode;
      xcclAgGemm_t op = nullptr;
      if (!Create(ctx, c, &op)) return;
      uint64_t call = 200;
      for (int64_t m : {512, 1024, 768, 1024, 256, 1024}) {
        if (static_cast<int>(call % ctx.nranks) == ctx.rank) usleep(1000);
        if (!CheckedRun(ctx, op, c, m, call++)) break;
      }
      xcclAgGemmDestroy(op);
    }
  });
}

// Every signal starts at 0xFFFFFFFE, so the first calls' band flags (raised by the scale tiles'
// puts) cross 2^32.
TEST_P(AgGemmBlockscaleTest, AcrossTheEpochWrap) {
  for (xcclAgGemmMode_t mode : {xcclAgGemmFused, xcclAgGemmSplit}) {
    RunOptions options;
    options.before_init = WithEpochBase(0xFFFFFFFEu);
    Run(
        [mode](RankContext& ctx) {
          Case c;
          c.n = 32;
          c.k = 130;
          c.mode = mode;
          c.chunks = 2;
          xcclAgGemm_t op = nullptr;
          if (!Create(ctx, c, &op)) return;
          for (uint64_t call = 0; call < 4; ++call) CheckedRun(ctx, op, c, 512, 400 + call);
          xcclAgGemmDestroy(op);
        },
        options);
    RestoreParams();
  }
}

// A caller quantising straight into local_rows: the rows into the receive slot, the scales tile by
// tile as xcclAgGemmLocalScaleTile lays them out, then run with those pointers (no copy) into the
// op's own output. The tiles follow each other from local_rows' scales.
TEST_P(AgGemmBlockscaleTest, LocalRowsTileByTileIntoTheOpsOutput) {
  Run([](RankContext& ctx) {
    for (xcclAgGemmMode_t mode : {xcclAgGemmFused, xcclAgGemmSplit}) {
      Case c;
      c.mode = mode;
      c.chunks = 2;
      c.m_max = 1024;
      xcclAgGemm_t op = nullptr;
      if (!Create(ctx, c, &op)) return;
      const int64_t blocks = (c.k + 127) / 128;
      uint64_t call = 500;
      for (int64_t m : {1000, 512, 300}) {
        const std::string what = std::string(ModeText(mode)) + " local rows m " + std::to_string(m);
        const GemmOperands o = MakeOperands(ctx.seed, ctx.rank, call, m, c);
        void* rows = nullptr;
        float* scales = nullptr;
        int tiles = 0;
        if (xcclAgGemmLocalRows(op, m, &rows, &scales) != xcclSuccess || scales == nullptr ||
            xcclAgGemmLocalScaleTile(op, m, 0, &tiles, nullptr, nullptr, nullptr) != xcclSuccess) {
          ctx.Fail(what + ": " + xcclGetLastError(ctx.comm));
          break;
        }
        memcpy(rows, o.a.data(), o.a.size());
        float* expected_at = scales;
        int64_t expected_begin = 0;
        for (int t = 0; t < tiles; ++t) {
          int64_t begin = -1, end = -1;
          float* tile = nullptr;
          RANK_EXPECT(
              ctx, xcclAgGemmLocalScaleTile(op, m, t, nullptr, &begin, &end, &tile) == xcclSuccess,
              what << " tile " << t << ": " << xcclGetLastError(ctx.comm));
          RANK_EXPECT(ctx, tile == expected_at && begin == expected_begin,
                      what << ": tile " << t << " at " << tile << " from row " << begin);
          for (int64_t kb = 0; kb < blocks; ++kb)
            for (int64_t i = begin; i < std::min(end, m); ++i)
              tile[kb * (end - begin) + i - begin] = o.a_scale[kb * m + i];
          expected_at = tile + blocks * (end - begin);
          expected_begin = end;
        }
        RANK_EXPECT(ctx, expected_begin == PaddedRows(m),
                    what << ": tiles end at row " << expected_begin);
        void* result = nullptr;
        const xcclResult_t r = xcclAgGemmRun(op, rows, scales, o.b.data(), o.b_scale.data(), m,
                                             nullptr, &result, nullptr);
        RANK_EXPECT(ctx, r == xcclSuccess && result != nullptr,
                    what << ": " << xcclGetLastError(ctx.comm));
        if (r != xcclSuccess || result == nullptr) break;
        CheckC(ctx, c, result, m, call, what);
        memset(result, 0xA5, CBytes(ctx, c, m));  // poisoned for the next call
        ++call;
      }
      xcclAgGemmDestroy(op);
    }
  });
}

// The self test covers the scale tiles: one damaged byte of source 0's scales fails on the rank
// that holds the damage, naming the scales, and only there.
TEST_P(AgGemmBlockscaleTest, SelfTestCatchesACorruptedScaleTile) {
  Run([](RankContext& ctx) {
    Case c;
    c.chunks = 2;
    xcclAgGemm_t op = nullptr;
    if (!Create(ctx, c, &op)) return;
    RANK_EXPECT(ctx, xcclAgGemmSelfTest(op, 512, nullptr) == xcclSuccess,
                "healthy self test: " << xcclGetLastError(ctx.comm));
    const int victim = ctx.nranks - 1;
    if (ctx.rank == victim) xccl::CorruptAgGemmScalesForTesting(op, 0);
    const xcclResult_t r = xcclAgGemmSelfTest(op, 300, nullptr);
    const std::string message = xcclGetLastError(ctx.comm);
    if (ctx.rank == victim) {
      RANK_EXPECT(ctx,
                  r == xcclInternalError &&
                      message.find("the scales of rank 0 are wrong: 1 of") != std::string::npos,
                  "corrupted scales not reported: " << message);
    } else {
      RANK_EXPECT(ctx, r == xcclSuccess, "healthy rank failed: " << message);
    }
    RANK_EXPECT(ctx, xcclAgGemmSelfTest(op, 256, nullptr) == xcclSuccess,
                "self test after: " << xcclGetLastError(ctx.comm));
    CheckedRun(ctx, op, c, 512, 600);
    xcclAgGemmDestroy(op);
  });
}

// Refused with a message, every rank together: block scales with bf16 inputs, a version 1
// plugin, ranks that disagree on the scales; and the tile query on a ptpc op or out of range,
// missing scales at run.
TEST_P(AgGemmBlockscaleTest, RefusalsNameTheirCause) {
  Run([](RankContext& ctx) {
    auto expect = [&](xcclResult_t r, xcclResult_t want, const char* what, const char* says) {
      const std::string message = xcclGetLastError(ctx.comm);
      RANK_EXPECT(ctx, r == want && message.find(says) != std::string::npos,
                  what << ": " << xcclGetErrorString(r) << " \"" << message << "\"");
    };
    xcclAgGemm_t op = nullptr;
    expect(
        xcclAgGemmCreateScaled(ctx.comm, 64, 128, 256, xcclBfloat16, xcclBfloat16,
                               xcclAgGemmScalesBlock128, xcclAgGemmSplit, 0, kPlugin, nullptr, &op),
        xcclInvalidArgument, "bf16 with block scales", "block scales with bfloat16");
    expect(xcclAgGemmCreateScaled(ctx.comm, 64, 128, 256, xcclFloat8e4m3, xcclBfloat16,
                                  static_cast<xcclAgGemmScales_t>(7), xcclAgGemmSplit, 0, kPlugin,
                                  nullptr, &op),
           xcclInvalidArgument, "scales 7", "scales 7");
    // A version 1 plugin (the fake's struct, abi_version 1) serves ptpc but not block scales.
    const xcclGemmPlugin_v1_t v1 = FakeGemmPlugin();
    expect(xcclAgGemmCreateScaled(ctx.comm, 64, 128, 256, xcclFloat8e4m3, xcclBfloat16,
                                  xcclAgGemmScalesBlock128, xcclAgGemmSplit, 0, nullptr, &v1, &op),
           xcclInvalidUsage, "a version 1 plugin", "needs a version 2 plugin");
    // Rank 0 asks for ptpc, the others for block scales.
    const xcclAgGemmScales_t mine = ctx.rank == 0 ? xcclAgGemmScalesPtpc : xcclAgGemmScalesBlock128;
    expect(xcclAgGemmCreateScaled(ctx.comm, 64, 128, 256, xcclFloat8e4m3, xcclBfloat16, mine,
                                  xcclAgGemmSplit, 0, kPlugin, nullptr, &op),
           ctx.nranks > 1 ? xcclInvalidUsage : xcclSuccess, "disagreeing scales",
           ctx.nranks > 1 ? "scales" : "");
    if (ctx.nranks == 1) xcclAgGemmDestroy(op);
    xcclAgGemm_t ptpc = nullptr;
    RANK_EXPECT(ctx,
                xcclAgGemmCreate(ctx.comm, 64, 128, 256, xcclFloat8e4m3, xcclBfloat16,
                                 xcclAgGemmSplit, 0, kPlugin, nullptr, &ptpc) == xcclSuccess,
                "ptpc create: " << xcclGetLastError(ctx.comm));
    if (ptpc == nullptr) return;
    int tiles = 0;
    expect(xcclAgGemmLocalScaleTile(ptpc, 256, 0, &tiles, nullptr, nullptr, nullptr),
           xcclInvalidArgument, "tile query on a ptpc op", "no block scales");
    xcclAgGemmDestroy(ptpc);
    Case c;
    if (!Create(ctx, c, &op)) return;
    expect(xcclAgGemmLocalScaleTile(op, 256, 1, &tiles, nullptr, nullptr, nullptr),
           xcclInvalidArgument, "tile 1 of 1", "outside [0, 1)");
    const GemmOperands o = MakeOperands(ctx.seed, ctx.rank, 0, 256, c);
    expect(xcclAgGemmRun(op, o.a.data(), nullptr, o.b.data(), o.b_scale.data(), 256, nullptr,
                         nullptr, nullptr),
           xcclInvalidArgument, "no a_scale", "a_scale [ceil(k/128)][m]");
    CheckedRun(ctx, op, c, 256, 700);  // the communicator stays usable
    xcclAgGemmDestroy(op);
  });
}

std::string WorldName(const ::testing::TestParamInfo<std::tuple<RankMode, int>>& info) {
  return std::string(ModeName(std::get<0>(info.param))) + "World" +
         std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, AgGemmBlockscaleTest,
                         ::testing::Combine(::testing::Values(RankMode::kThreads),
                                            ::testing::Values(1, 2, 4, 8)),
                         WorldName);

INSTANTIATE_TEST_SUITE_P(HostProcesses, AgGemmBlockscaleTest,
                         ::testing::Combine(::testing::Values(RankMode::kProcesses),
                                            ::testing::Values(2, 4)),
                         WorldName);

}  // namespace
}  // namespace xccl_test
