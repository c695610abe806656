// Device memory a communicator holds after init (docs/ARCHITECTURE.md, "GPU windows"): a
// communicator of one rank has no peer to hear from, so it carves no inboxes, whatever
// XCCL_WINDOW_BYTES says. Measured as the drop in the device's free memory across init, after a
// warm-up init has paid the runtime's own one-time costs (kernel modules, pools). Skips, saying
// why, without a GPU.
#include <gtest/gtest.h>

#include <cstddef>

#include "gpu/gpu_runtime.h"
#include "xccl.h"

namespace xccl_test {
namespace {

// The goal for any communicator after init; the default window is 512 MiB.
constexpr size_t kMostBytesAfterInit = size_t{64} << 20;

TEST(GpuMemory, AOneRankCommunicatorHoldsNoInboxes) {
  int gpus = 0;
  if (gpu::GetDeviceCount(&gpus) != gpu::kSuccess || gpus == 0)
    GTEST_SKIP() << "no GPU visible: device memory needs one";
  ASSERT_EQ(gpu::SetDevice(0), gpu::kSuccess);
  const int device = 0;
  xcclComm_t warm = nullptr;
  ASSERT_EQ(xcclCommInitAll(&warm, 1, &device), xcclSuccess) << xcclGetLastError(nullptr);
  ASSERT_EQ(xcclCommDestroy(warm), xcclSuccess);

  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(gpu::MemGetInfo(&free_before, &total), gpu::kSuccess);
  xcclComm_t comm = nullptr;
  ASSERT_EQ(xcclCommInitAll(&comm, 1, &device), xcclSuccess) << xcclGetLastError(nullptr);
  ASSERT_EQ(gpu::MemGetInfo(&free_after, &total), gpu::kSuccess);
  const size_t held = free_before > free_after ? free_before - free_after : 0;
  EXPECT_LE(held, kMostBytesAfterInit)
      << "a one-rank communicator holds " << (held >> 20) << " MiB of device memory after init";
  ASSERT_EQ(xcclCommDestroy(comm), xcclSuccess);
}

}  // namespace
}  // namespace xccl_test
