// Where each peer of this node addresses one of this rank's buffers, for the engines that let
// peers read or write it in place (docs/ARCHITECTURE.md, "Zero-copy all_gather" and
// "Reductions"): every rank of this process (threads reach each other's memory), and every rank
// of this node when the buffer lies in a window registered on the communicator or in an
// xcclMemAlloc allocation (which each peer process maps once, transport/peer_imports.h). Decided
// by the buffer's owner alone, per call.
#pragma once

#include <cstddef>
#include <vector>

#include "comm/communicator.h"

namespace xccl {

// *at gets nranks entries: `recv` as peer s addresses it, or nullptr (s cannot reach it: another
// node, plain memory of this process, or a peer process that could not map it; also this rank's
// own entry). All nullptr with XCCL_ZERO_COPY=0. Returns whether `recv` lies in a window or an
// xcclMemAlloc allocation that this node's peer processes are meant to map, so that a nullptr
// there is a failed map, not plain memory.
bool ZeroCopyTargets(Communicator* comm, void* recv, size_t total_bytes, std::vector<char*>* at);

}  // namespace xccl
