#pragma once

#include <cstddef>

#include "collectives/all_gather/gather_tail.h"
#include "comm/communicator.h"

namespace xccl {

// all_gather (docs/ARCHITECTURE.md, "The life of one all_gather call"); `bytes` is one rank's
// block. The engine: the device engine's kernel where it runs all_gather (GPU default); else this
// rank's block goes to every peer at once in rotated order (rank+1, rank+2, ...), each put followed
// by the peer's arrival flag, the own block copied locally, then every peer's arrival awaited:
// straight into the peers' receive buffers where the transport offers DirectPuts (host, blocks
// above the inbox size), else through the peers' inboxes (host eager path; the dma engine on GPUs).
// `tail`: a second part of every rank's block gathered in the same call: in the same kernel
// where the kernel engine runs, in the same operations through the inboxes on one node, else as
// a second operation after the first part.
xcclResult_t AllGather(Communicator* comm, const void* send, void* recv, size_t bytes,
                       xcclStream_t stream, const GatherTail& tail = GatherTail());

}  // namespace xccl
