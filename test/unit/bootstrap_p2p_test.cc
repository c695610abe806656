// Point-to-point messages and group calls of the bootstrap, with the ranks as threads of this
// process. Payloads are fresh random bytes (seed printed on failure), compared byte by byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "transport/bootstrap/bootstrap.h"
#include "unit/bootstrap_test_util.h"

namespace xccl {
namespace {

using bootstrap_test::Contains;
using bootstrap_test::ElapsedMs;
using bootstrap_test::Ms;
using bootstrap_test::SteadyClock;

uint32_t NewSeed() { return std::random_device()(); }

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t size) {
  std::vector<uint8_t> v(size);
  for (size_t i = 0; i < size; i += 8) {
    uint64_t word = rng();
    memcpy(v.data() + i, &word, std::min<size_t>(8, size - i));
  }
  return v;
}

// Index of the first byte that differs, or -1.
int64_t FirstDifference(const std::vector<uint8_t>& want, const std::vector<uint8_t>& got) {
  if (want.size() != got.size()) return static_cast<int64_t>(std::min(want.size(), got.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i] != got[i]) return static_cast<int64_t>(i);
  }
  return -1;
}

// Init is collective: one thread per rank.
std::vector<std::unique_ptr<Bootstrap>> InitRanks(int nranks, int64_t timeout_ms) {
  xcclUniqueId id;
  EXPECT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  std::vector<std::unique_ptr<Bootstrap>> boots(nranks);
  std::vector<std::string> errors(nranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < nranks; ++r) {
    threads.emplace_back([&, r] {
      if (Bootstrap::Init(id, r, nranks, timeout_ms, &boots[r]) != xcclSuccess) {
        errors[r] = ThreadLastError();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < nranks; ++r) {
    EXPECT_TRUE(boots[r] != nullptr) << "rank " << r << ": " << errors[r];
  }
  return boots;
}

// body(rank, bootstrap) for every rank at once, one thread each.
void RunEach(std::vector<std::unique_ptr<Bootstrap>>& boots,
             const std::function<void(int, Bootstrap&)>& body) {
  std::vector<std::thread> threads;
  for (size_t r = 0; r < boots.size(); ++r) {
    threads.emplace_back([&, r] { body(static_cast<int>(r), *boots[r]); });
  }
  for (auto& t : threads) t.join();
}

// Receives exactly `want.size()` bytes from (peer, tag) and compares every byte.
void ExpectRecv(Bootstrap& b, int peer, uint32_t tag, const std::vector<uint8_t>& want,
                const std::string& what) {
  std::vector<uint8_t> got(want.size());
  for (size_t i = 0; i < got.size(); ++i) got[i] = static_cast<uint8_t>(~want[i]);
  ASSERT_EQ(xcclSuccess, b.Recv(peer, tag, got.data(), got.size()))
      << what << ": " << ThreadLastError();
  EXPECT_EQ(-1, FirstDifference(want, got)) << what << ": first wrong byte";
}

// Waits (bounded) until `flag` reaches `value`: the tests order threads, never forever.
bool WaitFor(const std::atomic<int>& flag, int value, int64_t limit_ms = 5000) {
  auto start = SteadyClock::now();
  while (flag.load() < value) {
    if (ElapsedMs(start) > limit_ms) return false;
    std::this_thread::sleep_for(Ms(1));
  }
  return true;
}

TEST(BootstrapP2p, PingPongBothDirections) {
  const uint32_t seed = NewSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const int rounds = 25;
  std::vector<std::vector<uint8_t>> ping, pong;
  for (int i = 0; i < rounds; ++i) {
    ping.push_back(RandomBytes(rng, 1 + rng() % 5000));
    pong.push_back(RandomBytes(rng, 1 + rng() % 5000));
  }
  auto boots = InitRanks(2, 10000);
  ASSERT_TRUE(boots[0] && boots[1]);
  RunEach(boots, [&](int rank, Bootstrap& b) {
    for (int i = 0; i < rounds; ++i) {
      std::string what = "round " + std::to_string(i);
      if (rank == 0) {
        ASSERT_EQ(xcclSuccess, b.Send(1, 1, ping[i].data(), ping[i].size())) << ThreadLastError();
        ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 1, 2, pong[i], "rank 0, " + what));
      } else {
        ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 0, 1, ping[i], "rank 1, " + what));
        ASSERT_EQ(xcclSuccess, b.Send(0, 2, pong[i].data(), pong[i].size())) << ThreadLastError();
      }
    }
  });
}

// Three tags interleaved on the wire, received tag by tag in another order: each tag's
// messages keep their order, and the others wait in the buffer.
TEST(BootstrapP2p, InterleavedTagsReceivedInAnotherOrder) {
  const uint32_t seed = NewSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<uint32_t> tags = {10, 11, 0x7fffffff};
  const int per_tag = 4;
  std::vector<std::vector<std::vector<uint8_t>>> msg(tags.size());
  for (auto& t : msg) {
    for (int i = 0; i < per_tag; ++i) t.push_back(RandomBytes(rng, rng() % 70000));
  }
  auto boots = InitRanks(2, 10000);
  ASSERT_TRUE(boots[0] && boots[1]);
  RunEach(boots, [&](int rank, Bootstrap& b) {
    if (rank == 0) {
      for (int i = 0; i < per_tag; ++i) {
        for (size_t t = 0; t < tags.size(); ++t) {
          ASSERT_EQ(xcclSuccess, b.Send(1, tags[t], msg[t][i].data(), msg[t][i].size()))
              << ThreadLastError();
        }
      }
    } else {
      for (size_t t : {size_t{2}, size_t{0}, size_t{1}}) {
        for (int i = 0; i < per_tag; ++i) {
          ASSERT_NO_FATAL_FAILURE(
              ExpectRecv(b, 0, tags[t], msg[t][i],
                         "tag " + std::to_string(tags[t]) + " #" + std::to_string(i)));
        }
      }
    }
  });
}

// Ranks 1 and 2 finish their Sends to rank 0 (two tags each) while rank 0 waits for rank 3's
// message of the same tag, which rank 3 sends only after them; rank 0 then finds both peers'
// messages waiting, none taken for rank 3's.
TEST(BootstrapP2p, MessagesFromTwoPeersArriveBeforeTheirRecv) {
  const uint32_t seed = NewSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint8_t>> first(3), second(3);
  for (int r = 1; r <= 2; ++r) {
    first[r] = RandomBytes(rng, 1 + rng() % 3000);
    second[r] = RandomBytes(rng, 1 + rng() % 3000);
  }
  std::vector<uint8_t> last = RandomBytes(rng, 64);
  std::atomic<int> sent{0};
  auto boots = InitRanks(4, 10000);
  for (auto& b : boots) ASSERT_TRUE(b);
  RunEach(boots, [&](int rank, Bootstrap& b) {
    if (rank == 1 || rank == 2) {
      ASSERT_EQ(xcclSuccess, b.Send(0, 5, first[rank].data(), first[rank].size()))
          << ThreadLastError();
      ASSERT_EQ(xcclSuccess, b.Send(0, 6, second[rank].data(), second[rank].size()))
          << ThreadLastError();
      sent.fetch_add(1);
    } else if (rank == 3) {
      ASSERT_TRUE(WaitFor(sent, 2)) << "ranks 1 and 2 did not finish their Sends";
      ASSERT_EQ(xcclSuccess, b.Send(0, 5, last.data(), last.size())) << ThreadLastError();
    } else {
      ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 3, 5, last, "from rank 3"));
      EXPECT_EQ(2, sent.load());
      // Later tag first, later peer first.
      ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 2, 6, second[2], "rank 2, tag 6"));
      ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 1, 6, second[1], "rank 1, tag 6"));
      ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 2, 5, first[2], "rank 2, tag 5"));
      ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 1, 5, first[1], "rank 1, tag 5"));
    }
  });
}

// A Recv posted while an earlier message of its tag is still arriving into a buffer (the rank
// was waiting for another peer meanwhile) gets that earlier message, then the next one. When
// rank 2's message lands inside rank 0's long one depends on timing: several delays, so that
// some round most likely catches rank 0's message half read.
TEST(BootstrapP2p, OrderKeptWhileAnEarlierMessageIsStillArriving) {
  const uint32_t seed = NewSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> big = RandomBytes(rng, (size_t{16} << 20) + 1);
  std::vector<uint8_t> small = RandomBytes(rng, 100);
  std::vector<uint8_t> other = RandomBytes(rng, 8);
  auto boots = InitRanks(3, 10000);
  for (auto& b : boots) ASSERT_TRUE(b);
  for (int delay_ms : {0, 1, 2, 4}) {
    SCOPED_TRACE("delay " + std::to_string(delay_ms) + " ms");
    const uint32_t tag = 100 + static_cast<uint32_t>(delay_ms);
    std::atomic<int> started{0};
    RunEach(boots, [&](int rank, Bootstrap& b) {
      if (rank == 0) {
        started.store(1);
        ASSERT_EQ(xcclSuccess, b.Send(1, tag, big.data(), big.size())) << ThreadLastError();
        ASSERT_EQ(xcclSuccess, b.Send(1, tag, small.data(), small.size())) << ThreadLastError();
      } else if (rank == 2) {
        ASSERT_TRUE(WaitFor(started, 1));
        std::this_thread::sleep_for(Ms(delay_ms));
        ASSERT_EQ(xcclSuccess, b.Send(1, 9, other.data(), other.size())) << ThreadLastError();
      } else {
        ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 2, 9, other, "from rank 2"));
        ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 0, tag, big, "rank 0's first"));
        ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 0, tag, small, "rank 0's second"));
      }
    });
  }
}

TEST(BootstrapP2p, ZeroByteMessages) {
  const uint32_t seed = NewSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> after = RandomBytes(rng, 333);
  auto boots = InitRanks(2, 10000);
  ASSERT_TRUE(boots[0] && boots[1]);
  RunEach(boots, [&](int rank, Bootstrap& b) {
    uint8_t spare = 0x77;
    if (rank == 0) {
      ASSERT_EQ(xcclSuccess, b.Send(1, 4, nullptr, 0)) << ThreadLastError();
      ASSERT_EQ(xcclSuccess, b.Send(1, 4, &spare, 0)) << ThreadLastError();
      ASSERT_EQ(xcclSuccess, b.Send(1, 4, after.data(), after.size())) << ThreadLastError();
      ASSERT_EQ(xcclSuccess, b.Recv(1, 4, nullptr, 0)) << ThreadLastError();
    } else {
      ASSERT_EQ(xcclSuccess, b.Recv(0, 4, &spare, 0)) << ThreadLastError();
      EXPECT_EQ(0x77, spare);
      ASSERT_EQ(xcclSuccess, b.Recv(0, 4, nullptr, 0)) << ThreadLastError();
      // The stream is still in step after empty messages.
      ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 0, 4, after, "after the empty ones"));
      ASSERT_EQ(xcclSuccess, b.Send(0, 4, nullptr, 0)) << ThreadLastError();
    }
  });
}

// Both ranks send several MiB to each other at once before either receives: each Send must
// keep reading the other's message while its own waits for room, or both would stall.
TEST(BootstrapP2p, LargeMessagesBothWaysAtOnce) {
  const uint32_t seed = NewSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint8_t>> big = {RandomBytes(rng, (size_t{6} << 20) + 7),
                                           RandomBytes(rng, (size_t{5} << 20) + 3)};
  auto boots = InitRanks(2, 10000);
  ASSERT_TRUE(boots[0] && boots[1]);
  auto start = SteadyClock::now();
  RunEach(boots, [&](int rank, Bootstrap& b) {
    const int peer = 1 - rank;
    ASSERT_EQ(xcclSuccess, b.Send(peer, 77, big[rank].data(), big[rank].size()))
        << ThreadLastError();
    ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, peer, 77, big[peer], "rank " + std::to_string(rank)));
  });
  EXPECT_LT(ElapsedMs(start), 5000);
}

// A size mismatch fails the Recv at once, and reaches the sender: in its Send if still
// running, else in its next call with that peer. Nobody waits for a deadline.
TEST(BootstrapP2p, SizeMismatchFailsBothSides) {
  for (size_t sent_bytes : {size_t{100}, size_t{8} << 20}) {
    const size_t expected_bytes = sent_bytes / 2 + 14;
    SCOPED_TRACE("sent " + std::to_string(sent_bytes) + ", expected " +
                 std::to_string(expected_bytes));
    std::vector<uint8_t> payload(sent_bytes, 0x3c);
    auto boots = InitRanks(2, 20000);
    ASSERT_TRUE(boots[0] && boots[1]);
    xcclResult_t rc[2] = {xcclSuccess, xcclSuccess};
    std::string message[2];
    auto start = SteadyClock::now();
    RunEach(boots, [&](int rank, Bootstrap& b) {
      if (rank == 0) {
        rc[0] = b.Send(1, 7, payload.data(), payload.size());
        if (rc[0] == xcclSuccess) {
          uint8_t byte;
          rc[0] = b.Recv(1, 8, &byte, 1);  // rank 1 never sends it: the refusal ends the wait
        }
      } else {
        std::vector<uint8_t> buf(expected_bytes);
        rc[1] = b.Recv(0, 7, buf.data(), buf.size());
      }
      message[rank] = ThreadLastError();
    });
    EXPECT_LT(ElapsedMs(start), 3000);
    const std::string sent = std::to_string(sent_bytes);
    const std::string expected = std::to_string(expected_bytes);
    EXPECT_EQ(xcclInvalidUsage, rc[1]) << message[1];
    EXPECT_TRUE(Contains(message[1], "rank 0") && Contains(message[1], "tag 7") &&
                Contains(message[1], sent + " bytes") && Contains(message[1], expected + " bytes"))
        << message[1];
    EXPECT_EQ(xcclInvalidUsage, rc[0]) << message[0];
    EXPECT_TRUE(Contains(message[0], "rank 1") && Contains(message[0], "tag 7") &&
                Contains(message[0], sent + " bytes") && Contains(message[0], expected + " bytes"))
        << message[0];
    // The pair stays unusable on both sides, saying why.
    uint8_t byte = 0;
    EXPECT_EQ(xcclInvalidUsage, boots[1]->Send(0, 9, &byte, 1));
    EXPECT_TRUE(Contains(ThreadLastError(), "agree on the size")) << ThreadLastError();
    EXPECT_EQ(xcclInvalidUsage, boots[0]->Send(1, 9, &byte, 1));
    EXPECT_TRUE(Contains(ThreadLastError(), "agree on the size")) << ThreadLastError();
  }
}

TEST(BootstrapP2p, SilentPeerTimesOutNamingIt) {
  const int64_t timeout_ms = 500;
  auto boots = InitRanks(2, timeout_ms);
  ASSERT_TRUE(boots[0] && boots[1]);
  // Rank 1 is alive but never enters a call: a Recv from it, and a first Send to it (which
  // waits for it to accept the connection), both end at the deadline, naming it.
  uint8_t buf[8] = {};
  auto start = SteadyClock::now();
  EXPECT_EQ(xcclTimeout, boots[0]->Recv(1, 3, buf, sizeof(buf)));
  int64_t ms = ElapsedMs(start);
  std::string message = ThreadLastError();
  EXPECT_TRUE(Contains(message, "no message from rank 1 within 500 ms")) << message;
  EXPECT_GE(ms, timeout_ms - 50);
  EXPECT_LT(ms, timeout_ms + 1000);

  start = SteadyClock::now();
  EXPECT_EQ(xcclTimeout, boots[0]->Send(1, 3, buf, sizeof(buf)));
  ms = ElapsedMs(start);
  message = ThreadLastError();
  EXPECT_TRUE(Contains(message, "rank 1 did not accept the connection within 500 ms")) << message;
  EXPECT_GE(ms, timeout_ms - 50);
  EXPECT_LT(ms, timeout_ms + 1000);
}

TEST(BootstrapP2p, PeerThatExitedIsRemoteErrorNamingIt) {
  auto boots = InitRanks(2, 5000);
  ASSERT_TRUE(boots[0] && boots[1]);
  // A message sent just before exiting is still delivered (here it waits in rank 0's buffer,
  // behind the one rank 0 received); after it the closed connection is reported at once.
  uint8_t byte = static_cast<uint8_t>(NewSeed()), got = 0;
  RunEach(boots, [&](int rank, Bootstrap& b) {
    if (rank == 1) {
      ASSERT_EQ(xcclSuccess, b.Send(0, 1, &byte, 1)) << ThreadLastError();
      ASSERT_EQ(xcclSuccess, b.Send(0, 2, nullptr, 0)) << ThreadLastError();
    } else {
      ASSERT_EQ(xcclSuccess, b.Recv(1, 2, nullptr, 0)) << ThreadLastError();
    }
  });
  boots[1].reset();  // rank 1's process is gone
  auto start = SteadyClock::now();
  ASSERT_EQ(xcclSuccess, boots[0]->Recv(1, 1, &got, 1)) << ThreadLastError();
  EXPECT_EQ(byte, got);
  EXPECT_EQ(xcclRemoteError, boots[0]->Recv(1, 1, &got, 1));
  EXPECT_TRUE(Contains(ThreadLastError(), "rank 1 closed")) << ThreadLastError();
  EXPECT_LT(ElapsedMs(start), 2000);
}

TEST(BootstrapP2p, AbortUnblocksRecvAndSend) {
  for (bool blocked_in_send : {false, true}) {
    SCOPED_TRACE(blocked_in_send ? "Send" : "Recv");
    auto boots = InitRanks(2, 20000);
    ASSERT_TRUE(boots[0] && boots[1]);
    std::vector<uint8_t> buf(size_t{4} << 20, 0x11);
    // Rank 1 never takes part: both calls would wait for the whole 20 s.
    bootstrap_test::ExpectAbortUnblocks(
        boots[0].get(),
        [&] {
          return blocked_in_send ? boots[0]->Send(1, 1, buf.data(), buf.size())
                                 : boots[0]->Recv(1, 1, buf.data(), buf.size());
        },
        Ms(150));
    EXPECT_EQ(xcclInvalidUsage, boots[0]->Recv(1, 1, buf.data(), 1));
    EXPECT_TRUE(Contains(ThreadLastError(), "after Abort")) << ThreadLastError();
  }
}

TEST(BootstrapP2p, BadArgumentsAreRefused) {
  auto boots = InitRanks(3, 5000);
  for (auto& b : boots) ASSERT_TRUE(b);
  Bootstrap& b = *boots[1];
  uint8_t byte = 0;
  struct Case {
    xcclResult_t rc;
    const char* words;
  };
  auto expect = [](xcclResult_t got, const Case& want) {
    EXPECT_EQ(want.rc, got) << ThreadLastError();
    EXPECT_TRUE(Contains(ThreadLastError(), want.words)) << ThreadLastError();
  };
  expect(b.Send(1, 0, &byte, 1), {xcclInvalidArgument, "itself"});
  expect(b.Recv(1, 0, &byte, 1), {xcclInvalidArgument, "itself"});
  expect(b.Send(3, 0, &byte, 1), {xcclInvalidArgument, "out of range"});
  expect(b.Recv(-1, 0, &byte, 1), {xcclInvalidArgument, "out of range"});
  expect(b.Send(0, Bootstrap::kReservedTagBit | 5, &byte, 1), {xcclInvalidArgument, "reserved"});
  expect(b.Recv(2, 0xffffffffu, &byte, 1), {xcclInvalidArgument, "reserved"});
  expect(b.Send(0, 0, nullptr, 4), {xcclInvalidArgument, "null"});
  expect(b.Recv(2, 0, nullptr, 4), {xcclInvalidArgument, "null"});
  expect(b.Send(0, 0, &byte, Bootstrap::kMaxMessageBytes + 1), {xcclInvalidArgument, "at most"});

  std::vector<uint8_t> blocks(3 * 8);
  expect(b.GroupAllGather({}, blocks.data(), 8), {xcclInvalidArgument, "empty"});
  expect(b.GroupBarrier({}), {xcclInvalidArgument, "empty"});
  expect(b.GroupAllGather({0, 1, 1}, blocks.data(), 8),
         {xcclInvalidArgument, "sorted and distinct"});
  expect(b.GroupBarrier({1, 0}), {xcclInvalidArgument, "sorted and distinct"});
  expect(b.GroupAllGather({1, 3}, blocks.data(), 8), {xcclInvalidArgument, "out of range"});
  expect(b.GroupBarrier({-1, 1}), {xcclInvalidArgument, "out of range"});
  expect(b.GroupAllGather({0, 2}, blocks.data(), 8), {xcclInvalidArgument, "does not contain"});
  expect(b.GroupBarrier({2}), {xcclInvalidArgument, "does not contain"});
  expect(b.GroupAllGather({0, 1}, nullptr, 8), {xcclInvalidArgument, "null"});

  // Nobody else took part in any of that: the ranks are still in step.
  RunEach(boots, [](int, Bootstrap& x) { EXPECT_EQ(xcclSuccess, x.GroupBarrier({0, 1, 2})); });

  // One rank: no peer exists; a group of itself is trivially complete.
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  std::unique_ptr<Bootstrap> solo;
  ASSERT_EQ(xcclSuccess, Bootstrap::Init(id, 0, 1, 1000, &solo)) << ThreadLastError();
  expect(solo->Send(0, 0, &byte, 1), {xcclInvalidArgument, "itself"});
  expect(solo->Recv(1, 0, &byte, 1), {xcclInvalidArgument, "out of range"});
  byte = 0x42;
  EXPECT_EQ(xcclSuccess, solo->GroupAllGather({0}, &byte, 1)) << ThreadLastError();
  EXPECT_EQ(0x42, byte);
  EXPECT_EQ(xcclSuccess, solo->GroupBarrier({0})) << ThreadLastError();
}

// ---- Group calls ------------------------------------------------------------------------

// Fresh blocks for the members of `group`; each member starts from its own block and the
// complement of the others', so every other block must be written by the call.
void CheckGroupAllGather(Bootstrap& b, const std::vector<int>& group, size_t block_bytes,
                         const std::vector<uint8_t>& reference) {
  const size_t me =
      static_cast<size_t>(std::find(group.begin(), group.end(), b.rank()) - group.begin());
  std::vector<uint8_t> buf(reference.size());
  for (size_t i = 0; i < buf.size(); ++i) {
    buf[i] = i / block_bytes == me ? reference[i] : static_cast<uint8_t>(~reference[i]);
  }
  ASSERT_EQ(xcclSuccess, b.GroupAllGather(group, buf.data(), block_bytes)) << ThreadLastError();
  int64_t wrong = FirstDifference(reference, buf);
  EXPECT_EQ(-1, wrong) << "rank " << b.rank() << ", " << group.size() << " members, blocks of "
                       << block_bytes << ": first wrong byte (block "
                       << (wrong < 0 ? -1 : wrong / static_cast<int64_t>(block_bytes)) << ")";
}

TEST(BootstrapGroup, AllGatherOnSubsetsAndTheWorld) {
  const uint32_t seed = NewSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  const std::vector<int> trio = {0, 2, 3}, alone = {1}, world = {0, 1, 2, 3};
  const std::vector<size_t> sizes = {1, 4096 + 5, 70001};
  struct Round {
    std::vector<int> group;
    size_t block;
    std::vector<uint8_t> reference;
  };
  std::vector<Round> rounds;
  for (size_t size : sizes) {
    for (const auto* g : {&trio, &alone, &world}) {
      rounds.push_back({*g, size, RandomBytes(rng, size * g->size())});
    }
  }
  auto boots = InitRanks(4, 10000);
  for (auto& b : boots) ASSERT_TRUE(b);
  RunEach(boots, [&](int rank, Bootstrap& b) {
    for (const Round& r : rounds) {
      if (std::find(r.group.begin(), r.group.end(), rank) == r.group.end()) continue;
      ASSERT_NO_FATAL_FAILURE(CheckGroupAllGather(b, r.group, r.block, r.reference));
    }
    // Zero-byte blocks are a no-op that still completes for every member.
    EXPECT_EQ(xcclSuccess, b.GroupAllGather(world, nullptr, 0)) << ThreadLastError();
  });
}

// Group calls and user messages between the same ranks do not mix.
TEST(BootstrapGroup, GroupCallsDoNotMatchUserMessages) {
  const uint32_t seed = NewSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> user = RandomBytes(rng, 16);
  std::vector<uint8_t> reference = RandomBytes(rng, 2 * 16);
  auto boots = InitRanks(2, 10000);
  ASSERT_TRUE(boots[0] && boots[1]);
  RunEach(boots, [&](int rank, Bootstrap& b) {
    // Rank 0's user message of the same size is queued before the group call's.
    if (rank == 0) {
      ASSERT_EQ(xcclSuccess, b.Send(1, 0, user.data(), user.size())) << ThreadLastError();
    }
    ASSERT_NO_FATAL_FAILURE(CheckGroupAllGather(b, {0, 1}, 16, reference));
    if (rank == 1) {
      ASSERT_NO_FATAL_FAILURE(ExpectRecv(b, 0, 0, user, "user message"));
    }
  });
}

// After each group barrier every member must see that all members entered it, with one
// member held back in turn; a rank outside the group runs its own barrier meanwhile.
TEST(BootstrapGroup, BarrierWaitsForEveryMember) {
  const std::vector<int> group = {0, 1, 3};
  auto boots = InitRanks(4, 10000);
  for (auto& b : boots) ASSERT_TRUE(b);
  std::atomic<int> entered{0};
  RunEach(boots, [&](int rank, Bootstrap& b) {
    if (rank == 2) {
      for (int round = 0; round < 3; ++round) {
        EXPECT_EQ(xcclSuccess, b.GroupBarrier({2})) << ThreadLastError();
      }
    } else {
      for (int round = 0; round < 4; ++round) {
        if (rank == group[round % group.size()]) std::this_thread::sleep_for(Ms(40));
        entered.fetch_add(1);
        ASSERT_EQ(xcclSuccess, b.GroupBarrier(group)) << ThreadLastError();
        EXPECT_GE(entered.load(), static_cast<int>(group.size()) * (round + 1))
            << "rank " << rank << " left group barrier " << round << " early";
      }
    }
    EXPECT_EQ(xcclSuccess, b.GroupBarrier({0, 1, 2, 3})) << ThreadLastError();
  });
}

// A member that never comes: the others time out naming a peer, within the deadline.
TEST(BootstrapGroup, MissingMemberTimesOut) {
  auto boots = InitRanks(3, 500);
  for (auto& b : boots) ASSERT_TRUE(b);
  xcclResult_t rc[2] = {xcclSuccess, xcclSuccess};
  std::string message[2];
  auto start = SteadyClock::now();
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      rc[r] = boots[r]->GroupBarrier({0, 1, 2});
      message[r] = ThreadLastError();
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_LT(ElapsedMs(start), 1500);
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(xcclTimeout, rc[r]) << message[r];
    EXPECT_TRUE(Contains(message[r], "GroupBarrier over ranks {0,1,2}")) << message[r];
    // Rank 0 waits for rank 2's signal; rank 1 for rank 2 to accept its connection.
    EXPECT_TRUE(Contains(message[r], "from rank 2 within 500 ms") ||
                Contains(message[r], "rank 2 did not accept the connection within 500 ms"))
        << message[r];
  }
}

}  // namespace
}  // namespace xccl
