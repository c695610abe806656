// The tables of bad xcclAllGather/xcclBarrier and xcclReduceScatter/xcclAllReduce arguments
// shared by the host and GPU suites: each must give its documented error and a message, and
// enqueue nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mp/rank_runner.h"
#include "xccl.h"

namespace xccl_test {

// `send` holds `count` elements of 4 bytes, `recv` nranks times as many (host or device memory).
void ExpectBadArgumentsRefused(RankContext& ctx, uint32_t* send, uint32_t* recv, size_t count,
                               xcclStream_t stream);

// `send` and `recv` each hold (nranks + 1) * `count` elements of 4 bytes (host or device
// memory: the overlapping cases reach one element past nranks * count should a check let them
// through). Every bad call is made on both reductions; a refusal with a communicator must name
// the call.
void ExpectBadReductionArgumentsRefused(RankContext& ctx, uint32_t* send, uint32_t* recv,
                                        size_t count, xcclStream_t stream);

}  // namespace xccl_test
