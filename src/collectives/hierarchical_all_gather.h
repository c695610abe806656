// all_gather where the ranks span nodes: each block crosses the network once per pair of nodes,
// on its rail (collectives/rail_plan.h), and the rank it lands at forwards it inside its node.
// Pipelined: blocks travel in pieces of XCCL_NET_CHUNK_BYTES, each with its own epoch, so a
// piece is forwarded over shm while the next one is still on the wire.
#pragma once

#include <cstddef>

#include "core/communicator.h"
#include "xccl.h"

namespace xccl {

xcclResult_t AllGatherAcrossNodes(Communicator* comm, DirectPuts* direct, const void* send,
                                  void* recv, size_t bytes, xcclStream_t stream);

}  // namespace xccl
