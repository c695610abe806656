#include "comm/topology_exchange.h"

#include "base/error.h"
#include "base/logging.h"
#include "transport/bootstrap/bootstrap.h"

namespace xccl {

xcclResult_t ExchangeTopology(Bootstrap* bootstrap, int device, const Params& params,
                              Topology* out) {
  out->rank = bootstrap->rank();
  out->nranks = bootstrap->nranks();
  out->ranks.assign(out->nranks, RankInfo{});
  out->ranks[out->rank] = DescribeThisRank(device, params.hostid);
  xcclResult_t result = bootstrap->AllGather(out->ranks.data(), sizeof(RankInfo));
  if (result != xcclSuccess) return result;
  GroupNodes(out);
  XCCL_TRY(ApplyFakeNodes(params.fake_nodes, out));
  for (int r = 0; r < out->nranks; ++r) {
    XCCL_TRACE(kLogInit, "rank %d: host %s pid %d device %d node %d", r, out->ranks[r].hostname,
               out->ranks[r].pid, out->ranks[r].device, out->node_of_rank[r]);
  }
  return xcclSuccess;
}

}  // namespace xccl
