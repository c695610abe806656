// GPU: the reduction of `nranks` arrays into one, in rank order, as a kernel (reduction.h's
// arithmetic, the same bits as ReduceOnHost): the owner's step of a reducing collective. GPU
// builds only.
#pragma once

#include <cstddef>

#include "collectives/reduce/reduce_limits.h"
#include "platform/gpu.h"
#include "xccl.h"

namespace xccl {

// out[i] = inputs[0][i] op inputs[1][i] op ... for `count` elements of `datatype`, on `stream`.
// `inputs` is a host array of device pointers (passed by value in the launch); `out` may be one
// of them. gpuErrorInvalidValue for a type or op outside the enums or a rank count past the
// limit.
// Loads every type's kernel (type_dispatch.cuh says why), at init.
gpuError_t PreloadReduce();

gpuError_t LaunchReduce(int datatype, int op, const void* const* inputs, int nranks, void* out,
                        size_t count, gpuStream_t stream);

}  // namespace xccl
