// The owner's reduction step of a reducing collective on the operation's stream: a kernel on GPU
// builds (LaunchReduce), the calling thread on the host (ReduceOnHost). Either gives the bits of
// reduction.h's rank order.
#pragma once

#include <cstddef>

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

}  // namespace xccl
