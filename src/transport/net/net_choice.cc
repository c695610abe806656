#include "transport/net/net_choice.h"

#include <string>
#include <vector>

#include "base/error.h"
#include "base/logging.h"
#include "transport/net/socket_net.h"
#if XCCL_HAVE_IBVERBS
#include "transport/net/ib_net.h"
#endif

namespace xccl {

namespace {

// The ib backend where this build has one and this host has an active port; false with *why.
bool TryIb(const Params& params, std::unique_ptr<NetBackend>* net, std::string* why) {
#if XCCL_HAVE_IBVERBS
  IbNetOptions options;
  options.library = params.ibverbs_lib;
  options.hca = params.ib_hca;
  options.gid_index = static_cast<int>(params.ib_gid_index);
  options.socket_ifname = params.socket_ifname;
  return OpenIbNet(options, net, why);
#else
  (void)params;
  (void)net;
  *why =
      "this build of xccl has no ibverbs backend yet (infiniband/verbs.h was not found at "
      "configure time)";
  return false;
#endif
}

}  // namespace

// Heartbeats always go over a socket comm pair, whatever carries the data: they are a few bytes
// every 200 ms, a TCP pair costs no QP or registered memory, and a liveness watch that does not
// share the data path's failure modes tells "the peer is gone" from "the fabric failed" (the ib
// comms report the latter themselves, naming device, QP and status).
xcclResult_t CreateNetBackends(const Params& params, const Topology& topology,
                               std::unique_ptr<NetBackend>* net,
                               std::unique_ptr<NetBackend>* beats) {
  if (params.net == "ib" || params.net == "auto") {
    std::string why;
    if (TryIb(params, net, &why)) return CreateSocketNet(params.socket_ifname, 1, beats);
    if (params.net == "ib")
      return Fail(xcclInvalidUsage,
                  "XCCL_NET=ib: %s; these %d ranks span %d nodes: use XCCL_NET=socket or auto",
                  why.c_str(), topology.nranks, topology.node_count);
    if (topology.rank == 0)
      XCCL_INFO(kLogInit, "net: no ibverbs backend (%s): sockets between the %d nodes", why.c_str(),
                topology.node_count);
  }
  XCCL_TRY(CreateSocketNet(params.socket_ifname, static_cast<int>(params.socket_nsocks), net));
  return CreateSocketNet(params.socket_ifname, /*nsocks=*/1, beats);
}

xcclResult_t OpenNetBackends(Bootstrap* bootstrap, const Params& params, const Topology& topology,
                             std::unique_ptr<NetBackend>* net, std::unique_ptr<NetBackend>* beats) {
  const xcclResult_t created = CreateNetBackends(params, topology, net, beats);
  // Per rank: 0 failed, 1 sockets, 2 another backend (ib).
  std::vector<int32_t> kinds(topology.nranks, 0);
  if (created == xcclSuccess)
    kinds[topology.rank] = std::string((*net)->name()).rfind("socket", 0) == 0 ? 1 : 2;
  XCCL_TRY(bootstrap->AllGather(kinds.data(), sizeof(int32_t)));
  XCCL_TRY(created);
  bool mixed = false;
  for (int r = 0; r < topology.nranks; ++r) {
    if (kinds[r] == 0)
      return Fail(xcclRemoteError, "rank %d could not open its net backend (XCCL_NET=%s)", r,
                  params.net.c_str());
    mixed |= kinds[r] != kinds[topology.rank];
  }
  if (!mixed) return xcclSuccess;
  // Only auto can differ between ranks (ib fails where no port exists).
  if (topology.rank == 0)
    XCCL_INFO(kLogInit, "net: XCCL_NET=auto: some nodes have no RDMA port: sockets everywhere");
  XCCL_TRY(CreateSocketNet(params.socket_ifname, static_cast<int>(params.socket_nsocks), net));
  return CreateSocketNet(params.socket_ifname, /*nsocks=*/1, beats);
}

}  // namespace xccl
