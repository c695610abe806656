// How all_reduce runs (docs/ARCHITECTURE.md, "Reductions"), chosen in one place. One-shot: every
// rank sends its whole input to every peer and reduces all of them itself (one trip, n - 1 times
// the bytes on every link). Reduce-scatter then all_gather: every byte crosses a link twice but
// only once per peer pair. Read once (the read engine, ReductionsReadPeers): every rank reads its
// part of every rank's input and writes the result into every rank's output, one operation that
// moves each byte the least. All reduce every element in rank order, so they give the same bits.
#pragma once

#include <cstddef>

namespace xccl {

enum class AllReducePlan { kOneShot, kReduceScatterAllGather, kReadOnce };

// `bytes`: the call's buffer; `step_bytes`: the most one region step carries (RegionStepCount);
// `oneshot_bytes`: the largest call sent in one trip (XCCL_ALLREDUCE_ONESHOT_BYTES);
// `reads_peers`: the read engine runs this call (ReductionsReadPeers). The same on every rank
// for the same count, whatever each rank's buffers (a rank in place, a peer not), given that
// between processes every rank's buffers are mapped or none's are (xccl.h).
AllReducePlan ChooseAllReducePlan(size_t count, size_t bytes, int nranks, size_t step_bytes,
                                  size_t oneshot_bytes, bool reads_peers);

// Read once: the elements rank `rank` reduces, [*first, *first + *count). Parts start on 64-byte
// boundaries (vector loads where the buffers are aligned); the last rank takes the remainder.
void ReadOncePart(size_t count, size_t element_size, int nranks, int rank, size_t* first,
                  size_t* part_count);

}  // namespace xccl
