// One reducing operation by the device's read engine (read_reduce_engine.h), where it runs:
// every rank's kernel reads its part of every rank's send buffer (docs/ARCHITECTURE.md,
// "Reductions").
#pragma once

#include <cstddef>

#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

// Whether the communicator's reductions read the peers' send buffers (the same on every rank).
bool ReductionsReadPeers(Communicator* comm);

// out[i] = the rank-order reduction of element i at byte `first_byte` of every rank's `send`, for
// `count` elements, as one operation (begun, the kernel, the closing barrier). Failures are
// recorded as `op_name`'s.
xcclResult_t ReduceByReading(Communicator* comm, const char* op_name, const void* send,
                             size_t first_byte, void* out, size_t count, int datatype, int op,
                             xcclStream_t stream);

}  // namespace xccl
