// Which communicators carve no GPU inboxes (collectives/in_place_reach.h): only threads of one
// process on one node with zero-copy on reach every peer's buffers in place on every call.
#include "collectives/in_place_reach.h"

#include <gtest/gtest.h>

#include <vector>

#include "synthetic_topology.h"

namespace xccl {
namespace {

// Every rank on host 0; ranks whose `process_of_rank` entries match are threads of one process.
Topology OneNode(const std::vector<uint64_t>& process_of_rank, int me) {
  Topology t = SyntheticLayout(std::vector<int>(process_of_rank.size(), 0), me);
  for (size_t r = 0; r < process_of_rank.size(); ++r) t.ranks[r].process_token = process_of_rank[r];
  return t;
}

TEST(InPlaceReachTest, ThreadsOfOneProcessOnOneNodeReachInPlace) {
  Params params;
  for (int me = 0; me < 4; ++me) EXPECT_TRUE(EveryCallInPlace(params, OneNode({7, 7, 7, 7}, me)));
}

TEST(InPlaceReachTest, ZeroCopyOffGoesThroughTheInboxes) {
  Params params;
  params.zero_copy = 0;
  EXPECT_FALSE(EveryCallInPlace(params, OneNode({7, 7}, 0)));
}

TEST(InPlaceReachTest, AnotherProcessOnTheNodeGoesThroughTheInboxesOnEveryRank) {
  Params params;
  // The answer is the same on every rank, also on the ranks that share a process.
  for (int me = 0; me < 3; ++me)
    EXPECT_FALSE(EveryCallInPlace(params, OneNode({7, 7, 9}, me))) << "rank " << me;
}

TEST(InPlaceReachTest, SeveralNodesGoThroughTheInboxes) {
  Params params;
  Topology t = SyntheticLayout({0, 0, 1, 1}, 0);
  for (RankInfo& info : t.ranks) info.process_token = 7;  // one process, fake nodes
  ASSERT_EQ(t.node_count, 2);
  EXPECT_FALSE(EveryCallInPlace(params, t));
}

}  // namespace
}  // namespace xccl
