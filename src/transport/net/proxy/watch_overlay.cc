#include "transport/net/proxy/watch_overlay.h"

#include <algorithm>

namespace xccl {

std::vector<int> WatchTargets(const Topology& topology) {
  std::vector<int> targets;
  if (topology.node_count < 2) return targets;
  const std::vector<std::vector<int>> nodes = RanksByNode(topology);
  const int node = topology.node_of_rank[topology.rank];
  const int index = LocalIndex(nodes[node], topology.rank);
  for (int step = 1; step < topology.node_count; step *= 2) {
    const int target = RailTarget(nodes[(node + step) % topology.node_count], index);
    if (std::find(targets.begin(), targets.end(), target) == targets.end())
      targets.push_back(target);
  }
  return targets;
}

}  // namespace xccl
