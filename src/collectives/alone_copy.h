// A collective at world 1: the rank's block is the whole result (a reduction of one value is that
// value), so out of place one stream-ordered copy and in place nothing, as NCCL does.
#pragma once

#include <cstddef>

#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

// A failed copy is recorded as `op`'s failure.
xcclResult_t CopyAlone(Communicator* comm, const char* op, const void* send, void* recv,
                       size_t bytes, xcclStream_t stream);

}  // namespace xccl
