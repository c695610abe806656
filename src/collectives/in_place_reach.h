// Whether every rank reaches every peer's buffers in place on every call (docs/ARCHITECTURE.md,
// "The GPU platform", the window): the ranks are threads of one process on one node and
// XCCL_ZERO_COPY is not 0. all_gather's kernel then writes straight into the receivers' buffers
// and the read engine reads the senders', so nothing goes through the inboxes.
#pragma once

#include "base/params.h"
#include "base/topology.h"

namespace xccl {

// The same answer on every rank (the topology and the shared settings are).
inline bool EveryCallInPlace(const Params& params, const Topology& topology) {
  return topology.node_count == 1 && params.zero_copy != 0 && !topology.AnyNodeSharedByProcesses();
}

}  // namespace xccl
