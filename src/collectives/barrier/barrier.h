#pragma once

#include "comm/communicator.h"

namespace xccl {

// Epoch barrier (docs/ARCHITECTURE.md, "barrier"): write this operation's epoch into every peer's
// slot for this rank, then wait until every peer's slot here reaches it. Wrap-safe, nothing reset.
// One kernel where the device engine runs it, else signals on the connections and host waits.
xcclResult_t Barrier(Communicator* comm, xcclStream_t stream);

}  // namespace xccl
