// Who makes which node's partial in a reduction across nodes (docs/ARCHITECTURE.md, "Reductions
// across nodes"): the partial of node A for destination rank d (every rank of A's block d,
// reduced) is made by the rank of A on d's rail (base/topology.h RailTarget: local index j of d's
// node maps to local index j mod L_A), which sends it to d over the network; for a destination
// of A itself, by d. Pure: from the topology alone, the same on every rank.
#pragma once

#include <cstddef>
#include <vector>

#include "base/topology.h"

namespace xccl {

struct PartialPlan {
  // Per rank: the destinations whose partial of its node it makes, ascending (itself among them).
  std::vector<std::vector<int>> owned;
  // Per node: the rank of that node that sends this rank the node's partial (this rank for its
  // own node).
  std::vector<int> partial_from;
  // The most destinations any rank makes partials for: every rank sizes its steps by it.
  size_t most_owned = 0;
};

PartialPlan PlanPartials(const Topology& topology);

}  // namespace xccl
