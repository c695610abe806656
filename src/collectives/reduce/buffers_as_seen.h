// This rank's buffers of one reduction as each rank of the node addresses them, which the read
// engine's kernel offers to that rank (docs/ARCHITECTURE.md, "Reductions"): the same pointers
// for ranks of this process, the peer's mapping of a window or xcclMemAlloc allocation for a
// rank of another process (zero_copy_targets.h).
#pragma once

#include "collectives/reduce/reduce_limits.h"

namespace xccl {

struct BuffersAsSeen {
  const char* send[kMaxReduceInputs] = {};
  char* recv[kMaxReduceInputs] = {};
};

}  // namespace xccl
