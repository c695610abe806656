// A captured all_gather and barrier replayed with fresh data on every rank (docs/ARCHITECTURE.md,
// "Control window and epochs": each replay's epoch comes from device memory): one ordinary call
// of `count_before` float32 elements per rank first, so that the graph is captured at an epoch
// other than the first; then the capture of `count` elements, `replays` replays with no host
// synchronisation between them (poison, fresh data, replay, copy out; one rank held back on the
// host before each launch), every replay's output checked, and ordinary calls after. A capture
// past the LL path after an ordinary call on it is the first call to need the inboxes, where
// blocks go through them, and grows them during the capture.
#pragma once

#include <cstddef>

#include "gpu/gpu_harness.h"

namespace xccl_test {

void CapturedAllGatherReplays(RankContext& ctx, size_t count, size_t count_before, int replays);

}  // namespace xccl_test
