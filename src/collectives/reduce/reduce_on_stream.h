// The owner's reduction step of a reducing collective on the operation's stream: a kernel on GPU
// builds (LaunchReduce), the calling thread on the host (ReduceOnHost). Either gives the bits of
// reduction.h's rank order.
#pragma once

#include <cstddef>

#include "base/topology.h"
#include "collectives/reduce/reduction.h"
#include "xccl.h"

namespace xccl {

// Before any rank moves a byte: whether this platform can reduce `nranks` inputs
// (GPU: at most a launch's pointer table). xcclInvalidUsage naming
// `op_name` otherwise.
xcclResult_t CheckReducible(const char* op_name, int nranks);

// out[i] = inputs[0][i] op inputs[1][i] op ... for `count` elements of `datatype`; `out` may be
// one of the inputs. A failed launch returns xcclUnhandledDeviceError with the runtime's text.
xcclResult_t ReduceOnStream(int datatype, int op, const void* const* inputs, int nranks, void* out,
                            size_t count, xcclStream_t stream);

// Stage `stage` of a reduction across nodes (reduction.h: kPartial writes accumulators, kPartials
// reads them; `nranks` is avg's divisor): the host's ReduceStageOnHost, or a kernel with its bits.
xcclResult_t ReduceStageOnStream(ReduceStage stage, int datatype, int op, const void* const* inputs,
                                 int n, void* out, size_t count, int nranks, xcclStream_t stream);

// inputs[r] is rank r's: each node's ranks in rank order, then the nodes in order (the order
// xccl.h promises across nodes), as kPartial then kPartials would give it.
xcclResult_t ReduceNodeByNodeOnStream(const Topology& topology, int datatype, int op,
                                      const void* const* inputs, void* out, size_t count,
                                      xcclStream_t stream);

}  // namespace xccl
