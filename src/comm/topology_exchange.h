// Every rank's description, gathered over the bootstrap at init, grouped into nodes (the hosts,
// or XCCL_FAKE_NODES).
#pragma once

#include "base/params.h"
#include "base/topology.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;

xcclResult_t ExchangeTopology(Bootstrap* bootstrap, int device, const Params& params,
                              Topology* out);

}  // namespace xccl
