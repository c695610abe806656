// The net socket backend over loopback: handshakes that never block, messages of random sizes
// and tags several in flight with every byte compared, striping over several data sockets, and
// the clear errors: a tag or size the receive did not expect, a peer that goes away mid-message,
// a refused connection, a handle that is not a listener's, no matching interface.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/deadline.h"
#include "base/error.h"
#include "transport/bootstrap/socket.h"
#include "transport/net/socket_net.h"
#include "xccl.h"

namespace xccl {
namespace {

constexpr int64_t kTimeoutMs = 10000;

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> v(n);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

// Polls `step` until it reports true, an error, or the deadline.
xcclResult_t PollUntil(const std::function<xcclResult_t(bool*)>& step) {
  const Deadline deadline(kTimeoutMs);
  for (;;) {
    bool done = false;
    const xcclResult_t r = step(&done);
    if (r != xcclSuccess || done) return r;
    if (deadline.Expired()) return xcclTimeout;
    std::this_thread::yield();
  }
}

struct Pair {
  std::unique_ptr<NetBackend> net;
  std::unique_ptr<NetListenComm> listener;
  std::unique_ptr<NetSendComm> send;
  std::unique_ptr<NetRecvComm> recv;
};

// A connected pair over loopback with `nsocks` data sockets.
void Connect(int nsocks, Pair* pair) {
  ASSERT_EQ(CreateSocketNet("lo", nsocks, &pair->net), xcclSuccess) << xcclGetLastError(nullptr);
  NetHandle handle;
  ASSERT_EQ(pair->net->Listen(0, &handle, &pair->listener), xcclSuccess);
  ASSERT_EQ(pair->net->Connect(0, handle, &pair->send), xcclSuccess) << xcclGetLastError(nullptr);
  ASSERT_NE(pair->send, nullptr);
  ASSERT_EQ(PollUntil([&](bool* done) {
              bool ready = false;
              XCCL_TRY(pair->send->Ready(&ready));
              if (!pair->recv) XCCL_TRY(pair->net->Accept(pair->listener.get(), &pair->recv));
              *done = ready && pair->recv != nullptr;
              return xcclSuccess;
            }),
            xcclSuccess)
      << xcclGetLastError(nullptr);
}

TEST(NetSocket, HandshakeCompletesWithoutBlocking) {
  Pair pair;
  Connect(2, &pair);
  NetProperties props;
  ASSERT_EQ(pair.net->GetProperties(0, &props), xcclSuccess);
  EXPECT_EQ(props.name, "lo");
  EXPECT_TRUE(props.host_memory);
  EXPECT_FALSE(props.device_memory);
}

// Random sizes from 0 to 3 MiB (below and above the striping threshold), random tags, up to 8
// messages in flight in both comms, each received buffer poisoned and compared in full.
class NetSocketMessages : public ::testing::TestWithParam<int> {};

TEST_P(NetSocketMessages, RandomMessagesArriveWholeAndInOrder) {
  const int nsocks = GetParam();
  Pair pair;
  Connect(nsocks, &pair);
  const uint64_t seed = std::random_device{}();
  std::mt19937_64 rng(seed);
  constexpr int kMessages = 60;
  std::vector<std::vector<uint8_t>> sent(kMessages), got(kMessages);
  std::vector<uint32_t> tags(kMessages);
  for (int i = 0; i < kMessages; ++i) {
    const size_t bytes = (i % 7 == 0) ? 0 : rng() % (rng() % 2 ? 3u << 20 : 70000u);
    sent[i] = RandomBytes(bytes, seed + i);
    got[i].assign(bytes + 64, 0xA5);  // room to spare: the size reported must be the sent one
    tags[i] = static_cast<uint32_t>(rng());
  }
  int posted_send = 0, posted_recv = 0, done_send = 0, done_recv = 0;
  std::vector<NetRequest*> sends(kMessages, nullptr), recvs(kMessages, nullptr);
  std::vector<bool> send_done(kMessages, false), recv_done(kMessages, false);
  const xcclResult_t r = PollUntil([&](bool* all) {
    if (posted_send < kMessages) {
      NetRequest* q = nullptr;
      XCCL_TRY(pair.send->Isend(sent[posted_send].data(), sent[posted_send].size(),
                                tags[posted_send], nullptr, &q));
      if (q != nullptr) sends[posted_send++] = q;
    }
    if (posted_recv < kMessages) {
      NetRequest* q = nullptr;
      XCCL_TRY(pair.recv->Irecv(got[posted_recv].data(), got[posted_recv].size(), tags[posted_recv],
                                nullptr, &q));
      if (q != nullptr) recvs[posted_recv++] = q;
    }
    for (int i = 0; i < posted_send; ++i) {
      if (send_done[i]) continue;
      bool d = false;
      size_t n = 0;
      XCCL_TRY(pair.send->Test(sends[i], &d, &n));
      if (d) {
        send_done[i] = true;
        ++done_send;
      }
    }
    for (int i = 0; i < posted_recv; ++i) {
      if (recv_done[i]) continue;
      bool d = false;
      size_t n = 0;
      XCCL_TRY(pair.recv->Test(recvs[i], &d, &n));
      if (d) {
        EXPECT_EQ(n, sent[i].size()) << "message " << i;
        recv_done[i] = true;
        ++done_recv;
      }
    }
    *all = done_send == kMessages && done_recv == kMessages;
    return xcclSuccess;
  });
  ASSERT_EQ(r, xcclSuccess) << xcclGetLastError(nullptr) << " (seed " << seed << ")";
  for (int i = 0; i < kMessages; ++i) {
    ASSERT_EQ(memcmp(got[i].data(), sent[i].data(), sent[i].size()), 0)
        << "message " << i << " of " << sent[i].size() << " bytes differs (seed " << seed << ")";
    for (size_t b = sent[i].size(); b < got[i].size(); ++b)
      ASSERT_EQ(got[i][b], 0xA5) << "message " << i << " wrote past its size";
  }
}

INSTANTIATE_TEST_SUITE_P(DataSockets, NetSocketMessages, ::testing::Values(1, 2, 4, 16));

// One message each way of the given tag and size; returns the receiver's result.
xcclResult_t SendOne(Pair* pair, uint32_t send_tag, size_t send_bytes, uint32_t recv_tag,
                     size_t recv_capacity) {
  std::vector<uint8_t> data = RandomBytes(send_bytes, 7), into(recv_capacity, 0);
  NetRequest* s = nullptr;
  NetRequest* q = nullptr;
  xcclResult_t r = PollUntil([&](bool* ok) {
    if (s == nullptr) XCCL_TRY(pair->send->Isend(data.data(), data.size(), send_tag, nullptr, &s));
    if (q == nullptr) XCCL_TRY(pair->recv->Irecv(into.data(), into.size(), recv_tag, nullptr, &q));
    *ok = s != nullptr && q != nullptr;
    return xcclSuccess;
  });
  if (r != xcclSuccess) return r;
  bool send_done = false;
  return PollUntil([&](bool* done) {
    size_t n = 0;
    if (!send_done) XCCL_TRY(pair->send->Test(s, &send_done, &n));
    return pair->recv->Test(q, done, &n);
  });
}

TEST(NetSocket, AMessageWithAnotherTagFailsTheReceive) {
  Pair pair;
  Connect(2, &pair);
  EXPECT_EQ(SendOne(&pair, 5, 100, 6, 100), xcclInvalidUsage);
  EXPECT_NE(std::string(xcclGetLastError(nullptr)).find("tagged 5"), std::string::npos)
      << xcclGetLastError(nullptr);
  // The comm stays failed: the next receive says so at once.
  NetRequest* q = nullptr;
  uint8_t byte;
  EXPECT_EQ(pair.recv->Irecv(&byte, 1, 6, nullptr, &q), xcclInvalidUsage);
}

TEST(NetSocket, AMessageLargerThanTheReceiveFails) {
  Pair pair;
  Connect(4, &pair);
  EXPECT_EQ(SendOne(&pair, 1, 200000, 1, 199999), xcclInvalidUsage);
  EXPECT_NE(std::string(xcclGetLastError(nullptr)).find("200000 bytes"), std::string::npos)
      << xcclGetLastError(nullptr);
}

TEST(NetSocket, APeerGoneMidMessageFailsTheReceiveNotHangs) {
  Pair pair;
  Connect(2, &pair);
  std::vector<uint8_t> data = RandomBytes(8 << 20, 3), into(8 << 20, 0);
  NetRequest* s = nullptr;
  NetRequest* q = nullptr;
  ASSERT_EQ(pair.send->Isend(data.data(), data.size(), 1, nullptr, &s), xcclSuccess);
  ASSERT_NE(s, nullptr);
  ASSERT_EQ(pair.recv->Irecv(into.data(), into.size(), 1, nullptr, &q), xcclSuccess);
  ASSERT_NE(q, nullptr);
  pair.send.reset();  // the sender goes away with most of the message unsent
  const auto start = std::chrono::steady_clock::now();
  const xcclResult_t r = PollUntil([&](bool* done) {
    size_t n = 0;
    return pair.recv->Test(q, done, &n);
  });
  EXPECT_EQ(r, xcclRemoteError) << xcclGetLastError(nullptr);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
}

TEST(NetSocket, AConnectToAClosedListenerIsRefused) {
  std::unique_ptr<NetBackend> net;
  ASSERT_EQ(CreateSocketNet("lo", 2, &net), xcclSuccess);
  NetHandle handle;
  {
    std::unique_ptr<NetListenComm> listener;
    ASSERT_EQ(net->Listen(0, &handle, &listener), xcclSuccess);
  }  // closed before anyone connects
  std::unique_ptr<NetSendComm> send;
  ASSERT_EQ(net->Connect(0, handle, &send), xcclSuccess);
  const xcclResult_t r = PollUntil([&](bool* ready) { return send->Ready(ready); });
  EXPECT_EQ(r, xcclRemoteError);
  EXPECT_NE(std::string(xcclGetLastError(nullptr)).find("refused"), std::string::npos)
      << xcclGetLastError(nullptr);
}

TEST(NetSocket, AHandleThatIsNotAListenersIsRefused) {
  std::unique_ptr<NetBackend> net;
  ASSERT_EQ(CreateSocketNet("lo", 2, &net), xcclSuccess);
  NetHandle handle;
  memset(handle.bytes, 0x5c, sizeof(handle.bytes));
  std::unique_ptr<NetSendComm> send;
  EXPECT_EQ(net->Connect(0, handle, &send), xcclInvalidArgument);
  EXPECT_EQ(send, nullptr);
}

TEST(NetSocket, ListenerAndConnectorMustAgreeOnDataSockets) {
  std::unique_ptr<NetBackend> two, four;
  ASSERT_EQ(CreateSocketNet("lo", 2, &two), xcclSuccess);
  ASSERT_EQ(CreateSocketNet("lo", 4, &four), xcclSuccess);
  NetHandle handle;
  std::unique_ptr<NetListenComm> listener;
  ASSERT_EQ(two->Listen(0, &handle, &listener), xcclSuccess);
  std::unique_ptr<NetSendComm> send;
  EXPECT_EQ(four->Connect(0, handle, &send), xcclInvalidUsage);
  EXPECT_NE(std::string(xcclGetLastError(nullptr)).find("XCCL_SOCKET_NSOCKS"), std::string::npos);
}

TEST(NetSocket, NoMatchingInterfaceIsAClearError) {
  std::unique_ptr<NetBackend> net;
  EXPECT_NE(CreateSocketNet("=no-such-interface0", 2, &net), xcclSuccess);
  EXPECT_NE(std::string(xcclGetLastError(nullptr)).find("no-such-interface0"), std::string::npos)
      << xcclGetLastError(nullptr);
  EXPECT_EQ(CreateSocketNet("lo", 0, &net), xcclInvalidArgument);
}

TEST(NetSocket, ABadGreetingIsDroppedAndARealConnectorStillGetsIn) {
  Pair pair;
  ASSERT_EQ(CreateSocketNet("lo", 1, &pair.net), xcclSuccess);
  NetHandle handle;
  ASSERT_EQ(pair.net->Listen(0, &handle, &pair.listener), xcclSuccess);
  // A stranger connects and sends garbage.
  sockaddr_storage to{};
  ASSERT_TRUE(UnpackAddress(handle.bytes + 8, &to));
  Socket stranger;
  ASSERT_TRUE(Socket::Connect(to, Deadline(kTimeoutMs), &stranger).ok());
  const char garbage[24] = "GET / HTTP/1.0\r\n\r\n";
  ASSERT_TRUE(stranger.SendAll(garbage, sizeof(garbage), Deadline(kTimeoutMs)).ok());
  ASSERT_EQ(pair.net->Connect(0, handle, &pair.send), xcclSuccess);
  ASSERT_EQ(PollUntil([&](bool* done) {
              bool ready = false;
              XCCL_TRY(pair.send->Ready(&ready));
              if (!pair.recv) XCCL_TRY(pair.net->Accept(pair.listener.get(), &pair.recv));
              *done = ready && pair.recv != nullptr;
              return xcclSuccess;
            }),
            xcclSuccess);
  EXPECT_EQ(SendOne(&pair, 9, 4096, 9, 4096), xcclSuccess) << xcclGetLastError(nullptr);
}

}  // namespace
}  // namespace xccl
