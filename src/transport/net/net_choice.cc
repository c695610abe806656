#include "transport/net/net_choice.h"

#include "core/error.h"
#include "core/logging.h"
#include "transport/net/socket_net.h"

namespace xccl {

xcclResult_t CreateNetBackends(const Params& params, const Topology& topology,
                               std::unique_ptr<NetBackend>* net,
                               std::unique_ptr<NetBackend>* beats) {
  if (params.net == "ib")
    return Fail(xcclInvalidUsage,
                "XCCL_NET=ib: this build of xccl has no ibverbs backend yet; these %d ranks span "
                "%d nodes: use XCCL_NET=socket or auto",
                topology.nranks, topology.node_count);
  if (params.net == "auto" && topology.rank == 0)
    XCCL_INFO(kLogInit, "net: no ibverbs backend in this build: sockets between the %d nodes",
              topology.node_count);
  XCCL_TRY(CreateSocketNet(params.socket_ifname, static_cast<int>(params.socket_nsocks), net));
  return CreateSocketNet(params.socket_ifname, /*nsocks=*/1, beats);
}

}  // namespace xccl
