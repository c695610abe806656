// xcclMemAlloc, windows and local registrations on the host platform, as threads and as
// processes: every argument check (NULL, size 0, a buffer not from xcclMemAlloc, double
// deregister, another communicator's window, freeing a registered allocation), and all_gathers
// into window buffers checked on every byte: registered and plain buffers mixed between calls
// and between the ranks of one call, after deregistration, and after freeing and allocating
// again. The GPU zero-copy engine itself runs in the gpu suite.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "base/datatype.h"
#include "mp/data_pattern.h"
#include "mp/rank_runner.h"

namespace xccl_test {
namespace {

std::string LastError(xcclComm_t comm) { return xcclGetLastError(comm); }

TEST(MemAlloc, ArgumentsAreChecked) {
  EXPECT_EQ(xcclMemAlloc(nullptr, 64), xcclInvalidArgument);
  EXPECT_NE(LastError(nullptr).find("ptr is NULL"), std::string::npos) << LastError(nullptr);
  void* p = reinterpret_cast<void*>(0x1);
  EXPECT_EQ(xcclMemAlloc(&p, 0), xcclInvalidArgument);
  EXPECT_NE(LastError(nullptr).find("size is 0"), std::string::npos) << LastError(nullptr);
  EXPECT_EQ(p, reinterpret_cast<void*>(0x1)) << "nothing written on a refusal";
  EXPECT_EQ(xcclMemFree(nullptr), xcclSuccess);
  std::vector<char> heap(64);
  EXPECT_EQ(xcclMemFree(heap.data()), xcclInvalidArgument);
  EXPECT_NE(LastError(nullptr).find("not returned by xcclMemAlloc"), std::string::npos)
      << LastError(nullptr);
}

TEST(MemAlloc, PageAlignedWritableAndFreedOnce) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::mt19937_64 rng(std::random_device{}());
  for (int i = 0; i < 8; ++i) {
    const size_t bytes = 1 + rng() % (3 << 20);
    void* p = nullptr;
    ASSERT_EQ(xcclMemAlloc(&p, bytes), xcclSuccess) << LastError(nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % page, 0u);
    FillBlock(p, bytes, rng(), 0, i);
    std::vector<unsigned char> copy(static_cast<unsigned char*>(p),
                                    static_cast<unsigned char*>(p) + bytes);
    EXPECT_EQ(memcmp(copy.data(), p, bytes), 0);
    // An interior pointer is not an allocation.
    if (bytes > 1) {
      EXPECT_EQ(xcclMemFree(static_cast<char*>(p) + 1), xcclInvalidArgument);
    }
    EXPECT_EQ(xcclMemFree(p), xcclSuccess) << LastError(nullptr);
    EXPECT_EQ(xcclMemFree(p), xcclInvalidArgument) << "a second free is refused";
  }
}

// (mode, world)
using Param = std::tuple<RankMode, int>;

class WindowTest : public ::testing::TestWithParam<Param> {
 protected:
  RankMode mode() const { return std::get<0>(GetParam()); }
  int world() const { return std::get<1>(GetParam()); }
  void Run(const std::function<void(RankContext&)>& body) {
    for (const auto& failure : RunRanks(mode(), world(), body)) ADD_FAILURE() << failure;
  }
};

// Every rank's window register either succeeds on all or fails on all.
TEST_P(WindowTest, RegistrationChecksFailEveryRankAndNamingTheCause) {
  Run([](RankContext& ctx) {
    void* mem = nullptr;
    RANK_EXPECT(ctx, xcclMemAlloc(&mem, 1 << 16) == xcclSuccess, LastError(nullptr));
    xcclWindow_t win = nullptr;
    // NULL comm and an unknown flag are refused before the collective part, on every rank.
    RANK_EXPECT(ctx, xcclCommWindowRegister(nullptr, mem, 4096, &win, 0) == xcclInvalidArgument,
                "NULL comm");
    RANK_EXPECT(ctx, xcclCommWindowRegister(ctx.comm, mem, 4096, &win, 0x80) == xcclInvalidArgument,
                "unknown flag");
    // The last rank passes a bad argument: it fails with the cause, its peers name it.
    const int bad = ctx.nranks - 1;
    std::vector<char> heap(4096);
    struct Case {
      const char* what;
      void* buff;
      size_t size;
      bool null_win;
      const char* message;
    } cases[] = {
        {"NULL buff", nullptr, 4096, false, "needs a buffer"},
        {"size 0", mem, 0, false, "needs a buffer"},
        {"heap buffer", heap.data(), 4096, false, "xcclMemAlloc"},
        {"past the allocation", static_cast<char*>(mem) + 4096, 1 << 16, false, "xcclMemAlloc"},
        {"NULL win", mem, 4096, true, "win is NULL"},
    };
    for (const Case& c : cases) {
      const bool mine = ctx.rank == bad;
      xcclWindow_t w = nullptr;
      const xcclResult_t r =
          xcclCommWindowRegister(ctx.comm, mine ? c.buff : mem, mine ? c.size : 4096,
                                 mine && c.null_win ? nullptr : &w, 0);
      const std::string error = LastError(ctx.comm);
      if (mine) {
        RANK_EXPECT(ctx, r == xcclInvalidArgument, c.what << ": " << xcclGetErrorString(r));
        RANK_EXPECT(ctx, error.find(c.message) != std::string::npos, c.what << ": " << error);
      } else {
        RANK_EXPECT(ctx, r == xcclRemoteError, c.what << ": " << xcclGetErrorString(r));
        RANK_EXPECT(ctx, error.find("rank " + std::to_string(bad)) != std::string::npos,
                    c.what << ": " << error);
      }
      RANK_EXPECT(ctx, w == nullptr, c.what << ": a failed registration hands out no window");
    }
    // Nothing stayed pinned: the allocation frees.
    RANK_EXPECT(ctx, xcclMemFree(mem) == xcclSuccess, LastError(nullptr));
  });
}

TEST_P(WindowTest, DeregisterRefusesStaleAndForeignWindowsAndFreeWaitsForIt) {
  Run([](RankContext& ctx) {
    void* mem = nullptr;
    RANK_EXPECT(ctx, xcclMemAlloc(&mem, 1 << 16) == xcclSuccess, LastError(nullptr));
    xcclWindow_t win = nullptr;
    xcclResult_t r = xcclCommWindowRegister(ctx.comm, static_cast<char*>(mem) + 256, 8192, &win, 0);
    RANK_EXPECT(ctx, r == xcclSuccess, LastError(ctx.comm));
    if (r != xcclSuccess) return;
    RANK_EXPECT(ctx, xcclMemFree(mem) == xcclInvalidUsage, "a registered allocation is kept");
    RANK_EXPECT(ctx, LastError(nullptr).find("Deregister") != std::string::npos,
                LastError(nullptr));
    // Another rank's (so another communicator's) window, and a made-up one, are refused.
    ctx.shared[ctx.rank] = reinterpret_cast<uintptr_t>(win);
    RANK_EXPECT(ctx, xcclBarrier(ctx.comm, nullptr) == xcclSuccess, LastError(ctx.comm));
    const int other = (ctx.rank + 1) % ctx.nranks;
    xcclWindow_t foreign =
        reinterpret_cast<xcclWindow_t>(static_cast<uintptr_t>(ctx.shared[other]));
    if (foreign != win) {
      RANK_EXPECT(ctx, xcclCommWindowDeregister(ctx.comm, foreign) == xcclInvalidArgument,
                  "another communicator's window");
      RANK_EXPECT(
          ctx, LastError(ctx.comm).find("not registered on this communicator") != std::string::npos,
          LastError(ctx.comm));
    }
    int on_stack = 0;
    RANK_EXPECT(ctx,
                xcclCommWindowDeregister(ctx.comm, reinterpret_cast<xcclWindow_t>(&on_stack)) ==
                    xcclInvalidArgument,
                "a made-up window");
    RANK_EXPECT(ctx, xcclCommWindowDeregister(nullptr, win) == xcclInvalidArgument, "NULL comm");
    RANK_EXPECT(ctx, xcclCommWindowDeregister(ctx.comm, win) == xcclSuccess, LastError(ctx.comm));
    RANK_EXPECT(ctx, xcclCommWindowDeregister(ctx.comm, win) == xcclInvalidArgument,
                "double deregister");
    RANK_EXPECT(ctx, xcclMemFree(mem) == xcclSuccess, LastError(nullptr));
  });
}

TEST_P(WindowTest, LocalRegistrationChecks) {
  Run([](RankContext& ctx) {
    std::vector<char> buffer(4096);
    void* handle = nullptr;
    RANK_EXPECT(ctx, xcclCommRegister(nullptr, buffer.data(), 4096, &handle) == xcclInvalidArgument,
                "NULL comm");
    RANK_EXPECT(ctx,
                xcclCommRegister(ctx.comm, buffer.data(), 4096, nullptr) == xcclInvalidArgument,
                "NULL handle");
    RANK_EXPECT(ctx, xcclCommRegister(ctx.comm, nullptr, 4096, &handle) == xcclInvalidArgument,
                "NULL buff");
    RANK_EXPECT(ctx, xcclCommRegister(ctx.comm, buffer.data(), 0, &handle) == xcclInvalidArgument,
                "size 0");
    RANK_EXPECT(ctx, xcclCommRegister(ctx.comm, buffer.data(), 4096, &handle) == xcclSuccess,
                LastError(ctx.comm));
    int on_stack = 0;
    RANK_EXPECT(ctx, xcclCommDeregister(ctx.comm, &on_stack) == xcclInvalidArgument, "made up");
    RANK_EXPECT(ctx, xcclCommDeregister(ctx.comm, handle) == xcclSuccess, LastError(ctx.comm));
    RANK_EXPECT(ctx, xcclCommDeregister(ctx.comm, handle) == xcclInvalidArgument, "twice");
    RANK_EXPECT(
        ctx, LastError(ctx.comm).find("not registered on this communicator") != std::string::npos,
        LastError(ctx.comm));
  });
}

// One checked all_gather into `recv` (nranks blocks of `count` elements), in or out of place.
void CheckedInto(RankContext& ctx, unsigned char* recv, size_t count, int dtype, bool in_place,
                 uint64_t call) {
  const size_t elem = xccl::DataTypeSize(dtype), block = count * elem;
  std::vector<unsigned char> send_storage(block + 1);
  unsigned char* send = in_place ? recv + ctx.rank * block : send_storage.data();
  Poison(recv, block * ctx.nranks);
  FillBlock(send, block, ctx.seed, ctx.rank, call);
  const xcclResult_t r =
      xcclAllGather(send, recv, count, static_cast<xcclDataType_t>(dtype), ctx.comm, nullptr);
  RANK_EXPECT(ctx, r == xcclSuccess, "call " << call << ": " << LastError(ctx.comm));
  if (r != xcclSuccess) return;
  const std::string wrong = CheckGathered(recv, block, ctx.nranks, ctx.seed, call, elem);
  RANK_EXPECT(ctx, wrong.empty(), "call " << call << " count " << count << ": " << wrong);
}

// Registered and plain receive buffers mixed between calls and between the ranks of one call;
// then deregistered; then freed and allocated again (maybe at the same address) and registered.
TEST_P(WindowTest, AllGatherIntoWindowsMixedDeregisteredAndReallocated) {
  Run([](RankContext& ctx) {
    std::mt19937_64 rng(ctx.seed);  // same draws on every rank
    const size_t max_total = size_t(3) << 20;
    uint64_t call = 0;
    for (int round = 0; round < 3; ++round) {
      void* mem = nullptr;
      RANK_EXPECT(ctx, xcclMemAlloc(&mem, max_total + 4 * 4096) == xcclSuccess, LastError(nullptr));
      if (mem == nullptr) return;
      unsigned char* in_window = static_cast<unsigned char*>(mem) + 4096 * (1 + round);
      xcclWindow_t win = nullptr;
      xcclResult_t r = xcclCommWindowRegister(ctx.comm, in_window, max_total, &win, 0);
      RANK_EXPECT(ctx, r == xcclSuccess, LastError(ctx.comm));
      if (r != xcclSuccess) return;
      std::vector<unsigned char> plain(max_total);
      for (int i = 0; i < 12; ++i, ++call) {
        const int dtype = static_cast<int>(rng() % xcclNumTypes);
        const size_t elem = xccl::DataTypeSize(dtype);
        const size_t count = (1 + rng() % (max_total / ctx.nranks)) / elem;
        const bool windowed = ((rng() >> (ctx.rank % 8)) & 1) != 0;  // differs between ranks
        CheckedInto(ctx, windowed ? in_window : plain.data(), count, dtype, (rng() & 1) != 0, call);
      }
      RANK_EXPECT(ctx, xcclCommWindowDeregister(ctx.comm, win) == xcclSuccess, LastError(ctx.comm));
      // The same buffer, no longer registered.
      for (int i = 0; i < 3; ++i, ++call)
        CheckedInto(ctx, in_window, 1 + rng() % 70000, xcclUint8, i == 1, call);
      RANK_EXPECT(ctx, xcclMemFree(mem) == xcclSuccess, LastError(nullptr));
    }
  });
}

INSTANTIATE_TEST_SUITE_P(HostPlatform, WindowTest,
                         ::testing::Combine(::testing::Values(RankMode::kThreads,
                                                              RankMode::kProcesses),
                                            ::testing::Values(2, 3, 4)),
                         [](const ::testing::TestParamInfo<Param>& info) {
                           return std::string(ModeName(std::get<0>(info.param))) + "World" +
                                  std::to_string(std::get<1>(info.param));
                         });

// World 1: out of place one copy, in place nothing.
TEST(WorldOne, AllGatherIsACopyOrNothing) {
  for (RankMode mode : {RankMode::kThreads, RankMode::kProcesses}) {
    for (const auto& failure : RunRanks(mode, 1, [](RankContext& ctx) {
           std::mt19937_64 rng(ctx.seed);
           std::vector<unsigned char> recv(1 << 20);
           for (uint64_t call = 0; call < 6; ++call)
             CheckedInto(ctx, recv.data(), 1 + rng() % (1 << 20), xcclUint8, call % 2 == 1, call);
         }))
      ADD_FAILURE() << ModeName(mode) << ": " << failure;
  }
}

}  // namespace
}  // namespace xccl_test
