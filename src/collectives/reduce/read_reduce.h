// One reducing operation by the device's read engine (read_reduce_engine.h), where it runs:
// every rank's kernel reads its part of every rank's send buffer (docs/ARCHITECTURE.md,
// "Reductions").
#pragma once

#include <cstddef>

#include "collectives/reduce/read_reduce_engine.h"
#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

// Which calls the read engine runs on this communicator (kNone where it has none).
ReadReach ReadEngineReach(Communicator* comm);

// *reads: whether this call's reduction reads the peers' buffers, and if so *buffers gets this
// rank's as every rank addresses them. `recv_bytes`: 0 where only this rank writes its receive
// buffer (reduce_scatter), else its size (all_reduce writes every rank's). Between processes a
// call reads only where both buffers lie in windows or xcclMemAlloc memory that every peer maps;
// the same answer on every rank when every rank's buffers are such or none's are (xccl.h). A
// peer process that could not map such a buffer fails the call, recorded as `op_name`'s, rather
// than leave the ranks on different engines.
xcclResult_t ReductionsReadPeers(Communicator* comm, const char* op_name, const void* send,
                                 size_t send_bytes, void* recv, size_t recv_bytes,
                                 BuffersAsSeen* buffers, bool* reads);

// This rank's `part` of a reduction (ReadReduceEngine::Run) as one operation: one kernel that
// also closes it, inside the launch gate. Failures are recorded as `op_name`'s.
xcclResult_t ReduceByReading(Communicator* comm, const char* op_name, const BuffersAsSeen& buffers,
                             const ReducedPart& part, int datatype, int op, xcclStream_t stream);

}  // namespace xccl
