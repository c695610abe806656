// How all_reduce runs (docs/ARCHITECTURE.md, "Reductions"), chosen in one place. One-shot: every
// rank sends its whole input to every peer and reduces all of them itself (one trip, n - 1 times
// the bytes on every link). Reduce-scatter then all_gather: every byte crosses a link twice but
// only once per peer pair. Both reduce every element in rank order, so they give the same bits.
#pragma once

#include <cstddef>

namespace xccl {

enum class AllReducePlan { kOneShot, kReduceScatterAllGather };

// `bytes`: the call's buffer; `step_bytes`: the most one region step carries (RegionStepCount);
// `reads_peers`: the read engine runs the reduce_scatter (ReductionsReadPeers). The same on every
// rank for the same count, whatever each rank's buffers (a rank in place, a peer not).
AllReducePlan ChooseAllReducePlan(size_t count, size_t bytes, int nranks, size_t step_bytes,
                                  bool reads_peers);

}  // namespace xccl
