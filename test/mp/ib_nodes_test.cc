// The ib backend under the whole library: ranks as threads of one process (the fake verbs
// provider is one in-process fabric) on 2 or 3 "nodes" (XCCL_FAKE_NODES), XCCL_NET=ib and
// XCCL_IBVERBS_LIB pointing at the fake: validated all_gathers of sizes that take one piece and
// many, and injected faults (retry exceeded, remote access, flush, port down) ending in a clear
// error on every rank well within the deadline. Also the real libibverbs with no device:
// XCCL_NET=ib fails init on every rank saying so, auto takes sockets.
#if XCCL_HAVE_IBVERBS && defined(XCCL_TEST_IB_FAKE_PATH)

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "base/params.h"
#include "ib_fake/fake_verbs_handle.h"
#include "mp/data_pattern.h"
#include "mp/rank_runner.h"
#include "mp/test_params.h"
#include "transport/net/ib_net.h"

namespace xccl_test {
namespace {

xccl_test::FakeVerbs& Fake() {
  static FakeVerbs fake;
  static const bool opened = [] {
    std::string why;
    const bool ok = fake.Open(XCCL_TEST_IB_FAKE_PATH, &why);
    EXPECT_TRUE(ok) << why;
    return ok;
  }();
  (void)opened;
  return fake;
}

std::function<void()> WithIb(const std::string& net, const std::string& library,
                             int64_t timeout_ms) {
  return [=] {
    xccl::Params params = xccl::GetParams();
    params.net = net;
    params.ibverbs_lib = library;
    params.ib_hca = "";
    params.socket_ifname = "lo";
    params.timeout_ms = timeout_ms;
    xccl::SetParamsForTesting(params);
  };
}

// One validated all_gather of `count` uint32 per rank; "" or what went wrong.
std::string GatherOnce(RankContext& ctx, size_t count, uint64_t call, xcclResult_t* result) {
  std::vector<uint32_t> send(count), recv(count * ctx.nranks);
  FillBlock(send.data(), count * 4, ctx.seed, ctx.rank, call);
  Poison(recv.data(), recv.size() * 4);
  *result = xcclAllGather(send.data(), recv.data(), count, xcclUint32, ctx.comm, nullptr);
  if (*result != xcclSuccess) return xcclGetLastError(ctx.comm);
  return CheckGathered(recv.data(), count * 4, ctx.nranks, ctx.seed, call, 4);
}

class IbNodesTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_NE(Fake().configure, nullptr);
    if (Fake().live_objects() != 0) GTEST_SKIP() << "verbs objects of an earlier test are alive";
    ASSERT_EQ(Fake().configure("fakeib0:1"), 0);
    Fake().inject("");
  }
  void TearDown() override {
    Fake().inject("");
    Fake().set_port_state("fakeib0", 1, 1);
    RestoreParams();
    EXPECT_EQ(Fake().live_objects(), 0) << "the communicators left verbs objects alive";
  }
};

TEST_P(IbNodesTest, AllGathersOverTheFakeFabric) {
  const std::string nodes = GetParam();
  int world = 0;
  for (char c : nodes)
    if (c >= '0' && c <= '9') world += c - '0';
  for (const char* net : {"ib", "auto"}) {
    RunOptions options;
    options.before_init = Both(WithFakeNodes(nodes), WithIb(net, XCCL_TEST_IB_FAKE_PATH, 30000));
    const long writes_before = Fake().writes();
    const auto failures = RunRanks(
        RankMode::kThreads, world,
        [](RankContext& ctx) {
          uint64_t call = 0;
          // One piece, a few pieces of the staging, and a size that is no multiple of anything.
          for (size_t count : {size_t(1), size_t(3000), size_t(400000), size_t(777777)}) {
            xcclResult_t result;
            const std::string wrong = GatherOnce(ctx, count, call++, &result);
            RANK_EXPECT(ctx, wrong.empty(), count << " elements: " << wrong);
          }
        },
        options);
    RestoreParams();
    for (const std::string& f : failures) ADD_FAILURE() << net << " " << nodes << ": " << f;
    EXPECT_GT(Fake().writes(), writes_before) << net << ": the data went over the fake";
  }
}

INSTANTIATE_TEST_SUITE_P(HostNodes, IbNodesTest, ::testing::Values("1,1", "2,2", "2,1", "1,1,1"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name;
                           for (const char* p = info.param; *p; ++p) name += *p == ',' ? 'x' : *p;
                           return "Nodes" + name;
                         });

class IbFaultTest : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    ASSERT_NE(Fake().configure, nullptr);
    if (Fake().live_objects() != 0) GTEST_SKIP() << "verbs objects of an earlier test are alive";
    ASSERT_EQ(Fake().configure("fakeib0:1"), 0);
    Fake().inject("");
  }
  void TearDown() override {
    Fake().inject("");
    Fake().set_port_state("fakeib0", 1, 1);
    RestoreParams();
    EXPECT_EQ(Fake().live_objects(), 0) << "the communicators left verbs objects alive";
  }
};

// A warm-up call, then a fault armed on the 3rd data write of the process: within three calls
// every rank has failed with a message, long before the 30 s deadline.
TEST_P(IbFaultTest, EveryRankFailsClearlyWithinTheDeadline) {
  const std::string fault = GetParam();
  RunOptions options;
  options.before_init = Both(WithFakeNodes("2,2"), WithIb("ib", XCCL_TEST_IB_FAKE_PATH, 30000));
  const auto failures = RunRanks(
      RankMode::kThreads, 4,
      [&fault](RankContext& ctx) {
        xcclResult_t result;
        const std::string warm = GatherOnce(ctx, 5000, 0, &result);
        RANK_EXPECT(ctx, warm.empty(), "warm-up: " << warm);
        // Every rank is past its warm-up before the fault is armed (shared[0] counts them).
        __atomic_add_fetch(&ctx.shared[0], 1, __ATOMIC_SEQ_CST);
        RANK_EXPECT(ctx, WaitForCount(&ctx.shared[0], ctx.nranks), "a rank never warmed up");
        if (ctx.rank == 0) {
          Fake().inject(fault.c_str());
          __atomic_store_n(&ctx.shared[1], 1, __ATOMIC_SEQ_CST);
        }
        RANK_EXPECT(ctx, WaitForCount(&ctx.shared[1], 1), "the fault was never armed");
        const auto start = std::chrono::steady_clock::now();
        std::string message;
        for (uint64_t call = 1; call <= 3 && message.empty(); ++call) {
          const std::string wrong = GatherOnce(ctx, 300000, call, &result);
          if (result != xcclSuccess)
            message = wrong;
          else
            RANK_EXPECT(ctx, wrong.empty(), "a call that succeeded returned wrong data: " << wrong);
        }
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        RANK_EXPECT(ctx, !message.empty(), "no call failed after the fault " << fault);
        RANK_EXPECT(ctx, seconds < 10, "failing took " << seconds << " s");
        RANK_EXPECT(ctx, message.find("rank") != std::string::npos,
                    "the error names no rank: " << message);
        // The rank whose QP took the fault names the device, the QP and the status, or for a
        // port that went down (seen by the port watch or by a completion, whichever is first)
        // that the port is DOWN.
        if (message.find("net ib: fakeib0 port 1 QP") != std::string::npos &&
            (message.find("status") != std::string::npos ||
             message.find("the port is DOWN") != std::string::npos))
          __atomic_add_fetch(&ctx.shared[2], 1, __ATOMIC_SEQ_CST);
        // Every rank has its answer before rank 0 counts the messages (shared[3]).
        __atomic_add_fetch(&ctx.shared[3], 1, __ATOMIC_SEQ_CST);
        RANK_EXPECT(ctx, WaitForCount(&ctx.shared[3], ctx.nranks), "a rank never finished");
        if (ctx.rank == 0)
          RANK_EXPECT(ctx, __atomic_load_n(&ctx.shared[2], __ATOMIC_SEQ_CST) >= 1,
                      "no rank's error named the device, QP and completion status");
      },
      options);
  for (const std::string& f : failures) ADD_FAILURE() << fault << ": " << f;
}

INSTANTIATE_TEST_SUITE_P(HostNodes, IbFaultTest,
                         ::testing::Values("imm:3:retry", "imm:3:rem_access", "imm:3:flush",
                                           "imm:3:port_down"),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           std::string name;
                           for (const char* p = info.param + 6; *p; ++p)
                             if (*p != '_') name += *p;
                           return name;
                         });

// The real libibverbs on a machine without an RDMA device: ib fails init naming the parameter
// and the cause on every rank; auto takes sockets.
TEST(IbNoDeviceTest, RealLibibverbsIbFailsAndAutoTakesSockets) {
  {
    std::unique_ptr<xccl::NetBackend> net;
    std::string why;
    xccl::IbNetOptions probe{"libibverbs.so.1", "", "lo"};
    if (xccl::OpenIbNet(probe, &net, &why)) GTEST_SKIP() << "this machine has an RDMA port";
    if (why.find("cannot open") != std::string::npos)
      GTEST_SKIP() << "libibverbs.so.1 is not installed: " << why;
  }
  RunOptions options;
  options.before_init = Both(WithFakeNodes("1,1"), WithIb("ib", "libibverbs.so.1", 30000));
  const auto failures = RunRanks(
      RankMode::kThreads, 2, [](RankContext&) {}, options);
  RestoreParams();
  bool said = false;
  for (const std::string& f : failures)
    said = said || (f.find("XCCL_NET=ib: no RDMA device") != std::string::npos);
  EXPECT_TRUE(said) << "XCCL_NET=ib with no device must fail init saying so";
  options.before_init = Both(WithFakeNodes("1,1"), WithIb("auto", "libibverbs.so.1", 30000));
  const auto auto_failures = RunRanks(
      RankMode::kThreads, 2,
      [](RankContext& ctx) {
        xcclResult_t result;
        const std::string wrong = GatherOnce(ctx, 3000, 0, &result);
        RANK_EXPECT(ctx, wrong.empty(), wrong);
      },
      options);
  RestoreParams();
  for (const std::string& f : auto_failures) ADD_FAILURE() << "auto: " << f;
}

}  // namespace
}  // namespace xccl_test

#endif  // XCCL_HAVE_IBVERBS && XCCL_TEST_IB_FAKE_PATH
