#pragma once

#include <cstddef>

#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

// broadcast (docs/ARCHITECTURE.md, "Broadcast"): every rank's `recv` gets root's `bytes` of
// `send`, as they are. Where the read engine runs every call (ranks of one process on GPUs), one
// kernel per rank reads root's buffer; elsewhere steps through the receive region with root the
// one source. Arguments were checked (api/arg_check.h).
xcclResult_t Broadcast(Communicator* comm, const void* send, void* recv, size_t bytes, int root,
                       xcclStream_t stream);

}  // namespace xccl
