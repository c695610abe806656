// The liveness overlay (transport/net/proxy/watch_overlay.h): a few links per rank, none inside
// its node, and news that floods from any rank over the links (both ways) and inside nodes
// reaches every rank in O(log nodes) steps, at even and uneven node shapes.
#include "transport/net/proxy/watch_overlay.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "base/topology.h"

namespace xccl {
namespace {

Topology NodesOf(const std::vector<int>& sizes, int rank) {
  Topology topology;
  for (size_t node = 0; node < sizes.size(); ++node)
    for (int i = 0; i < sizes[node]; ++i) topology.node_of_rank.push_back(static_cast<int>(node));
  topology.nranks = static_cast<int>(topology.node_of_rank.size());
  topology.node_count = static_cast<int>(sizes.size());
  topology.rank = rank;
  topology.ranks.resize(topology.nranks);
  for (int r = 0; r < topology.nranks; ++r)
    if (topology.node_of_rank[r] == topology.node_of_rank[rank]) topology.local_ranks.push_back(r);
  return topology;
}

void CheckShape(const std::vector<int>& sizes) {
  const int nodes = static_cast<int>(sizes.size());
  const int steps = static_cast<int>(std::ceil(std::log2(std::max(nodes, 2))));
  const Topology whole = NodesOf(sizes, 0);
  const int nranks = whole.nranks;
  std::vector<std::set<int>> linked(nranks);
  for (int r = 0; r < nranks; ++r) {
    const std::vector<int> targets = WatchTargets(NodesOf(sizes, r));
    EXPECT_LE(static_cast<int>(targets.size()), steps) << "rank " << r;
    for (int t : targets) {
      ASSERT_GE(t, 0);
      ASSERT_LT(t, nranks);
      EXPECT_NE(whole.node_of_rank[t], whole.node_of_rank[r]) << "rank " << r << " -> " << t;
      linked[r].insert(t);
      linked[t].insert(r);  // the target answers
    }
  }
  // A flood from every rank: one step over each link, and a node's ranks share what any of
  // them heard (shared memory) in the same step.
  for (int source = 0; source < nranks; ++source) {
    std::vector<bool> heard(nranks, false);
    heard[source] = true;
    int rounds = 0;
    for (; std::count(heard.begin(), heard.end(), false) > 0 && rounds <= 2 * steps + 2; ++rounds) {
      std::vector<bool> next = heard;
      for (int r = 0; r < nranks; ++r)
        if (heard[r]) {
          for (int t : linked[r]) next[t] = true;
          for (int q = 0; q < nranks; ++q)
            if (whole.node_of_rank[q] == whole.node_of_rank[r]) next[q] = true;
        }
      heard = next;
    }
    EXPECT_EQ(std::count(heard.begin(), heard.end(), false), 0) << "from rank " << source;
    EXPECT_LE(rounds, 2 * steps + 1) << "from rank " << source;
  }
}

TEST(WatchOverlay, OneNodeLinksNothing) { EXPECT_TRUE(WatchTargets(NodesOf({4}, 2)).empty()); }

TEST(WatchOverlay, EvenNodes) {
  CheckShape({1, 1});
  CheckShape({2, 2});
  CheckShape({4, 4, 4, 4, 4, 4, 4, 4});
  CheckShape(std::vector<int>(64, 4));
  CheckShape(std::vector<int>(128, 2));
}

TEST(WatchOverlay, UnevenNodes) {
  CheckShape({2, 1});
  CheckShape({3, 1, 2});
  CheckShape({1, 1, 1});
  CheckShape({8, 1, 3, 5, 2, 7, 1});
}

// A rank links to the nodes 1, 2, 4, ... ahead on its own rail: 16 one-rank nodes, rank 5.
TEST(WatchOverlay, TargetsAreTheRailAtPowersOfTwoAhead) {
  EXPECT_EQ(WatchTargets(NodesOf(std::vector<int>(16, 1), 5)), (std::vector<int>{6, 7, 9, 13}));
  // Nodes of 2, rank 3 (node 1, index 1): nodes 2, 3, 5 at index 1.
  EXPECT_EQ(WatchTargets(NodesOf(std::vector<int>(8, 2), 3)), (std::vector<int>{5, 7, 11}));
}

}  // namespace
}  // namespace xccl
