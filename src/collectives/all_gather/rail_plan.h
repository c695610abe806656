// Who carries which block between nodes in a hierarchical all_gather. A block crosses the
// network once per pair of nodes, on its rail: from rank r (local index j on its node) to the rank
// of local index j mod L_B on each other node B (L_B ranks). That rank lands it in its receive
// buffer and forwards it to the other ranks of B. Uneven nodes (2+1, 3+1+2) wrap onto the smaller
// node's ranks. Pure: computed from the topology alone, the same on every rank.
#pragma once

#include <vector>

#include "base/topology.h"

namespace xccl {

struct RailPlan {
  // The ranks this rank's block goes to over the network, one per other node.
  std::vector<int> rail_targets;
  // Ranks of other nodes whose blocks land at this rank and that it forwards to its node.
  std::vector<int> forwarded_sources;
  // Per rank: who delivers that rank's block to this rank (itself for a rank of this node or a
  // rank whose block lands here, else the rank of this node that forwards it); -1 for this rank.
  std::vector<int> deliverer;
};

RailPlan PlanRails(const Topology& topology);

}  // namespace xccl
