// Which net backend carries the ops between nodes (XCCL_NET): sockets always exist; ibverbs
// where this build has it and a device is present. The same setting on every rank (a shared
// setting), so every rank makes the same choice or fails the same way.
#pragma once

#include <memory>

#include "base/params.h"
#include "base/topology.h"
#include "transport/bootstrap/bootstrap.h"
#include "transport/net/net.h"

namespace xccl {

// `net`: the backend for the data ops; `beats`: one of the same kind for the proxy's heartbeats
// (a comm pair of its own). Fails with a message naming XCCL_NET where the choice cannot be
// served on this rank.
xcclResult_t CreateNetBackends(const Params& params, const Topology& topology,
                               std::unique_ptr<NetBackend>* net,
                               std::unique_ptr<NetBackend>* beats);

// Collective over every rank: CreateNetBackends on each, then one choice for all. A rank that
// could not open its backend fails every rank, naming it; under XCCL_NET=auto, where some ranks
// found an RDMA port and others did not, all of them take sockets (ranks of one job must speak
// one backend).
xcclResult_t OpenNetBackends(Bootstrap* bootstrap, const Params& params, const Topology& topology,
                             std::unique_ptr<NetBackend>* net, std::unique_ptr<NetBackend>* beats);

}  // namespace xccl
