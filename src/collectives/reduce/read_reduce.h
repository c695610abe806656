// One reducing operation by the device's read engine (read_reduce_engine.h), where it runs:
// every rank's kernel reads its part of every rank's send buffer (docs/ARCHITECTURE.md,
// "Reductions").
#pragma once

#include <cstddef>

#include "collectives/reduce/read_reduce_engine.h"
#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

// Whether the communicator's reductions read the peers' send buffers (the same on every rank).
bool ReductionsReadPeers(Communicator* comm);

// This rank's `part` of a reduction (ReadReduceEngine::Run) as one operation: one kernel that
// also closes it, inside the launch gate. Failures are recorded as `op_name`'s.
xcclResult_t ReduceByReading(Communicator* comm, const char* op_name, const void* send, void* recv,
                             const ReducedPart& part, int datatype, int op, xcclStream_t stream);

}  // namespace xccl
