// GPU: the reductions across nodes as kernels (docs/ARCHITECTURE.md, "Reductions across nodes"),
// the bits of reduction.h's ReduceStage on the host. Inputs come in groups (a node's ranks, in
// rank order): each group combined into an unrounded accumulator, then the groups' accumulators
// in order, rounded once. GPU builds only.
#pragma once

#include <cstddef>

#include "platform/gpu.h"

namespace xccl {

// What a grouped reduction reads and writes.
struct GroupedReduceShape {
  const void* const* inputs = nullptr;  // host array of device pointers, grouped
  const int* group_ends = nullptr;      // one past each group's last input
  int groups = 0;                       // every input in some group; at most kMaxReduceInputs
  bool accumulators_in = false;         // ReduceStage::kPartials: the inputs are partials
  bool accumulator_out = false;         // ReduceStage::kPartial: unrounded, avg not yet divided
  int avg_ranks = 1;                    // avg: the divisor (the communicator's rank count)
};

// Loads every type's kernels (type_dispatch.cuh says why), at init.
gpuError_t PreloadGroupedReduce();

// out[i] from `shape` for `count` elements of `datatype` on `stream` (any byte alignment).
// gpuErrorInvalidValue for a type or op outside the enums or too many inputs.
gpuError_t LaunchGroupedReduce(int datatype, int op, const GroupedReduceShape& shape, void* out,
                               size_t count, gpuStream_t stream);

}  // namespace xccl
