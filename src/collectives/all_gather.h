#pragma once

#include <cstddef>

#include "core/communicator.h"

namespace xccl {

// The dma all_gather of DESIGN.md section 5, on any platform: this rank's block goes to every
// peer at once in rotated order (rank+1, rank+2, ...), each put followed by the peer's arrival
// flag; the own block is copied locally and never waits; then every peer's arrival is awaited.
// Blocks go straight into the peers' receive buffers where the platform can (host, large
// blocks), else through the peers' inboxes. `bytes` is one rank's block.
xcclResult_t AllGather(Communicator* comm, const void* send, void* recv, size_t bytes,
                       xcclStream_t stream);

}  // namespace xccl
