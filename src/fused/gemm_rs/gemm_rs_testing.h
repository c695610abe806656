// Hooks for tests only (not part of the C API): reach into a gemm_rs op behind its handle.
#pragma once

#include <cstdint>

#include "xccl.h"

namespace xccl {

// The op's next self test damages one element of this rank's partial for the next rank, after
// the pattern is in place and before the exchange.
xcclResult_t CorruptGemmRsPartialForTesting(xcclGemmRs_t op);

// The chunks a call of m rows cuts each owner's block into.
xcclResult_t GemmRsChunksForTesting(xcclGemmRs_t op, int64_t m, int* chunks);

}  // namespace xccl
