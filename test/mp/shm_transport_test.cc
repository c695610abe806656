// The host transport on its own, below the collectives: two and three ranks as threads over a
// real bootstrap, each with a ShmTransport. Puts land in the published buffer and raise the
// slot, in order per connection; a put that does not fit the
// published buffer is refused, not written; a closed buffer refuses late puts, naming the rank
// its owner announces as failed; waits give up at their deadline naming the peer, and a wait for
// several slots skips the ranks it does not watch; region puts land
// where they were put, keep their size per epoch parity, and a put past the region writes nothing.
#include "transport/shm/shm_transport.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/error.h"
#include "comm/topology_exchange.h"
#include "mp/arrival_slots.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/slot_map.h"
#include "transport/window.h"

namespace xccl {
namespace {

constexpr int64_t kTimeoutMs = 5000;
constexpr int kMaxWorld = 3;

// The slots these tests raise (arrival_slots.h).
const ArrivalSlots& Slots() {
  static const ArrivalSlots slots = LayArrivalSlots(5, kMaxWorld);
  return slots;
}
int Arrival(int src) { return Slots().arrivals.at(src); }
int BlockSignal() { return Slots().arrivals.first; }

// Runs body(rank, transport, bootstrap) on `world` thread ranks, each with its own initialised
// transport.
void OnRanks(int world, const std::function<void(int, ShmTransport&, Bootstrap*)>& body) {
  xcclUniqueId id;
  ASSERT_EQ(Bootstrap::CreateUniqueId(&id), xcclSuccess) << ThreadLastError();
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> bootstrap;
      Topology topology;
      ASSERT_EQ(Bootstrap::Init(id, r, world, kTimeoutMs, &bootstrap), xcclSuccess)
          << ThreadLastError();
      ASSERT_EQ(ExchangeTopology(bootstrap.get(), 0, Params{}, &topology), xcclSuccess)
          << ThreadLastError();
      ShmTransport transport(topology, Params(), Slots().geometry, kTimeoutMs);
      ASSERT_EQ(transport.Init(bootstrap.get()), xcclSuccess) << ThreadLastError();
      body(r, transport, bootstrap.get());
      // No rank tears its window down while a peer may still write or wait on it.
      ASSERT_EQ(bootstrap->Barrier(), xcclSuccess) << ThreadLastError();
    });
  }
  for (std::thread& t : ranks) t.join();
}

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(rng());
  return bytes;
}

TEST(ShmTransport, ThreadPeersAreSameProcessConnections) {
  OnRanks(3, [](int rank, ShmTransport& t, Bootstrap*) {
    for (int peer = 0; peer < 3; ++peer) {
      if (peer == rank) continue;
      EXPECT_EQ(t.connection(peer).kind(), TransportKind::kSameProcess);
    }
    EXPECT_EQ(t.queue_count(), 2);
  });
}

// Every rank puts a random block into every peer's published buffer at rank * block, queued to
// one peer and on the caller to the other, then waits for every arrival and checks every byte.
TEST(ShmTransport, PutsLandInThePublishedBufferThenRaiseTheSlot) {
  const uint64_t seed = std::random_device{}();
  const int world = 3;
  const size_t block = 100003;  // odd: no alignment luck
  OnRanks(world, [&](int rank, ShmTransport& t, Bootstrap*) {
    const uint32_t epoch = 1;
    std::vector<uint8_t> recv(world * block, 0xEE);
    t.PublishRecvBuffer(epoch, recv.data(), recv.size(), block, BlockSignal());
    const std::vector<uint8_t> mine = RandomBytes(block, seed + rank);
    const int queued = (rank + 1) % world, direct = (rank + 2) % world;
    t.connection(queued).Put(epoch, nullptr, rank * block, mine.data(), block, Arrival(rank));
    PlatformFailure failure;
    EXPECT_EQ(t.PutNow(direct, epoch, mine.data(), rank * block, block, Arrival(rank), &failure),
              xcclSuccess)
        << failure.message;
    for (int peer = 0; peer < world; ++peer) {
      if (peer == rank) continue;
      ASSERT_EQ(t.WaitSlot(Arrival(peer), epoch, peer, "its data", Deadline(kTimeoutMs), nullptr,
                           &failure),
                xcclSuccess)
          << failure.message;
      const std::vector<uint8_t> want = RandomBytes(block, seed + peer);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), recv.begin() + peer * block))
          << "rank " << rank << ": block of rank " << peer << " differs";
    }
    EXPECT_EQ(t.connection(queued).Flush(Deadline(kTimeoutMs), &failure), xcclSuccess)
        << failure.message;
    // This rank's own block was never written by anyone.
    for (size_t i = 0; i < block; ++i) ASSERT_EQ(recv[rank * block + i], 0xEE) << "byte " << i;
  });
}

// Region puts of two epochs in a row (a rank one operation ahead), each block as two runs, the
// first unsignalled: both runs land where they were put, and where in its slice the run that
// raised the slot ended is kept per epoch parity, so the earlier epoch's is still read after the
// later put.
TEST(ShmTransport, RegionPutsLeaveTheirEndPerEpoch) {
  const uint64_t seed = std::random_device{}();
  OnRanks(2, [&](int rank, ShmTransport& t, Bootstrap*) {
    const int peer = 1 - rank;
    const uint32_t epoch = 7;
    // The two ranks' puts and the two epochs' differ in size and place.
    auto size_of = [](int r, uint32_t e) { return size_t(1000) + 17 * r + 5 * (e & 1); };
    auto split_of = [](int r, uint32_t e) { return size_t(300) + 11 * r + 3 * (e & 1); };
    auto offset_of = [&](int r, uint32_t e) { return r * t.slice_bytes() + (e & 1) * 2048; };
    ASSERT_LE(size_of(1, 1) + 2048, t.slice_bytes());
    for (uint32_t e = epoch; e <= epoch + 1; ++e) {
      const std::vector<uint8_t> mine = RandomBytes(size_of(rank, e), seed + 2 * rank + e);
      const size_t first = split_of(rank, e);
      t.connection(peer).PutToRegion(e, offset_of(rank, e), mine.data(), first,
                                     ControlLayout::kNoSignal);
      t.connection(peer).PutToRegion(e, offset_of(rank, e) + first, mine.data() + first,
                                     mine.size() - first, Arrival(rank));
    }
    PlatformFailure failure;
    ASSERT_EQ(t.WaitSlot(Arrival(peer), epoch + 1, peer, "its data", Deadline(kTimeoutMs), nullptr,
                         &failure),
              xcclSuccess)
        << failure.message;
    for (uint32_t e = epoch; e <= epoch + 1; ++e) {
      size_t end = 0;
      ASSERT_TRUE(t.PutEnd(Arrival(peer), e, &end));
      EXPECT_EQ(end, offset_of(peer, e) % t.slice_bytes() + size_of(peer, e)) << "epoch " << e;
      const std::vector<uint8_t> want = RandomBytes(size_of(peer, e), seed + 2 * peer + e);
      const uint8_t* got = reinterpret_cast<const uint8_t*>(t.Received(peer, offset_of(peer, e)));
      EXPECT_TRUE(std::equal(want.begin(), want.end(), got)) << "epoch " << e;
    }
    ASSERT_EQ(t.Flush(Deadline(kTimeoutMs), &failure), xcclSuccess) << failure.message;
  });
}

// A put past the peer's region writes nothing and fails the connection's flush.
TEST(ShmTransport, ARegionPutPastTheRegionFailsTheFlush) {
  OnRanks(2, [](int rank, ShmTransport& t, Bootstrap* bootstrap) {
    const int peer = 1 - rank;
    std::vector<uint8_t> bytes(64, 0x5A);
    PlatformFailure failure;
    if (rank == 0) {
      t.connection(peer).PutToRegion(3, 2 * t.slice_bytes() - 32, bytes.data(), bytes.size(),
                                     ControlLayout::kNoSignal);
      EXPECT_EQ(t.connection(peer).Flush(Deadline(kTimeoutMs), &failure), xcclInternalError);
      EXPECT_NE(failure.message.find("region"), std::string::npos) << failure.message;
    }
    ASSERT_EQ(bootstrap->Barrier(), xcclSuccess);
    if (rank == 1) {
      const uint8_t* tail =
          reinterpret_cast<const uint8_t*>(t.Received(0, 2 * t.slice_bytes() - 32));
      for (int i = 0; i < 32; ++i) EXPECT_NE(tail[i], 0x5A) << "byte " << i;
    }
  });
}

// Rank 0 publishes blocks of 64 bytes; rank 1 puts 65: refused with xcclInvalidUsage naming the
// different counts, and not one byte of rank 0's buffer is written.
TEST(ShmTransport, APutThatDoesNotFitIsRefusedNotWritten) {
  OnRanks(2, [](int rank, ShmTransport& t, Bootstrap*) {
    const uint32_t epoch = 3;
    std::vector<uint8_t> recv(2 * 64, 0xEE);
    if (rank == 0) t.PublishRecvBuffer(epoch, recv.data(), recv.size(), 64, BlockSignal());
    if (rank == 1) {
      const std::vector<uint8_t> src = RandomBytes(65, 1);
      PlatformFailure failure;
      EXPECT_EQ(t.PutNow(0, epoch, src.data(), 64, 65, Arrival(1), &failure), xcclInvalidUsage);
      EXPECT_NE(failure.message.find("different counts"), std::string::npos) << failure.message;
      EXPECT_EQ(failure.peer, 0);
    }
    // Rank 0 sees no arrival (it gives up at a short deadline, naming rank 1) and no write.
    if (rank == 0) {
      PlatformFailure failure;
      EXPECT_EQ(t.WaitSlot(Arrival(1), epoch, 1, "its data", Deadline(300), nullptr, &failure),
                xcclTimeout);
      EXPECT_NE(failure.message.find("rank 1"), std::string::npos) << failure.message;
      for (uint8_t b : recv) ASSERT_EQ(b, 0xEE);
    }
  });
}

// WaitSlotsRaisedBy waits for the ranks it watches only: rank 1 raises its arrival and rank 2
// does not; rank 0's wait with rank 2 kUnwatched returns, and the same wait watching rank 2
// gives up at its deadline naming rank 2.
TEST(ShmTransport, AMultiSlotWaitSkipsTheRanksNotWatched) {
  OnRanks(3, [](int rank, ShmTransport& t, Bootstrap*) {
    const uint32_t epoch = 4;
    if (rank == 1) t.connection(0).Signal(Arrival(1), epoch);
    if (rank != 0) return;
    PlatformFailure failure;
    std::vector<int> raiser = {kUnwatched, 1, kUnwatched};
    EXPECT_EQ(t.WaitSlotsRaisedBy(Slots().arrivals.first, epoch, raiser, "its data",
                                  Deadline(kTimeoutMs), nullptr, &failure),
              xcclSuccess)
        << failure.message;
    raiser[2] = 2;
    EXPECT_EQ(t.WaitSlotsRaisedBy(Slots().arrivals.first, epoch, raiser, "its data", Deadline(300),
                                  nullptr, &failure),
              xcclTimeout);
    EXPECT_NE(failure.message.find("rank 2"), std::string::npos) << failure.message;
  });
}

// Rank 0 publishes blocks of 64 bytes with its arrival flags as the block signal; rank 1 puts a
// whole, well-sized block at offset 0 but raising its own arrival (block 1's): refused, since a
// put is held to the block its flag names, and rank 0's buffer is untouched. The same put with no
// flag (kNoSignal) may go to any whole block and lands.
TEST(ShmTransport, APutIsHeldToTheBlockItsFlagNames) {
  OnRanks(2, [](int rank, ShmTransport& t, Bootstrap* bootstrap) {
    const uint32_t epoch = 4;
    std::vector<uint8_t> recv(2 * 64, 0xEE);
    const std::vector<uint8_t> src = RandomBytes(64, 7);
    if (rank == 0) t.PublishRecvBuffer(epoch, recv.data(), recv.size(), 64, BlockSignal());
    if (rank == 1) {
      PlatformFailure failure;
      EXPECT_EQ(t.PutNow(0, epoch, src.data(), 0, 64, Arrival(1), &failure), xcclInvalidUsage);
      EXPECT_NE(failure.message.find("different counts"), std::string::npos) << failure.message;
      EXPECT_EQ(t.PutNow(0, epoch, src.data(), 0, 64, ControlLayout::kNoSignal, &failure),
                xcclSuccess)
          << failure.message;
    }
    ASSERT_EQ(bootstrap->Barrier(), xcclSuccess) << ThreadLastError();
    if (rank == 0) {
      for (size_t i = 0; i < 64; ++i) ASSERT_EQ(recv[i], src[i]) << i;
      for (size_t i = 64; i < recv.size(); ++i) ASSERT_EQ(recv[i], 0xEE) << i;
    }
  });
}

TEST(ShmTransport, AClosedBufferRefusesLatePuts) {
  OnRanks(2, [](int rank, ShmTransport& t, Bootstrap* bootstrap) {
    const uint32_t epoch = 5;
    std::vector<uint8_t> recv(2 * 32, 0xEE);
    if (rank == 0) {
      t.PublishRecvBuffer(epoch, recv.data(), recv.size(), 32, BlockSignal());
      t.CloseRecvBuffer(epoch, Deadline(kTimeoutMs));
    }
    ASSERT_EQ(bootstrap->Barrier(), xcclSuccess);  // the put comes after the close
    if (rank == 1) {
      const std::vector<uint8_t> src = RandomBytes(32, 2);
      PlatformFailure failure;
      EXPECT_EQ(t.PutNow(0, epoch, src.data(), 32, 32, Arrival(1), &failure), xcclRemoteError);
      // No rank announced a failure: the owner that gave the buffer up is named.
      EXPECT_EQ(failure.peer, 0) << failure.message;
      EXPECT_NE(failure.message.find("rank 0 gave up the call before this put"), std::string::npos)
          << failure.message;
    }
    ASSERT_EQ(bootstrap->Barrier(), xcclSuccess);
    if (rank == 0) {
      for (uint8_t b : recv) ASSERT_EQ(b, 0xEE);
    }
  });
}

// The owner of a buffer gives it up because rank 2 failed and announces that only afterwards (as
// a real owner does once its writers have left). A put that finds the buffer closed must name
// rank 2, the root cause, not the owner that closed it; and nothing lands.
TEST(ShmTransport, APutIntoAGivenUpBufferNamesTheAnnouncedRank) {
  OnRanks(3, [](int rank, ShmTransport& t, Bootstrap* bootstrap) {
    const uint32_t epoch = 9;
    const int culprit = 2;
    std::vector<uint8_t> recv(3 * 48, 0xEE);
    if (rank == 0) {
      t.PublishRecvBuffer(epoch, recv.data(), recv.size(), 48, BlockSignal());
      t.CloseRecvBuffer(epoch, Deadline(kTimeoutMs));
    }
    ASSERT_EQ(bootstrap->Barrier(), xcclSuccess);  // the put comes after the close
    if (rank == 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(40));  // the put is waiting by now
      t.Abort(culprit);
    }
    if (rank == 1) {
      const std::vector<uint8_t> src = RandomBytes(48, 3);
      PlatformFailure failure;
      EXPECT_EQ(t.PutNow(0, epoch, src.data(), 48, 48, Arrival(1), &failure), xcclRemoteError);
      EXPECT_EQ(failure.peer, culprit) << failure.message;
      EXPECT_NE(failure.message.find("rank 0 reported that rank 2 failed"), std::string::npos)
          << failure.message;
    }
    ASSERT_EQ(bootstrap->Barrier(), xcclSuccess);
    if (rank == 0) {
      for (uint8_t b : recv) ASSERT_EQ(b, 0xEE);
    }
  });
}

}  // namespace
}  // namespace xccl
