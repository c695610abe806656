#include "collectives/all_reduce/all_reduce_plan.h"

#include <algorithm>

namespace xccl {

AllReducePlan ChooseAllReducePlan(size_t count, size_t bytes, int nranks, size_t step_bytes,
                                  size_t oneshot_bytes, bool reads_peers) {
  // Each rank's part is read by that rank alone, so in place is safe; a rank without a part only
  // offers its buffers.
  if (reads_peers) return AllReducePlan::kReadOnce;
  // Fewer elements than ranks leave some rank no part to own.
  if (count < static_cast<size_t>(nranks)) return AllReducePlan::kOneShot;
  return bytes <= std::min(oneshot_bytes, step_bytes) ? AllReducePlan::kOneShot
                                                      : AllReducePlan::kReduceScatterAllGather;
}

void ReadOncePart(size_t count, size_t element_size, int nranks, int rank, size_t* first,
                  size_t* part_count) {
  const size_t per_unit = 64 / element_size;  // every type's size divides 64
  const size_t units = count / per_unit;
  const size_t begin = units * rank / nranks * per_unit;
  const size_t end = rank == nranks - 1 ? count : units * (rank + 1) / nranks * per_unit;
  *first = begin;
  *part_count = end - begin;
}

}  // namespace xccl
