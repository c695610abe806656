// Argument checks of the collectives that need no communicator state; pure, unit-tested.
#pragma once

#include <cstddef>

#include "xccl.h"

namespace xccl {

// The checks of xcclAllGather apart from the communicator itself. On success sets
// *block_bytes to one rank's block. In place means send == recv + rank * block.
xcclResult_t CheckAllGatherArgs(const void* send, void* recv, size_t count, int datatype, int rank,
                                int nranks, size_t* block_bytes);

}  // namespace xccl
