// The links a rank opens at init to watch other nodes (docs/ARCHITECTURE.md, "Across
// nodes (host platform)"): on its own rail (the rank at its local index on each node, modulo the
// node's size) the nodes 1, 2, 4, ... ahead of its own. Those peers link back, so every rank keeps
// about 2 log2(nodes) watched links whatever the world, and news of a death floods every node in
// O(log nodes) steps. For local index 0 these are also the barrier's partners across nodes.
#pragma once

#include <vector>

#include "base/topology.h"

namespace xccl {

// The ranks `topology.rank` links to at init, without repeats (none on a single node).
std::vector<int> WatchTargets(const Topology& topology);

}  // namespace xccl
