// A Topology of synthetic ranks for the plan tests (rail_plan_test.cc, partial_plan_test.cc):
// rank r on host `host_of_rank[r]`, grouped into nodes as init groups them; this rank is `me`.
#pragma once

#include <cstring>
#include <vector>

#include "base/topology.h"

namespace xccl {

inline Topology SyntheticLayout(const std::vector<int>& host_of_rank, int me) {
  Topology t;
  t.rank = me;
  t.nranks = static_cast<int>(host_of_rank.size());
  t.ranks.resize(t.nranks);
  for (int r = 0; r < t.nranks; ++r) {
    memset(&t.ranks[r], 0, sizeof(RankInfo));
    t.ranks[r].host_hash = 1000 + host_of_rank[r];
    t.ranks[r].pid = 100 + r;
    t.ranks[r].process_token = 1 + r;
  }
  GroupNodes(&t);
  return t;
}

}  // namespace xccl
