// Hooks for tests only (not part of the C API): reach into an op behind its handle.
#pragma once

#include "xccl.h"

namespace xccl {

// The op's next self test damages `source`'s slot after the exchange, before the check.
xcclResult_t CorruptAgGemmSlotForTesting(xcclAgGemm_t op, int source);

}  // namespace xccl
