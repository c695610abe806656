// The parameters every rank of a communicator must share: they shape the windows peers address
// (XCCL_EAGER_BYTES, XCCL_WINDOW_BYTES), the signals' first value (XCCL_EPOCH_BASE), or choose a
// call's path, which peers must take alike (the all_gather engine and its lanes, ring slots and
// LL size). Compared once at init, in one round: ranks that differ would address windows at
// other offsets or wait in another engine, so every rank refuses together, naming the first.
#pragma once

#include "base/params.h"
#include "xccl.h"

namespace xccl {

class Bootstrap;

// Collective over the bootstrap. xcclInvalidUsage naming the parameter, the rank that differs and
// both values where any rank's setting differs from this rank's.
xcclResult_t RequireSharedSettings(Bootstrap* bootstrap, const Params& params);

}  // namespace xccl
