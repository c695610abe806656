// all_gather where the ranks span nodes: each block crosses the network once per pair of nodes,
// on its rail (collectives/all_gather/rail_plan.h), and the rank it lands at forwards it inside its
// node. Two forms. With direct puts (host): blocks travel in pieces of XCCL_NET_CHUNK_BYTES, each
// with its own epoch, so a piece is forwarded over shm while the next one is still on the wire.
// Through inboxes (GPU ranks, which map no buffer across nodes): one operation per inbox-sized
// piece, its block sent on the rails and to this node's ranks, each landed piece copied out and
// forwarded into the same node's inboxes of its source, a closing barrier before the next piece.
#pragma once

#include <cstddef>

#include "comm/communicator.h"
#include "transport/slot_map.h"
#include "xccl.h"

namespace xccl {

// `arrivals`: all_gather's arrival flags (collectives/region/arrivals.h).
xcclResult_t AllGatherAcrossNodes(Communicator* comm, const SlotRange& arrivals, DirectPuts* direct,
                                  const void* send, void* recv, size_t bytes, xcclStream_t stream);
xcclResult_t AllGatherAcrossNodesThroughInboxes(Communicator* comm, const SlotRange& arrivals,
                                                const void* send, void* recv, size_t bytes,
                                                xcclStream_t stream);

}  // namespace xccl
