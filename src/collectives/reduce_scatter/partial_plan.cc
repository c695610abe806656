#include "collectives/reduce_scatter/partial_plan.h"

#include <algorithm>

namespace xccl {

PartialPlan PlanPartials(const Topology& topology) {
  PartialPlan plan;
  plan.owned.resize(topology.nranks);
  plan.partial_from.assign(topology.node_count, -1);
  const std::vector<std::vector<int>> nodes = RanksByNode(topology);
  for (int d = 0; d < topology.nranks; ++d) {
    const int home = topology.node_of_rank[d], index = LocalIndex(nodes[home], d);
    for (int node = 0; node < topology.node_count; ++node) {
      const int maker = node == home ? d : RailTarget(nodes[node], index);
      plan.owned[maker].push_back(d);
      if (d == topology.rank) plan.partial_from[node] = maker;
    }
  }
  for (const std::vector<int>& destinations : plan.owned)
    plan.most_owned = std::max(plan.most_owned, destinations.size());
  return plan;
}

}  // namespace xccl
