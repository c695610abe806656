#include "transport/net/proxy/watch_overlay.h"

#include <algorithm>

namespace xccl {

std::vector<int> WatchTargets(const Topology& topology) {
  const int nodes = topology.node_count;
  std::vector<int> targets;
  if (nodes < 2) return targets;
  // Each node's ranks in rank order; this rank's place among its own node's.
  std::vector<std::vector<int>> ranks_of_node(nodes);
  for (int r = 0; r < topology.nranks; ++r) ranks_of_node[topology.node_of_rank[r]].push_back(r);
  const int node = topology.node_of_rank[topology.rank];
  const std::vector<int>& mine = ranks_of_node[node];
  const int index =
      static_cast<int>(std::find(mine.begin(), mine.end(), topology.rank) - mine.begin());
  for (int step = 1; step < nodes; step *= 2) {
    const std::vector<int>& there = ranks_of_node[(node + step) % nodes];
    const int target = there[index % there.size()];
    if (std::find(targets.begin(), targets.end(), target) == targets.end())
      targets.push_back(target);
  }
  return targets;
}

}  // namespace xccl
