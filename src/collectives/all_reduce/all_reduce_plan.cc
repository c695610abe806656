#include "collectives/all_reduce/all_reduce_plan.h"

#include <algorithm>

namespace xccl {

namespace {

// Up to this, one trip beats two: a guess until the crossover is measured (docs/PERF.md).
constexpr size_t kOneShotMaxBytes = 64 << 10;

}  // namespace

AllReducePlan ChooseAllReducePlan(size_t count, size_t bytes, int nranks, size_t step_bytes,
                                  bool reads_peers) {
  // Fewer elements than ranks leave some rank no part to own.
  if (count < static_cast<size_t>(nranks)) return AllReducePlan::kOneShot;
  // A one-shot read could overwrite an input in place while a peer still reads it: the read
  // engine reduces only its own part, which no peer reads.
  if (reads_peers) return AllReducePlan::kReduceScatterAllGather;
  return bytes <= std::min(kOneShotMaxBytes, step_bytes) ? AllReducePlan::kOneShot
                                                         : AllReducePlan::kReduceScatterAllGather;
}

}  // namespace xccl
