// reduce_scatter where the ranks span nodes, on every platform (docs/ARCHITECTURE.md,
// "Reductions across nodes"): per step, each node first reduces every block inside itself (the
// rank on a destination's rail makes that node's partial, partial_plan.h), then each partial
// crosses the network once to its destination, which reduces the nodes' partials in node order.
// Partials travel in the accumulator type (fp32 for the 16- and 8-bit floats), so the result is
// rounded once. Order: each node's ranks in rank order, then the nodes in order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

// Arguments were checked; `call_count` as RegionReduceStep's (the count every rank passed). GPU:
// stream-ordered on `stream`, the partials in the device engine's memory (node_reduce_engine.h).
xcclResult_t ReduceScatterAcrossNodes(Communicator* comm, const char* op_name, const void* send,
                                      void* recv, size_t count, int datatype, int op,
                                      uint64_t call_count, xcclStream_t stream);

}  // namespace xccl
