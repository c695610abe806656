// The public C API's argument checks that need no communicator: NULL and foreign handles, bad
// ranks and ids, version and error strings. Nothing here opens a socket or waits on a peer.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "xccl.h"

namespace {

std::string LastError() {
  const char* text = xcclGetLastError(nullptr);
  EXPECT_NE(text, nullptr);
  return text ? text : "";
}

xcclUniqueId RandomId(std::mt19937_64& rng) {
  xcclUniqueId id;
  for (char& c : id.internal) c = static_cast<char>(rng());
  return id;
}

struct EntryPoint {
  const char* name;
  std::function<xcclResult_t(xcclComm_t)> call;
};

// Every entry point that takes a communicator, called with `comm` and otherwise valid arguments.
std::vector<EntryPoint> CommEntryPoints(int* out_int, xcclResult_t* out_result,
                                        std::vector<char>* buffer) {
  char* data = buffer->data();
  return {
      {"xcclCommFinalize", [](xcclComm_t c) { return xcclCommFinalize(c); }},
      {"xcclCommDestroy", [](xcclComm_t c) { return xcclCommDestroy(c); }},
      {"xcclCommAbort", [](xcclComm_t c) { return xcclCommAbort(c); }},
      {"xcclCommGetAsyncError",
       [out_result](xcclComm_t c) { return xcclCommGetAsyncError(c, out_result); }},
      {"xcclCommCount", [out_int](xcclComm_t c) { return xcclCommCount(c, out_int); }},
      {"xcclCommUserRank", [out_int](xcclComm_t c) { return xcclCommUserRank(c, out_int); }},
      {"xcclCommDevice", [out_int](xcclComm_t c) { return xcclCommDevice(c, out_int); }},
      {"xcclCommQueueCount", [out_int](xcclComm_t c) { return xcclCommQueueCount(c, out_int); }},
      {"xcclCommNodeInfo",
       [out_int](xcclComm_t c) { return xcclCommNodeInfo(c, out_int, out_int, out_int, out_int); }},
      {"xcclCommRankNode",
       [out_int](xcclComm_t c) { return xcclCommRankNode(c, 0, out_int, out_int); }},
      {"xcclAllGather",
       [data](xcclComm_t c) {
         return xcclAllGather(data, data + 64, 16, xcclFloat32, c, nullptr);
       }},
      {"xcclBarrier", [](xcclComm_t c) { return xcclBarrier(c, nullptr); }},
  };
}

TEST(ApiValidationTest, NullCommRejectedByEveryEntryPoint) {
  int out_int = -777;
  xcclResult_t out_result = xcclNumResults;
  std::vector<char> buffer(1024, 0x5a);
  for (const EntryPoint& entry : CommEntryPoints(&out_int, &out_result, &buffer)) {
    SCOPED_TRACE(entry.name);
    EXPECT_EQ(entry.call(nullptr), xcclInvalidArgument);
    const std::string message = LastError();
    EXPECT_FALSE(message.empty());
    EXPECT_NE(message.find(entry.name), std::string::npos) << message;
    EXPECT_EQ(out_int, -777) << "output written on failure";
    EXPECT_EQ(out_result, xcclNumResults) << "output written on failure";
  }
  // NULL comm and NULL output together.
  EXPECT_EQ(xcclCommCount(nullptr, nullptr), xcclInvalidArgument);
  EXPECT_EQ(xcclCommGetAsyncError(nullptr, nullptr), xcclInvalidArgument);
  for (char c : buffer) ASSERT_EQ(c, 0x5a) << "buffer touched";
}

TEST(ApiValidationTest, ForeignHandleRejectedByEveryEntryPoint) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  // Memory that is not a communicator: random words, the first one (where a handle keeps its
  // magic) fixed to something that is neither a live nor a destroyed handle's.
  std::vector<uint64_t> junk(512);
  for (uint64_t& word : junk) word = rng();
  junk[0] = 0x0123456789abcdefull;
  const std::vector<uint64_t> before = junk;
  xcclComm_t foreign = reinterpret_cast<xcclComm_t>(junk.data());
  int out_int = -777;
  xcclResult_t out_result = xcclNumResults;
  std::vector<char> buffer(1024, 0x5a);
  for (const EntryPoint& entry : CommEntryPoints(&out_int, &out_result, &buffer)) {
    SCOPED_TRACE(entry.name);
    EXPECT_EQ(entry.call(foreign), xcclInvalidArgument);
    EXPECT_NE(LastError().find(entry.name), std::string::npos) << LastError();
    // The handle's own error text is not readable, so the thread's is given.
    EXPECT_STREQ(xcclGetLastError(foreign), xcclGetLastError(nullptr));
  }
  EXPECT_EQ(out_int, -777);
  EXPECT_EQ(junk, before) << "a check wrote into memory that is not a communicator";
}

TEST(ApiValidationTest, Version) {
  EXPECT_EQ(xcclGetVersion(nullptr), xcclInvalidArgument);
  EXPECT_FALSE(LastError().empty());
  int version = -1;
  ASSERT_EQ(xcclGetVersion(&version), xcclSuccess);
  EXPECT_EQ(version, XCCL_VERSION_CODE);
  EXPECT_EQ(version, XCCL_MAJOR * 10000 + XCCL_MINOR * 100 + XCCL_PATCH);
}

TEST(ApiValidationTest, PlatformNameIsTheBuilt) {
  const std::string name = xcclGetPlatformName();
  EXPECT_TRUE(name == "host" || name == "cuda" || name == "hip") << name;
#if defined(XCCL_PLATFORM_HOST)
  EXPECT_EQ(name, "host");
#endif
}

TEST(ApiValidationTest, ErrorStringsNonEmptyAndDistinct) {
  std::set<std::string> seen;
  for (int code = 0; code < xcclNumResults; ++code) {
    const char* text = xcclGetErrorString(static_cast<xcclResult_t>(code));
    ASSERT_NE(text, nullptr) << code;
    EXPECT_STRNE(text, "") << code;
    EXPECT_TRUE(seen.insert(text).second) << "code " << code << " repeats \"" << text << '"';
  }
  EXPECT_EQ(seen.size(), 9u);
  // Out of range but representable (values beyond the enum's range are undefined in C++).
  for (int code : {9, 10, 15}) {
    const char* text = xcclGetErrorString(static_cast<xcclResult_t>(code));
    ASSERT_NE(text, nullptr) << code;
    EXPECT_STRNE(text, "") << code;
    EXPECT_EQ(seen.count(text), 0u) << "out-of-range code " << code << " reads as a valid one";
  }
}

TEST(ApiValidationTest, GetUniqueIdNull) {
  EXPECT_EQ(xcclGetUniqueId(nullptr), xcclInvalidArgument);
  EXPECT_FALSE(LastError().empty());
}

TEST(ApiValidationTest, InitRankBadRankOrSize) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const xcclUniqueId id = RandomId(rng);
  struct Case {
    int nranks;
    int rank;
    const char* names;  // what the message must mention
  };
  const Case cases[] = {{0, 0, "nranks"},       {-1, 0, "nranks"},     {INT32_MIN, 0, "nranks"},
                        {4, -1, "rank -1"},     {4, 4, "rank 4"},      {1, 1, "rank 1"},
                        {8, INT32_MAX, "rank"}, {8, INT32_MIN, "rank"}};
  xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
  for (const Case& c : cases) {
    SCOPED_TRACE("nranks " + std::to_string(c.nranks) + " rank " + std::to_string(c.rank));
    xcclComm_t comm = reinterpret_cast<xcclComm_t>(uintptr_t{0xBADC0FFEE});
    EXPECT_EQ(xcclCommInitRank(&comm, c.nranks, id, c.rank), xcclInvalidArgument);
    EXPECT_EQ(comm, nullptr) << "output left dangling";
    EXPECT_NE(LastError().find(c.names), std::string::npos) << LastError();
    comm = reinterpret_cast<xcclComm_t>(uintptr_t{0xBADC0FFEE});
    EXPECT_EQ(xcclCommInitRankConfig(&comm, c.nranks, id, c.rank, &config), xcclInvalidArgument);
    EXPECT_EQ(comm, nullptr);
    EXPECT_NE(LastError().find(c.names), std::string::npos) << LastError();
  }
}

TEST(ApiValidationTest, InitRankNullOutput) {
  std::mt19937_64 rng(1);
  const xcclUniqueId id = RandomId(rng);
  EXPECT_EQ(xcclCommInitRank(nullptr, 2, id, 0), xcclInvalidArgument);
  EXPECT_NE(LastError().find("comm"), std::string::npos) << LastError();
  xcclConfig_t config = XCCL_CONFIG_INITIALIZER;
  EXPECT_EQ(xcclCommInitRankConfig(nullptr, 2, id, 0, &config), xcclInvalidArgument);
  EXPECT_NE(LastError().find("comm"), std::string::npos) << LastError();
}

struct TimedResult {
  bool returned = false;
  xcclResult_t result = xcclSuccess;
  std::string message;
  xcclComm_t comm = nullptr;
  std::chrono::steady_clock::duration elapsed{};
};

// Runs xcclCommInitRank on a thread of its own, so that a call that never returns fails the
// test instead of hanging it (the stuck thread is left behind, owning everything it touches).
TimedResult InitRankWithin(std::chrono::milliseconds limit, int nranks, xcclUniqueId id, int rank) {
  struct Shared {
    xcclResult_t result = xcclSuccess;
    std::string message;
    xcclComm_t comm = reinterpret_cast<xcclComm_t>(uintptr_t{0xBADC0FFEE});
  };
  auto shared = std::make_shared<Shared>();
  auto done = std::make_shared<std::promise<void>>();
  std::future<void> finished = done->get_future();
  const auto start = std::chrono::steady_clock::now();
  std::thread([shared, done, nranks, id, rank] {
    shared->result = xcclCommInitRank(&shared->comm, nranks, id, rank);
    shared->message = xcclGetLastError(nullptr);
    done->set_value();
  }).detach();
  TimedResult out;
  if (finished.wait_for(limit) != std::future_status::ready) return out;
  out.elapsed = std::chrono::steady_clock::now() - start;
  out.returned = true;
  out.result = shared->result;
  out.message = shared->message;
  out.comm = shared->comm;
  return out;
}

TEST(ApiValidationTest, GarbageIdRejectedWithoutWaiting) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<xcclUniqueId> ids;
  for (int i = 0; i < 8; ++i) ids.push_back(RandomId(rng));
  xcclUniqueId zeros;
  memset(&zeros, 0, sizeof(zeros));
  ids.push_back(zeros);
  xcclUniqueId ones;
  memset(&ones, 0xFF, sizeof(ones));
  ids.push_back(ones);
  // Random bytes behind a plausible header ("xcid", format 1): only the checksum can tell.
  for (int i = 0; i < 4; ++i) {
    xcclUniqueId id = RandomId(rng);
    memcpy(id.internal, "xcid\0\1", 6);
    ids.push_back(id);
  }
  for (size_t i = 0; i < ids.size(); ++i) {
    for (int nranks : {1, 2}) {
      SCOPED_TRACE("id " + std::to_string(i) + " nranks " + std::to_string(nranks));
      const TimedResult r = InitRankWithin(std::chrono::milliseconds(5000), nranks, ids[i], 0);
      ASSERT_TRUE(r.returned) << "xcclCommInitRank with a garbage id did not return in 5 s";
      EXPECT_EQ(r.result, xcclInvalidArgument) << r.message;
      EXPECT_EQ(r.comm, nullptr);
      EXPECT_FALSE(r.message.empty());
      EXPECT_LT(r.elapsed, std::chrono::seconds(1));
    }
  }
}

TEST(ApiValidationTest, InitAllBadArguments) {
  xcclComm_t comms[4];
  EXPECT_EQ(xcclCommInitAll(nullptr, 2, nullptr), xcclInvalidArgument);
  EXPECT_NE(LastError().find("comms"), std::string::npos) << LastError();
  for (int ndev : {0, -1, INT32_MIN}) {
    SCOPED_TRACE("ndev " + std::to_string(ndev));
    EXPECT_EQ(xcclCommInitAll(comms, ndev, nullptr), xcclInvalidArgument);
    EXPECT_NE(LastError().find("ndev"), std::string::npos) << LastError();
  }
  EXPECT_EQ(xcclCommInitAll(nullptr, 0, nullptr), xcclInvalidArgument);
  // A negative device is refused before any rank starts.
  const int devlist[] = {0, 0, -1, 0};
  for (xcclComm_t& c : comms) c = reinterpret_cast<xcclComm_t>(uintptr_t{0xBADC0FFEE});
  EXPECT_EQ(xcclCommInitAll(comms, 4, devlist), xcclInvalidArgument);
  EXPECT_NE(LastError().find("devlist"), std::string::npos) << LastError();
  EXPECT_EQ(comms[0], nullptr);
  EXPECT_EQ(comms[1], nullptr);
  EXPECT_EQ(comms[2], nullptr);
}

TEST(ApiValidationTest, LastErrorIsPerThread) {
  EXPECT_EQ(xcclCommCount(nullptr, nullptr), xcclInvalidArgument);
  const std::string mine = LastError();
  ASSERT_NE(mine.find("xcclCommCount"), std::string::npos) << mine;
  std::string theirs;
  std::thread([&] {
    theirs = xcclGetLastError(nullptr);  // nothing failed on this thread yet
    EXPECT_EQ(xcclBarrier(nullptr, nullptr), xcclInvalidArgument);
    EXPECT_NE(std::string(xcclGetLastError(nullptr)).find("xcclBarrier"), std::string::npos);
  }).join();
  EXPECT_EQ(theirs, "");
  EXPECT_EQ(LastError(), mine);
}

}  // namespace
