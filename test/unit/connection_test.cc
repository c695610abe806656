// ChooseTransport: the path to each peer from the topology alone.
#include "transport/connection.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

namespace xccl {
namespace {

// Four ranks of one node: 0 and 1 threads of one process, 2 and 3 one process each; this rank
// is `me`.
Topology FourRanks(int me) {
  std::mt19937_64 rng(std::random_device{}());
  const uint64_t tokens[4] = {rng() | 1, 0, rng() | 1, rng() | 1};
  Topology t;
  t.rank = me;
  t.nranks = 4;
  t.ranks.resize(4);
  for (int r = 0; r < 4; ++r) {
    memset(&t.ranks[r], 0, sizeof(RankInfo));
    t.ranks[r].host_hash = 7;
    t.ranks[r].pid = 100 + r;
    t.ranks[r].process_token = r == 1 ? tokens[0] : tokens[r];
  }
  GroupNodes(&t);
  return t;
}

TEST(Connection, KindsFollowTheTopology) {
  for (bool device_memory : {false, true}) {
    SCOPED_TRACE(device_memory ? "device memory" : "host memory");
    const TransportKind other = device_memory ? TransportKind::kP2p : TransportKind::kShm;
    const Topology t0 = FourRanks(0);
    EXPECT_EQ(ChooseTransport(t0, 0, device_memory), TransportKind::kSelf);
    EXPECT_EQ(ChooseTransport(t0, 1, device_memory), TransportKind::kSameProcess);
    EXPECT_EQ(ChooseTransport(t0, 2, device_memory), other);
    EXPECT_EQ(ChooseTransport(t0, 3, device_memory), other);
    const Topology t2 = FourRanks(2);
    EXPECT_EQ(ChooseTransport(t2, 0, device_memory), other);
    EXPECT_EQ(ChooseTransport(t2, 1, device_memory), other);
    EXPECT_EQ(ChooseTransport(t2, 2, device_memory), TransportKind::kSelf);
  }
}

TEST(Connection, EveryKindHasAName) {
  EXPECT_STREQ(TransportKindName(TransportKind::kSelf), "self");
  EXPECT_STREQ(TransportKindName(TransportKind::kSameProcess), "same process");
  EXPECT_STREQ(TransportKindName(TransportKind::kP2p), "p2p");
  EXPECT_STREQ(TransportKindName(TransportKind::kShm), "shm");
}

}  // namespace
}  // namespace xccl
