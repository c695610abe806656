// The proxy's trigger feed (src/proxy/trigger_feed.h) on the host, the contract a GPU rank's
// trigger FIFO relies on: ops that reach the proxy only through the feed, with no call of the
// rank's thread to wake it, are all sent and land in order with their bytes, slot and epoch,
// also when they come after the proxy has gone to its longest nap. Two thread ranks on two fake
// nodes over the socket backend on loopback.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/params.h"
#include "base/topology.h"
#include "comm/topology_exchange.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/net/net_choice.h"
#include "transport/net/proxy/proxy.h"
#include "transport/net/proxy/trigger_feed.h"
#include "transport/window.h"

namespace xccl {
namespace {

constexpr int64_t kTimeoutMs = 10000;
constexpr int kOps = 64;
constexpr size_t kMaxOpBytes = 64 << 10;
// The slot every op raises, and the end of the slots a connection may raise (WindowGeometry).
constexpr int kArrivalSlot = ControlLayout::kFirstOpSlot;
constexpr int kSignalledSlots = ControlLayout::kFirstOpSlot + 2;

struct ExpectedOp {
  NetOp op;
  std::vector<uint8_t> bytes;
};

// The same ops on both ranks, from the seed: inbox ops of random sizes (a few empty ones as
// signals), epochs counting up.
std::vector<ExpectedOp> MakeOps(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<ExpectedOp> ops(kOps);
  for (int i = 0; i < kOps; ++i) {
    const size_t bytes = i % 9 == 4 ? 0 : 1 + rng() % kMaxOpBytes;
    ops[i].op.kind = bytes == 0 ? NetOp::kSignal : NetOp::kRegion;
    ops[i].op.slot = kArrivalSlot;
    ops[i].op.epoch = 1000u + static_cast<uint32_t>(i);
    ops[i].op.bytes = bytes;
    ops[i].bytes.resize(bytes);
    for (uint8_t& b : ops[i].bytes) b = static_cast<uint8_t>(rng());
  }
  return ops;
}

// Lands every op in one buffer (ops of a link land one at a time) and keeps a copy of each.
class RecordingLanding final : public NetLanding {
 public:
  xcclResult_t Destination(int peer, const NetOp& op, char** dst,
                           PlatformFailure* failure) override {
    XCCL_TRY(CheckWireOp(peer, op, kSignalledSlots, failure));
    if (op.bytes > buffer_.size())
      return SetFailure(failure, xcclInvalidUsage, peer, "an op of %llu bytes",
                        static_cast<unsigned long long>(op.bytes));
    *dst = reinterpret_cast<char*>(buffer_.data());
    return xcclSuccess;
  }
  void Landed(int /*peer*/, const NetOp& op) override {
    std::lock_guard<std::mutex> lock(mutex_);
    landed_.push_back({op, std::vector<uint8_t>(buffer_.begin(), buffer_.begin() + op.bytes)});
  }
  void Abandoned(int /*peer*/, const NetOp& /*op*/) override {}

  std::vector<ExpectedOp> landed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return landed_;
  }

 private:
  std::vector<uint8_t> buffer_ = std::vector<uint8_t>(kMaxOpBytes);
  mutable std::mutex mutex_;
  std::vector<ExpectedOp> landed_;
};

// Ops pushed by the test thread, handed to the proxy only when it drains the feed.
class TestFeed final : public TriggerFeed {
 public:
  void Push(const ExpectedOp& op) {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.push_back(op);
  }
  bool Drain(Proxy& proxy) override {
    std::lock_guard<std::mutex> lock(mutex_);
    bool any = false;
    while (!pending_.empty()) {
      sent_.push_back(std::move(pending_.front()));  // a deque: the bytes stay where they are
      pending_.pop_front();
      proxy.Enqueue(/*peer=*/1, sent_.back().op, sent_.back().bytes.data());
      any = true;
    }
    return any;
  }
  bool Expecting() const override { return false; }  // nothing announced: the proxy naps
  int MaxNapUs() const override { return Proxy::kMaxNapUs; }

 private:
  std::mutex mutex_;
  std::deque<ExpectedOp> pending_, sent_;
};

std::string Describe(const NetOp& op) {
  return "kind " + std::to_string(op.kind) + " slot " + std::to_string(op.slot) + " epoch " +
         std::to_string(op.epoch) + " bytes " + std::to_string(op.bytes);
}

TEST(ProxyFeed, OpsOnlyTheFeedCarriesLandInOrderAfterTheLongestNap) {
  const uint64_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  const std::vector<ExpectedOp> expected = MakeOps(seed);
  xcclUniqueId id;
  ASSERT_EQ(Bootstrap::CreateUniqueId(&id), xcclSuccess) << ThreadLastError();
  std::vector<std::string> failures(2);
  std::vector<std::thread> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      auto fail = [&](const std::string& what) {
        if (failures[r].empty()) failures[r] = "rank " + std::to_string(r) + ": " + what;
      };
      std::unique_ptr<Bootstrap> bootstrap;
      if (Bootstrap::Init(id, r, 2, kTimeoutMs, &bootstrap) != xcclSuccess)
        return fail("bootstrap: " + ThreadLastError());
      Params params;
      params.fake_nodes = "1,1";
      params.net = "socket";
      params.socket_ifname = "lo";
      Topology topology;
      std::unique_ptr<NetBackend> net, beats;
      if (ExchangeTopology(bootstrap.get(), 0, params, &topology) != xcclSuccess ||
          CreateNetBackends(params, topology, &net, &beats) != xcclSuccess)
        return fail("topology or backend: " + ThreadLastError());
      RecordingLanding landing;
      TestFeed feed;
      {
        Proxy proxy(topology, &landing, kTimeoutMs);
        if (r == 0) proxy.SetTriggerFeed(&feed);
        if (proxy.Connect(bootstrap.get(), std::move(net), std::move(beats)) != xcclSuccess)
          return fail("connect: " + ThreadLastError());
        if (r == 0) {
          // Long past the proxy's 2 ms of yielding: it sleeps in its longest naps now, and
          // nothing but its own pass over the feed will find these ops.
          std::this_thread::sleep_for(std::chrono::milliseconds(300));
          for (const ExpectedOp& op : expected) feed.Push(op);
        } else {
          const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (landing.landed().size() < expected.size() &&
                 std::chrono::steady_clock::now() < deadline)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
          const std::vector<ExpectedOp> got = landing.landed();
          if (got.size() != expected.size())
            fail(std::to_string(got.size()) + " of " + std::to_string(expected.size()) +
                 " ops landed within 10 s");
          for (size_t i = 0; i < got.size() && i < expected.size(); ++i) {
            const NetOp& a = got[i].op;
            const NetOp& b = expected[i].op;
            if (a.kind != b.kind || a.slot != b.slot || a.epoch != b.epoch || a.bytes != b.bytes) {
              fail("op " + std::to_string(i) + " landed as " + Describe(a) + ", sent as " +
                   Describe(b));
              break;
            }
            if (got[i].bytes != expected[i].bytes) {
              fail("op " + std::to_string(i) + "'s bytes differ (" + Describe(b) + ")");
              break;
            }
          }
        }
        // No proxy closes before the other has everything: a close with ops in flight fails.
        if (bootstrap->Barrier() != xcclSuccess) return fail("barrier: " + ThreadLastError());
      }
      if (bootstrap->Barrier() != xcclSuccess) fail("closing barrier: " + ThreadLastError());
    });
  }
  for (std::thread& t : ranks) t.join();
  for (const std::string& f : failures) EXPECT_TRUE(f.empty()) << f;
}

}  // namespace
}  // namespace xccl
