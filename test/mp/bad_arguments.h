// The table of bad xcclAllGather/xcclBarrier arguments shared by the host and GPU suites: each
// must give its documented error and a message, and enqueue nothing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "mp/rank_runner.h"
#include "xccl.h"

namespace xccl_test {

// `send` holds `count` elements of 4 bytes, `recv` nranks times as many (host or device memory).
void ExpectBadArgumentsRefused(RankContext& ctx, uint32_t* send, uint32_t* recv, size_t count,
                               xcclStream_t stream);

}  // namespace xccl_test
