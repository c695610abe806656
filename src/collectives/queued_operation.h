// The end of an operation whose puts went on connections (all_gather through the inboxes,
// ag_gemm's fused mode): every connection flushed (host: until its puts have landed; GPU: the
// queues join the stream) and, where signals are device-side, a closing barrier step, so that no
// rank's next operation writes an inbox or window a slower rank still reads.
#pragma once

#include "base/deadline.h"
#include "base/failure.h"
#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

xcclResult_t EndQueuedOperation(Communicator* comm, xcclStream_t stream, const Deadline& deadline,
                                PlatformFailure* failure);

}  // namespace xccl
