#include "collectives/all_gather/rail_plan.h"

namespace xccl {

RailPlan PlanRails(const Topology& topology) {
  const std::vector<std::vector<int>> nodes = RanksByNode(topology);
  const int me = topology.rank, my_node = topology.node_of_rank[me];
  RailPlan plan;
  plan.deliverer.assign(topology.nranks, -1);
  const int my_index = LocalIndex(nodes[my_node], me);
  for (int node = 0; node < topology.node_count; ++node) {
    if (node == my_node) continue;
    const std::vector<int>& theirs = nodes[node];
    plan.rail_targets.push_back(RailTarget(theirs, my_index));
    for (size_t i = 0; i < theirs.size(); ++i) {
      const int source = theirs[i];
      const int lands_at = RailTarget(nodes[my_node], static_cast<int>(i));
      plan.deliverer[source] = lands_at;
      if (lands_at == me) plan.forwarded_sources.push_back(source);
    }
  }
  for (int r : nodes[my_node])
    if (r != me) plan.deliverer[r] = r;
  // A block that lands here is delivered by its source (over the network).
  for (int source : plan.forwarded_sources) plan.deliverer[source] = source;
  return plan;
}

}  // namespace xccl
