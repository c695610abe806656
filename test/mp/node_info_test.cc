// The node-layout queries (xcclCommNodeInfo, xcclCommRankNode) at several node shapes: one node,
// even and uneven fake nodes (XCCL_FAKE_NODES, threads and processes) and nodes named by
// XCCL_HOSTID per process, interleaved ones included. Every rank checks its own answers and
// every other rank's against the shape, then all-gathers what each rank says about itself and
// checks that every rank's view of every rank agrees. Bad arguments are refused with messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "base/params.h"
#include "mp/rank_runner.h"
#include "mp/test_params.h"
#include "xccl.h"

namespace xccl_test {
namespace {

// A node split given either as fake node sizes or as one host id per rank (processes only).
struct NodeShape {
  const char* name;
  RankMode mode;
  int world;
  std::string fake_nodes;             // "2,1,3", or "" to use host_ids
  std::vector<std::string> host_ids;  // XCCL_HOSTID of each rank; empty: one real host
};

// Failures name the shape, not its bytes.
void PrintTo(const NodeShape& shape, std::ostream* os) { *os << shape.name; }

// The node of every rank as the shape defines it, numbered in order of each node's lowest rank.
std::vector<int> ExpectedNodes(const NodeShape& shape) {
  std::vector<int> node_of_rank;
  if (!shape.fake_nodes.empty()) {
    int node = 0;
    size_t at = 0;
    while (at <= shape.fake_nodes.size()) {
      size_t comma = shape.fake_nodes.find(',', at);
      if (comma == std::string::npos) comma = shape.fake_nodes.size();
      const int size = std::stoi(shape.fake_nodes.substr(at, comma - at));
      node_of_rank.insert(node_of_rank.end(), size, node++);
      at = comma + 1;
    }
  } else if (!shape.host_ids.empty()) {
    std::map<std::string, int> node_of_host;
    for (const std::string& host : shape.host_ids)
      node_of_rank.push_back(
          node_of_host.emplace(host, static_cast<int>(node_of_host.size())).first->second);
  } else {
    node_of_rank.assign(shape.world, 0);
  }
  return node_of_rank;
}

struct Expected {
  int node, node_count, local_rank, local_size;
};

Expected ExpectedFor(const std::vector<int>& nodes, int rank) {
  Expected e{nodes[rank], 0, 0, 0};
  for (size_t r = 0; r < nodes.size(); ++r) {
    e.node_count = std::max(e.node_count, nodes[r] + 1);
    if (nodes[r] == nodes[rank]) {
      ++e.local_size;
      if (static_cast<int>(r) < rank) ++e.local_rank;
    }
  }
  return e;
}

class NodeInfoTest : public ::testing::TestWithParam<NodeShape> {};

TEST_P(NodeInfoTest, EveryRankSeesTheSplit) {
  const NodeShape shape = GetParam();
  const std::vector<int> nodes = ExpectedNodes(shape);
  ASSERT_EQ(static_cast<int>(nodes.size()), shape.world) << "bad shape in the test";
  RunOptions options;
  options.before_init = WithFakeNodes(shape.fake_nodes);
  if (!shape.host_ids.empty()) {
    options.before_rank_init = [&shape](int rank) {
      xccl::Params params = xccl::GetParams();
      params.hostid = shape.host_ids[rank];
      xccl::SetParamsForTesting(params);
    };
  }
  const auto failures = RunRanks(
      shape.mode, shape.world,
      [&nodes](RankContext& ctx) {
        const Expected want = ExpectedFor(nodes, ctx.rank);
        int node = -7, node_count = -7, local_rank = -7, local_size = -7;
        xcclResult_t r = xcclCommNodeInfo(ctx.comm, &node, &node_count, &local_rank, &local_size);
        RANK_EXPECT(ctx, r == xcclSuccess, xcclGetLastError(ctx.comm));
        RANK_EXPECT(ctx,
                    node == want.node && node_count == want.node_count &&
                        local_rank == want.local_rank && local_size == want.local_size,
                    "node info " << node << "/" << node_count << ", local " << local_rank << "/"
                                 << local_size << "; expected " << want.node << "/"
                                 << want.node_count << ", local " << want.local_rank << "/"
                                 << want.local_size);
        // Every rank's node and local rank; from them the ranks of this node and this rail.
        std::vector<int> my_node_ranks, my_rail, want_node_ranks, want_rail;
        for (int peer = 0; peer < ctx.nranks; ++peer) {
          const Expected peer_want = ExpectedFor(nodes, peer);
          int peer_node = -7, peer_local = -7;
          r = xcclCommRankNode(ctx.comm, peer, &peer_node, &peer_local);
          RANK_EXPECT(ctx, r == xcclSuccess, "rank " << peer << ": " << xcclGetLastError(ctx.comm));
          RANK_EXPECT(ctx, peer_node == peer_want.node && peer_local == peer_want.local_rank,
                      "rank " << peer << " is on node " << peer_node << " as local " << peer_local
                              << "; expected " << peer_want.node << " as " << peer_want.local_rank);
          if (peer_node == node) my_node_ranks.push_back(peer);
          if (peer_local == local_rank) my_rail.push_back(peer);
          if (nodes[peer] == want.node) want_node_ranks.push_back(peer);
        }
        // The rail built the other way round: per node, its local_rank-th rank if it has one.
        for (int n = 0; n < want.node_count; ++n) {
          int seen = 0;
          for (int peer = 0; peer < ctx.nranks; ++peer)
            if (nodes[peer] == n && seen++ == want.local_rank) want_rail.push_back(peer);
        }
        RANK_EXPECT(ctx, my_node_ranks == want_node_ranks,
                    ::testing::PrintToString(my_node_ranks)
                        << " share this node, expected "
                        << ::testing::PrintToString(want_node_ranks));
        RANK_EXPECT(ctx, my_rail == want_rail,
                    "rail " << ::testing::PrintToString(my_rail) << ", expected "
                            << ::testing::PrintToString(want_rail));
        // What each rank says of itself, gathered (across the nodes): it must be what this rank
        // is told about that rank.
        int32_t mine[4] = {node, node_count, local_rank, local_size};
        std::vector<int32_t> all(4 * ctx.nranks, static_cast<int32_t>(0xA5A5A5A5));
        r = xcclAllGather(mine, all.data(), 4, xcclInt32, ctx.comm, nullptr);
        RANK_EXPECT(ctx, r == xcclSuccess, "all_gather: " << xcclGetLastError(ctx.comm));
        for (int peer = 0; peer < ctx.nranks && r == xcclSuccess; ++peer) {
          const Expected peer_want = ExpectedFor(nodes, peer);
          const int32_t* says = &all[4 * peer];
          RANK_EXPECT(ctx,
                      says[0] == peer_want.node && says[1] == peer_want.node_count &&
                          says[2] == peer_want.local_rank && says[3] == peer_want.local_size,
                      "rank " << peer << " says " << says[0] << "/" << says[1] << " local "
                              << says[2] << "/" << says[3]);
        }
      },
      options);
  RestoreParams();
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

std::vector<NodeShape> Shapes() {
  std::vector<NodeShape> shapes;
  for (RankMode mode : {RankMode::kThreads, RankMode::kProcesses}) {
    const bool t = mode == RankMode::kThreads;
    shapes.push_back({t ? "ThreadsOneNode3" : "ProcessesOneNode3", mode, 3, "", {}});
    shapes.push_back({t ? "ThreadsFake2x2" : "ProcessesFake2x2", mode, 4, "2,2", {}});
    shapes.push_back({t ? "ThreadsFake2p1" : "ProcessesFake2p1", mode, 3, "2,1", {}});
    shapes.push_back({t ? "ThreadsFake3p1p2" : "ProcessesFake3p1p2", mode, 6, "3,1,2", {}});
    shapes.push_back({t ? "ThreadsFake1p1p1" : "ProcessesFake1p1p1", mode, 3, "1,1,1", {}});
  }
  // Host ids per process: interleaved nodes, and a first rank whose host sorts last.
  shapes.push_back({"ProcessesHostIdsInterleaved",
                    RankMode::kProcesses,
                    4,
                    "",
                    {"shim-a", "shim-b", "shim-a", "shim-b"}});
  shapes.push_back(
      {"ProcessesHostIdsUneven", RankMode::kProcesses, 3, "", {"shim-z", "shim-z", "shim-a"}});
  return shapes;
}

INSTANTIATE_TEST_SUITE_P(Shapes, NodeInfoTest, ::testing::ValuesIn(Shapes()),
                         [](const ::testing::TestParamInfo<NodeShape>& info) {
                           return std::string(info.param.name);
                         });

// Each bad argument fails with xcclInvalidArgument, a message naming the call and what is wrong,
// and leaves every output as it was.
TEST(NodeInfoArguments, BadArgumentsAreRefusedWithMessages) {
  RunOptions options;
  options.before_init = WithFakeNodes("1,1");
  const auto failures = RunRanks(
      RankMode::kThreads, 2,
      [](RankContext& ctx) {
        int a = -7, b = -7, c = -7, d = -7;
        auto expect_refused = [&](xcclResult_t r, const char* what, const char* message) {
          RANK_EXPECT(ctx, r == xcclInvalidArgument, what << " returned " << r);
          const std::string last = xcclGetLastError(nullptr);
          RANK_EXPECT(ctx, last.find(message) != std::string::npos,
                      what << ": message \"" << last << "\" lacks \"" << message << "\"");
          RANK_EXPECT(ctx, a == -7 && b == -7 && c == -7 && d == -7,
                      what << " wrote an output: " << a << " " << b << " " << c << " " << d);
        };
        expect_refused(xcclCommNodeInfo(nullptr, &a, &b, &c, &d), "NodeInfo(NULL comm)",
                       "xcclCommNodeInfo: comm is NULL");
        expect_refused(xcclCommNodeInfo(ctx.comm, nullptr, &b, &c, &d), "NodeInfo(node NULL)",
                       "xcclCommNodeInfo: node is NULL");
        expect_refused(xcclCommNodeInfo(ctx.comm, &a, nullptr, &c, &d), "NodeInfo(nodeCount NULL)",
                       "xcclCommNodeInfo: nodeCount is NULL");
        expect_refused(xcclCommNodeInfo(ctx.comm, &a, &b, nullptr, &d), "NodeInfo(localRank NULL)",
                       "xcclCommNodeInfo: localRank is NULL");
        expect_refused(xcclCommNodeInfo(ctx.comm, &a, &b, &c, nullptr), "NodeInfo(localSize NULL)",
                       "xcclCommNodeInfo: localSize is NULL");
        RANK_EXPECT(
            ctx,
            std::string(xcclGetLastError(ctx.comm)).find("localSize is NULL") != std::string::npos,
            "the communicator's last error is " << xcclGetLastError(ctx.comm));
        expect_refused(xcclCommRankNode(nullptr, 0, &a, &c), "RankNode(NULL comm)",
                       "xcclCommRankNode: comm is NULL");
        expect_refused(xcclCommRankNode(ctx.comm, -1, &a, &c), "RankNode(-1)",
                       "xcclCommRankNode: rank -1 is not a rank of this communicator (0..1)");
        expect_refused(xcclCommRankNode(ctx.comm, ctx.nranks, &a, &c), "RankNode(nranks)",
                       "xcclCommRankNode: rank 2 is not a rank");
        expect_refused(xcclCommRankNode(ctx.comm, 0, nullptr, &c), "RankNode(node NULL)",
                       "xcclCommRankNode: node is NULL");
        expect_refused(xcclCommRankNode(ctx.comm, 0, &a, nullptr), "RankNode(localRank NULL)",
                       "xcclCommRankNode: localRank is NULL");
        // A foreign pointer is not an xccl communicator.
        uint64_t not_a_comm[8] = {0};
        expect_refused(xcclCommNodeInfo(reinterpret_cast<xcclComm_t>(not_a_comm), &a, &b, &c, &d),
                       "NodeInfo(foreign)", "is not an xccl communicator");
      },
      options);
  RestoreParams();
  for (const auto& failure : failures) ADD_FAILURE() << failure;
}

TEST(NodeInfoArguments, DestroyedCommunicatorIsRefused) {
  xcclComm_t comm = nullptr;
  ASSERT_EQ(xcclCommInitAll(&comm, 1, nullptr), xcclSuccess) << xcclGetLastError(nullptr);
  int node = -7, count = -7, local = -7, size = -7;
  ASSERT_EQ(xcclCommNodeInfo(comm, &node, &count, &local, &size), xcclSuccess);
  EXPECT_EQ(node, 0);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(local, 0);
  EXPECT_EQ(size, 1);
  ASSERT_EQ(xcclCommDestroy(comm), xcclSuccess);
  EXPECT_EQ(xcclCommNodeInfo(comm, &node, &count, &local, &size), xcclInvalidArgument);
  EXPECT_NE(std::string(xcclGetLastError(comm)).find("was destroyed"), std::string::npos)
      << xcclGetLastError(comm);
  EXPECT_EQ(xcclCommRankNode(comm, 0, &node, &local), xcclInvalidArgument);
  EXPECT_NE(std::string(xcclGetLastError(comm)).find("xcclCommRankNode"), std::string::npos)
      << xcclGetLastError(comm);
}

}  // namespace
}  // namespace xccl_test
