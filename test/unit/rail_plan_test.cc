// PlanRails on synthetic node layouts, even, uneven and interleaved: every rank's plan is
// checked against every other's (a block sent over the network is forwarded by its receiver, and
// nothing else), each block crosses each pair of nodes exactly once, and every rank gets every
// block from exactly one deliverer.
#include "collectives/all_gather/rail_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "unit/synthetic_topology.h"

namespace xccl {
namespace {

bool Contains(const std::vector<int>& list, int value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

void CheckPlans(const std::vector<int>& host_of_rank) {
  const int n = static_cast<int>(host_of_rank.size());
  std::vector<Topology> topologies;
  std::vector<RailPlan> plans;
  for (int me = 0; me < n; ++me) {
    topologies.push_back(SyntheticLayout(host_of_rank, me));
    plans.push_back(PlanRails(topologies.back()));
  }
  const std::vector<int>& node = topologies[0].node_of_rank;
  const int node_count = topologies[0].node_count;
  std::map<std::pair<int, int>, int> crossings;  // (from node, to node) -> blocks sent
  for (int s = 0; s < n; ++s) {
    const RailPlan& plan = plans[s];
    EXPECT_EQ(static_cast<int>(plan.rail_targets.size()), node_count - 1) << "rank " << s;
    std::vector<int> nodes_reached;
    for (int target : plan.rail_targets) {
      EXPECT_NE(node[target], node[s]) << "rank " << s << " sends to its own node";
      EXPECT_FALSE(Contains(nodes_reached, node[target])) << "rank " << s << " twice to a node";
      nodes_reached.push_back(node[target]);
      EXPECT_TRUE(Contains(plans[target].forwarded_sources, s))
          << "rank " << target << " does not expect rank " << s << "'s block";
      ++crossings[{node[s], node[target]}];
    }
  }
  for (int a = 0; a < node_count; ++a) {
    const int size_a = static_cast<int>(std::count(node.begin(), node.end(), a));
    for (int b = 0; b < node_count; ++b) {
      if (a != b) {
        EXPECT_EQ((crossings[{a, b}]), size_a) << "node " << a << " -> " << b;
      }
    }
  }
  for (int x = 0; x < n; ++x) {
    const RailPlan& plan = plans[x];
    EXPECT_EQ(plan.deliverer[x], -1);
    for (int source : plan.forwarded_sources) {
      EXPECT_NE(node[source], node[x]);
      EXPECT_TRUE(Contains(plans[source].rail_targets, x));
    }
    for (int s = 0; s < n; ++s) {
      if (s == x) continue;
      const int d = plan.deliverer[s];
      ASSERT_GE(d, 0) << "rank " << x << " has no deliverer for rank " << s;
      if (node[s] == node[x]) {
        EXPECT_EQ(d, s);
      } else if (d == s) {
        EXPECT_TRUE(Contains(plan.forwarded_sources, s));
      } else {
        // Forwarded by a rank of x's node that received it over the network.
        EXPECT_EQ(node[d], node[x]) << "rank " << x << " source " << s;
        EXPECT_TRUE(Contains(plans[d].forwarded_sources, s)) << "rank " << x << " source " << s;
        EXPECT_FALSE(Contains(plan.forwarded_sources, s));
      }
    }
  }
}

// Ranks per node, in rank order: {2, 1} puts ranks 0-1 on host 0 and rank 2 on host 1.
std::vector<int> Blocks(const std::vector<int>& sizes) {
  std::vector<int> hosts;
  for (size_t h = 0; h < sizes.size(); ++h)
    for (int i = 0; i < sizes[h]; ++i) hosts.push_back(static_cast<int>(h));
  return hosts;
}

TEST(RailPlan, EvenUnevenAndOneRankPerNode) {
  for (const std::vector<int>& sizes : std::vector<std::vector<int>>{
           {2, 2}, {4, 4}, {2, 2, 2, 2}, {2, 1}, {3, 1, 2}, {1, 1, 1}, {1, 4}, {8, 3, 5}}) {
    std::string name;
    for (int size : sizes) name += std::to_string(size) + " ";
    SCOPED_TRACE("nodes " + name);
    CheckPlans(Blocks(sizes));
  }
}

TEST(RailPlan, InterleavedAndRandomLayouts) {
  CheckPlans({0, 1, 0, 1, 0, 1});
  std::mt19937 rng(std::random_device{}());
  for (int round = 0; round < 50; ++round) {
    const int n = 2 + static_cast<int>(rng() % 11);
    const int hosts = 2 + static_cast<int>(rng() % 4);
    std::vector<int> layout(n);
    for (int& host : layout) host = static_cast<int>(rng() % hosts);
    layout[0] = 0;
    layout[1] = 1;  // at least two nodes
    std::string name;
    for (int host : layout) name += std::to_string(host);
    SCOPED_TRACE("layout " + name);
    CheckPlans(layout);
  }
}

// The rail keeps local indices where node sizes allow: local index j reaches local index j.
TEST(RailPlan, EqualNodesKeepTheLocalIndex) {
  const std::vector<int> layout = Blocks({4, 4});
  for (int me = 0; me < 8; ++me) {
    const RailPlan plan = PlanRails(SyntheticLayout(layout, me));
    ASSERT_EQ(plan.rail_targets.size(), 1u);
    EXPECT_EQ(plan.rail_targets[0], (me + 4) % 8);
    EXPECT_EQ(plan.forwarded_sources, std::vector<int>{(me + 4) % 8});
  }
}

}  // namespace
}  // namespace xccl
