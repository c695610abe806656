// Hooks for tests only (not part of the C API): reach into an op behind its handle.
#pragma once

#include <cstddef>

#include "xccl.h"

namespace xccl {

// The op's next self test damages `source`'s receive slot after the exchange, before the check.
xcclResult_t CorruptAgGemmRecvSlotForTesting(xcclAgGemm_t op, int source);
// The same for that source's scales.
xcclResult_t CorruptAgGemmScalesForTesting(xcclAgGemm_t op, int source);

// The op's self test goes through a host staging of `bytes` (at least 16) instead of its own,
// a piece at a time: small ones check the piecewise path. Not during a call.
xcclResult_t SetAgGemmSelfTestStagingForTesting(xcclAgGemm_t op, size_t bytes);

}  // namespace xccl
