// Which sources of an all_gather may write their blocks straight into this rank's receive buffer
// (the zero-copy engine, docs/ARCHITECTURE.md "Zero-copy all_gather"), and at what address as each
// addresses it: every rank of this process on this node (threads reach each other's memory), and
// every rank of this node when the buffer lies in a window registered on the communicator or in an
// xcclMemAlloc allocation (which each peer process maps once, transport/peer_imports.h). Decided by
// the receiver alone, per call, so ranks may mix such buffers and plain ones in one call.
#pragma once

#include <cstddef>
#include <vector>

#include "comm/communicator.h"

namespace xccl {

// *at gets nranks entries: recv as source s addresses it, or nullptr (s goes through the
// inboxes; also this rank's own entry). All nullptr with XCCL_ZERO_COPY=0.
void ZeroCopyTargets(Communicator* comm, void* recv, size_t total_bytes, std::vector<char*>* at);

}  // namespace xccl
