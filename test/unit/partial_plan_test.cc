// PlanPartials on synthetic node layouts, even, uneven and interleaved: for every node and every
// destination exactly one rank of that node makes the partial (the destination itself on its own
// node), every rank's plan agrees with every other's on who sends it each node's partial, and the
// step size bound is the largest ownership.
#include "collectives/reduce_scatter/partial_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "unit/synthetic_topology.h"

namespace xccl {
namespace {

void CheckPlans(const std::vector<int>& host_of_rank) {
  const int n = static_cast<int>(host_of_rank.size());
  std::vector<PartialPlan> plans;
  for (int me = 0; me < n; ++me) plans.push_back(PlanPartials(SyntheticLayout(host_of_rank, me)));
  const Topology t = SyntheticLayout(host_of_rank, 0);
  size_t most = 0;
  for (int maker = 0; maker < n; ++maker) most = std::max(most, plans[0].owned[maker].size());
  for (int me = 0; me < n; ++me) {
    SCOPED_TRACE("rank " + std::to_string(me));
    const PartialPlan& plan = plans[me];
    EXPECT_EQ(plan.most_owned, most);
    EXPECT_EQ(plan.owned, plans[0].owned);  // the same on every rank
    ASSERT_EQ(static_cast<int>(plan.partial_from.size()), t.node_count);
    for (int node = 0; node < t.node_count; ++node) {
      // Exactly one rank of `node` makes the partial for `me`, and it is who `me` expects.
      int makers = 0, maker = -1;
      for (int r = 0; r < n; ++r) {
        const std::vector<int>& owned = plan.owned[r];
        if (t.node_of_rank[r] == node && std::count(owned.begin(), owned.end(), me) == 1) {
          ++makers;
          maker = r;
        }
      }
      EXPECT_EQ(makers, 1) << "node " << node;
      EXPECT_EQ(plan.partial_from[node], maker) << "node " << node;
      if (node == t.node_of_rank[me]) {
        EXPECT_EQ(maker, me);
      }
    }
    EXPECT_TRUE(std::is_sorted(plan.owned[me].begin(), plan.owned[me].end()));
  }
}

TEST(PartialPlan, EvenNodes) {
  CheckPlans({0, 0, 1, 1});
  CheckPlans({0, 0, 0, 0, 1, 1, 1, 1});
  CheckPlans({0, 0, 1, 1, 2, 2, 3, 3});
}

TEST(PartialPlan, UnevenNodes) {
  CheckPlans({0, 0, 1});
  CheckPlans({0, 0, 0, 1, 2, 2});
  CheckPlans({0, 1, 2});
  CheckPlans({0, 1, 1, 1, 1});
}

TEST(PartialPlan, InterleavedNodes) {
  CheckPlans({0, 1, 0, 1});
  CheckPlans({0, 1, 2, 0, 1, 2, 0});
}

TEST(PartialPlan, OneNodeMakesEveryPartialItself) {
  const PartialPlan plan = PlanPartials(SyntheticLayout({0, 0, 0}, 1));
  EXPECT_EQ(plan.partial_from, std::vector<int>({1}));
  EXPECT_EQ(plan.owned, std::vector<std::vector<int>>({{0}, {1}, {2}}));
  EXPECT_EQ(plan.most_owned, 1u);
}

}  // namespace
}  // namespace xccl
