#pragma once

#include <cstddef>

#include "core/communicator.h"

namespace xccl {

// The dma all_gather of DESIGN.md section 5, on any platform: publish the receive buffer, push
// this rank's block to every peer at once over their DMA queues in rotated order (rank+1,
// rank+2, ...), each put followed by the peer's arrival flag, copy the local block, then wait
// for every peer's arrival and for this rank's own puts. `bytes` is one rank's block.
xcclResult_t AllGather(Communicator* comm, const void* send, void* recv, size_t bytes);

}  // namespace xccl
