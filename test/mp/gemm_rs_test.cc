// gemm_rs on the host platform with the reference GEMM plugin, threads at world 1-4 and processes
// at world 2 and 3: both modes, every input format (bf16, fp16, fp8 ptpc, fp8 block scales with a
// short last K block), n not a multiple of 128, on fresh operands. Every element is compared
// with an emulation (the reference plugin's partial product of every rank, reduced in rank order
// in fp32 and rounded once, as xccl.h promises) byte for byte, and the result with a
// double-precision sum of the decoded inputs within the rounding of the partials; fused and
// split agree byte for byte. Also back-to-back calls with a held rank and alternating m, the
// epoch wrap, two fake nodes, every argument check with the communicator usable afterwards, ranks
// that disagree at create, a rank killed mid-call named by every survivor, and the self test
// (passing, and failing on the rank whose rows a peer's corrupted partial reaches).
#include <gtest/gtest.h>
#include <signal.h>
#include <time.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "collectives/reduce/reduction.h"
#include "common/float_formats.h"
#include "fused/gemm_plugin_loader.h"
#include "fused/gemm_rs/gemm_rs_testing.h"
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
  int64_t n = 48, k = 40, m_max = 0;  // m_max 0: 24 rows per rank
  xcclDataType_t in = xcclBfloat16, out = xcclBfloat16;
  xcclAgGemmScales_t scales = xcclAgGemmScalesDefault;
  xcclGemmRsMode_t mode = xcclGemmRsFused;
  int chunks = 0;
  bool block() const { return scales == xcclAgGemmScalesBlock128; }
};

const char* ModeText(xcclGemmRsMode_t mode) { return mode == xcclGemmRsFused ? "fused" : "split"; }

std::string Describe(const Case& c, int64_t m, uint64_t call) {
  return std::string(ModeText(c.mode)) + " " + std::to_string(c.in) + (c.block() ? " block" : "") +
         " chunks " + std::to_string(c.chunks) + " m " + std::to_string(m) + " call " +
         std::to_string(call);
}

// Rank `rank`'s operands of call `call`: any rank can regenerate any rank's.
GemmOperands MakeOperands(uint64_t seed, int rank, uint64_t call, const Case& c, int64_t m) {
  std::mt19937_64 rng(seed ^ (0x9E3779B97F4A7C15ull * (rank + 1)) ^ (call << 20));
  return c.block() ? RandomBlockscaleOperands(m, c.n, c.k, rng)
                   : RandomGemmOperands(m, c.n, c.k, c.in, rng);
}

// The reference plugin's product of one rank's operands over all m rows, as the op's partial.
std::vector<uint8_t> Partial(const xccl::GemmPlugin& plugin, const Case& c, const GemmOperands& o,
                             int64_t m) {
  xcclGemmProblem p = DenseProblem(m, c.n, c.k, c.in, c.out);
  if (c.block()) {
    p.scale_mode = xcclGemmScaleBlock128;
    p.a_scale_ld = m;
  }
  std::vector<uint8_t> partial(static_cast<size_t>(m * c.n) * TypeSize(c.out));
  p.a = o.a.data();
  p.b = o.b.data();
  p.c = partial.data();
  p.a_scale = o.a_scale.empty() ? nullptr : o.a_scale.data();
  p.b_scale = o.b_scale.empty() ? nullptr : o.b_scale.data();
  void* ctx = nullptr;
  const xcclGemmBand band{0, m};
  if (plugin.api().init(&ctx, 0) != xcclSuccess ||
      plugin.api().run(ctx, &p, &band, nullptr) != xcclSuccess)
    partial.clear();
  plugin.api().finalize(ctx);
  return partial;
}

void CheckRowsWithinRounding(RankContext& ctx, const Case& c, int64_t m, uint64_t call,
                             const std::vector<uint8_t>& got);

// Checks this rank's rows of one call: byte for byte against the emulation, and within the
// partials' rounding of a double-precision sum of the decoded inputs.
void CheckRows(RankContext& ctx, const xccl::GemmPlugin& plugin, const Case& c, int64_t m,
               uint64_t call, const std::vector<uint8_t>& got) {
  const std::string what = Describe(c, m, call);
  const int64_t rows = m / ctx.nranks, first = ctx.rank * rows;
  const size_t elem = TypeSize(c.out), count = static_cast<size_t>(rows * c.n);
  std::vector<std::vector<uint8_t>> partials;
  std::vector<const void*> inputs;
  std::vector<GemmOperands> operands;
  for (int s = 0; s < ctx.nranks; ++s) {
    operands.push_back(MakeOperands(ctx.seed, s, call, c, m));
    partials.push_back(Partial(plugin, c, operands.back(), m));
    RANK_EXPECT(ctx, !partials.back().empty(), what << ": the reference plugin failed");
    if (partials.back().empty()) return;
  }
  for (int s = 0; s < ctx.nranks; ++s)
    inputs.push_back(partials[s].data() + static_cast<size_t>(first * c.n) * elem);
  std::vector<uint8_t> expected(count * elem);
  RANK_EXPECT(ctx,
              xccl::ReduceOnHost(c.out, xcclSum, inputs.data(), ctx.nranks, expected.data(),
                                 count) == xcclSuccess,
              what << ": the emulation's reduction failed");
  size_t wrong = 0, first_wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    if (std::memcmp(&got[i * elem], &expected[i * elem], elem) != 0 && wrong++ == 0)
      first_wrong = i;
  }
  RANK_EXPECT(ctx, wrong == 0,
              what << ": " << wrong << " of " << count << " elements differ from the emulation, "
                   << "the first at row " << first + first_wrong / c.n << " column "
                   << first_wrong % c.n << ": " << Value(c.out, got.data(), first_wrong) << " for "
                   << Value(c.out, expected.data(), first_wrong));
  CheckRowsWithinRounding(ctx, c, m, call, got);
}

// Against the decoded inputs in double: every partial is rounded once to the output type, and
// the sum once more, so the rows are within a few units of their last place.
void CheckRowsWithinRounding(RankContext& ctx, const Case& c, int64_t m, uint64_t call,
                             const std::vector<uint8_t>& got) {
  const std::string what = Describe(c, m, call);
  const int64_t rows = m / ctx.nranks, first = ctx.rank * rows;
  std::vector<GemmOperands> operands;
  for (int s = 0; s < ctx.nranks; ++s) operands.push_back(MakeOperands(ctx.seed, s, call, c, m));
  double err2 = 0, ref2 = 0;
  const int64_t kb = (c.k + 127) / 128;
  for (int64_t i = 0; i < rows; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double sum = 0;
      for (int s = 0; s < ctx.nranks; ++s) {
        const GemmOperands& o = operands[s];
        const int64_t row = first + i;
        for (int64_t blk = 0; blk < (c.block() ? kb : 1); ++blk) {
          const int64_t q0 = c.block() ? blk * 128 : 0;
          const int64_t q1 = c.block() ? std::min(c.k, q0 + 128) : c.k;
          double part = 0;
          for (int64_t q = q0; q < q1; ++q)
            part += Value(c.in, o.a.data(), row * c.k + q) * Value(c.in, o.b.data(), j * c.k + q);
          if (c.block())
            part *= static_cast<double>(o.a_scale[blk * m + row]) * o.b_scale[(j / 128) * kb + blk];
          else if (c.in == xcclFloat8e4m3)
            part *= static_cast<double>(o.a_scale[row]) * o.b_scale[j];
          sum += part;
        }
      }
      const double value = Value(c.out, got.data(), i * c.n + j);
      err2 += (value - sum) * (value - sum);
      ref2 += sum * sum;
    }
  }
  const double rel = std::sqrt(err2 / (ref2 > 0 ? ref2 : 1));
  const double tolerance = c.out == xcclFloat16 ? 2e-3 : 8e-3;  // bf16 keeps 8 bits, fp16 11
  RANK_EXPECT(ctx, rel <= tolerance && std::isfinite(rel),
              what << ": relative L2 " << rel << " from the double sum, above " << tolerance);
}

bool Create(RankContext& ctx, const Case& c, xcclGemmRs_t* op) {
  const int64_t m_max = c.m_max > 0 ? c.m_max : 24 * ctx.nranks;
  const xcclResult_t r = xcclGemmRsCreate(ctx.comm, c.n, c.k, m_max, c.in, c.out, c.scales, c.mode,
                                          c.chunks, kPlugin, nullptr, op);
  RANK_EXPECT(ctx, r == xcclSuccess, "create: " << xcclGetLastError(ctx.comm));
  return r == xcclSuccess;
}

// One call on fresh operands into a poisoned `out`; its bytes into *rows.
bool RunCall(RankContext& ctx, xcclGemmRs_t op, const Case& c, int64_t m, uint64_t call,
             std::vector<uint8_t>* rows) {
  const GemmOperands o = MakeOperands(ctx.seed, ctx.rank, call, c, m);
  rows->assign(static_cast<size_t>(m / ctx.nranks * c.n) * TypeSize(c.out), 0xA5);
  const xcclResult_t r =
      xcclGemmRsRun(op, o.a.data(), o.a_scale.empty() ? nullptr : o.a_scale.data(), o.b.data(),
                    o.b_scale.empty() ? nullptr : o.b_scale.data(), m, rows->data(), nullptr);
  RANK_EXPECT(ctx, r == xcclSuccess, Describe(c, m, call) << ": " << xcclGetLastError(ctx.comm));
  return r == xcclSuccess;
}

std::unique_ptr<xccl::GemmPlugin> LoadReference(RankContext& ctx) {
  std::unique_ptr<xccl::GemmPlugin> plugin;
  RANK_EXPECT(ctx, xccl::GemmPlugin::Load(kPlugin, "", &plugin) == xcclSuccess,
              "loading the reference plugin for the emulation");
  return plugin;
}

class GemmRsTest : public ::testing::TestWithParam<std::tuple<RankMode, int>> {
 protected:
  void Run(const std::function<void(RankContext&)>& body) {
    for (const auto& f : RunRanks(std::get<0>(GetParam()), std::get<1>(GetParam()), body))
      ADD_FAILURE() << f;
  }
};

std::vector<Case> EveryFormat() {
  std::vector<Case> cases;
  Case bf16;
  cases.push_back(bf16);
  Case fp16;
  fp16.in = fp16.out = xcclFloat16;
  cases.push_back(fp16);
  Case ptpc;
  ptpc.in = xcclFloat8e4m3;
  cases.push_back(ptpc);
  Case block;
  block.in = xcclFloat8e4m3;
  block.scales = xcclAgGemmScalesBlock128;
  block.k = 300;  // three K blocks, the last of 44
  cases.push_back(block);
  return cases;
}

TEST_P(GemmRsTest, EveryFormatBothModesMatchTheEmulationByteForByte) {
  Run([](RankContext& ctx) {
    std::unique_ptr<xccl::GemmPlugin> plugin = LoadReference(ctx);
    if (!plugin) return;
    uint64_t call = 0;
    for (Case c : EveryFormat()) {
      for (const int chunks : {0, 3}) {
        c.chunks = chunks;
        std::vector<uint8_t> by_mode[2];
        for (const xcclGemmRsMode_t mode : {xcclGemmRsFused, xcclGemmRsSplit}) {
          c.mode = mode;
          xcclGemmRs_t op = nullptr;
          if (!Create(ctx, c, &op)) return;
          const int64_t m = 24 * ctx.nranks;
          if (RunCall(ctx, op, c, m, call, &by_mode[mode]))
            CheckRows(ctx, *plugin, c, m, call, by_mode[mode]);
          RANK_EXPECT(ctx, xcclGemmRsDestroy(op) == xcclSuccess, xcclGetLastError(ctx.comm));
        }
        RANK_EXPECT(ctx, by_mode[0] == by_mode[1],
                    Describe(c, 24 * ctx.nranks, call) << ": fused and split differ");
        ++call;
      }
    }
  });
}

TEST_P(GemmRsTest, BackToBackWithAHeldRankAndAlternatingM) {
  Run([](RankContext& ctx) {
    std::unique_ptr<xccl::GemmPlugin> plugin = LoadReference(ctx);
    if (!plugin) return;
    Case c;
    c.m_max = 64 * ctx.nranks;
    c.chunks = 2;
    xcclGemmRs_t op = nullptr;
    if (!Create(ctx, c, &op)) return;
    for (uint64_t call = 0; call < 12; ++call) {
      // The last rank falls behind on every third call, so the others run ahead into its rows.
      if (ctx.rank == ctx.nranks - 1 && call % 3 == 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(30));
      const int64_t m = (call % 2 == 0 ? 64 : 8) * ctx.nranks;
      std::vector<uint8_t> rows;
      if (!RunCall(ctx, op, c, m, 100 + call, &rows)) break;
      CheckRows(ctx, *plugin, c, m, 100 + call, rows);
    }
    RANK_EXPECT(ctx, xcclGemmRsDestroy(op) == xcclSuccess, xcclGetLastError(ctx.comm));
  });
}

TEST_P(GemmRsTest, BadArgumentsAreRefusedAndTheCommStaysUsable) {
  Run([](RankContext& ctx) {
    std::unique_ptr<xccl::GemmPlugin> plugin = LoadReference(ctx);
    if (!plugin) return;
    Case c;
    const int world = ctx.nranks;
    xcclGemmRs_t op = nullptr;
    // Create: refused on every rank alike (nothing is made).
    auto refused_create = [&](int64_t n, int64_t k, int64_t m_max, xcclDataType_t in,
                              xcclAgGemmScales_t scales, int mode, int chunks, const char* what) {
      xcclGemmRs_t bad = reinterpret_cast<xcclGemmRs_t>(0x1);
      const xcclResult_t r =
          xcclGemmRsCreate(ctx.comm, n, k, m_max, in, xcclBfloat16, scales,
                           static_cast<xcclGemmRsMode_t>(mode), chunks, kPlugin, nullptr, &bad);
      RANK_EXPECT(ctx, r != xcclSuccess && bad == nullptr,
                  what << ": created (" << xcclGetErrorString(r) << ")");
    };
    refused_create(40, 40, 8 * world, xcclBfloat16, xcclAgGemmScalesDefault, 0, 0, "n = 40");
    refused_create(48, 0, 8 * world, xcclBfloat16, xcclAgGemmScalesDefault, 0, 0, "k = 0");
    if (world > 1)
      refused_create(48, 40, 8 * world + 1, xcclBfloat16, xcclAgGemmScalesDefault, 0, 0,
                     "m_max not a multiple of the ranks");
    refused_create(48, 40, 8 * world, xcclBfloat16, xcclAgGemmScalesPtpc, 0, 0, "bf16 with ptpc");
    refused_create(48, 40, 8 * world, xcclBfloat16, xcclAgGemmScalesDefault, 7, 0, "mode 7");
    refused_create(48, 40, 8 * world, xcclBfloat16, xcclAgGemmScalesDefault, 0, 9, "chunks 9");
    if (world > 1) {
      // Ranks asking for different ops all fail, naming the difference.
      const xcclResult_t r = xcclGemmRsCreate(ctx.comm, ctx.rank == 0 ? 64 : 48, 40, 8 * world,
                                              xcclBfloat16, xcclBfloat16, xcclAgGemmScalesDefault,
                                              xcclGemmRsFused, 0, kPlugin, nullptr, &op);
      RANK_EXPECT(ctx, r == xcclInvalidUsage,
                  "ranks passing different n: " << xcclGetErrorString(r) << ", "
                                                << xcclGetLastError(ctx.comm));
    }
    c.m_max = 8 * world;
    if (!Create(ctx, c, &op)) return;
    const GemmOperands o = MakeOperands(ctx.seed, ctx.rank, 0, c, c.m_max);
    std::vector<uint8_t> out(static_cast<size_t>(8 * c.n) * 2);
    float scale = 1;
    auto refused_run = [&](const void* a, const float* as, const void* b, const float* bs,
                           int64_t m, void* dst, const char* what) {
      const xcclResult_t r = xcclGemmRsRun(op, a, as, b, bs, m, dst, nullptr);
      RANK_EXPECT(ctx, r == xcclInvalidArgument, what << ": " << xcclGetErrorString(r));
      RANK_EXPECT(ctx, std::string(xcclGetLastError(ctx.comm)).find("gemm_rs") != std::string::npos,
                  what << ": the message does not name gemm_rs: " << xcclGetLastError(ctx.comm));
    };
    if (world > 1)
      refused_run(o.a.data(), nullptr, o.b.data(), nullptr, 8 * world - 1, out.data(),
                  "m not a multiple of the ranks");
    refused_run(o.a.data(), nullptr, o.b.data(), nullptr, 16 * world, out.data(), "m > m_max");
    refused_run(nullptr, nullptr, o.b.data(), nullptr, 8 * world, out.data(), "a NULL");
    refused_run(o.a.data(), nullptr, nullptr, nullptr, 8 * world, out.data(), "b NULL");
    refused_run(o.a.data(), nullptr, o.b.data(), nullptr, 8 * world, nullptr, "out NULL");
    refused_run(o.a.data(), &scale, o.b.data(), nullptr, 8 * world, out.data(), "bf16 scales");
    refused_run(o.a.data() + 1, nullptr, o.b.data(), nullptr, 8 * world, out.data(), "a odd");
    refused_run(o.a.data(), nullptr, o.b.data(), nullptr, 8 * world,
                const_cast<uint8_t*>(o.b.data()), "out over b");
    RANK_EXPECT(ctx,
                xcclGemmRsRun(nullptr, o.a.data(), nullptr, o.b.data(), nullptr, 8 * world,
                              out.data(), nullptr) == xcclInvalidArgument,
                "a NULL op was taken");
    // Still usable: a checked call.
    std::vector<uint8_t> rows;
    if (RunCall(ctx, op, c, 8 * world, 7, &rows)) CheckRows(ctx, *plugin, c, 8 * world, 7, rows);
    RANK_EXPECT(ctx, xcclGemmRsDestroy(op) == xcclSuccess, xcclGetLastError(ctx.comm));
    RANK_EXPECT(ctx, xcclGemmRsDestroy(op) == xcclInvalidArgument, "a second destroy was taken");
  });
}

// Every signal starts at 0xFFFFFFFE, so the first calls' reduce-scatters cross 2^32 (on a fresh
// communicator: on a shared one an earlier test's calls would take the wrap).
TEST_P(GemmRsTest, AcrossTheEpochWrap) {
  RunOptions options;
  options.before_init = WithEpochBase(0xFFFFFFFEu);
  for (const auto& f : RunRanks(
           std::get<0>(GetParam()), std::get<1>(GetParam()),
           [](RankContext& ctx) {
             std::unique_ptr<xccl::GemmPlugin> plugin = LoadReference(ctx);
             if (!plugin) return;
             for (const xcclGemmRsMode_t mode : {xcclGemmRsFused, xcclGemmRsSplit}) {
               Case c;
               c.mode = mode;
               c.chunks = 3;
               xcclGemmRs_t op = nullptr;
               if (!Create(ctx, c, &op)) return;
               for (uint64_t call = 0; call < 3; ++call) {
                 std::vector<uint8_t> rows;
                 if (!RunCall(ctx, op, c, 24 * ctx.nranks, 200 + call, &rows)) break;
                 CheckRows(ctx, *plugin, c, 24 * ctx.nranks, 200 + call, rows);
               }
               RANK_EXPECT(ctx, xcclGemmRsDestroy(op) == xcclSuccess, xcclGetLastError(ctx.comm));
             }
           },
           options))
    ADD_FAILURE() << f;
  RestoreParams();
}

// XCCL_GEMMRS_CHUNKS sets the chunks of ops that pin none (a pin still wins, split cuts one), and
// the chunked run gives split's bytes and the emulation's.
TEST_P(GemmRsTest, ChunksFromTheParameterMatchSplitByteForByte) {
  RunOptions options;
  options.before_init = WithGemmRsChunks(3);
  for (const auto& f : RunRanks(
           std::get<0>(GetParam()), std::get<1>(GetParam()),
           [](RankContext& ctx) {
             std::unique_ptr<xccl::GemmPlugin> plugin = LoadReference(ctx);
             if (!plugin) return;
             const int64_t m = 24 * ctx.nranks;  // 24 rows a block: room for 3 chunks
             const int want_fused = ctx.nranks == 1 ? 1 : 3;
             for (const int pinned : {0, 2}) {
               Case c;
               c.chunks = pinned;
               std::vector<uint8_t> by_mode[2];
               for (const xcclGemmRsMode_t mode : {xcclGemmRsFused, xcclGemmRsSplit}) {
                 c.mode = mode;
                 xcclGemmRs_t op = nullptr;
                 if (!Create(ctx, c, &op)) return;
                 int chunks = -1;
                 RANK_EXPECT(ctx, xccl::GemmRsChunksForTesting(op, m, &chunks) == xcclSuccess,
                             "chunks");
                 const int want = mode == xcclGemmRsSplit || ctx.nranks == 1 ? 1
                                  : pinned > 0                               ? pinned
                                                                             : want_fused;
                 RANK_EXPECT(ctx, chunks == want,
                             "mode " << mode << ", pinned " << pinned << ": " << chunks
                                     << " chunks, " << want << " wanted");
                 if (RunCall(ctx, op, c, m, 400 + pinned, &by_mode[mode]))
                   CheckRows(ctx, *plugin, c, m, 400 + pinned, by_mode[mode]);
                 RANK_EXPECT(ctx, xcclGemmRsDestroy(op) == xcclSuccess, xcclGetLastError(ctx.comm));
               }
               RANK_EXPECT(ctx, by_mode[0] == by_mode[1],
                           Describe(c, m, 400 + pinned) << ": fused and split differ");
             }
           },
           options))
    ADD_FAILURE() << f;
  RestoreParams();
}

// Across fake nodes the reduce-scatters take the host's path between nodes (node partials
// first): the bytes are those of xccl.h's order across nodes, which the emulation (rank order
// within the whole) need not give, so the check is the double sum alone plus fused == split.
TEST(GemmRsAcrossNodes, TwoFakeNodesBothModesAgree) {
  RunOptions options;
  options.before_init = WithFakeNodes("2,2");
  for (const auto& f : RunRanks(
           RankMode::kProcesses, 4,
           [](RankContext& ctx) {
             Case c;
             c.n = 64;
             c.k = 48;
             std::vector<uint8_t> by_mode[2];
             for (const xcclGemmRsMode_t mode : {xcclGemmRsFused, xcclGemmRsSplit}) {
               c.mode = mode;
               xcclGemmRs_t op = nullptr;
               if (!Create(ctx, c, &op)) return;
               RunCall(ctx, op, c, 24 * ctx.nranks, 300, &by_mode[mode]);
               RANK_EXPECT(ctx, xcclGemmRsDestroy(op) == xcclSuccess, xcclGetLastError(ctx.comm));
             }
             RANK_EXPECT(ctx, by_mode[0] == by_mode[1], "fused and split differ across nodes");
             CheckRowsWithinRounding(ctx, c, 24 * ctx.nranks, 300, by_mode[1]);
           },
           options))
    ADD_FAILURE() << f;
  RestoreParams();
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return uint64_t(ts.tv_sec) * 1000000000ull + uint64_t(ts.tv_nsec);
}

// Three processes loop on fused calls; one SIGKILLs itself 30-90 ms in, inside a call. Every
// survivor's call then fails naming it, within 5 s of the death (the deadline is 60 s: liveness
// must find it).
TEST(GemmRsKilledRank, EverySurvivorNamesTheVictim) {
  constexpr int kWorld = 3;
  const int victim = static_cast<int>(getpid()) % kWorld;
  constexpr int kStampSlot = 2048;  // ctx.shared[kStampSlot]: when the victim died
  const auto failures = RunRanks(
      RankMode::kProcesses, kWorld,
      [victim](RankContext& ctx) {
        Case c;
        c.n = 256;
        c.k = 64;
        c.m_max = 96 * ctx.nranks;
        c.chunks = 4;
        xcclGemmRs_t op = nullptr;
        if (!Create(ctx, c, &op)) return;
        const int64_t m = c.m_max;
        const GemmOperands o = MakeOperands(ctx.seed, ctx.rank, 0, c, m);
        std::vector<uint8_t> out(static_cast<size_t>(m / ctx.nranks * c.n) * 2);
        if (ctx.rank == victim) {
          const int delay_ms = 30 + static_cast<int>(ctx.seed % 60);
          std::thread([&ctx, delay_ms] {
            std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
            __atomic_store_n(const_cast<uint64_t*>(ctx.shared + kStampSlot), MonotonicNs(),
                             __ATOMIC_SEQ_CST);
            raise(SIGKILL);
          }).detach();
        }
        xcclResult_t result = xcclSuccess;
        int calls = 0;
        for (; calls < 100000 && result == xcclSuccess; ++calls)
          result =
              xcclGemmRsRun(op, o.a.data(), nullptr, o.b.data(), nullptr, m, out.data(), nullptr);
        if (ctx.rank == victim) {
          ctx.Fail("the victim outlived its kill (" + std::to_string(calls) + " calls)");
          return;
        }
        const uint64_t returned = MonotonicNs();
        const uint64_t died =
            __atomic_load_n(const_cast<uint64_t*>(ctx.shared + kStampSlot), __ATOMIC_SEQ_CST);
        const std::string message = xcclGetLastError(ctx.comm);
        RANK_EXPECT(
            ctx, result == xcclRemoteError || result == xcclTimeout,
            "after " << calls << " calls: " << xcclGetErrorString(result) << ": " << message);
        RANK_EXPECT(ctx, message.find("rank " + std::to_string(victim)) != std::string::npos,
                    "the error does not name rank " << victim << ": " << message);
        RANK_EXPECT(ctx, message.find("xcclGemmRsRun") != std::string::npos,
                    "the error does not name the call the user made: " << message);
        RANK_EXPECT(ctx, died != 0, "failed before the victim died: " << message);
        if (died != 0)
          RANK_EXPECT(ctx, (returned - died) * 1e-9 < 5.0,
                      "took " << (returned - died) * 1e-9 << " s after the death to fail");
        xcclGemmRsDestroy(op);
        xcclCommAbort(ctx.comm);
      },
      KilledRankOptions(victim));
  for (const auto& f : failures) ADD_FAILURE() << f;
  RestoreParams();
}

// The self test passes in both modes and several m; then rank 0 damages its partial for rank 1:
// rank 1's self test fails naming the element (row 1 x block rows, column 0), every other rank's
// passes, and the op still runs checked calls afterwards.
TEST_P(GemmRsTest, SelfTestPassesAndFindsACorruptedPartial) {
  Run([](RankContext& ctx) {
    std::unique_ptr<xccl::GemmPlugin> plugin = LoadReference(ctx);
    if (!plugin) return;
    for (const xcclGemmRsMode_t mode : {xcclGemmRsFused, xcclGemmRsSplit}) {
      Case c;
      c.mode = mode;
      c.chunks = 3;
      xcclGemmRs_t op = nullptr;
      if (!Create(ctx, c, &op)) return;
      for (const int64_t m : {int64_t{24} * ctx.nranks, int64_t{5} * ctx.nranks})
        RANK_EXPECT(ctx, xcclGemmRsSelfTest(op, m, nullptr) == xcclSuccess,
                    ModeText(mode) << " self test, m " << m << ": " << xcclGetLastError(ctx.comm));
      RANK_EXPECT(ctx, xcclGemmRsSelfTest(op, 24 * ctx.nranks + 1, nullptr) == xcclInvalidArgument,
                  "a self test of m not a multiple of the ranks was taken");
      if (ctx.nranks > 1) {
        if (ctx.rank == 0)
          RANK_EXPECT(ctx, xccl::CorruptGemmRsPartialForTesting(op) == xcclSuccess, "corrupt");
        const xcclResult_t r = xcclGemmRsSelfTest(op, 24 * ctx.nranks, nullptr);
        const std::string message = xcclGetLastError(ctx.comm);
        if (ctx.rank == 1) {
          RANK_EXPECT(ctx, r == xcclInternalError,
                      "the corrupted self test: " << xcclGetErrorString(r) << ": " << message);
          RANK_EXPECT(ctx,
                      message.find("1 of") != std::string::npos &&
                          message.find("row 24 column 0") != std::string::npos,
                      "the message does not name the one wrong element: " << message);
        } else {
          RANK_EXPECT(ctx, r == xcclSuccess,
                      "rank " << ctx.rank << "'s rows were not damaged: " << message);
        }
      }
      std::vector<uint8_t> rows;
      if (RunCall(ctx, op, c, 24 * ctx.nranks, 500 + mode, &rows))
        CheckRows(ctx, *plugin, c, 24 * ctx.nranks, 500 + mode, rows);
      RANK_EXPECT(ctx, xcclGemmRsDestroy(op) == xcclSuccess, xcclGetLastError(ctx.comm));
    }
  });
}

std::string WorldName(const ::testing::TestParamInfo<std::tuple<RankMode, int>>& info) {
  return std::string(ModeName(std::get<0>(info.param))) + "World" +
         std::to_string(std::get<1>(info.param));
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, GemmRsTest,
                         ::testing::Combine(::testing::Values(RankMode::kThreads),
                                            ::testing::Values(1, 2, 3, 4)),
                         WorldName);
INSTANTIATE_TEST_SUITE_P(HostProcesses, GemmRsTest,
                         ::testing::Combine(::testing::Values(RankMode::kProcesses),
                                            ::testing::Values(2, 3)),
                         WorldName);

}  // namespace
}  // namespace xccl_test
