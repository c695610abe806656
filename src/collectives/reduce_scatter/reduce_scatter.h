#pragma once

#include <cstddef>

#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

// reduce_scatter (docs/ARCHITECTURE.md, "Reductions"): rank r gets the rank-order reduction of
// block r (`count` elements of `datatype`) of every rank's `send`. Through the receive region in
// steps of at most a piece per block (region_reduce.h): every rank puts its block dst's piece into
// rank dst's region, and each rank reduces the pieces of its own block. Arguments were checked
// (api/arg_check.h).
xcclResult_t ReduceScatter(Communicator* comm, const void* send, void* recv, size_t count,
                           int datatype, int op, xcclStream_t stream);

}  // namespace xccl
