// GroupNodes on synthetic rank tables, and what DescribeThisRank reports about this process.
#include "base/topology.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/error.h"

namespace xccl {
namespace {

RankInfo MakeRank(uint64_t host_hash, int pid, int device, uint64_t token) {
  RankInfo info;
  memset(&info, 0, sizeof(info));
  snprintf(info.hostname, sizeof(info.hostname), "host-%016llx",
           static_cast<unsigned long long>(host_hash));
  info.host_hash = host_hash;
  info.pid = pid;
  info.device = device;
  info.process_token = token;
  return info;
}

// The reference: nodes numbered in order of each node's first rank.
void Reference(const std::vector<uint64_t>& hash_of_rank, int rank, std::vector<int>* node_of_rank,
               int* node_count, std::vector<int>* local_ranks) {
  std::vector<uint64_t> order;
  node_of_rank->clear();
  for (uint64_t hash : hash_of_rank) {
    auto it = std::find(order.begin(), order.end(), hash);
    if (it == order.end()) {
      order.push_back(hash);
      it = order.end() - 1;
    }
    node_of_rank->push_back(static_cast<int>(it - order.begin()));
  }
  *node_count = static_cast<int>(order.size());
  local_ranks->clear();
  for (size_t r = 0; r < hash_of_rank.size(); ++r)
    if (hash_of_rank[r] == hash_of_rank[rank]) local_ranks->push_back(static_cast<int>(r));
}

// Runs GroupNodes as each rank in turn and compares with the reference.
void CheckAllViews(const std::vector<uint64_t>& hash_of_rank) {
  const int nranks = static_cast<int>(hash_of_rank.size());
  for (int rank = 0; rank < nranks; ++rank) {
    SCOPED_TRACE("as rank " + std::to_string(rank) + " of " + std::to_string(nranks));
    Topology topology;
    topology.rank = rank;
    topology.nranks = nranks;
    for (int r = 0; r < nranks; ++r)
      topology.ranks.push_back(MakeRank(hash_of_rank[r], 1000 + r, r % 8, 0x1000 + r));
    // Poison the outputs: GroupNodes must replace them, not append.
    topology.node_of_rank.assign(3, 99);
    topology.node_count = -7;
    topology.local_ranks.assign(5, 99);
    GroupNodes(&topology);
    std::vector<int> node_of_rank, local_ranks;
    int node_count = 0;
    Reference(hash_of_rank, rank, &node_of_rank, &node_count, &local_ranks);
    ASSERT_EQ(topology.node_of_rank, node_of_rank);
    ASSERT_EQ(topology.node_count, node_count);
    ASSERT_EQ(topology.local_ranks, local_ranks);
    ASSERT_EQ(topology.rank, rank);
    ASSERT_EQ(topology.nranks, nranks);
  }
}

TEST(TopologyTest, ThreeNodesInterleaved) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 20; ++round) {
    std::set<uint64_t> distinct;
    while (distinct.size() < 3) distinct.insert(rng());
    std::vector<uint64_t> hosts(distinct.begin(), distinct.end());
    std::shuffle(hosts.begin(), hosts.end(), rng);
    const int nranks = 3 * (1 + static_cast<int>(rng() % 4));
    // Round-robin placement: rank r on node r % 3.
    std::vector<uint64_t> hash_of_rank;
    for (int r = 0; r < nranks; ++r) hash_of_rank.push_back(hosts[r % 3]);
    CheckAllViews(hash_of_rank);

    // Spot-check the round-robin case without the reference.
    Topology topology;
    topology.rank = 1;
    topology.nranks = nranks;
    for (int r = 0; r < nranks; ++r) topology.ranks.push_back(MakeRank(hash_of_rank[r], r, 0, r));
    GroupNodes(&topology);
    EXPECT_EQ(topology.node_count, 3);
    std::vector<int> expected_local;
    for (int r = 1; r < nranks; r += 3) expected_local.push_back(r);
    EXPECT_EQ(topology.local_ranks, expected_local);
    for (int r = 0; r < nranks; ++r) EXPECT_EQ(topology.node_of_rank[r], r % 3);
  }
}

TEST(TopologyTest, RandomPlacements) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937_64 rng(seed);
  for (int round = 0; round < 100; ++round) {
    const int nodes = 1 + static_cast<int>(rng() % 5);
    std::vector<uint64_t> hosts;
    std::set<uint64_t> distinct;
    while (distinct.size() < static_cast<size_t>(nodes)) {
      uint64_t h = rng();
      if (distinct.insert(h).second) hosts.push_back(h);
    }
    const int nranks = 1 + static_cast<int>(rng() % 16);
    std::vector<uint64_t> hash_of_rank;
    for (int r = 0; r < nranks; ++r) hash_of_rank.push_back(hosts[rng() % nodes]);
    CheckAllViews(hash_of_rank);
  }
}

TEST(TopologyTest, NodeNumberingFollowsFirstRankNotHashOrder) {
  // The largest hash first: numbering must come from rank order, not from sorting hashes.
  const std::vector<uint64_t> hash_of_rank = {0xFFFF000000000000ull, 0x1ull, 0x8000000000000000ull,
                                              0x1ull, 0xFFFF000000000000ull};
  Topology topology;
  topology.rank = 3;
  topology.nranks = 5;
  for (int r = 0; r < 5; ++r) topology.ranks.push_back(MakeRank(hash_of_rank[r], r, 0, r));
  GroupNodes(&topology);
  EXPECT_EQ(topology.node_of_rank, (std::vector<int>{0, 1, 2, 1, 0}));
  EXPECT_EQ(topology.node_count, 3);
  EXPECT_EQ(topology.local_ranks, (std::vector<int>{1, 3}));
}

TEST(TopologyTest, SingleNodeAndAllDistinct) {
  Topology one;
  one.rank = 2;
  one.nranks = 8;
  for (int r = 0; r < 8; ++r) one.ranks.push_back(MakeRank(42, r, r, r));
  GroupNodes(&one);
  EXPECT_EQ(one.node_count, 1);
  EXPECT_EQ(one.node_of_rank, std::vector<int>(8, 0));
  EXPECT_EQ(one.local_ranks, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));

  Topology apart;
  apart.rank = 5;
  apart.nranks = 8;
  for (int r = 0; r < 8; ++r) apart.ranks.push_back(MakeRank(1000 + r, r, 0, r));
  GroupNodes(&apart);
  EXPECT_EQ(apart.node_count, 8);
  EXPECT_EQ(apart.node_of_rank, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(apart.local_ranks, (std::vector<int>{5}));
}

TEST(TopologyTest, SameProcessByToken) {
  Topology topology;
  topology.rank = 0;
  topology.nranks = 4;
  // Same pid in another namespace (rank 2) is not the same process; same token is.
  topology.ranks = {MakeRank(7, 100, 0, 0xAAAA), MakeRank(7, 100, 1, 0xAAAA),
                    MakeRank(7, 100, 2, 0xBBBB), MakeRank(7, 200, 3, 0xAAAA)};
  EXPECT_TRUE(topology.SameProcess(0));
  EXPECT_TRUE(topology.SameProcess(1));
  EXPECT_FALSE(topology.SameProcess(2));
  EXPECT_TRUE(topology.SameProcess(3));
}

TEST(TopologyTest, DescribeThisRank) {
  const RankInfo a = DescribeThisRank(3);
  const RankInfo b = DescribeThisRank(5);
  char host[sizeof(a.hostname)] = {};
  ASSERT_EQ(gethostname(host, sizeof(host) - 1), 0);
  EXPECT_STREQ(a.hostname, host);
  EXPECT_EQ(a.pid, static_cast<int32_t>(getpid()));
  EXPECT_EQ(a.device, 3);
  EXPECT_EQ(b.device, 5);
  EXPECT_NE(a.host_hash, 0u);
  EXPECT_EQ(a.host_hash, b.host_hash);  // one node
  EXPECT_NE(a.process_token, 0u);
  EXPECT_EQ(a.process_token, b.process_token);  // one process
  EXPECT_NE(memchr(a.hostname, '\0', sizeof(a.hostname)), nullptr) << "NUL-terminated";
}

// The platforms refuse ranks on several nodes with a message naming the platform and the counts.
TEST(TopologyTest, RequireOneNodeRefusesSeveralNodes) {
  std::mt19937_64 rng(std::random_device{}());
  for (int nodes : {1, 2, 3}) {
    Topology topology;
    topology.nranks = 6;
    topology.rank = static_cast<int>(rng() % 6);
    topology.ranks.assign(6, DescribeThisRank(0));
    const uint64_t base = rng();
    for (int r = 0; r < 6; ++r)
      topology.ranks[r].host_hash = base + static_cast<uint64_t>(r % nodes);
    GroupNodes(&topology);
    ASSERT_EQ(topology.node_count, nodes);
    ClearThreadLastError();
    xcclResult_t result = RequireOneNode(topology, "the testplat platform");
    if (nodes == 1) {
      EXPECT_EQ(result, xcclSuccess);
      EXPECT_TRUE(ThreadLastError().empty());
    } else {
      EXPECT_EQ(result, xcclInvalidUsage);
      EXPECT_NE(ThreadLastError().find("testplat"), std::string::npos) << ThreadLastError();
      EXPECT_NE(ThreadLastError().find(std::to_string(nodes) + " nodes"), std::string::npos)
          << ThreadLastError();
    }
  }
}

}  // namespace
}  // namespace xccl

namespace xccl {
namespace {

// XCCL_HOSTID: one machine's processes with different ids are different nodes; the same id on
// two "hosts" makes one node; the hostname itself is left as it is (for messages).
TEST(TopologyTest, HostIdReplacesTheHostAsTheNodeIdentity) {
  const RankInfo plain = DescribeThisRank(0);
  const RankInfo a = DescribeThisRank(0, "node-a");
  const RankInfo a_again = DescribeThisRank(1, "node-a");
  const RankInfo b = DescribeThisRank(0, "node-b");
  EXPECT_NE(a.host_hash, plain.host_hash);
  EXPECT_NE(a.host_hash, b.host_hash);
  EXPECT_EQ(a.host_hash, a_again.host_hash);
  EXPECT_STREQ(a.hostname, plain.hostname);
}

// XCCL_FAKE_NODES splits ranks of one host (here: one process) into the listed node sizes, as
// every rank sees it: random shapes, each checked against the blocks it names.
TEST(TopologyTest, FakeNodesSplitRanksInRankOrder) {
  std::mt19937_64 rng(std::random_device{}());
  for (int trial = 0; trial < 200; ++trial) {
    const int nodes = 1 + static_cast<int>(rng() % 5);
    std::vector<int> sizes(nodes);
    std::string spec;
    int nranks = 0;
    for (int n = 0; n < nodes; ++n) {
      sizes[n] = 1 + static_cast<int>(rng() % 4);
      nranks += sizes[n];
      spec += (n ? "," : "") + std::to_string(sizes[n]);
    }
    std::vector<int> want;
    for (int n = 0; n < nodes; ++n) want.insert(want.end(), sizes[n], n);
    for (int rank = 0; rank < nranks; ++rank) {
      Topology t;
      t.rank = rank;
      t.nranks = nranks;
      t.ranks.assign(nranks, DescribeThisRank(0));
      GroupNodes(&t);
      ASSERT_EQ(t.node_count, 1);
      ASSERT_EQ(ApplyFakeNodes(spec, &t), xcclSuccess) << spec << ": " << ThreadLastError();
      ASSERT_EQ(t.node_of_rank, want) << spec;
      ASSERT_EQ(t.node_count, nodes) << spec;
      std::vector<int> local;
      for (int r = 0; r < nranks; ++r)
        if (want[r] == want[rank]) local.push_back(r);
      ASSERT_EQ(t.local_ranks, local) << spec << " as rank " << rank;
    }
  }
}

TEST(TopologyTest, FakeNodesThatDoNotFitAreRefused) {
  Topology t;
  t.rank = 0;
  t.nranks = 4;
  t.ranks.assign(4, DescribeThisRank(0));
  GroupNodes(&t);
  for (const char* bad : {"2,1", "2,3", "4,0", "x", "2,,2", "-1,5", "2,2,"}) {
    ClearThreadLastError();
    EXPECT_EQ(ApplyFakeNodes(bad, &t), xcclInvalidArgument) << bad;
    EXPECT_NE(ThreadLastError().find("XCCL_FAKE_NODES"), std::string::npos) << ThreadLastError();
    EXPECT_EQ(t.node_count, 1) << bad << " changed the grouping";
  }
  EXPECT_EQ(ApplyFakeNodes("", &t), xcclSuccess);
  EXPECT_EQ(t.node_count, 1);
}

// Random layouts of ranks over nodes and devices, seen from every rank: the answer is the pairwise
// reference's, and the same from every rank (where each rank's own node may share no device).
TEST(TopologyTest, AnyNodeSharesADeviceIsOneAnswerForEveryRank) {
  const uint32_t seed = std::random_device{}();
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  int shared_layouts = 0;
  for (int round = 0; round < 200; ++round) {
    const int nranks = 1 + static_cast<int>(rng() % 12);
    const int nodes = 1 + static_cast<int>(rng() % 4), devices = 1 + static_cast<int>(rng() % 8);
    std::vector<uint64_t> hash_of_rank(nranks);
    std::vector<int> device_of_rank(nranks);
    for (int r = 0; r < nranks; ++r) {
      hash_of_rank[r] = 0xA0 + rng() % nodes;
      device_of_rank[r] = static_cast<int>(rng() % devices);
    }
    bool want = false;
    for (int r = 0; r < nranks; ++r)
      for (int q = r + 1; q < nranks; ++q)
        want =
            want || (hash_of_rank[r] == hash_of_rank[q] && device_of_rank[r] == device_of_rank[q]);
    shared_layouts += want;
    for (int rank = 0; rank < nranks; ++rank) {
      Topology t;
      t.rank = rank;
      t.nranks = nranks;
      for (int r = 0; r < nranks; ++r)
        t.ranks.push_back(MakeRank(hash_of_rank[r], 1000 + r, device_of_rank[r], 0x1000 + r));
      GroupNodes(&t);
      ASSERT_EQ(AnyNodeSharesADevice(t), want) << "round " << round << ", as rank " << rank;
    }
  }
  EXPECT_GT(shared_layouts, 0);
  EXPECT_LT(shared_layouts, 200);
}

}  // namespace
}  // namespace xccl
