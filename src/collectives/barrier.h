#pragma once

#include "core/communicator.h"

namespace xccl {

// Epoch barrier (DESIGN.md section 6): write this operation's epoch into every peer's slot for
// this rank, then wait until every peer's slot here reaches it. Wrap-safe, nothing reset.
xcclResult_t Barrier(Communicator* comm, xcclStream_t stream);

}  // namespace xccl
