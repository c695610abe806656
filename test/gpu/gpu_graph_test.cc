// An all_gather and a barrier captured into a CUDA/HIP graph on every rank and replayed many
// times. The epoch of each replay must come from device memory (docs/ARCHITECTURE.md, "Control
// window and epochs"): a value baked in at capture would make the second replay wait for a past
// epoch (passing at once, with stale data) or for one that never comes. Fresh data goes in before
// every replay and every replay's output is copied out and checked; a capture may also be the call
// that grows the inboxes.
#include <gtest/gtest.h>

#include "gpu/gpu_captured_all_gather.h"

namespace xccl_test {
namespace {

class GpuGraphTest : public GpuWorldTest {};

// 1031 elements: an odd size on the LL path.
TEST_P(GpuGraphTest, CapturedAllGatherAndBarrierReplayWithFreshData) {
  Run([](RankContext& ctx) { CapturedAllGatherReplays(ctx, 1031, 1031, 100); });
}

// Past the LL path after an ordinary call on it: where blocks go through the inboxes (processes,
// XCCL_ZERO_COPY=0), the captured call is the first to need them and grows them during the
// capture (docs/ARCHITECTURE.md, "The GPU platform", the window).
TEST_P(GpuGraphTest, CaptureThatGrowsTheInboxesReplaysWithFreshData) {
  Run([](RankContext& ctx) { CapturedAllGatherReplays(ctx, (size_t{1} << 18) + 7, 1031, 10); });
}

INSTANTIATE_TEST_SUITE_P(Gpu, GpuGraphTest, ::testing::ValuesIn(StandardGpuWorlds()), GpuWorldName);

}  // namespace
}  // namespace xccl_test
