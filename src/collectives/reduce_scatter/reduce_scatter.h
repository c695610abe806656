#pragma once

#include <cstddef>
#include <cstdint>

#include "collectives/reduce/read_reduce_grid.h"
#include "comm/communicator.h"
#include "xccl.h"

namespace xccl {

// reduce_scatter (docs/ARCHITECTURE.md, "Reductions"): rank r gets the rank-order reduction of
// block r (`count` elements of `datatype`) of every rank's `send`. Through the receive region in
// steps of at most a piece per block (region_reduce.h): every rank puts its block dst's piece into
// rank dst's region, and each rank reduces the pieces of its own block. Arguments were checked
// (api/arg_check.h). `call_count`: the count the ranks' calls must agree on (the user's
// recvcount, or the count of the all_reduce this is part of; region_reduce.h). `op_name`: the
// call the user made (xcclReduceScatter, xcclAllReduce, xcclGemmRsRun), which failures name.
// `grid`: where the GPU read engine runs it, what the caller asks of its grid, so that GEMMs
// beside it keep SMs (gemm_rs; read_reduce_grid.h).
xcclResult_t ReduceScatter(Communicator* comm, const char* op_name, const void* send, void* recv,
                           size_t count, int datatype, int op, xcclStream_t stream,
                           uint64_t call_count, const GridLimit& grid = GridLimit{});

}  // namespace xccl
