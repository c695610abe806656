#include "transport/bootstrap/bootstrap.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "base/params.h"
#include "transport/bootstrap/bootstrap_wire.h"
#include "transport/bootstrap/socket.h"
#include "transport/bootstrap/unique_id.h"
#include "transport/bootstrap/verdicts.h"
#include "unit/bootstrap_test_util.h"

namespace xccl {
namespace {

using bootstrap_test::Contains;
using bootstrap_test::ElapsedMs;
using bootstrap_test::Ms;
using bootstrap_test::SteadyClock;

struct RankSpec {
  int rank;
  int nranks;
  int64_t timeout_ms;
  int delay_ms = 0;  // sleep before Init
};

struct RankOutcome {
  xcclResult_t init = xcclInternalError;
  std::string error;  // the Init's message, if it failed
  int64_t init_ms = 0;
};

// Each spec's rank runs in its own thread: Init, then `body` on success.
std::vector<RankOutcome> RunRanks(const xcclUniqueId& id, const std::vector<RankSpec>& specs,
                                  const std::function<void(int, Bootstrap&)>& body = nullptr) {
  std::vector<RankOutcome> outcomes(specs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < specs.size(); ++i) {
    threads.emplace_back([&, i] {
      const RankSpec& s = specs[i];
      if (s.delay_ms > 0) std::this_thread::sleep_for(Ms(s.delay_ms));
      auto start = SteadyClock::now();
      std::unique_ptr<Bootstrap> boot;
      outcomes[i].init = Bootstrap::Init(id, s.rank, s.nranks, s.timeout_ms, &boot);
      outcomes[i].init_ms = ElapsedMs(start);
      if (outcomes[i].init != xcclSuccess) {
        outcomes[i].error = ThreadLastError();
        return;
      }
      EXPECT_EQ(s.rank, boot->rank());
      EXPECT_EQ(s.nranks, boot->nranks());
      if (body) body(s.rank, *boot);
    });
  }
  for (auto& t : threads) t.join();
  return outcomes;
}

std::vector<RankSpec> AllRanks(int nranks, int64_t timeout_ms) {
  std::vector<RankSpec> specs;
  for (int r = 0; r < nranks; ++r) specs.push_back({r, nranks, timeout_ms});
  return specs;
}

// Fresh random blocks for every rank and size; each rank starts from its own block and the
// bitwise complement of everyone else's, so every byte must be written by the AllGather.
class RingData {
 public:
  RingData(int nranks, const std::vector<size_t>& sizes, uint32_t seed) : nranks_(nranks) {
    std::mt19937 rng(seed);
    for (size_t size : sizes) {
      std::vector<uint8_t> all(size * nranks);
      for (auto& b : all) b = static_cast<uint8_t>(rng());
      sizes_.push_back(size);
      reference_.push_back(std::move(all));
    }
  }

  // Runs every size's AllGather on `b` and compares every byte.
  void Check(int rank, Bootstrap& b) const {
    for (size_t k = 0; k < sizes_.size(); ++k) {
      size_t size = sizes_[k];
      const std::vector<uint8_t>& ref = reference_[k];
      std::vector<uint8_t> buf(ref.size());
      for (size_t i = 0; i < buf.size(); ++i) {
        bool mine = i / size == static_cast<size_t>(rank);
        buf[i] = mine ? ref[i] : static_cast<uint8_t>(~ref[i]);
      }
      ASSERT_EQ(xcclSuccess, b.AllGather(buf.data(), size)) << ThreadLastError();
      for (size_t i = 0; i < buf.size(); ++i) {
        ASSERT_EQ(ref[i], buf[i]) << "rank " << rank << " of " << nranks_ << ", block bytes "
                                  << size << ": first wrong byte at " << i << " (block " << i / size
                                  << ")";
      }
    }
    ASSERT_EQ(xcclSuccess, b.AllGather(nullptr, 0)) << ThreadLastError();
  }

 private:
  int nranks_;
  std::vector<size_t> sizes_;
  std::vector<std::vector<uint8_t>> reference_;
};

// After each barrier, every rank must see that all ranks entered it, even with one held back.
void CheckBarrier(int rank, int nranks, Bootstrap& b, std::atomic<int>* entered) {
  for (int round = 0; round < 4; ++round) {
    if (rank == round % nranks) std::this_thread::sleep_for(Ms(30));
    entered->fetch_add(1);
    ASSERT_EQ(xcclSuccess, b.Barrier()) << ThreadLastError();
    EXPECT_GE(entered->load(), nranks * (round + 1))
        << "rank " << rank << " left barrier " << round << " early";
  }
}

uint32_t NewSeed() { return std::random_device()(); }

class BootstrapRanks : public ::testing::TestWithParam<int> {};

TEST_P(BootstrapRanks, InitAllGatherBarrier) {
  const int nranks = GetParam();
  uint32_t seed = NewSeed();
  SCOPED_TRACE("seed " + std::to_string(seed));
  RingData data(nranks, {1, 3, 4096 + 5, (size_t{1} << 20) + 13}, seed);
  std::atomic<int> entered{0};
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  auto outcomes = RunRanks(id, AllRanks(nranks, 10000), [&](int rank, Bootstrap& b) {
    data.Check(rank, b);
    CheckBarrier(rank, nranks, b, &entered);
  });
  for (int r = 0; r < nranks; ++r) {
    EXPECT_EQ(xcclSuccess, outcomes[r].init) << "rank " << r << ": " << outcomes[r].error;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, BootstrapRanks, ::testing::Values(1, 2, 3, 8));

// The verdict round of a collective setup step: every rank learns the lowest failing rank (or
// -1), whichever ranks failed, over several rounds on one bootstrap.
TEST(BootstrapVerdicts, EveryRankLearnsTheLowestFailure) {
  const int nranks = 5;
  // Per round, the ranks whose part fails.
  const std::vector<std::vector<int>> rounds = {{}, {3}, {4, 1}, {0, 2, 4}, {}};
  std::mutex mu;
  std::vector<std::vector<int>> seen(nranks);  // [rank][round] first_failed
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  auto outcomes = RunRanks(id, AllRanks(nranks, 10000), [&](int rank, Bootstrap& b) {
    for (const std::vector<int>& failing : rounds) {
      const bool ok = std::find(failing.begin(), failing.end(), rank) == failing.end();
      int first = -2;
      ASSERT_EQ(xcclSuccess, ExchangeVerdicts(&b, ok, &first)) << ThreadLastError();
      std::lock_guard<std::mutex> lock(mu);
      seen[rank].push_back(first);
    }
  });
  for (int r = 0; r < nranks; ++r) {
    ASSERT_EQ(xcclSuccess, outcomes[r].init) << "rank " << r << ": " << outcomes[r].error;
    ASSERT_EQ(seen[r].size(), rounds.size()) << "rank " << r;
    for (size_t i = 0; i < rounds.size(); ++i) {
      const int want =
          rounds[i].empty() ? -1 : *std::min_element(rounds[i].begin(), rounds[i].end());
      EXPECT_EQ(seen[r][i], want) << "rank " << r << ", round " << i;
    }
  }
}

sockaddr_storage Loopback(int family, uint16_t port) {
  sockaddr_storage a{};
  if (family == AF_INET) {
    auto& v4 = reinterpret_cast<sockaddr_in&>(a);
    v4.sin_family = AF_INET;
    v4.sin_port = htons(port);
    v4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  } else {
    auto& v6 = reinterpret_cast<sockaddr_in6&>(a);
    v6.sin6_family = AF_INET6;
    v6.sin6_port = htons(port);
    v6.sin6_addr = in6addr_loopback;
  }
  return a;
}

// A port that was free a moment ago (XCCL_COMM_ID names a fixed port).
bool FreePort(int family, uint16_t* port) {
  Socket s;
  if (!Socket::TryListen(Loopback(family, 0), &s).ok()) return false;
  sockaddr_storage bound;
  if (s.LocalAddress(&bound) != xcclSuccess) return false;
  *port = family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in&>(bound).sin_port)
                            : ntohs(reinterpret_cast<sockaddr_in6&>(bound).sin6_port);
  return true;
}

// The id xcclGetUniqueId makes under XCCL_COMM_ID, built by hand: the environment is parsed
// once per process, so the test cannot safely set it.
xcclUniqueId CommIdModeId(const sockaddr_storage& addr) {
  UniqueIdContents c{};
  c.root_addr = addr;
  std::mt19937 rng(NewSeed());
  for (auto& b : c.secret) b = static_cast<uint8_t>(rng());
  c.rank0_is_root = true;
  xcclUniqueId id;
  EncodeUniqueId(c, &id);
  return id;
}

TEST(BootstrapCommId, RankZeroServesTheRendezvous) {
  for (int family : {AF_INET, AF_INET6}) {
    uint16_t port;
    if (!FreePort(family, &port)) {
      EXPECT_EQ(AF_INET6, family) << "cannot listen on IPv4 loopback";
      continue;  // no IPv6 loopback on this host
    }
    SCOPED_TRACE(family == AF_INET ? "IPv4" : "IPv6");
    const int nranks = 3;
    uint32_t seed = NewSeed();
    RingData data(nranks, {5, 70001}, seed);
    xcclUniqueId id = CommIdModeId(Loopback(family, port));
    // Rank 0 starts last: the others keep retrying until its root listens.
    std::vector<RankSpec> specs = {{0, nranks, 10000, 150}, {1, nranks, 10000}, {2, nranks, 10000}};
    auto outcomes = RunRanks(id, specs, [&](int rank, Bootstrap& b) { data.Check(rank, b); });
    for (int r = 0; r < nranks; ++r) {
      EXPECT_EQ(xcclSuccess, outcomes[r].init) << "rank " << r << ": " << outcomes[r].error;
    }
  }
}

TEST(BootstrapCommId, SingleRankNeedsNoServer) {
  uint16_t port;
  ASSERT_TRUE(FreePort(AF_INET, &port));
  xcclUniqueId id = CommIdModeId(Loopback(AF_INET, port));
  std::unique_ptr<Bootstrap> b;
  ASSERT_EQ(xcclSuccess, Bootstrap::Init(id, 0, 1, 1000, &b)) << ThreadLastError();
  uint8_t byte = 0x5c;
  EXPECT_EQ(xcclSuccess, b->AllGather(&byte, 1));
  EXPECT_EQ(0x5c, byte);
  EXPECT_EQ(xcclSuccess, b->Barrier());
}

TEST(BootstrapCommId, MissingRankZeroTimesOut) {
  uint16_t port;
  ASSERT_TRUE(FreePort(AF_INET, &port));
  xcclUniqueId id = CommIdModeId(Loopback(AF_INET, port));
  auto outcomes = RunRanks(id, {{1, 2, 700}});
  EXPECT_EQ(xcclTimeout, outcomes[0].init);
  EXPECT_TRUE(Contains(outcomes[0].error, "did not complete within 700 ms")) << outcomes[0].error;
  EXPECT_LT(outcomes[0].init_ms, 1700);
}

// ---- A live root under attack --------------------------------------------------------------

struct RootTarget {
  sockaddr_storage addr;
  uint8_t secret[wire::kSecretBytes];
};

RootTarget Target(const xcclUniqueId& id) {
  UniqueIdContents c;
  EXPECT_EQ(xcclSuccess, DecodeUniqueId(id, &c));
  RootTarget t;
  t.addr = c.root_addr;
  memcpy(t.secret, c.secret, sizeof(t.secret));
  return t;
}

std::vector<uint8_t> HelloFrame(const uint8_t* secret, uint32_t rank, uint32_t nranks) {
  wire::HelloMsg h{};
  memcpy(h.secret, secret, wire::kSecretBytes);
  h.rank = rank;
  h.nranks = nranks;
  h.timeout_ms = 10000;
  h.wait_ms = 10000;
  sockaddr_storage nowhere = Loopback(AF_INET, 9);
  PackAddress(nowhere, h.listen_addr);
  return wire::Frame(wire::kHello, wire::EncodeHello(h));
}

Socket Dial(const sockaddr_storage& addr) {
  Socket s;
  IoStatus st = Socket::Connect(addr, Deadline(2000), &s);
  EXPECT_TRUE(st.ok()) << "connect to " << FormatAddress(addr) << ": " << st.Describe();
  return s;
}

void Send(Socket& s, const std::vector<uint8_t>& bytes) {
  IoStatus st = s.SendAll(bytes.data(), bytes.size(), Deadline(2000));
  EXPECT_TRUE(st.ok()) << st.Describe();
}

// The far end must drop the connection (not leave it hanging, not answer).
void ExpectDropped(Socket& s, const char* what, int64_t within_ms = 2000) {
  uint8_t byte;
  IoStatus st = s.RecvAll(&byte, 1, Deadline(within_ms));
  EXPECT_EQ(IoStatus::kClosed, st.code) << what << ": " << st.Describe();
}

TEST(BootstrapRoot, SurvivesHostileClientsWhileRanksJoin) {
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  RootTarget root = Target(id);
  std::mt19937 rng(NewSeed());

  auto silent_since = SteadyClock::now();
  Socket silent = Dial(root.addr);

  const int nranks = 3;
  RingData data(nranks, {1000}, static_cast<uint32_t>(rng()));
  std::vector<RankOutcome> early;
  std::thread early_ranks([&] {
    early = RunRanks(id, {{0, nranks, 20000}, {1, nranks, 20000}},
                     [&](int rank, Bootstrap& b) { data.Check(rank, b); });
  });

  // A hello with a wrong secret that claims the rank nobody holds yet: if the root believed
  // it, the real rank 2 would be refused as a duplicate below.
  {
    uint8_t wrong[wire::kSecretBytes];
    memcpy(wrong, root.secret, sizeof(wrong));
    wrong[rng() % sizeof(wrong)] ^= static_cast<uint8_t>(1 + rng() % 255);
    Socket s = Dial(root.addr);
    Send(s, HelloFrame(wrong, 2, nranks));
    ExpectDropped(s, "wrong secret");
  }
  {
    std::vector<uint8_t> garbage(200);
    for (auto& b : garbage) b = static_cast<uint8_t>(rng());
    garbage[0] = 'G';  // never the frame magic
    Socket s = Dial(root.addr);
    Send(s, garbage);
    ExpectDropped(s, "garbage");
  }
  {
    uint8_t header[wire::kHeaderBytes];
    wire::PutHeader(header, wire::kHello, 1u << 30);
    Socket s = Dial(root.addr);
    Send(s, std::vector<uint8_t>(header, header + sizeof(header)));
    ExpectDropped(s, "oversized length");
  }
  {
    std::vector<uint8_t> frame = HelloFrame(root.secret, 2, nranks);
    wire::PutU32(frame.data() + 4, 0xdead);  // valid magic and length, unknown type
    Socket s = Dial(root.addr);
    Send(s, frame);
    ExpectDropped(s, "unknown type");
  }
  {
    // The right secret, cut short: the root must not wait for the rest past the close.
    std::vector<uint8_t> frame = HelloFrame(root.secret, 2, nranks);
    frame.resize(wire::kHeaderBytes + 20);
    Socket s = Dial(root.addr);
    Send(s, frame);
    s.Close();
  }

  // The silent client is dropped after the per-connection deadline while the root keeps
  // serving the two ranks already waiting on it.
  ExpectDropped(silent, "silent connection", 8000);
  int64_t silent_ms = ElapsedMs(silent_since);
  EXPECT_GE(silent_ms, 4500);
  EXPECT_LE(silent_ms, 7500);

  auto late_start = SteadyClock::now();
  auto late =
      RunRanks(id, {{2, nranks, 20000}}, [&](int rank, Bootstrap& b) { data.Check(rank, b); });
  early_ranks.join();
  EXPECT_EQ(xcclSuccess, late[0].init) << late[0].error;
  EXPECT_LT(ElapsedMs(late_start), 3000);
  for (int r = 0; r < 2; ++r) EXPECT_EQ(xcclSuccess, early[r].init) << early[r].error;
}

// A 30,000-connection flood of garbage at the root while two ranks join: init
// succeeds and the log holds a few lines about it, not one per connection. In a child process,
// whose log goes to a file of its own.
TEST(BootstrapRoot, GarbageFloodLeavesAFewLinesAndInitSucceeds) {
  const std::string pattern = "/tmp/xccl-flood-test-%p.log";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Params params = GetParams();
    params.debug_file = pattern;
    SetParamsForTesting(params);
    xcclUniqueId id;
    if (Bootstrap::CreateUniqueId(&id) != xcclSuccess) _exit(2);
    const RootTarget root = Target(id);
    std::atomic<int> sent{0};
    std::vector<std::thread> flood;
    for (int t = 0; t < 3; ++t) {
      flood.emplace_back([&] {
        const uint8_t garbage[16] = {'G', 'A', 'R', 'B', 'A', 'G', 'E'};
        while (sent.fetch_add(1) < 30000) {
          Socket s;
          if (!Socket::Connect(root.addr, Deadline(2000), &s).ok()) continue;
          (void)s.SendAll(garbage, sizeof(garbage), Deadline(1000));
          // Reset on close: no TIME_WAIT, so 30,000 connections do not run out of ports.
          const linger reset{1, 0};
          setsockopt(s.fd(), SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
        }
      });
    }
    // Rank 0 joins during the flood and waits at the root; rank 1 once the flood is over, so
    // that every connection meets a root still serving the rendezvous.
    std::vector<RankOutcome> first;
    std::thread early([&] { first = RunRanks(id, {{0, 2, 60000, 300}}); });
    for (auto& t : flood) t.join();
    const auto second = RunRanks(id, {{1, 2, 60000}});
    early.join();
    for (const RankOutcome& o : {first[0], second[0]})
      if (o.init != xcclSuccess) fprintf(stderr, "flood test: init failed: %s\n", o.error.c_str());
    _exit(first[0].init == xcclSuccess && second[0].init == xcclSuccess ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const std::string log = "/tmp/xccl-flood-test-" + std::to_string(child) + ".log";
  std::ifstream in(log);
  int lines = 0, refusal_lines = 0;
  std::string text;
  for (std::string line; std::getline(in, line);) {
    ++lines;
    refusal_lines += line.find("refused") != std::string::npos;
    if (lines <= 20) text += line + "\n";
  }
  unlink(log.c_str());
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
      << "init under the flood failed (status " << status << "); the log begins:\n"
      << text;
  EXPECT_GT(refusal_lines, 0) << "the flood reached nothing: the test has no teeth";
  EXPECT_LT(lines, 100) << refusal_lines << " lines about refusals";
}

TEST(BootstrapRoot, DuplicateRankFailsEveryone) {
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  RootTarget root = Target(id);
  std::vector<RankOutcome> rank0;
  std::thread t([&] { rank0 = RunRanks(id, {{0, 2, 5000}}); });
  std::this_thread::sleep_for(Ms(200));  // let rank 0 join first

  // Another process that holds the id and claims rank 0 too.
  Socket dup = Dial(root.addr);
  Send(dup, HelloFrame(root.secret, 0, 2));
  uint8_t header[wire::kHeaderBytes];
  ASSERT_TRUE(dup.RecvAll(header, sizeof(header), Deadline(3000)).ok());
  EXPECT_EQ(wire::kError, wire::GetU32(header + 4));
  std::vector<uint8_t> payload(wire::GetU32(header + 8));
  ASSERT_LE(payload.size(), wire::kMaxRequestBytes);
  ASSERT_TRUE(dup.RecvAll(payload.data(), payload.size(), Deadline(3000)).ok());
  EXPECT_EQ(static_cast<uint32_t>(xcclInvalidUsage),
            wire::GetU32(payload.data() + wire::kSecretBytes));

  t.join();
  EXPECT_EQ(xcclInvalidUsage, rank0[0].init);
  EXPECT_TRUE(Contains(rank0[0].error, "two ranks claim rank 0")) << rank0[0].error;

  // A rank arriving after the failure is told at once, not left to time out.
  auto late = RunRanks(id, {{1, 2, 5000}});
  EXPECT_EQ(xcclInvalidUsage, late[0].init) << late[0].error;
  EXPECT_LT(late[0].init_ms, 1000);
}

TEST(BootstrapRoot, MismatchedNranksIsInvalidUsage) {
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  auto outcomes = RunRanks(id, {{0, 2, 3000}, {1, 3, 3000, 100}});
  for (const RankOutcome& o : outcomes) {
    EXPECT_EQ(xcclInvalidUsage, o.init) << o.error;
    EXPECT_TRUE(Contains(o.error, "disagree on nranks")) << o.error;
    EXPECT_LT(o.init_ms, 2000);
  }
}

TEST(BootstrapRoot, MissingRankTimesOutNamingIt) {
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  auto outcomes = RunRanks(id, {{0, 3, 1500}, {1, 3, 1500}});
  for (const RankOutcome& o : outcomes) {
    EXPECT_EQ(xcclTimeout, o.init) << o.error;
    EXPECT_TRUE(Contains(o.error, "did not complete within 1500 ms")) << o.error;
    EXPECT_TRUE(Contains(o.error, "1 of 3 ranks")) << o.error;
    EXPECT_TRUE(Contains(o.error, "never joined: rank 2")) << o.error;
    EXPECT_LE(o.init_ms, 1600);
    EXPECT_GE(o.init_ms, 1000);
  }
}

TEST(BootstrapRoot, ReusedIdIsInvalidUsage) {
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  auto first = RunRanks(id, AllRanks(2, 5000));
  ASSERT_EQ(xcclSuccess, first[0].init) << first[0].error;
  ASSERT_EQ(xcclSuccess, first[1].init) << first[1].error;

  for (const RankSpec& s : std::vector<RankSpec>{{0, 2, 5000}, {1, 2, 5000}, {2, 3, 5000}}) {
    auto again = RunRanks(id, {s});
    EXPECT_EQ(xcclInvalidUsage, again[0].init) << "rank " << s.rank;
    EXPECT_TRUE(Contains(again[0].error, "unique id already used")) << again[0].error;
    EXPECT_LT(again[0].init_ms, 100);
  }
}

TEST(BootstrapRoot, SameRankTwiceConcurrentlyIsInvalidUsage) {
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  std::vector<RankOutcome> waiting;
  std::thread t([&] { waiting = RunRanks(id, {{0, 2, 5000}}); });
  std::this_thread::sleep_for(Ms(100));
  auto second = RunRanks(id, {{0, 2, 5000}});
  EXPECT_EQ(xcclInvalidUsage, second[0].init);
  EXPECT_TRUE(Contains(second[0].error, "unique id already used by rank 0")) << second[0].error;
  auto other = RunRanks(id, {{1, 2, 5000}});  // lets the first one finish
  t.join();
  EXPECT_EQ(xcclSuccess, waiting[0].init) << waiting[0].error;
  EXPECT_EQ(xcclSuccess, other[0].init) << other[0].error;
}

TEST(BootstrapRoot, CorruptIdAndBadArguments) {
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  std::unique_ptr<Bootstrap> b;
  xcclUniqueId bad = id;
  bad.internal[33] ^= 0x40;
  EXPECT_EQ(xcclInvalidArgument, Bootstrap::Init(bad, 0, 1, 1000, &b));
  EXPECT_EQ(xcclInvalidArgument, Bootstrap::Init(id, 2, 2, 1000, &b));
  EXPECT_EQ(xcclInvalidArgument, Bootstrap::Init(id, -1, 2, 1000, &b));
  EXPECT_EQ(xcclInvalidArgument, Bootstrap::Init(id, 0, 0, 1000, &b));
  EXPECT_EQ(xcclInvalidArgument, Bootstrap::Init(id, 0, 1, 0, &b));
  EXPECT_EQ(xcclInvalidArgument, Bootstrap::Init(id, 0, 1, 1000, nullptr));
  // None of those consumed the id.
  EXPECT_EQ(xcclSuccess, Bootstrap::Init(id, 0, 1, 1000, &b)) << ThreadLastError();
  EXPECT_EQ(xcclInvalidArgument, Bootstrap::CreateUniqueId(nullptr));
}

// ---- After Init: dead peers, stuck peers, Abort, misuse -----------------------------------

// Two ranks initialised in threads, handed back to the test thread.
void InitPair(int64_t timeout_ms, std::unique_ptr<Bootstrap> out[2]) {
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  xcclResult_t rc[2];
  std::thread t1([&] { rc[1] = Bootstrap::Init(id, 1, 2, timeout_ms, &out[1]); });
  rc[0] = Bootstrap::Init(id, 0, 2, timeout_ms, &out[0]);
  t1.join();
  ASSERT_EQ(xcclSuccess, rc[0]);
  ASSERT_EQ(xcclSuccess, rc[1]);
}

TEST(BootstrapRing, ClosedPeerIsRemoteErrorNamingIt) {
  std::unique_ptr<Bootstrap> b[2];
  ASSERT_NO_FATAL_FAILURE(InitPair(5000, b));
  b[1].reset();  // rank 1's process is gone
  auto start = SteadyClock::now();
  EXPECT_EQ(xcclRemoteError, b[0]->Barrier());
  EXPECT_TRUE(Contains(ThreadLastError(), "rank 1 closed")) << ThreadLastError();
  EXPECT_LT(ElapsedMs(start), 1000);
}

TEST(BootstrapRing, SilentPeerTimesOutNamingIt) {
  std::unique_ptr<Bootstrap> b[2];
  ASSERT_NO_FATAL_FAILURE(InitPair(600, b));
  std::vector<uint8_t> buf(2 * 64, 0);
  auto start = SteadyClock::now();
  EXPECT_EQ(xcclTimeout, b[0]->AllGather(buf.data(), 64));
  EXPECT_TRUE(Contains(ThreadLastError(), "rank 1 sent no data within 600 ms"))
      << ThreadLastError();
  int64_t ms = ElapsedMs(start);
  EXPECT_GE(ms, 550);
  EXPECT_LT(ms, 1500);
}

TEST(BootstrapRing, AbortWakesABlockedCall) {
  std::unique_ptr<Bootstrap> b[2];
  ASSERT_NO_FATAL_FAILURE(InitPair(20000, b));
  // Rank 1 never comes to the barrier.
  bootstrap_test::ExpectAbortUnblocks(
      b[0].get(), [&] { return b[0]->Barrier(); }, Ms(100));
  // The peer of an aborted rank sees it gone, by name.
  EXPECT_EQ(xcclRemoteError, b[1]->Barrier());
  EXPECT_TRUE(Contains(ThreadLastError(), "rank 0")) << ThreadLastError();
  EXPECT_EQ(xcclInvalidUsage, b[0]->Barrier());
}

TEST(BootstrapRing, MismatchedCallsAreInvalidUsage) {
  std::unique_ptr<Bootstrap> b[2];
  ASSERT_NO_FATAL_FAILURE(InitPair(5000, b));
  xcclResult_t rc[2];
  std::vector<uint8_t> small(2 * 8), large(2 * 16);
  std::thread t([&] { rc[1] = b[1]->AllGather(large.data(), 16); });
  rc[0] = b[0]->AllGather(small.data(), 8);
  t.join();
  EXPECT_EQ(xcclInvalidUsage, rc[0]);
  EXPECT_EQ(xcclInvalidUsage, rc[1]);
  EXPECT_TRUE(Contains(ThreadLastError(), "out of step")) << ThreadLastError();
}

// ---- A rank's ring listener under attack --------------------------------------------------

// The test plays rank 1 of 2 by hand, so that it learns rank 0's ring listener address from
// the root and can attack it before connecting properly.
TEST(BootstrapRing, ListenerRefusesStrangers) {
  xcclUniqueId id;
  ASSERT_EQ(xcclSuccess, Bootstrap::CreateUniqueId(&id)) << ThreadLastError();
  RootTarget root = Target(id);
  std::mt19937 rng(NewSeed());

  xcclResult_t rank0_rc = xcclInternalError;
  std::unique_ptr<Bootstrap> rank0;
  std::thread t([&] { rank0_rc = Bootstrap::Init(id, 0, 2, 15000, &rank0); });

  // Our own ring listener, on the address we reach the root from.
  Socket to_root = Dial(root.addr);
  sockaddr_storage local;
  ASSERT_EQ(xcclSuccess, to_root.LocalAddress(&local));
  if (local.ss_family == AF_INET) reinterpret_cast<sockaddr_in&>(local).sin_port = 0;
  if (local.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6&>(local).sin6_port = 0;
  Socket my_listener;
  ASSERT_EQ(xcclSuccess, Socket::Listen(local, &my_listener));
  sockaddr_storage my_addr;
  ASSERT_EQ(xcclSuccess, my_listener.LocalAddress(&my_addr));

  wire::HelloMsg hello{};
  memcpy(hello.secret, root.secret, sizeof(hello.secret));
  hello.rank = 1;
  hello.nranks = 2;
  hello.timeout_ms = 15000;
  hello.wait_ms = 15000;
  PackAddress(my_addr, hello.listen_addr);
  Send(to_root, wire::Frame(wire::kHello, wire::EncodeHello(hello)));
  uint8_t answer[wire::kHeaderBytes + wire::kSecretBytes + 4 + kWireAddressBytes];
  ASSERT_TRUE(to_root.RecvAll(answer, sizeof(answer), Deadline(5000)).ok());
  ASSERT_EQ(wire::kNextAddress, wire::GetU32(answer + 4));
  sockaddr_storage rank0_addr;
  ASSERT_TRUE(UnpackAddress(answer + wire::kHeaderBytes + wire::kSecretBytes + 4, &rank0_addr));

  auto ring_hello = [&](const uint8_t* secret, uint32_t rank) {
    wire::RingHelloMsg m{};
    memcpy(m.secret, secret, wire::kSecretBytes);
    m.rank = rank;
    m.nranks = 2;
    return wire::Frame(wire::kRingHello, wire::EncodeRingHello(m));
  };
  {
    uint8_t wrong[wire::kSecretBytes];
    memcpy(wrong, root.secret, sizeof(wrong));
    wrong[rng() % sizeof(wrong)] ^= 0x20;
    Socket s = Dial(rank0_addr);
    Send(s, ring_hello(wrong, 1));
    ExpectDropped(s, "ring hello with a wrong secret");
  }
  {
    Socket s = Dial(rank0_addr);
    Send(s, ring_hello(root.secret, 0));  // right secret, but rank 0's predecessor is rank 1
    ExpectDropped(s, "ring hello from the wrong rank");
  }
  {
    std::vector<uint8_t> garbage(64);
    for (auto& b : garbage) b = static_cast<uint8_t>(rng());
    garbage[0] = 'G';
    Socket s = Dial(rank0_addr);
    Send(s, garbage);
    ExpectDropped(s, "ring garbage");
  }
  {
    uint8_t header[wire::kHeaderBytes];
    wire::PutHeader(header, wire::kRingHello, 100000);
    Socket s = Dial(rank0_addr);
    Send(s, std::vector<uint8_t>(header, header + sizeof(header)));
    ExpectDropped(s, "ring oversized");
  }

  // Now as the real rank 1: our connection to rank 0, then rank 0's to us.
  Socket to_rank0 = Dial(rank0_addr);
  Send(to_rank0, ring_hello(root.secret, 1));
  Socket from_rank0;
  ASSERT_TRUE(my_listener.Accept(Deadline(5000), &from_rank0, nullptr).ok());
  uint8_t their_hello[wire::kHeaderBytes + wire::kRingHelloBytes];
  ASSERT_TRUE(from_rank0.RecvAll(their_hello, sizeof(their_hello), Deadline(5000)).ok());
  EXPECT_EQ(wire::kRingHello, wire::GetU32(their_hello + 4));
  std::vector<uint8_t> ack = ring_hello(root.secret, 1);
  wire::PutU32(ack.data() + 4, wire::kRingAck);
  Send(from_rank0, ack);
  uint8_t our_ack[wire::kHeaderBytes + wire::kRingHelloBytes];
  ASSERT_TRUE(to_rank0.RecvAll(our_ack, sizeof(our_ack), Deadline(5000)).ok());
  EXPECT_EQ(wire::kRingAck, wire::GetU32(our_ack + 4));
  EXPECT_EQ(0u, wire::GetU32(our_ack + wire::kHeaderBytes + wire::kSecretBytes));

  // Init's last step, call #0 over the ring: the listen-address exchange. Rank 0, our
  // predecessor and successor, sends its header and address on from_rank0; we ours on to_rank0.
  uint8_t coll[wire::kHeaderBytes + wire::kCollHeaderBytes];
  wire::PutHeader(coll, wire::kCollHeader, wire::kCollHeaderBytes);
  wire::PutU64(coll + wire::kHeaderBytes, 0);
  wire::PutU64(coll + wire::kHeaderBytes + 8, kWireAddressBytes);
  wire::PutU32(coll + wire::kHeaderBytes + 16, wire::kOpAddressTable);
  uint8_t my_packed[kWireAddressBytes];
  PackAddress(my_addr, my_packed);
  Send(to_rank0, std::vector<uint8_t>(coll, coll + sizeof(coll)));
  Send(to_rank0, std::vector<uint8_t>(my_packed, my_packed + sizeof(my_packed)));
  uint8_t their_coll[sizeof(coll)];
  ASSERT_TRUE(from_rank0.RecvAll(their_coll, sizeof(their_coll), Deadline(5000)).ok());
  EXPECT_EQ(0, memcmp(coll, their_coll, sizeof(coll)));  // seq 0, 24-byte blocks, the same op
  uint8_t rank0_packed[kWireAddressBytes];
  ASSERT_TRUE(from_rank0.RecvAll(rank0_packed, sizeof(rank0_packed), Deadline(5000)).ok());
  sockaddr_storage rank0_listen;
  ASSERT_TRUE(UnpackAddress(rank0_packed, &rank0_listen));
  EXPECT_TRUE(SameAddress(rank0_listen, rank0_addr)) << FormatAddress(rank0_listen);
  t.join();
  ASSERT_EQ(xcclSuccess, rank0_rc);

  // After Init the same listener takes point-to-point connections while rank 0 is inside a
  // call: strangers are dropped, a real peer's message arrives, and a malformed header from
  // that peer fails the Recv waiting on it at once, without a crash.
  std::vector<uint8_t> payload(16), got(16, 0);
  for (auto& b : payload) b = static_cast<uint8_t>(rng());
  xcclResult_t recv_rc[2] = {xcclInternalError, xcclInternalError};
  std::string recv_message[2];
  auto bad_header_sent = SteadyClock::now();
  int64_t bad_header_ms = -1;
  std::thread receiver([&] {
    recv_rc[0] = rank0->Recv(1, 3, got.data(), got.size());
    recv_message[0] = ThreadLastError();
    uint8_t more[8];
    recv_rc[1] = rank0->Recv(1, 4, more, sizeof(more));
    recv_message[1] = ThreadLastError();
    bad_header_ms = ElapsedMs(bad_header_sent);
  });
  auto p2p_hello = [&](const uint8_t* secret, uint32_t rank, uint32_t type = wire::kP2pHello) {
    std::vector<uint8_t> frame = ring_hello(secret, rank);
    wire::PutU32(frame.data() + 4, type);
    return frame;
  };
  {
    uint8_t wrong[wire::kSecretBytes];
    memcpy(wrong, root.secret, sizeof(wrong));
    wrong[rng() % sizeof(wrong)] ^= 0x01;
    Socket s = Dial(rank0_addr);
    Send(s, p2p_hello(wrong, 1));
    ExpectDropped(s, "message hello with a wrong secret");
  }
  {
    Socket s = Dial(rank0_addr);
    Send(s, p2p_hello(root.secret, 0));  // rank 0 itself
    ExpectDropped(s, "message hello claiming the listener's own rank");
  }
  {
    Socket s = Dial(rank0_addr);
    Send(s, p2p_hello(root.secret, 1, wire::kRingHello));  // the ring is connected already
    ExpectDropped(s, "ring hello after Init");
  }
  {
    uint8_t header[wire::kHeaderBytes];
    wire::PutHeader(header, wire::kP2pHello, 1u << 31);
    Socket s = Dial(rank0_addr);
    Send(s, std::vector<uint8_t>(header, header + sizeof(header)));
    ExpectDropped(s, "oversized message hello");
  }
  Socket p2p = Dial(rank0_addr);
  Send(p2p, p2p_hello(root.secret, 1));
  uint8_t p2p_ack[wire::kHeaderBytes + wire::kRingHelloBytes];
  ASSERT_TRUE(p2p.RecvAll(p2p_ack, sizeof(p2p_ack), Deadline(5000)).ok());
  EXPECT_EQ(wire::kP2pAck, wire::GetU32(p2p_ack + 4));
  EXPECT_EQ(0, memcmp(p2p_ack + wire::kHeaderBytes, root.secret, wire::kSecretBytes));
  EXPECT_EQ(0u, wire::GetU32(p2p_ack + wire::kHeaderBytes + wire::kSecretBytes));
  auto data_header = [](uint32_t tag, uint64_t bytes) {
    std::vector<uint8_t> h(wire::kHeaderBytes + wire::kP2pDataBytes);
    wire::PutHeader(h.data(), wire::kP2pData, wire::kP2pDataBytes);
    wire::PutU32(h.data() + wire::kHeaderBytes, tag);
    wire::PutU64(h.data() + wire::kHeaderBytes + 4, bytes);
    return h;
  };
  Send(p2p, data_header(3, payload.size()));
  Send(p2p, payload);
  std::this_thread::sleep_for(Ms(50));  // rank 0 is in its second Recv by now, or soon
  bad_header_sent = SteadyClock::now();
  Send(p2p, data_header(4, wire::kMaxMessageBytes + 1));
  receiver.join();
  EXPECT_EQ(xcclSuccess, recv_rc[0]) << recv_message[0];
  EXPECT_EQ(payload, got);
  EXPECT_EQ(xcclRemoteError, recv_rc[1]) << recv_message[1];
  EXPECT_TRUE(Contains(recv_message[1], "rank 1 sent a malformed message header"))
      << recv_message[1];
  EXPECT_LT(bad_header_ms, 2000);
  ExpectDropped(p2p, "a peer that sent a malformed header");
}

// ---- Socket helpers ---------------------------------------------------------------------

TEST(BootstrapSocket, IfnameSyntax) {
  EXPECT_TRUE(IfnameMatches("", "eth0"));
  EXPECT_TRUE(IfnameMatches("eth", "eth0"));
  EXPECT_TRUE(IfnameMatches("ib,eth", "eth1"));
  EXPECT_FALSE(IfnameMatches("ib,eth", "lo"));
  EXPECT_FALSE(IfnameMatches("^eth", "eth0"));
  EXPECT_TRUE(IfnameMatches("^eth,docker", "lo"));
  EXPECT_FALSE(IfnameMatches("^docker,lo", "docker0"));
  EXPECT_TRUE(IfnameMatches("=eth0", "eth0"));
  EXPECT_FALSE(IfnameMatches("=eth0", "eth01"));
  EXPECT_FALSE(IfnameMatches("^=eth0", "eth0"));
  EXPECT_TRUE(IfnameMatches("^=eth0", "eth01"));
}

TEST(BootstrapSocket, ParseHostPort) {
  sockaddr_storage a;
  ASSERT_EQ(xcclSuccess, ParseHostPort("127.0.0.1:29500", &a));
  EXPECT_EQ("127.0.0.1:29500", FormatAddress(a));
  ASSERT_EQ(xcclSuccess, ParseHostPort("[::1]:443", &a));
  EXPECT_EQ("[::1]:443", FormatAddress(a));
  ASSERT_EQ(xcclSuccess, ParseHostPort("localhost:1234", &a));
  EXPECT_TRUE(a.ss_family == AF_INET || a.ss_family == AF_INET6);
  for (const char* bad : {"", "127.0.0.1", "127.0.0.1:", ":80", "host:0", "host:65536", "h:1x",
                          "::1:80", "[::1]80", "[::1"}) {
    EXPECT_EQ(xcclInvalidArgument, ParseHostPort(bad, &a)) << bad;
  }
}

TEST(BootstrapSocket, AddressesOnTheWire) {
  sockaddr_storage in[2], out;
  ASSERT_EQ(xcclSuccess, ParseHostPort("192.0.2.7:65535", &in[0]));
  ASSERT_EQ(xcclSuccess, ParseHostPort("[fd00::1:2]:1", &in[1]));
  for (const sockaddr_storage& a : in) {
    uint8_t packed[kWireAddressBytes];
    PackAddress(a, packed);
    ASSERT_TRUE(UnpackAddress(packed, &out));
    EXPECT_TRUE(SameAddress(a, out)) << FormatAddress(a) << " came back as " << FormatAddress(out);
  }
  uint8_t zero[kWireAddressBytes] = {};
  EXPECT_FALSE(UnpackAddress(zero, &out));
}

TEST(BootstrapSocket, InterfaceSelection) {
  sockaddr_storage a;
  std::string name;
  ASSERT_EQ(xcclSuccess, FindInterfaceAddress("", &a, &name)) << ThreadLastError();
  EXPECT_FALSE(name.empty());
  ASSERT_EQ(xcclSuccess, FindInterfaceAddress("=lo", &a, &name)) << ThreadLastError();
  EXPECT_EQ("lo", name);
  EXPECT_EQ(AF_INET, a.ss_family);  // lo has 127.0.0.1 and ::1: IPv4 first
  EXPECT_EQ(xcclSystemError, FindInterfaceAddress("=no-such-if0", &a, &name));
  EXPECT_TRUE(Contains(ThreadLastError(), "no-such-if0")) << ThreadLastError();
}

TEST(BootstrapSocket, ConnectRetriesUntilTheListenerAppears) {
  uint16_t port;
  ASSERT_TRUE(FreePort(AF_INET, &port));
  sockaddr_storage addr = Loopback(AF_INET, port);
  Socket listener;
  std::thread late([&] {
    std::this_thread::sleep_for(Ms(200));
    EXPECT_EQ(xcclSuccess, Socket::Listen(addr, &listener));
  });
  Socket s;
  IoStatus st = Socket::Connect(addr, Deadline(3000), &s);
  late.join();
  EXPECT_TRUE(st.ok()) << st.Describe();

  ASSERT_TRUE(FreePort(AF_INET, &port));
  auto start = SteadyClock::now();
  st = Socket::Connect(Loopback(AF_INET, port), Deadline(300), &s);
  EXPECT_EQ(IoStatus::kTimeout, st.code);
  EXPECT_EQ(ECONNREFUSED, st.err);
  EXPECT_LT(ElapsedMs(start), 800);
}

}  // namespace
}  // namespace xccl
