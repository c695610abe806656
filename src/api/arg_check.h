// Argument checks of the collectives that need no communicator state; pure, unit-tested.
#pragma once

#include <cstddef>

#include "xccl.h"

namespace xccl {

// The checks of xcclAllGather apart from the communicator itself. On success sets
// *block_bytes to one rank's block. In place means send == recv + rank * block.
xcclResult_t CheckAllGatherArgs(const void* send, void* recv, size_t count, int datatype, int rank,
                                int nranks, size_t* block_bytes);

// xcclReduceScatter's: *block_bytes is the block each rank gets. In place means
// recv == send + rank * block.
xcclResult_t CheckReduceScatterArgs(const void* send, void* recv, size_t count, int datatype,
                                    int op, int rank, int nranks, size_t* block_bytes);

// xcclAllReduce's: *bytes is the buffer size. In place means send == recv.
xcclResult_t CheckAllReduceArgs(const void* send, void* recv, size_t count, int datatype, int op,
                                size_t* bytes);

// xcclBroadcast's: *bytes is the buffer size; sendbuff is checked on the root only, where in
// place means send == recv.
xcclResult_t CheckBroadcastArgs(const void* send, void* recv, size_t count, int datatype, int root,
                                int rank, int nranks, size_t* bytes);

}  // namespace xccl
