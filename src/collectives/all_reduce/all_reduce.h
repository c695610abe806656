#pragma once

#include <cstddef>

#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

// all_reduce (docs/ARCHITECTURE.md, "Reductions"): every rank gets the rank-order reduction of
// every rank's `count` elements, by the plan ChooseAllReducePlan picks: one-shot through the
// receive region, or reduce_scatter of the first nranks * (count / nranks) elements into their
// places in `recv`, an in-place all_gather of them, and the last count % nranks one-shot.
// Arguments were checked (api/arg_check.h).
xcclResult_t AllReduce(Communicator* comm, const void* send, void* recv, size_t count, int datatype,
                       int op, xcclStream_t stream);

}  // namespace xccl
