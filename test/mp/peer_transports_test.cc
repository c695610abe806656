// The transports of a rank chosen per peer (docs/ARCHITECTURE.md, "Transports per peer"), below
// the collectives: four thread ranks as two fake nodes of two, each with the Transport that
// CreateTransports makes. A peer of this node is reached by the node transport (a rank of this
// process) and a peer of the other node by the net transport; region puts and puts into the
// published buffer over both land whole, raise the receiver's own slot, and read back byte for
// byte; a region put past the sender's slice is refused on the wire, naming the setting.
#include "transport/peer_transports.h"

#include <gtest/gtest.h>

#include <algorithm>
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

constexpr int64_t kTimeoutMs = 10000;
constexpr int kWorld = 4;

const ArrivalSlots& Slots() {
  static const ArrivalSlots slots = LayArrivalSlots(3, kWorld);
  return slots;
}
int Arrival(int src) { return Slots().arrivals.at(src); }

Params TwoNodes() {
  Params params;
  params.fake_nodes = "2,2";
  params.net = "socket";
  params.socket_ifname = "lo";
  params.socket_nsocks = 1;
  return params;
}

// Runs body(rank, transports, bootstrap) on kWorld thread ranks as two nodes of two.
void OnRanks(const std::function<void(int, Transport&, Bootstrap*)>& body) {
  xcclUniqueId id;
  ASSERT_EQ(Bootstrap::CreateUniqueId(&id), xcclSuccess) << ThreadLastError();
  std::vector<std::thread> ranks;
  for (int r = 0; r < kWorld; ++r) {
    ranks.emplace_back([&, r] {
      std::unique_ptr<Bootstrap> bootstrap;
      Topology topology;
      const Params params = TwoNodes();
      ASSERT_EQ(Bootstrap::Init(id, r, kWorld, kTimeoutMs, &bootstrap), xcclSuccess)
          << ThreadLastError();
      ASSERT_EQ(ExchangeTopology(bootstrap.get(), 0, params, &topology), xcclSuccess)
          << ThreadLastError();
      ASSERT_EQ(topology.node_count, 2);
      std::unique_ptr<Transport> transport;
      ASSERT_EQ(CreateTransports(bootstrap.get(), topology, params, Slots().geometry, kTimeoutMs,
                                 &transport),
                xcclSuccess)
          << ThreadLastError();
      body(r, *transport, bootstrap.get());
      // No rank closes its links or window while a peer may still write or wait on them.
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

int NodeOf(int rank) { return rank / 2; }

TEST(PeerTransports, EachPeerIsReachedByTheTransportOfItsNode) {
  OnRanks([](int rank, Transport& t, Bootstrap*) {
    EXPECT_STREQ(t.name(), "shm");
    for (int peer = 0; peer < kWorld; ++peer) {
      if (peer == rank) continue;
      const TransportKind want =
          NodeOf(peer) == NodeOf(rank) ? TransportKind::kSameProcess : TransportKind::kNet;
      EXPECT_EQ(t.connection(peer).kind(), want) << "rank " << rank << " to " << peer << ": "
                                                 << TransportKindName(t.connection(peer).kind());
    }
  });
}

// Every rank puts a block of its own size into its slice of every peer's region, over shm or the
// net; every receiver waits on its own slot per source and reads each block back whole, with its
// size.
TEST(PeerTransports, RegionPutsOverBothTransportsLandWhole) {
  const uint64_t seed = std::random_device{}();
  OnRanks([&](int rank, Transport& t, Bootstrap*) {
    const uint32_t epoch = 11;
    auto size_of = [](int r) { return size_t(3000) + 131 * r; };
    const std::vector<uint8_t> mine = RandomBytes(size_of(rank), seed + rank);
    ASSERT_LE(size_of(kWorld - 1), t.region_put_limit());
    for (int peer = 0; peer < kWorld; ++peer)
      if (peer != rank)
        t.connection(peer).PutToRegion(epoch, rank * t.slice_bytes() + 64, mine.data(), mine.size(),
                                       Arrival(rank));
    PlatformFailure failure;
    for (int src = 0; src < kWorld; ++src) {
      if (src == rank) continue;
      ASSERT_EQ(t.WaitSlot(Arrival(src), epoch, src, "its block", Deadline(kTimeoutMs), nullptr,
                           &failure),
                xcclSuccess)
          << failure.message;
      size_t end = 0;  // where the put ended in the sender's slice, whichever transport carried it
      ASSERT_TRUE(t.PutEnd(Arrival(src), epoch, &end));
      EXPECT_EQ(end, 64 + size_of(src)) << "from rank " << src;
      const std::vector<uint8_t> want = RandomBytes(size_of(src), seed + src);
      const uint8_t* got =
          reinterpret_cast<const uint8_t*>(t.Received(src, src * t.slice_bytes() + 64));
      EXPECT_TRUE(std::equal(want.begin(), want.end(), got)) << "from rank " << src;
    }
    ASSERT_EQ(t.Flush(Deadline(kTimeoutMs), &failure), xcclSuccess) << failure.message;
  });
}

// Direct puts into the published receive buffer: over shm from this node's peer, over the net
// (PutNow queues on the proxy) from the other node's; the buffer starts poisoned and every block
// but this rank's own must read back as its source wrote it.
TEST(PeerTransports, DirectPutsOverBothTransportsFillThePublishedBuffer) {
  const uint64_t seed = std::random_device{}();
  OnRanks([&](int rank, Transport& t, Bootstrap* bootstrap) {
    DirectPuts* direct = t.direct_puts();
    ASSERT_NE(direct, nullptr);
    const uint32_t epoch = 21;
    const size_t block = 70000;  // above the inbox: the direct path's sizes
    std::vector<uint8_t> recv(kWorld * block, 0xEE);
    direct->PublishRecvBuffer(epoch, recv.data(), recv.size(), block, Slots().arrivals.first);
    ASSERT_EQ(bootstrap->Barrier(), xcclSuccess);
    const std::vector<uint8_t> mine = RandomBytes(block, seed + rank);
    PlatformFailure failure;
    for (int peer = 0; peer < kWorld; ++peer) {
      if (peer == rank) continue;
      ASSERT_EQ(
          direct->PutNow(peer, epoch, mine.data(), rank * block, block, Arrival(rank), &failure),
          xcclSuccess)
          << failure.message;
    }
    for (int src = 0; src < kWorld; ++src) {
      if (src == rank) continue;
      ASSERT_EQ(t.WaitSlot(Arrival(src), epoch, src, "its block", Deadline(kTimeoutMs), nullptr,
                           &failure),
                xcclSuccess)
          << failure.message;
      const std::vector<uint8_t> want = RandomBytes(block, seed + src);
      EXPECT_TRUE(std::equal(want.begin(), want.end(), recv.begin() + src * block))
          << "from rank " << src;
    }
    for (size_t i = 0; i < block; ++i) ASSERT_EQ(recv[rank * block + i], 0xEE) << "byte " << i;
    ASSERT_EQ(t.Flush(Deadline(kTimeoutMs), &failure), xcclSuccess) << failure.message;
    // Every put has landed before any rank closes its buffer.
    ASSERT_EQ(bootstrap->Barrier(), xcclSuccess);
    direct->CloseRecvBuffer(epoch, Deadline(kTimeoutMs));
  });
}

// Rank 2 (the other node) sends rank 0 a region put that runs past its slice: rank 0's net
// landing refuses it off the wire and its wait for rank 2 fails, naming the rank and the setting
// in which the ranks differ; nothing is raised.
TEST(PeerTransports, ARegionPutPastTheSenderSliceIsRefusedOnTheWire) {
  OnRanks([](int rank, Transport& t, Bootstrap*) {
    const uint32_t epoch = 31;
    PlatformFailure failure;
    if (rank == 2) {
      const std::vector<uint8_t> bytes(256, 0x5A);
      t.connection(0).PutToRegion(epoch, (rank + 1) * t.slice_bytes() - 128, bytes.data(),
                                  bytes.size(), Arrival(rank));
      (void)t.Flush(Deadline(2000), &failure);  // the link may fail under it: either is fine
    }
    if (rank != 0) return;
    const xcclResult_t result =
        t.WaitSlot(Arrival(2), epoch, 2, "its block", Deadline(kTimeoutMs), nullptr, &failure);
    EXPECT_EQ(result, xcclInvalidUsage) << failure.message;
    EXPECT_EQ(failure.peer, 2);
    EXPECT_NE(failure.message.find("XCCL_EAGER_BYTES"), std::string::npos) << failure.message;
  });
}

}  // namespace
}  // namespace xccl
